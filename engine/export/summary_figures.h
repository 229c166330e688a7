// Everything summary.json holds (schema "pipescope.summary/1", docs/formats.md,
// "summary.json"), as plain values: the one structure the writer serializes
// (summary_json.h), the reader parses back (summary_reader.h) and `check` and
// `diff` compare (compare/run_figures.h). Each struct's keys, their order and
// what their absence means are listed once, in summary_fields.h, which the
// writer and the reader both visit. A member added here does not let the
// round-trip test (tests/export/summary_roundtrip_test.cc) compile until the
// test sets it, and fails it until its key is in that list.
//
// The figures are computed once from an analysed run; nothing here looks at
// the logs again:
//   SummaryFigures f = summary_figures(run, metrics, analysis);
//   write_summary_json(f, "out/summary.json");
//   assert(read_summary_figures("out/summary.json") == f);
//
// The lists with a row per step (steps, bubbles.steps, critical_path.steps,
// events.steps and events.outliers) are built by summary_step_rows.h, which
// computes them for any step range: the partitioned analysis writes them by
// range (summary_json.h).
//
// Members are named like their JSON keys and in the JSON's order (where not,
// summary_fields.h says where it goes). "schema" and "tool" are not figures:
// the writer stamps them and the reader checks the schema.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "analysis/kernel_view.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "model/run.h"

namespace pipescope {

/// The schema the writer stamps; the reader accepts it and any 1.N minor version.
inline constexpr std::string_view kSummarySchema = "pipescope.summary/1";

// --- the metric contract's sections ------------------------------------------

struct DeviceFigures {
  int device = 0;  ///< global device index (the key runs are matched on)
  int machine = 0;
  std::string machine_name;
  int rank = 0;
  std::string path;
  std::int64_t jobs = 0;
  std::int64_t steps = 0;  ///< steps detected on this device
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  double utilization = 0;
  /// Idle time inside comm jobs that no other job overlaps (part of idle_ns);
  /// written after "idle_ns". Always set from a run; absent from a summary
  /// written before the field.
  std::optional<std::int64_t> comm_ns;

  friend bool operator==(const DeviceFigures&, const DeviceFigures&) = default;
};

struct StepDeviceFigures {
  int device = 0;  ///< global device index
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  std::optional<std::int64_t> comm_ns;  ///< as DeviceFigures::comm_ns

  friend bool operator==(const StepDeviceFigures&, const StepDeviceFigures&) = default;
};

struct StepFigures {
  std::int64_t step = 0;
  int segment = 0;       ///< the launch segment's index (segments[].index)
  bool complete = true;  ///< false: left out of every total, ratio and the gate
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t duration_ns = 0;
  double bubble_ratio = 0;
  std::vector<StepDeviceFigures> devices;

  friend bool operator==(const StepFigures&, const StepFigures&) = default;
};

/// One launch of the training program (model/run.h LaunchSegment), with
/// the steps found in it.
struct SegmentFigures {
  int index = 0;  ///< 0-based, in time order among all found
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t first_step = 0;
  bool numbered_by_line = false;  ///< first_step is N of its step-start lines
  std::int64_t steps = 0;
  std::int64_t complete_steps = 0;
  std::string found_by;            ///< "" (the first), step_start_line, restart_after_gap
  std::vector<std::string> files;  ///< inputs with a job in it

  friend bool operator==(const SegmentFigures&, const SegmentFigures&) = default;
};

struct JobTypeFigures {
  std::string type;
  std::string kind;  ///< forward, backward, optimizer, comm, lr, other
  std::int64_t jobs = 0;
  /// Σ job durations (`diff` shows their mean). Always set from a run;
  /// absent from a summary written before the field existed.
  std::optional<std::int64_t> total_ns;

