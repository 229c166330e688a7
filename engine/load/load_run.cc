#include "load/load_run.h"

#include <fmt/format.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

#include "analysis/bad_timestamps.h"
#include "analysis/clock_steps.h"
#include "analysis/launch_segments.h"
#include "load/load_prelude.h"
#include "model/errors.h"
#include "numeric/units.h"

namespace pipescope {

int parse_segment_choice(std::string_view text) {
  if (text == "last") return kLastSegment;
  int value = 0;
  bool ok = !text.empty() && text.size() <= 9;
  for (const char c : text) {
    if (c < '0' || c > '9') ok = false;
    if (ok) value = value * 10 + (c - '0');
  }
  if (!ok) {
    throw std::invalid_argument(
        fmt::format("'{}' is not a segment: give its index (0, 1, ...) or last", text));
  }
  return value;
}

std::vector<InputFile> find_inputs(const std::vector<std::string>& paths,
                                   const std::string& devices, std::vector<Warning>* notes,
                                   const std::vector<std::string>& machine_order,
                                   const OptionWords& words) {
  std::vector<InputFile> inputs =
      order_machines(discover_inputs(paths, notes), machine_order, words);
  if (!devices.empty()) {
    inputs = select_devices(std::move(inputs), parse_device_list(devices), words);
  }
  return inputs;
}

namespace {

/// "; left out: device 3 (logs/workerlog.3, empty_input)": said with a stage
/// map the run no longer fits because devices were left out.
std::string left_out_note(const Run& run) {
  if (run.left_out.empty()) return {};
  std::string note = "; left out of the analysed devices:";
  for (const LeftOutDevice& d : run.left_out) {
    note += fmt::format(" device {} ({}, {})", d.device, d.path, d.reason);
  }
  return note;
}

std::int64_t first_job_start(const Run& run) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max();
  for (const Device& d : run.devices) {
    if (!d.jobs.empty()) first = std::min(first, d.jobs.front().start_ns);
  }
  return first;
}

/// Finds the launch segments, says what they show, and keeps the one asked
/// for (LoadOptions::segment).
void split_segments(LoadedRun& loaded, std::optional<int> wanted,
                    std::optional<std::int64_t> first_step) {
  Run& run = loaded.run;
  SegmentOptions segment_options;
  segment_options.first_step = first_step;
  const std::vector<IgnoredLaunchSignal> ignored = split_launch_segments(run, segment_options);
  loaded.all_segments = run.segments;
  std::vector<std::int64_t> starts(run.segments.size(), std::numeric_limits<std::int64_t>::max());
  for (const Device& device : run.devices) {
    for (std::size_t s = 0; s < starts.size(); ++s) {
      const auto [first, last] = device.segment_jobs(s);
      if (first < last) starts[s] = std::min(starts[s], device.jobs[first].start_ns);
    }
  }
  loaded.launch_warnings = launch_warnings(ignored, run.segments, first_job_start(run), starts);
  if (!wanted) return;
  select_launch_segment(run, segment_position(*wanted, run.segments.size()));
}

}  // namespace

std::vector<Warning> kernel_run_warnings(const LoadedRun& loaded) {
  std::vector<Warning> warnings;
  for (const Warning& w : loaded.input_warnings) {
    if (w.code != WarningCode::empty_input) warnings.push_back(w);
  }
  for (const Warning& w : loaded.kernels.warnings) warnings.push_back(w);
  return warnings;
}

