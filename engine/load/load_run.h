// The one way from input paths to an analysed run, used by every command that
// reads a run (analyze, check, diff, convert): discovery and the device
// selection, the ingest layer, then clock correction, the metric contract and
// the pipeline analysis, always in that order. Inputs that are unreadable
// or hold no job follow one rule for every command (load/input_rules.h):
// an unreadable input is refused unless allowed, a device without a job is
// left out of D, and the input warnings go with the run.
//
// Usage:
//   std::vector<InputFile> inputs = find_inputs({"logs/"}, "0-3");
//   LoadedRun loaded = load_run(inputs, options);
//   if (loaded.run.job_count() == 0) ...  // nothing to analyse: say so
//   use(loaded.metrics, loaded.pipeline);
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/kernel_view.h"
#include "analysis/pipeline.h"
#include "ingest/ingest.h"
#include "load/event_setup.h"
#include "load/input_rules.h"
#include "scan/job_line_regex.h"

namespace pipescope {

/// How much of the analysis load_run does after reading.
enum class LoadLevel {
  /// Everything `analyze` reports: clock correction, the metric contract on
  /// corrected times and the whole pipeline analysis.
  full,
  /// The metric contract and the detected schedule exactly as `full`
  /// computes them (the same clock correction, stage map and roles:
  /// analysis/pipeline.h, analyze_schedule), without the rest of the
  /// pipeline analysis. What a comparison of contract figures and
  /// schedules needs (compare/run_loader.h).
  schedule,
  /// The metric contract only, on the times as logged: no clock correction
  /// and no pipeline analysis (`convert` writes records with the logged
  /// times; reading them back corrects the clocks as for the logs).
  metrics,
  /// Only what comes before the analysis: the input rules, the bad
  /// timestamps, the clock steps and the launch segments (the one asked for
  /// kept). No figures, and no short_device warning (it needs them): the
  /// run as the analysis would receive it (distributed/partitioned_load.h
  /// builds the same by parts).
  prelude,
};

struct LoadOptions {
  IngestOptions ingest;
  PipelineOptions pipeline;
  LoadLevel level = LoadLevel::full;
  /// Unreadable inputs, rank-layout checks (input_rules.h).
  InputRules inputs;
  /// Analyse one launch segment only (analysis/launch_segments.h): its
  /// LaunchSegment::index, or kLastSegment. Unset: every segment.
  std::optional<int> segment;
  /// The number of the run's first step when the inputs print none (Paddle
  /// dygraph records have no step numbers: steps count from 0 otherwise).
  /// Overrides the inputs' own `Schedule Profiler start at step N`.
  std::optional<std::int64_t> first_step;
  /// What discovery said of the folders it did not read (find_inputs'
  /// `notes`): reported first among the input warnings.
  std::vector<Warning> discovery_notes;
  /// The machines' order, by name (order_machines); empty: as found.
  std::vector<std::string> machine_order;
  /// The log-event library (load/event_setup.h): its matcher, which
  /// `ingest.events` points to while the inputs are read, or why events are
  /// off.
  EventSetup events;
  /// The --job-line regex (scan/job_line_regex.h) that `ingest.job_line`
  /// points to while the inputs are read; null: Paddle's job lines.
  std::shared_ptr<const JobLineRegex> job_line;
};

inline constexpr int kLastSegment = -1;

/// "last" or a segment index ("0", "1", ...) as LoadOptions::segment wants
/// it. Throws std::invalid_argument for anything else.
int parse_segment_choice(std::string_view text);

/// What the reading and the load prelude leave of a run, before its
/// figures: the part load_run and the partitioned load
/// (distributed/partitioned_load.h LocalLoad) share.
struct LoadedInputs {
  Run run;
  /// The input warnings (input_rules.h), at every level.
  std::vector<Warning> input_warnings;
  /// What the launch segments show (`relaunch`, `launch_signal_ignored`),
  /// at every level; with LoadLevel::full also in `pipeline.warnings`, after
  /// the input warnings.
  std::vector<Warning> launch_warnings;
  /// Every segment found, before a selection (LoadOptions::segment) kept one.
  std::vector<LaunchSegment> all_segments;
};

struct LoadedRun : LoadedInputs {
  /// The contract's figures (on corrected times unless LoadLevel::metrics).
  Metrics metrics;
  /// Full: the whole analysis, its warnings beginning with input_warnings.
  /// LoadLevel::schedule: only the stage map, roles, schedule, dependencies
  /// and clock report (no warnings). LoadLevel::metrics: empty.
  PipelineAnalysis pipeline;
  /// The kernel view of the PyTorch traces' GPU activities (Run::kernels),
  /// at every level; unavailable for inputs without any.
  KernelView kernels;
};

/// The warnings of a run analysed by its kernels alone (PyTorch traces
/// without job labels): the input warnings less `empty_input` (traces
/// without jobs are empty only to the job analysis), then the kernel view's.
std::vector<Warning> kernel_run_warnings(const LoadedRun& loaded);

/// discover_inputs(), order_machines() by `machine_order` and, when
/// `devices` is not empty, select_devices();
/// the folders not read are said in `notes` when given (pass them on as
/// LoadOptions::discovery_notes). Throws InputError, naming the options in
/// `words`.
std::vector<InputFile> find_inputs(const std::vector<std::string>& paths,
                                   const std::string& devices = {},
                                   std::vector<Warning>* notes = nullptr,
                                   const std::vector<std::string>& machine_order = {},
                                   const OptionWords& words = *OptionWords::engine());

/// Reads `inputs` and analyses them. A run without a single job is returned
/// with no figures: the caller says so in its own words. Throws InputError
/// for an unreadable input (unless options.inputs allows it, input_rules.h),
/// std::invalid_argument for a bad stage map or imposed clock offset, or a
/// segment the run does not have.
LoadedRun load_run(const std::vector<InputFile>& inputs, const LoadOptions& options);

/// The same for a run read and merged elsewhere (rank 0 of `analyze --mpi`):
/// `run` as ingest_inputs() returns it, one device per input; everything
/// after reading (the input rules included) is done exactly as above.
LoadedRun load_run(Run run, const LoadOptions& options);

}  // namespace pipescope