  friend bool operator==(const JobTypeFigures&, const JobTypeFigures&) = default;
};

struct InputFigures {
  std::string path;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t matched = 0;
  std::uint64_t malformed = 0;
  std::uint64_t oversized = 0;
  std::uint64_t partial_last_line_bytes = 0;
  std::string error;  ///< written only when not empty

  friend bool operator==(const InputFigures&, const InputFigures&) = default;
};

struct DiagnosticFigures {
  std::string path;
  std::uint64_t line = 0;
  std::string message;

  friend bool operator==(const DiagnosticFigures&, const DiagnosticFigures&) = default;
};

/// A device read but left out of the analysis (model/run.h LeftOutDevice):
/// not in `devices`, not in D. "left_out" is written only when not empty.
struct LeftOutFigures {
  int device = 0;  ///< global device index
  int machine = 0;
  std::string machine_name;
  int rank = 0;
  std::string path;
  std::string reason;  ///< "empty_input" or "unreadable_input"

  friend bool operator==(const LeftOutFigures&, const LeftOutFigures&) = default;
};

// --- the pipeline sections (analysis/pipeline.h) -------------------------------

struct ScheduleFigures {
  std::string name;  ///< "1F1B", "VPP", "ZBH1", ... or "unknown"
  bool exact = false;
  int stages = 0;         ///< P
  int micro_batches = 0;  ///< M
  int chunks = 0;         ///< V
  std::int64_t steps_examined = 0;
  std::int64_t steps_agreeing = 0;
  std::int64_t mean_forward_ns = 0;
  std::int64_t mean_backward_ns = 0;
  std::int64_t mean_weight_ns = 0;
  double measured_bubble_ratio = 0;
  std::optional<double> ideal_bubble_ratio;  ///< null for unknown
  std::optional<double> excess_bubble_ratio;
  /// The family (analysis/schedule_table.h: "1f1b", "zero-bubble", ...);
  /// "" for unknown. Read from an older summary without it: derived from name.
  std::string family;
  /// The frameworks' lists it equals ("PaddlePaddle static 1F1B = PyTorch
  /// 1F1B"); "" when none is named.
  std::string frameworks;

  friend bool operator==(const ScheduleFigures&, const ScheduleFigures&) = default;
};

/// Durations of one pipeline role's jobs on one stage.
struct RoleDurationFigures {
  std::string role;  ///< the JSON key: forward, backward, weight, optimizer, comm, other
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t mean_ns = 0;
  std::int64_t median_ns = 0;
  std::int64_t p95_ns = 0;
  std::int64_t max_ns = 0;

  friend bool operator==(const RoleDurationFigures&, const RoleDurationFigures&) = default;
};

/// A stage's load, known when the bottleneck analysis covered the stage.
struct StageLoadFigures {
  std::int64_t compute_per_step_ns = 0;
  std::vector<RoleDurationFigures> jobs;  ///< roles with jobs, in role order

  friend bool operator==(const StageLoadFigures&, const StageLoadFigures&) = default;
};

struct StageFigures {
  std::int64_t stage = 0;
  std::vector<int> devices;              ///< global device indices
  std::optional<StageLoadFigures> load;  ///< "compute_per_step_ns" and "jobs"

  friend bool operator==(const StageFigures&, const StageFigures&) = default;
};

/// How the devices form stages and replicas (analysis/layout.h).
struct LayoutFigures {
  std::int64_t pp = 0;
  std::int64_t dp = 0;
  std::int64_t tp = 0;
  std::string order;     ///< "dp,pp,tp": the mesh's axes, outermost first
  std::string method;    ///< detected, given, stages, none
  std::string evidence;  ///< what it was found from
  std::string reason;    ///< method none: why no mesh fits

  friend bool operator==(const LayoutFigures&, const LayoutFigures&) = default;
};

/// One data-parallel replica's own figures (analysis/replicas.h).
struct ReplicaFigures {
  std::int64_t replica = 0;
  std::vector<std::int64_t> devices;  ///< global device indices
  std::int64_t complete_steps = 0;
  std::int64_t step_ns = 0;  ///< mean complete step
  std::int64_t total_window_ns = 0;
  double bubble_ratio = 0;
  std::int64_t slowest_stage = -1;
  double imbalance = 0;
  bool slowest = false;  ///< the replica that bounds the run's step

