// The in-memory model every importer writes and every analysis reads: the
// devices of one training run, their jobs, and what was read to find them.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/gpu_activity.h"
#include "model/job.h"
#include "model/log_event.h"
#include "model/warning.h"

namespace pipescope {

/// A `Schedule Profiler start at step N` line of a device's input: where a
/// launch of the training program began profiling. A log that a relaunch
/// appended to holds one per launch.
struct StepStartLine {
  /// 1-based line in the input; 0 for a record file's header.
  std::uint64_t line = 0;
  std::int64_t step = 0;
  /// The start of a profiling window, not of a launch: the rank's next trace
  /// of a PyTorch profiler schedule with repeat (its ProfilerStep#N).
  bool window = false;

  friend bool operator==(const StepStartLine&, const StepStartLine&) = default;
};

/// What showed that a segment is a new launch (LaunchSegment::found_by);
/// launch_signal_name gives its summary.json word.
enum class LaunchSignal : std::uint8_t {
  none,               ///< "": the run's first segment
  step_start_line,    ///< a `Schedule Profiler start` line after jobs
  restart_after_gap,  ///< the schedule starting over mid-step after a gap
  /// A rank's next trace of a profiler schedule with repeat: a window of
  /// the same launch.
  profiler_window,
};

/// "", "step_start_line", "restart_after_gap", "profiler_window".
std::string_view launch_signal_name(LaunchSignal signal);

/// One launch of the training program, as found in the logs (a crash and
/// relaunch appends a second launch to the same logs): no step spans two.
/// analysis/launch_segments.h finds them and docs/guide.md ("Launches and
/// segments") says how.
struct LaunchSegment {
  /// 0-based, in time order among all the segments found (kept when one is
  /// selected, so segment 1 stays segment 1).
  int index = 0;
  /// The number of the segment's first step: N of its `Schedule Profiler
  /// start at step N` lines (the smallest) when its devices printed one;
  /// else the step after the previous segment's last (0 for the first).
  std::int64_t first_step = 0;
  /// Whether a step-start line gave `first_step`.
  bool numbered_by_line = false;
  /// What showed that the segment is a new launch (none for the first).
  LaunchSignal found_by = LaunchSignal::none;
  /// Where, for a person: "workerlog.0:1234" items, at most a few.
  std::vector<std::string> evidence;
};

/// One GPU (one rank's worker log).
struct Device {
  /// Global device index: machines in order, ranks in order within each.
  int index = 0;
  /// Machine ordinal (0-based, in discovery order).
  int machine = 0;
  /// The machine's folder name (`machine3`), empty for a single-machine layout.
  std::string machine_name;
  /// Rank within the machine, from `workerlog.N`.
  int rank = 0;
  /// The file the jobs came from.
  std::string path;
  /// After Run::finalize(): sorted by job_start_order.
  JobVector jobs;
  /// The input's `Schedule Profiler start at step N` lines, in line order.
  std::vector<StepStartLine> step_starts;
  /// Index into `jobs` of the first job of each of Run::segments (one entry
  /// per segment; equal entries for a segment without a job of this
  /// device). Empty: every job is in the one segment.
  std::vector<std::size_t> segment_begin;
  /// Where the device's input was cut (a trace a crash cut short, whose GPU
  /// activities past this time were lost): a step counts as left by this
  /// device only when one of its later steps began before this time
  /// (docs/guide.md, "Complete step"). kNotCut: nothing was lost.
  std::int64_t cut_ns = kNotCut;
  /// The log events of the device's input (model/log_event.h), in line
  /// order; their kinds index Run::event_kinds.
  std::vector<LogEvent> events;
  static constexpr std::int64_t kNotCut = std::numeric_limits<std::int64_t>::max();

