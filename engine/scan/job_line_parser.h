// The exact grammar of PaddlePaddle's job lines, applied to one line that the
// prefilter selected:
//
//   <any prefix>Profiler Info: Job (ID), type = TYPE, micro_batch_id = MB,
//       job_start_time = START, job_end_time = END[, future fields]
//
// ID and MB are integers (optional '-', up to 18 digits), TYPE is any text
// without a comma (`forward`, `forward(chunk0)`, `backward_w1_reduce`, ...),
// START and END are milliseconds since the epoch with up to 9 decimals.
// Spaces or tabs may surround every token. ANSI CSI colour sequences anywhere
// in the line and a trailing '\r' are ignored.
//
// The parser never throws and never allocates on the common path (no escape
// codes): a rejected line yields a LineError that says what was wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pipescope {

/// The literal every job line contains; the prefilter searches for it.
inline constexpr std::string_view kJobLineLiteral = "Profiler Info: Job";
/// The literal of PaddleNLP's `Schedule Profiler start at step N` line.
inline constexpr std::string_view kStepStartLiteral = "Schedule Profiler start at step";

/// Why a candidate line was rejected. Each value is one skipped-line reason.
enum class LineError : std::uint8_t {
  none = 0,
  no_literal,           ///< the line does not contain kJobLineLiteral
  bad_job_id,           ///< `Job (ID)` missing, or ID not an integer
  missing_type,         ///< no `type = ` field where expected
  empty_type,           ///< `type = ,`
  missing_micro_batch,  ///< no `micro_batch_id = ` field where expected
  bad_micro_batch,      ///< micro_batch_id is not an integer
  missing_start_time,   ///< no `job_start_time = ` field where expected
  bad_start_time,       ///< START is not a decimal millisecond count
  missing_end_time,     ///< no `job_end_time = ` field where expected (e.g. truncated)
  bad_end_time,         ///< END is not a decimal millisecond count
  end_before_start,     ///< END < START
  line_too_long,        ///< longer than the reader's line limit (not parsed)
  // A line the --job-line regex matches (scan/job_line_regex.h):
  empty_type_capture,        ///< the `type` capture is empty (or took no part)
  bad_micro_batch_capture,   ///< the `mb` capture is not an integer
  bad_job_id_capture,        ///< the `id` capture is not an integer
  bad_start_capture,         ///< the `start` capture is not a plain decimal in the unit
  bad_end_capture,           ///< the `end` capture is not a plain decimal in the unit
  capture_end_before_start,  ///< `end` < `start`
};

/// A short human description of `error`, for `file:line: <description>`.
std::string_view describe(LineError error);

/// The fields of one accepted job line.
struct JobLine {
  std::int64_t job_id = 0;
  std::int64_t micro_batch = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// Points into the parsed line, or into `scratch` when escape codes had to
  /// be removed: copy it before the next call with the same scratch.
  std::string_view type;
};

/// Parses one line (without its '\n'). `scratch` is reused storage for lines
/// with ANSI escape codes; pass the same string across calls to avoid
/// allocating.
LineError parse_job_line(std::string_view line, JobLine& out, std::string& scratch);

/// The common case of parse_job_line, without its general grammar: for a
/// line (without its '\n') whose first occurrence of kJobLineLiteral starts
/// at byte `literal`, with no escape code before it, and whose fields have
/// exactly the form `Job (ID), type = TYPE, micro_batch_id = MB,
/// job_start_time = START, job_end_time = END` up to the end of the line.
/// Returns true and fills `out` only when parse_job_line would accept the line
/// with the same fields; false for anything else (spaces or fields that
/// differ, later fields, a '\r', an escape code in TYPE, a value out of range,
/// END before START), where parse_job_line decides and says what is wrong.
bool parse_job_line_fast(std::string_view line, std::size_t literal, JobLine& out);

/// Parses `... Schedule Profiler start at step N ...` and returns N, or
/// nullopt when the line does not have that form.
std::optional<std::int64_t> parse_step_start_line(std::string_view line);

/// Removes ANSI CSI sequences (ESC '[' params final-byte) from `line` into
/// `out`; returns a view of `out`, or `line` itself when it has no ESC byte.
std::string_view strip_ansi(std::string_view line, std::string& out);

}  // namespace pipescope