  friend bool operator==(const ReplicaFigures&, const ReplicaFigures&) = default;
};

struct StagesFigures {
  std::string source;  ///< device, tp, list, auto
  std::vector<StageFigures> list;

  friend bool operator==(const StagesFigures&, const StagesFigures&) = default;
};

/// Idle time by bubble kind ("fill_ns", "interior_ns", "drain_ns"), and the
/// same idle time split into the part the detected schedule makes
/// unavoidable and the excess (analysis/bubble_split.h): inherent + excess =
/// fill + interior + drain. Both null when the schedule has no job list;
/// absent from a summary written before they existed.
struct BubbleSplitFigures {
  std::int64_t fill_ns = 0;
  std::int64_t interior_ns = 0;
  std::int64_t drain_ns = 0;
  std::optional<std::int64_t> inherent_ns;
  std::optional<std::int64_t> excess_ns;

  friend bool operator==(const BubbleSplitFigures&, const BubbleSplitFigures&) = default;
};

struct DeviceBubbleFigures {
  int device = 0;            ///< global device index
  BubbleSplitFigures split;  ///< its three fields, beside "device"

  friend bool operator==(const DeviceBubbleFigures&, const DeviceBubbleFigures&) = default;
};

struct StepBubbleFigures {
  std::int64_t step = 0;
  std::vector<DeviceBubbleFigures> devices;

  friend bool operator==(const StepBubbleFigures&, const StepBubbleFigures&) = default;
};

/// A job beside a bubble ("before"/"after").
struct BubbleJobFigures {
  std::string type;  ///< "?" for an unknown type id
  std::int64_t micro_batch = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  friend bool operator==(const BubbleJobFigures&, const BubbleJobFigures&) = default;
};

struct LongBubbleFigures {
  int device = 0;
  std::int64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t length_ns = 0;
  std::string kind;  ///< fill, interior, drain
  /// Its parts: its device-step's inherent time shared among that
  /// device-step's bubbles in proportion to their lengths (rounded down),
  /// and the rest. Written after "length_ns"; null as BubbleSplitFigures'.
  std::optional<std::int64_t> inherent_ns;
  std::optional<std::int64_t> excess_ns;
  std::optional<BubbleJobFigures> before;  ///< null at the start of a step
  std::optional<BubbleJobFigures> after;   ///< null at the end

  friend bool operator==(const LongBubbleFigures&, const LongBubbleFigures&) = default;
};

struct BubblesFigures {
  BubbleSplitFigures total;  ///< its three fields, at the top of "bubbles"
  std::int64_t idle_ns = 0;  ///< fill + interior + drain
  std::vector<DeviceBubbleFigures> devices;
  std::vector<StepBubbleFigures> steps;
  std::vector<LongBubbleFigures> longest;

  friend bool operator==(const BubblesFigures&, const BubblesFigures&) = default;
};

struct BottleneckFigures {
  int slowest_stage = -1;
  std::int64_t slowest_compute_per_step_ns = 0;
  std::int64_t mean_compute_per_step_ns = 0;
  double imbalance = 0;

  friend bool operator==(const BottleneckFigures&, const BottleneckFigures&) = default;
};

struct PathStageFigures {
  std::int64_t stage = 0;
  std::int64_t ns = 0;
  double share = 0;

  friend bool operator==(const PathStageFigures&, const PathStageFigures&) = default;
};

struct PathStepFigures {
  std::int64_t step = 0;
  std::int64_t duration_ns = 0;
  std::int64_t jobs = 0;
  std::int64_t lead_in_ns = 0;
  std::int64_t wait_ns = 0;
  std::vector<PathStageFigures> stages;

