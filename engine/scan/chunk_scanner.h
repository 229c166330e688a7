// Scans one chunk of complete lines: the prefilter finds candidate lines,
// the job-line parser extracts their fields, and everything else is only
// counted. With a --job-line regex (scan/job_line_regex.h), its matches are
// the job lines instead of Paddle's (whose literal is then ignored); the
// step-start lines are read either way. Results use chunk-relative line numbers; the caller, which
// sees chunks in file order, turns them into file line numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/job.h"
#include "scan/event_matcher.h"
#include "scan/job_line_parser.h"
#include "scan/job_line_regex.h"
#include "scan/line_stamp.h"
#include "scan/prefilter.h"

namespace pipescope {

/// A `Schedule Profiler start at step N` line: each launch of the training
/// program prints one, so a log appended to by a relaunch holds several.
struct StepStartSeen {
  std::uint64_t line = 0;  ///< 0-based line index within the chunk
  std::int64_t step = 0;
};

/// A line the event library matched (scan/event_matcher.h).
struct EventSeen {
  std::uint64_t line = 0;  ///< 0-based line index within the chunk
  std::uint32_t pattern = 0;
  /// The line's own stamp; or, when it has none (`approximate`), the stamp
  /// of the closest line before it in the chunk that has one, if any.
  std::optional<LineStamp> stamp;
  bool approximate = false;
  std::vector<std::pair<std::string, std::string>> captures;
  /// The nearest job line before it in the chunk that has a stamp: the
  /// local offset its stamp is read with (scan/event_clock.h); unset when
  /// none is before it in the chunk.
  std::optional<StampAnchor> anchor;
};

struct LineProblem {
  std::uint64_t line = 0;  ///< 0-based line index within the chunk
  LineError error = LineError::none;
};

struct ChunkScan {
  /// Lines in the chunk (a final line without '\n' counts when it is the
  /// end of the file).
  std::uint64_t lines = 0;
  /// The chunk's jobs, already in the model's layout so the ordered stage
  /// only patches two fields: Job::type indexes `types` (a chunk-local id)
  /// and Job::line is the 0-based line index within the chunk.
  std::vector<Job> jobs;
  /// Job type names seen in this chunk.
  std::vector<std::string> types;
  std::uint64_t malformed = 0;
  /// Candidate lines longer than ChunkScanOptions::max_line_bytes (not parsed).
  std::uint64_t oversized = 0;
  /// The first few rejected lines (at most `max_problems`).
  std::vector<LineProblem> problems;
  /// Every `Schedule Profiler start at step N` line, in line order.
  std::vector<StepStartSeen> step_starts;
  /// Offset in the chunk of the first NUL byte, when asked to look.
  std::optional<std::uint64_t> first_nul;
  /// Bytes of the file's last line when it lacks its '\n' (end_of_file
  /// chunks only). Such a line is counted in `lines` but never parsed: glog
  /// ends every line, so it is a write still in progress (or a cut-off file)
  /// and its numbers may be cut short, e.g. `job_end_time = 1697793307254.0`.
  std::uint64_t partial_last_line = 0;
  /// Event lines (ChunkScanOptions::events), in line order.
  std::vector<EventSeen> events;
  /// The first job line with a stamp: its stamp and its job's end, which
  /// place the local stamps of the file's events before any other job line
  /// that has one (scan/event_clock.h).
  std::optional<StampAnchor> anchor;
  /// The last job line with a stamp (only looked for when events are):
  /// the anchor of the next chunk's events before its first stamped job
  /// line.
  std::optional<StampAnchor> last_anchor;
  /// The stamp of the chunk's last job or event line that has one: the time
  /// of an undated event line at the start of the next chunk.
  std::optional<LineStamp> last_stamp;
  std::uint64_t last_stamp_line = 0;  ///< its 0-based line index

  void clear();
};

struct ChunkScanOptions {
  bool end_of_file = false;
  std::size_t max_problems = 8;
  bool look_for_binary = false;
  /// Candidate lines longer than this are rejected unparsed, so that a line
  /// is treated the same whether or not it fitted in one read chunk.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  /// The event library's matcher and this thread's scratch for it; null:
  /// no event is looked for.
  const EventMatcher* events = nullptr;
  EventMatcher::Scratch* event_scratch = nullptr;
  /// The --job-line regex and this thread's scratch for it: its matches are
  /// the job lines, Paddle's are not read. Null: Paddle's job lines.
  /// Without an `id` capture the jobs' ids are 0 here (the reader numbers
  /// them in file order).
  const JobLineRegex* job_line = nullptr;
  JobLineRegex::Scratch* job_line_scratch = nullptr;
};

/// Scans `text` (complete lines) into `out`, which is cleared first and
/// whose vectors keep their capacity across calls.
void scan_chunk(std::string_view text, const Prefilter& prefilter, Prefilter::Scratch& scratch,
                const ChunkScanOptions& options, ChunkScan& out);

/// Scans `text` (complete lines) as the continuation of what `out` already
/// holds: line indices go on from `out.lines`, and a NUL byte's offset counts
/// from `text_offset`, the offset of text[0] in the whole scanned text (a NUL
/// is looked for only while none was found). Scanning a text in pieces cut at
/// line boundaries, each with scan_chunk_more, gives exactly what scan_chunk
/// gives for the whole (only the last piece may have `end_of_file` set).
void scan_chunk_more(std::string_view text, std::uint64_t text_offset, const Prefilter& prefilter,
                     Prefilter::Scratch& scratch, const ChunkScanOptions& options, ChunkScan& out);

/// Number of '\n' bytes in `text`.
std::uint64_t count_newlines(std::string_view text);

}  // namespace pipescope
