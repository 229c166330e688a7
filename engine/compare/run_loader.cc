#include "compare/run_loader.h"

#include <fmt/format.h>

#include <filesystem>

#include "compare/run_from_summary.h"

namespace pipescope {

namespace {

namespace fs = std::filesystem;

bool is_json_file(const fs::path& p) {
  std::error_code ec;
  return p.extension() == ".json" && !fs::is_directory(p, ec);
}

// An `analyze` output folder: a summary.json and no worker log to scan.
bool is_summary_folder(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p, ec) || !fs::is_regular_file(p / "summary.json", ec)) return false;
  try {
    return discover_inputs({p.string()}).empty();
  } catch (const InputError&) {
    return true;
  }
}

}  // namespace

LoadedRun load_log_run(const std::string& path, const LoadOptions& options,
                       const std::string& devices) {
  if (is_json_file(path)) {
    throw InputError(fmt::format("{}: a summary has no jobs to draw; give the log folder", path));
  }
  LoadOptions load = options;
  const std::vector<InputFile> inputs =
      find_inputs({path}, devices, &load.discovery_notes, load.machine_order, *load.ingest.words);
  LoadedRun loaded = load_run(inputs, load);
  if (loaded.run.job_count() == 0) {
    throw InputError(fmt::format("{}: no job lines found in {} input file{} (looked for {})", path,
                                 inputs.size(), inputs.size() == 1 ? "" : "s",
                                 job_lines_looked_for(options.ingest, *options.ingest.words)));
  }
  return loaded;
}

RunFigures load_run_figures(const std::string& path, const LoadOptions& options,
                            const std::string& devices) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(fmt::format("no such file or folder: {}", path));
  if (is_json_file(path)) return read_summary_json(path);
  if (is_summary_folder(path)) return read_summary_json((fs::path(path) / "summary.json").string());
  LoadOptions load = options;
  const std::vector<InputFile> inputs =
      find_inputs({path}, devices, &load.discovery_notes, load.machine_order, *load.ingest.words);
  const LoadedRun loaded = load_run(inputs, load);
  if (loaded.run.job_count() == 0 && loaded.kernels.available) {
    // PyTorch traces without labels: compared by their kernel view, as
    // `analyze` writes their summary.
    return {
        kernel_run_figures(loaded.run, loaded.metrics, loaded.kernels, kernel_run_warnings(loaded)),
        path, "logs"};
  }
  if (loaded.run.job_count() == 0) {
    throw InputError(fmt::format("{}: no job lines found in {} input file{} (looked for {})", path,
                                 inputs.size(), inputs.size() == 1 ? "" : "s",
                                 job_lines_looked_for(options.ingest, *options.ingest.words)));
  }
  if (options.level != LoadLevel::full) {
    // The contract's figures, and the schedule as `analyze` detects it when
    // the load went that far.
    const ScheduleReport* schedule =
        options.level == LoadLevel::schedule ? &loaded.pipeline.schedule : nullptr;
    RunFigures f = figures_from_run(loaded.run, loaded.metrics, schedule, path);
    // The input warnings go with the figures (`check` refuses such runs).
    if (!loaded.input_warnings.empty()) f.warnings = warning_figures(loaded.input_warnings);
    return f;
  }
  // Every section, as in the summary `analyze` writes: the warnings (the
  // input warnings first, which `check` refuses), the stages `diff` compares.
  return figures_from_run(loaded.run, loaded.metrics, loaded.pipeline, path);
}

}  // namespace pipescope