  /// Jobs [first, last) of `segment` (without segment_begin: all of them
  /// in segment 0, none in any other).
  std::pair<std::size_t, std::size_t> segment_jobs(std::size_t segment) const;
};

/// Whether an input gave the base its times count from.
enum class TimeBase : std::uint8_t {
  /// The format states none (worker logs: absolute times), or the input
  /// holds no job.
  not_stated,
  /// The input gave it.
  given,
  /// The format states one, but this input has none (a trace cut before it,
  /// or written by a profiler that omits it): its times are as written.
  missing,
};

/// What reading one input file found; reported in the summary.
struct InputStats {
  std::string path;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  /// Lines the prefilter selected and the grammar accepted as job lines.
  std::uint64_t matched = 0;
  /// Lines the prefilter selected but the grammar rejected (skipped).
  std::uint64_t malformed = 0;
  /// Lines longer than the reader's limit (skipped unread).
  std::uint64_t oversized = 0;
  /// Set when the file could not be read at all (or stopped being readable),
  /// or when its compressed data or records are damaged (what was decoded
  /// before the damage is kept).
  std::string error;
  /// Bytes of a last line without its '\n' (a file still being written, or
  /// cut off): counted in `lines` and `bytes`, never parsed, not an error.
  std::uint64_t partial_last_line_bytes = 0;
  /// The file could not be opened, or reading it failed (an I/O error, not
  /// damaged content): what was read of it cannot be trusted to be the run's.
  /// load_run refuses such an input, or leaves its device out (docs/guide.md,
  /// "Missing, unreadable and empty ranks").
  bool unreadable = false;
  /// Where the input's times count from, for formats that state it (a
  /// PyTorch trace's `baseTimeNanoseconds`): load_run refuses an input whose
  /// base was lost while other inputs have theirs.
  TimeBase time_base = TimeBase::not_stated;
  /// Its format makes jobs of user annotations (a profiler trace's ranges,
  /// by label or job pattern) rather than of log lines: what a run without
  /// a job says it looked for.
  bool job_annotations = false;
};

/// A problem found in one line of one input (a skipped line), kept for the
/// report: `path:line: message`.
struct Diagnostic {
  std::string path;
  /// 1-based line, or 0 for a problem of the whole file.
  std::uint64_t line = 0;
  std::string message;

  /// "path:line" or, for a whole-file problem, "path".
  std::string location() const;
};

/// A device whose input was read but is not analysed (load/input_rules.h):
/// it is not in Run::devices, so not in D; its input keeps its InputStats.
struct LeftOutDevice {
  /// The device's place (Device::index, machine, machine_name, rank, path).
  int device = 0;
  int machine = 0;
  std::string machine_name;
  int rank = 0;
  std::string path;
  /// Why: "empty_input" (no job at all) or "unreadable_input" (an I/O error;
  /// left out only when the caller allows it), the name of its warning; or
  /// "not_in_segment" (no job in the launch segment kept, no warning).
  std::string reason;
};

/// A jump of one machine's clock mid-run (analysis/clock_steps.h), undone
/// when the run was loaded.
struct ClockStep {
  int machine = 0;
  /// Where the jump happened, on the run's (corrected) time axis: the start
  /// of the machine's first job after it.
  std::int64_t at_ns = 0;
  /// How far the clock jumped: negative when it was stepped back.
  std::int64_t size_ns = 0;
  /// The machine's jobs after it, whose times were moved back by size_ns.
  std::uint64_t jobs = 0;

  friend bool operator==(const ClockStep&, const ClockStep&) = default;
};

/// Interns job type names so each Job stores a small id.
class TypeTable {
 public:
  TypeId intern(std::string_view name);
  const std::string& name(TypeId id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, TypeId> ids_;
};

struct Run {
  TypeTable types;
  /// The analysed devices in global device order. Device::index is the global
  /// index (a label: with a --devices selection it may have gaps); analyses
  /// index their per-device results by position in this vector.
  std::vector<Device> devices;
  /// One entry per input file, in discovery order.
  std::vector<InputStats> inputs;
  /// `Schedule Profiler start at step N`, when some input printed it.
  std::optional<std::int64_t> first_step;
  /// The first few problems of each input (see LogScanOptions), in input order.
  std::vector<Diagnostic> diagnostics;
  /// Devices read but not analysed, in input order (load_run decides).
  std::vector<LeftOutDevice> left_out;
  /// The launches found in the logs (analysis/launch_segments.h), in time
  /// order. Empty: one launch, numbered from `first_step`.
  std::vector<LaunchSegment> segments;
  /// The coarsest resolution of the input times, in ns, where the format
  /// fixes it (1'000'000: Paddle dygraph records hold whole milliseconds, so
  /// jobs shorter than a few ms are quantised); 0: as fine as each input
  /// logged it (worker logs, .ivl records).
  std::int64_t time_resolution_ns = 0;
  /// Readers' findings about the inputs as a whole (e.g. records of several
  /// pipelines, of which one is analysed), in input order; load_run reports
  /// them as input warnings.
  std::vector<Warning> notes;
  /// The clock steps found and undone (load_run), in machine, then time order.
  std::vector<ClockStep> clock_steps;
  /// The GPU activities of every PyTorch trace that has any, in input order
  /// (the kernel view: analysis/kernel_view.h); kept with or without jobs,
  /// and for traces whose devices hold no job.
  std::vector<RankKernels> kernels;
  /// The event library the text inputs were matched against (empty when
  /// events were off); Device::events index it.
  std::vector<EventKind> event_kinds;
  /// Why no event was looked for, when none was ("" when events were on):
  /// a build without Hyperscan, or the caller turned them off; the sentence
  /// of events_off_reason (model/events_off.h), made once by the reader.
  std::string events_off;

  std::uint64_t job_count() const;
  /// Sorts every device's jobs into start order.
  void finalize();
};

}  // namespace pipescope