  friend bool operator==(const PathStepFigures&, const PathStepFigures&) = default;
};

struct PathJobFigures {
  int device = 0;
  int stage = 0;
  std::string type;
  std::int64_t micro_batch = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t wait_ns = 0;
  bool via_dependency = false;

  friend bool operator==(const PathJobFigures&, const PathJobFigures&) = default;
};

struct LongestPathFigures {
  std::int64_t step = 0;
  std::vector<PathJobFigures> jobs;

  friend bool operator==(const LongestPathFigures&, const LongestPathFigures&) = default;
};

struct CriticalPathFigures {
  std::vector<PathStepFigures> steps;
  std::optional<LongestPathFigures> longest_step;  ///< null without steps

  friend bool operator==(const CriticalPathFigures&, const CriticalPathFigures&) = default;
};

struct ClockPieceFigures {
  std::int64_t from_ns = 0;
  std::int64_t offset_ns = 0;

  friend bool operator==(const ClockPieceFigures&, const ClockPieceFigures&) = default;
};

struct MachineClockFigures {
  int machine = 0;
  std::string name;
  std::int64_t estimate_ns = 0;
  std::int64_t offset_ns = 0;
  std::vector<ClockPieceFigures> pieces;  ///< with clock steps only

  friend bool operator==(const MachineClockFigures&, const MachineClockFigures&) = default;
};

struct MachinePairFigures {
  int machine_a = 0;  ///< "machines": [a, b]
  int machine_b = 0;
  std::uint64_t dependencies = 0;
  std::uint64_t violations_before = 0;
  std::uint64_t violations_after = 0;
  std::optional<std::int64_t> lower_ns;  ///< null: unbounded
  std::optional<std::int64_t> upper_ns;
  std::uint64_t beyond_noise_before = 0;  ///< violations by more than the noise
  std::uint64_t beyond_noise_after = 0;

  friend bool operator==(const MachinePairFigures&, const MachinePairFigures&) = default;
};

struct ClockFigures {
  std::string method;
  bool applied = false;
  std::uint64_t dependencies = 0;
  std::uint64_t violations_before = 0;
  std::uint64_t violations_after = 0;
  std::vector<MachineClockFigures> machines;
  std::vector<MachinePairFigures> pairs;
  std::int64_t noise_ns = 0;  ///< the threshold of a violation that counts as skew
  std::uint64_t beyond_noise_before = 0;
  std::uint64_t beyond_noise_after = 0;
  std::string reason;  ///< why clocks with violations were left as read

  friend bool operator==(const ClockFigures&, const ClockFigures&) = default;
};

/// A warning as summary.json holds it (model/warning.h Warning): the code by
/// its name, for a summary may come from a version that knows other codes.
struct WarningFigures {
  std::string code;
  std::string message;
  int device = -1;
  int stage = -1;
  std::uint64_t count = 0;

  friend bool operator==(const WarningFigures&, const WarningFigures&) = default;
};

// --- the kernel view (analysis/kernel_view.h) ---------------------------------

/// One window's four-way split; the parts add up to window_ns. transfer and
/// wait are null when NCCL kernels without peers ran (their split is not
/// known; window − compute − idle is still their sum).
struct KernelSplitFigures {
  std::int64_t window_ns = 0;
  std::int64_t compute_ns = 0;
  std::optional<std::int64_t> transfer_ns;
  std::optional<std::int64_t> wait_ns;
  std::int64_t idle_ns = 0;

  friend bool operator==(const KernelSplitFigures&, const KernelSplitFigures&) = default;
};

struct KernelStepFigures {
  std::int64_t step = 0;
  bool complete = false;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;

  friend bool operator==(const KernelStepFigures&, const KernelStepFigures&) = default;
};

struct KernelRankStepFigures {
  std::int64_t step = 0;
  bool complete = false;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  KernelSplitFigures split;
  std::optional<std::int64_t> most_waited_on;  ///< null: the rank did not wait