LoadedRun load_run(Run run, const LoadOptions& options) {
  // The analysis runs its independent parts as oneTBB tasks, on as many
  // threads as reading was given (IngestOptions::threads; 0: one per core).
  const unsigned threads = options.ingest.threads > 0
                               ? options.ingest.threads
                               : static_cast<unsigned>(tbb::info::default_concurrency());
  tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism, threads);
  LoadedRun loaded;
  loaded.run = std::move(run);
  // The input rules first: nothing is analysed (or written) from a run with
  // an unreadable input, and D never counts a device without a job.
  refuse_unreadable(loaded.run, options.inputs);
  refuse_unplaced(loaded.run);
  refuse_duplicate_inputs(loaded.run);
  refuse_separate_runs(loaded.run);
  if (options.first_step) loaded.run.first_step = options.first_step;
  loaded.input_warnings = options.discovery_notes;
  if (options.inputs.check_layout) {
    for (Warning& w : check_rank_layout(loaded.run)) loaded.input_warnings.push_back(std::move(w));
  }
  for (Warning& note : loaded.run.notes) loaded.input_warnings.push_back(note);
  // Untimed jobs (start and end 0) have no place in time: out before
  // anything reads the jobs, so a device of only those is an empty one.
  {
    std::vector<UntimedJobs> untimed(loaded.run.devices.size());
    tbb::parallel_for(std::size_t{0}, loaded.run.devices.size(), [&](std::size_t d) {
      untimed[d] = leave_out_untimed_jobs(loaded.run.devices[d], loaded.run.types);
    });
    if (auto w = untimed_jobs_warning(loaded.run, untimed)) {
      loaded.input_warnings.push_back(std::move(*w));
    }
  }
  for (Warning& w : leave_out_devices(loaded.run)) {
    loaded.input_warnings.push_back(std::move(w));
  }
  place_traces_by_rank(loaded.run);
  loaded.kernels =
      compute_kernel_view(loaded.run.kernels, {options.pipeline.clock.fix, options.pipeline.words});
  if (!loaded.kernels.refusal.empty()) throw InputError(loaded.kernels.refusal);
  if (loaded.run.job_count() == 0) return loaded;
  // One job stamped decades away (a clock read as 0) would open a segment of
  // its own and stretch a window over the years: left out, and said.
  if (const auto bad = leave_out_bad_timestamps(loaded.run); !bad.empty()) {
    loaded.input_warnings.push_back(
        bad_timestamp_warning(loaded.run.devices[bad.front().device], bad.front(), bad.size()));
  }
  // A clock that jumped mid-run would split steps and make relaunches: undone
  // first, so that everything after reads one clock per machine.
  if (options.pipeline.clock.fix) {
    loaded.run.clock_steps = undo_clock_steps(loaded.run, {});
    for (const ClockStep& step : loaded.run.clock_steps) {
      loaded.input_warnings.push_back(
          clock_step_warning(loaded.run, step, first_job_start(loaded.run)));
    }
  }
  split_segments(loaded, options.segment, options.first_step);
  if (options.level == LoadLevel::prelude) return loaded;
  if (options.level == LoadLevel::metrics) {
    loaded.metrics = compute_metrics(loaded.run);
    for (Warning& w : check_short_devices(loaded.run, loaded.metrics,
                                          one_stage_per_device(loaded.run.devices.size()))) {
      loaded.input_warnings.push_back(std::move(w));
    }
    return loaded;
  }
  // Clock correction shifts machines' job times, so it runs before the
  // contract's metrics, which are then computed on corrected times.
  AnalyzedRun analyzed;
  try {
    analyzed = options.level == LoadLevel::schedule ? analyze_schedule(loaded.run, options.pipeline)
                                                    : analyze_run(loaded.run, options.pipeline);
  } catch (const std::invalid_argument& e) {
    if (loaded.run.left_out.empty()) throw;
    throw std::invalid_argument(e.what() + left_out_note(loaded.run));
  }
  loaded.metrics = std::move(analyzed.metrics);
  loaded.pipeline = std::move(analyzed.pipeline);
  for (Warning& w : check_short_devices(loaded.run, loaded.metrics, loaded.pipeline.stages)) {
    loaded.input_warnings.push_back(std::move(w));
  }
  if (options.level == LoadLevel::schedule) return loaded;
  std::vector<Warning>& warnings = loaded.pipeline.warnings;
  warnings.insert(warnings.begin(), loaded.launch_warnings.begin(), loaded.launch_warnings.end());
  warnings.insert(warnings.begin(), loaded.input_warnings.begin(), loaded.input_warnings.end());
  return loaded;
}

LoadedRun load_run(const std::vector<InputFile>& inputs, const LoadOptions& options) {
  IngestOptions ingest = options.ingest;
  if (ingest.events == nullptr && options.events.matcher)
    ingest.events = options.events.matcher.get();
  if (ingest.events_off == EventsOff::none) ingest.events_off = options.events.off;
  return load_run(ingest_inputs(inputs, ingest), options);
}

}  // namespace pipescope
