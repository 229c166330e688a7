#include "load/load_run.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace pipescope {

std::vector<InputFile> find_inputs(const std::vector<std::string>& paths,
                                   const std::string& devices) {
  std::vector<InputFile> inputs = discover_inputs(paths);
  if (!devices.empty()) inputs = select_devices(std::move(inputs), parse_device_list(devices));
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

}  // namespace

LoadedRun analyse_run(Run run, const LoadOptions& options) {
  LoadedRun loaded;
  loaded.run = std::move(run);
  // The input rules first: nothing is analysed (or written) from a run with
  // an unreadable input, and D never counts a device without a job.
  refuse_unreadable(loaded.run, options.inputs);
  if (options.inputs.check_layout) loaded.input_warnings = check_rank_layout(loaded.run);
  for (QualityWarning& w : leave_out_devices(loaded.run)) {
    loaded.input_warnings.push_back(std::move(w));
  }
  if (loaded.run.job_count() == 0) return loaded;
  if (options.metrics_only) {
    loaded.metrics = compute_metrics(loaded.run);
    for (QualityWarning& w : check_short_devices(loaded.run, loaded.metrics,
                                                 one_stage_per_device(loaded.run.devices.size()))) {
      loaded.input_warnings.push_back(std::move(w));
    }
    return loaded;
  }
  // Clock correction shifts machines' job times, so it runs before the
  // contract's metrics, which are then computed on corrected times.
  AnalyzedRun analyzed;
  try {
    analyzed = analyze_run(loaded.run, options.pipeline);
  } catch (const std::invalid_argument& e) {
    if (loaded.run.left_out.empty()) throw;
    throw std::invalid_argument(e.what() + left_out_note(loaded.run));
  }
  loaded.metrics = std::move(analyzed.metrics);
  loaded.pipeline = std::move(analyzed.pipeline);
  for (QualityWarning& w :
       check_short_devices(loaded.run, loaded.metrics, loaded.pipeline.stages)) {
    loaded.input_warnings.push_back(std::move(w));
  }
  std::vector<QualityWarning>& warnings = loaded.pipeline.warnings;
  warnings.insert(warnings.begin(), loaded.input_warnings.begin(), loaded.input_warnings.end());
  return loaded;
}

LoadedRun load_run(const std::vector<InputFile>& inputs, const LoadOptions& options) {
  return analyse_run(ingest_inputs(inputs, options.ingest), options);
}

}  // namespace pipescope