  friend bool operator==(const KernelRankStepFigures&, const KernelRankStepFigures&) = default;
};

struct KernelRankFigures {
  int device = 0;
  int global_rank = 0;
  std::string rank_source;            ///< RankSource's name: where global_rank came from
  std::optional<std::int64_t> stage;  ///< null: no layout found
  std::string path;
  KernelSplitFigures split;  ///< over the complete steps
  std::optional<std::int64_t> most_waited_on;
  std::vector<KernelRankStepFigures> steps;

  friend bool operator==(const KernelRankFigures&, const KernelRankFigures&) = default;
};

struct KernelMachineClockFigures {
  int machine = 0;
  std::int64_t offset_ns = 0;
  std::uint64_t pairs = 0;

  friend bool operator==(const KernelMachineClockFigures&,
                         const KernelMachineClockFigures&) = default;
};

/// The pipeline layout the NCCL kernels show.
struct KernelLayoutFigures {
  std::string source;  ///< "process_group" or "point_to_point"
  std::string group;   ///< the pipeline group's description, for process_group
  int pp = 0;
  int dp = 0;

  friend bool operator==(const KernelLayoutFigures&, const KernelLayoutFigures&) = default;
};

/// The cross-machine clock rule of the kernel view (traces of several machines).
struct KernelClockFigures {
  bool applied = false;
  std::int64_t noise_ns = 0;
  std::vector<KernelMachineClockFigures> machines;

  friend bool operator==(const KernelClockFigures&, const KernelClockFigures&) = default;
};

struct KernelViewFigures {
  bool step_spans = false;
  std::uint64_t gpu_activities = 0;
  std::uint64_t without_launch = 0;
  std::uint64_t comm_kernels = 0;
  std::uint64_t comm_kernels_without_peers = 0;
  KernelSplitFigures split;  ///< over ranks and complete steps
  double bubble_ratio = 0;
  double idle_share = 0;
  std::optional<double> wait_share;  ///< null where the split is not known
  std::optional<double> transfer_share;
  std::vector<KernelStepFigures> steps;
  std::vector<KernelRankFigures> ranks;
  std::optional<KernelClockFigures> clock;    ///< only for traces of several machines
  std::optional<KernelLayoutFigures> layout;  ///< only when found

  friend bool operator==(const KernelViewFigures&, const KernelViewFigures&) = default;
};

/// The "kernel_view" section of a computed kernel view (nullopt when
/// unavailable).
std::optional<KernelViewFigures> kernel_view_figures(const KernelView& view);

// --- the whole summary -------------------------------------------------------

/// One named capture of a log event's pattern.
struct EventCaptureFigures {
  std::string name;
  std::string value;

  friend bool operator==(const EventCaptureFigures&, const EventCaptureFigures&) = default;
};

/// One log event (docs/guide.md, "Log events").
struct EventFigures {
  int device = 0;  ///< global device index
  std::string id;
  std::string category;
  std::string severity;
  std::int64_t time_ns = 0;
  /// From the start of its step's window (negative: before it).
  std::int64_t offset_ns = 0;
  /// The line had no timestamp: the time of the dated line before it.
  bool approximate = false;
  std::string path;
  std::int64_t line = 0;
  std::vector<EventCaptureFigures> captures;

  friend bool operator==(const EventFigures&, const EventFigures&) = default;
};

/// The events of one step: in its window, and in the gap before it.
struct EventStepFigures {
  std::int64_t step = 0;
  std::vector<EventFigures> before;
  std::vector<EventFigures> events;
  /// Events of the step not listed (past kEventsListedPerStep).
  std::int64_t more = 0;

  friend bool operator==(const EventStepFigures&, const EventStepFigures&) = default;
};

struct EventCountFigures {
  std::string name;  ///< the JSON key: a category
  std::int64_t count = 0;

