#include "compare/run_loader.h"

#include <fmt/format.h>

#include <filesystem>

#include "analysis/pipeline.h"
#include "compare/summary_reader.h"
#include "scan/log_scanner.h"
#include "source/discovery.h"

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

LoadedRun load_log_run(const std::string& path, const LoadOptions& options) {
  if (is_json_file(path)) {
    throw InputError(fmt::format("{}: a summary has no jobs to draw; give the log folder", path));
  }
  const std::vector<InputFile> inputs = discover_inputs({path});
  ScanOptions scan;
  scan.threads = options.threads;
  LoadedRun loaded{scan_worker_logs(inputs, scan), {}};
  if (loaded.run.job_count() == 0) {
    throw InputError(fmt::format(
        "{}: no job lines found in {} input file{} (looked for lines containing 'Profiler Info: "
        "Job')",
        path, inputs.size(), inputs.size() == 1 ? "" : "s"));
  }
  // As in `analyze`: machines' clocks are corrected before the metrics.
  correct_run_clocks(loaded.run, PipelineOptions{});
  loaded.metrics = compute_metrics(loaded.run);
  return loaded;
}

RunFigures load_run_figures(const std::string& path, const LoadOptions& options) {
  if (is_json_file(path)) return read_summary_json(path);
  if (is_summary_folder(path)) return read_summary_json((fs::path(path) / "summary.json").string());
  const LoadedRun loaded = load_log_run(path, options);
  return figures_from_run(loaded.run, loaded.metrics, path);
}

}  // namespace pipescope
