#include "load/load_run.h"

#include <utility>

namespace pipescope {

std::vector<InputFile> find_inputs(const std::vector<std::string>& paths,
                                   const std::string& devices) {
  std::vector<InputFile> inputs = discover_inputs(paths);
  if (!devices.empty()) inputs = select_devices(std::move(inputs), parse_device_list(devices));
  return inputs;
}

LoadedRun analyse_run(Run run, const LoadOptions& options) {
  LoadedRun loaded;
  loaded.run = std::move(run);
  if (loaded.run.job_count() == 0) return loaded;
  if (options.metrics_only) {
    loaded.metrics = compute_metrics(loaded.run);
    return loaded;
  }
  // Clock correction shifts machines' job times, so it runs before the
  // contract's metrics, which are then computed on corrected times.
  AnalyzedRun analyzed = analyze_run(loaded.run, options.pipeline);
  loaded.metrics = std::move(analyzed.metrics);
  loaded.pipeline = std::move(analyzed.pipeline);
  return loaded;
}

LoadedRun load_run(const std::vector<InputFile>& inputs, const LoadOptions& options) {
  return analyse_run(ingest_inputs(inputs, options.ingest), options);
}

}  // namespace pipescope