  friend bool operator==(const EventCountFigures&, const EventCountFigures&) = default;
};

struct EventKindFigures {
  std::string id;
  std::string category;
  std::string severity;
  std::int64_t count = 0;

  friend bool operator==(const EventKindFigures&, const EventKindFigures&) = default;
};

/// A step whose window or bubble is an outlier, and the events with it.
struct EventOutlierFigures {
  std::int64_t step = 0;
  std::int64_t extra_ns = 0;
  double bubble_ratio = 0;
  bool slow = false;
  bool bubble = false;
  std::int64_t events = 0;
  std::string text;

  friend bool operator==(const EventOutlierFigures&, const EventOutlierFigures&) = default;
};

/// The log events of a run of text logs.
struct EventsFigures {
  /// Why none was looked for ("" when events were on; then only this key).
  std::string off;
  std::int64_t patterns = 0;  ///< entries of the library used
  std::int64_t total = 0;
  std::int64_t approximate = 0;
  std::int64_t unplaced = 0;
  std::vector<EventCountFigures> categories;  ///< by category name
  std::vector<EventKindFigures> kinds;        ///< kinds with events, by id
  std::vector<EventStepFigures> steps;        ///< steps with events, in step order
  std::vector<EventFigures> after_last;
  std::vector<EventOutlierFigures> outliers;
  /// Median window and bubble ratio of the complete steps (the outliers' reference).
  std::int64_t median_window_ns = 0;
  double median_bubble_ratio = 0;

  friend bool operator==(const EventsFigures&, const EventsFigures&) = default;
};

/// Events listed per step in summary.json (the rest are counted in `more`).
inline constexpr std::size_t kEventsListedPerStep = 100;

/// A trace file that holds only some of the run's steps, and why (the
/// `traces` object, keyed by file name); a trace written whole has none.
struct TraceFileFigures {
  std::string file;  ///< "trace.json" or "trace.pftrace": the key
  /// "size_limit": the whole run's trace would pass limit_bytes, so the
  /// median-duration and the slowest complete step were written, each with
  /// a step on each side (export/trace_size.h); "steps_option": --steps
  /// named them.
  std::string reason;
  /// The steps written, as --steps reads them: "9-11,41-43", or "0:9-11"
  /// with several launch segments.
  std::string steps;
  /// With "size_limit": the two steps chosen (labels as in `steps`), the
  /// whole run's trace estimated before writing, and the limit it passed.
  std::string median_step;
  std::string slowest_step;
  std::int64_t estimated_full_bytes = 0;
  std::int64_t limit_bytes = 0;

  friend bool operator==(const TraceFileFigures&, const TraceFileFigures&) = default;
};

/// A registered figure's value (export/figure_registry.h): a count or a
/// duration in integer ns, or a ratio.
using FigureNumber = std::variant<std::int64_t, double>;

/// One entry of the "figures" object: a figure registered at run time,
/// under its key, in the registry's order.
struct NamedFigure {
  std::string key;
  FigureNumber value;

  friend bool operator==(const NamedFigure&, const NamedFigure&) = default;
};

struct SummaryFigures {
  std::int64_t jobs = 0;
  std::int64_t first_step = 0;
  double bubble_ratio = 0;
  std::int64_t total_window_ns = 0;
  /// Run::time_resolution_ns: 1000000 for inputs of whole milliseconds (Paddle
  /// dygraph records), whose jobs shorter than a few ms are quantised; 0 (and
  /// absent from the file) when the inputs are as fine as they logged.
  std::int64_t time_resolution_ns = 0;
  /// Σ over devices and complete steps of comm_ns; absent from an older summary.
  std::optional<std::int64_t> comm_ns;
  std::vector<DeviceFigures> devices;
  std::vector<StepFigures> steps;
  /// Steps that are not complete (steps[].complete false).
  std::int64_t incomplete_steps = 0;
  /// The launch segments analysed (one without a relaunch); absent from a
  /// summary written before they existed.
  std::vector<SegmentFigures> segments;
  std::vector<JobTypeFigures> job_types;  ///< sorted by type
  std::vector<InputFigures> inputs;
  std::vector<DiagnosticFigures> diagnostics;
  std::vector<LeftOutFigures> left_out;

