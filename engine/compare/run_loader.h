// Loads one run for `check` and `diff`, from any of the forms a user has at
// hand, into comparable RunFigures:
//   - a `.json` file: a summary.json written by `analyze` (summary_reader.h);
//   - a folder or file of worker logs/records: discovered, scanned and
//     measured exactly as `analyze` does with its default options
//     (discover_inputs, scan_worker_logs, correct_run_clocks,
//     compute_metrics), so both commands see the same figures;
//   - a folder without worker logs that holds a summary.json (an `analyze`
//     output folder): that summary.
//
// Throws InputError (path and reason) when nothing can be loaded, including a
// log run without any job line.
#pragma once

#include <string>

#include "compare/run_figures.h"

namespace pipescope {

struct LoadOptions {
  /// Scan threads for log inputs; 0 = one per core.
  unsigned threads = 0;
};

RunFigures load_run_figures(const std::string& path, const LoadOptions& options = {});

/// A log run loaded for drawing (the HTML report needs the jobs): the model
/// and its metrics. Throws like load_run_figures; a summary path is refused.
struct LoadedRun {
  Run run;
  Metrics metrics;
};
LoadedRun load_log_run(const std::string& path, const LoadOptions& options = {});

}  // namespace pipescope
