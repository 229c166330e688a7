// How big a trace may get before the viewers give up, and what `analyze`
// writes when the whole run's would be bigger (docs/guide.md, "Traces of big
// runs"). Both chrome://tracing and the Perfetto UI parse the whole trace in
// the browser: chrome://tracing reads a JSON trace up to about 256 MB, the
// Perfetto UI slowly up to about 1 GB; the Perfetto UI's in-browser trace
// processor holds about 2 GB, 2-4x a protobuf trace's size.
//
//   const TraceLimits limits = trace_limits_from_environment();
//   const TracePlan plan = plan_trace(run, metrics, options, steps_given,
//                                     TraceFormat::json, limits.json);
//   options.steps = plan.steps;   // what to write
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/step_selection.h"
#include "export/chrome_trace.h"
#include "export/summary_figures.h"
#include "export/trace_parts.h"
#include "model/option_words.h"
#include "model/run.h"

namespace pipescope {

inline constexpr std::uintmax_t kChromeTracingLimitBytes = 256ull << 20;
inline constexpr std::uintmax_t kPerfettoUiJsonLimitBytes = 1ull << 30;

/// The largest whole-run trace.json written by default: what chrome://tracing
/// opens (and the Perfetto UI loads in seconds).
inline constexpr std::uint64_t kJsonTraceLimitBytes = kChromeTracingLimitBytes;
/// The largest whole-run trace.pftrace written by default: a quarter of the
/// ~2 GB the Perfetto UI's in-browser trace processor typically has, at the
/// upper end of the 2-4x it takes per byte of a protobuf trace (ours are
/// small slices with several arguments each).
inline constexpr std::uint64_t kPerfettoTraceLimitBytes = 512ull << 20;

/// The environment variable that replaces the limits, "JSON,PFTRACE" in
/// bytes: for tests, which make a small run pass them.
inline constexpr const char* kTraceLimitVariable = "PIPESCOPE_TRACE_LIMIT_BYTES";

enum class TraceFormat { json, perfetto };

/// "trace.json", "trace.pftrace".
std::string_view trace_file_name(TraceFormat format);

struct TraceLimits {
  std::uint64_t json = kJsonTraceLimitBytes;
  std::uint64_t perfetto = kPerfettoTraceLimitBytes;

  std::uint64_t of(TraceFormat format) const {
    return format == TraceFormat::json ? json : perfetto;
  }
};

/// The default limits, or those of kTraceLimitVariable when it is set.
/// Throws std::invalid_argument, naming the variable, for a malformed value.
TraceLimits trace_limits_from_environment();

/// The bytes trace `format` of `options` would have (estimate_chrome_trace_bytes,
/// estimate_perfetto_trace_bytes).
std::uint64_t estimate_trace_bytes(const Run& run, const Metrics& metrics,
                                   const TraceOptions& options, TraceFormat format,
                                   TraceSampleSize sample = {});

/// How trace `format` measures itself by parts (trace_parts.h, "A trace's
/// size by parts"): measure_chrome_trace_frame and _part, or the Perfetto ones.
TraceMeasure trace_measure(TraceFormat format);

/// What one trace holds.
struct TracePlan {
  TraceFormat format = TraceFormat::json;
  StepSelection steps;
  /// Its summary.json `traces` entry; unset when it holds the whole run.
  std::optional<TraceFileFigures> figures;
  /// The whole run's trace estimated before writing (0 when --steps was
  /// given: nothing is estimated then), and the limit it was held to.
  std::uint64_t estimated_full_bytes = 0;
  std::uint64_t limit_bytes = 0;
  /// Over the limit, yet written whole: the run has no step to leave out
  /// (none at all, or no more than the default would keep).
  bool whole_over_limit = false;
};

/// What trace `format` holds. `options.steps` is the --steps selection and
/// `steps_given` whether --steps was given ("all" included): then exactly
/// those steps. Otherwise the whole run when its estimate is at most
/// `limit`; past it, the median-duration and the slowest complete step with
/// a step on each side (median_and_slowest_steps, with_neighbours), unless
/// that leaves nothing out.
TracePlan plan_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                     bool steps_given, TraceFormat format, std::uint64_t limit);

/// plan_trace's decision, the one both the single process and the ranks of
/// a partitioned run take (distributed/partitioned_traces.h): `metrics`
/// need only the windows; `estimate_whole` gives the bytes of the whole
/// run's trace (options.steps all) and is called only when --steps was not
/// given (by every rank alike: it may be a collective).
TracePlan plan_trace_with(const Metrics& metrics, const TraceOptions& options, bool steps_given,
                          TraceFormat format, std::uint64_t limit,
                          const std::function<std::uint64_t()>& estimate_whole);

/// The lines `analyze` prints on stderr (after "pipescope: ") before writing
/// the traces of `plans`: one for the traces held to their limit (which
/// steps they hold, why, and the advice of CallerOption::steps: how to write
/// everything), one warning for those over it yet written whole (why, and
/// the advice of CallerOption::devices). None when every trace holds what
/// was asked. The options are named in `words`.
std::vector<std::string> trace_plan_notes(const Metrics& metrics,
                                          const std::vector<TracePlan>& plans,
                                          const OptionWords& words = *OptionWords::engine());

/// What to tell the user about a JSON trace of `bytes` at `path`: empty when
/// it opens everywhere, else which viewers it is too big for and the options
/// that make it smaller (CallerOption::steps, devices, and perfetto unless
/// the protobuf trace was written too), named in `words`.
std::string chrome_trace_size_advice(const std::string& path, std::uintmax_t bytes,
                                     bool perfetto_written,
                                     const OptionWords& words = *OptionWords::engine());

}  // namespace pipescope