  // The pipeline sections: all set when the run was analysed as a pipeline
  // (`analyze` always does), none otherwise.
  std::optional<LayoutFigures> layout;
  std::optional<ScheduleFigures> schedule;
  std::optional<StagesFigures> stages;
  /// Each replica's figures, when the layout has several (dp > 1).
  std::vector<ReplicaFigures> replicas;
  std::optional<BubblesFigures> bubbles;
  std::optional<BottleneckFigures> bottleneck;
  std::optional<CriticalPathFigures> critical_path;
  std::optional<ClockFigures> clock;
  std::optional<std::vector<WarningFigures>> warnings;
  /// Why a run has no pipeline sections: "none: kernel-level trace ..." for
  /// traces without job labels, analysed by their kernels only.
  std::string no_jobs;
  /// The kernel view, for PyTorch traces (with or without job labels).
  std::optional<KernelViewFigures> kernel_view;
  /// The log events of text logs; unset for runs without text inputs.
  std::optional<EventsFigures> events;
  /// The traces written that hold only some steps (by file name).
  std::vector<TraceFileFigures> traces;
  /// The figures registered at run time that have no member above
  /// (export/figure_registry.h), in the registry's order; absent when none.
  std::vector<NamedFigure> figures;

  friend bool operator==(const SummaryFigures&, const SummaryFigures&) = default;
};

/// One registered figure's part (export/figure_registry.h): computed from
/// the jobs of some steps, combined with the parts of the other steps, in
/// the encoding its registry row gives.
struct FigurePart {
  std::string key;
  std::string bytes;

  friend bool operator==(const FigurePart&, const FigurePart&) = default;
};

/// What the figures read of the run's jobs beyond the analysis's results:
/// each device's job count, the registered figures' parts (the job count
/// and the job types among them), and the few jobs (and bubble shares) the
/// longest bubbles and the longest critical path name. One process takes
/// them from its run (summary_job_facts); the partitioned analysis combines
/// them across ranks, each rank adding what its jobs and steps hold
/// (distributed/partitioned_summary.h). Every other figure comes from the
/// run's devices (no job read), the metrics and the pipeline analysis.
struct SummaryJobFacts {
  std::vector<std::int64_t> device_jobs;  ///< by position in Run::devices
  /// The run's jobs: Σ device_jobs.
  std::int64_t jobs() const {
    std::int64_t n = 0;
    for (const std::int64_t d : device_jobs) n += d;
    return n;
  }
  /// Every registered figure's part, combined over the whole run, in the
  /// registry's order (figure_registry.h place_figures reads them).
  std::vector<FigurePart> figures;
  /// One per entry of BubbleSummary::longest.
  struct LongBubble {
    std::optional<Job> before;  ///< its job_before, when it names one
    std::optional<Job> after;
    std::optional<std::int64_t> inherent_ns;  ///< bubble_inherent_ns
  };
  std::vector<LongBubble> longest_bubbles;
  /// The jobs of the longest complete step's critical path
  /// (longest_complete_path), in its order.
  std::vector<Job> longest_path_jobs;
};

/// The facts of a run that holds all its jobs; `pipeline` (null: none) for
/// the jobs its longest bubbles and path name.
SummaryJobFacts summary_job_facts(const Run& run, const Metrics& metrics,
                                  const PipelineAnalysis* pipeline);

/// The longest bubbles a report lists, one per stage and time (peers
/// folded): the analysis's folded list, or where it has none (a partitioned
/// run's rank 0) its plain list folded.
std::vector<FoldedBubble> report_longest_bubbles(const PipelineAnalysis& pipeline);

/// What a report names of `bubble`, a group's bubble of
/// report_longest_bubbles: the jobs it sits between and its inherent share,
/// as summary.json gives them (the facts' entry) when it is one of the
/// analysis's longest; else read from `run`, which then holds every job.
SummaryJobFacts::LongBubble long_bubble_facts(const Run& run, const Metrics& metrics,
                                              const SummaryJobFacts& facts,
                                              const PipelineAnalysis& pipeline,
                                              const Bubble& bubble);

/// The path of the longest complete step among `paths` (the first of equal
/// windows), or null: the critical_path section's longest_step.
const CriticalPath* longest_complete_path(const Metrics& metrics,
                                          const std::vector<CriticalPath>& paths);

/// Whether the figures hold their step lists (summary_step_rows.h).
enum class SummaryRows : unsigned char {
  all,   ///< every step's rows, from the metrics and the analysis
  none,  ///< none: the partitioned writer serves them by range
};

/// The figures of a run and its contract metrics, without the pipeline
/// sections. Metrics computed for another run (or none) leave a device's
/// totals at 0 rather than failing.
SummaryFigures summary_figures(const Run& run, const Metrics& metrics);

/// The `events` section: unset when the run read no text log (and events
/// were on), `off` alone when events were off.
std::optional<EventsFigures> events_figures(const Run& run, const Metrics& metrics);

/// The same plus the pipeline sections of `pipeline`, computed on `run` and
/// `metrics`.
SummaryFigures summary_figures(const Run& run, const Metrics& metrics,
                               const PipelineAnalysis& pipeline);

/// The same from the facts of the run's jobs (`run`'s devices are read for
/// their places only, `pipeline` for its whole-run figures): with
/// SummaryRows::none the step lists stay empty and the pipeline's per-step
/// results are not read (the bubbles' per_step, the split's inherent rows,
/// the critical paths but the longest), nor the log events (the section is
/// set only for events that were off).
SummaryFigures summary_figures(const Run& run, const Metrics& metrics,
                               const PipelineAnalysis* pipeline, const SummaryJobFacts& facts,
                               SummaryRows rows);

/// Jobs and their total duration of one type (the job_types figure's part,
/// by TypeId).
struct TypeJobSums {
  std::int64_t jobs = 0;
  std::int64_t total_ns = 0;
};

/// Jobs (and their total duration) per type with at least one job, from the
/// sums by TypeId, sorted by type name: type ids follow the order importers
/// met the names in, which parallel reading does not fix.
std::vector<JobTypeFigures> job_type_figures(const TypeTable& types,
                                             std::span<const TypeJobSums> sums);

/// The "warnings" entries of `warnings`: each code by its name.
std::vector<WarningFigures> warning_figures(const std::vector<Warning>& warnings);

/// The "schedule" section of a detection report.
ScheduleFigures schedule_figures(const ScheduleReport& report);

/// The summary of PyTorch traces without job labels (docs/guide.md, "The
/// kernel view"): the run's figures (inputs, diagnostics) with the contract's
/// top-level figures taken from the kernel view — `bubble_ratio`,
/// `total_window_ns`, `first_step`, `devices[]` (one per rank: busy = compute,
/// idle = window − compute, comm_ns = NCCL transfer + wait), `steps[]` (the
/// kernel windows, their bubble ratio over ranks) — so that `check` and
/// `diff` compare such runs like any other; plus `no_jobs`, `kernel_view`
/// and `warnings`.
SummaryFigures kernel_run_figures(const Run& run, const Metrics& metrics, const KernelView& view,
                                  const std::vector<Warning>& warnings);

/// The `no_jobs` text of such a summary.
inline constexpr std::string_view kNoJobsKernelTrace =
    "none: kernel-level trace (no PP: labels), so no schedule, stages, bubbles, critical path or "
    "whatif; see kernel_view";

}  // namespace pipescope
