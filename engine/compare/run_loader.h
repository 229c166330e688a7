// Loads one run for `check` and `diff`, from any of the forms a user has at
// hand, into comparable RunFigures:
//   - a `.json` file: a summary.json written by `analyze` (summary_reader.h);
//   - a folder or file of worker logs/records: loaded and analysed exactly as
//     `analyze` does with its default options (load/load_run.h), so both
//     commands see the same figures;
//   - a folder without worker logs that holds a summary.json (an `analyze`
//     output folder): that summary.
//
// Throws InputError (path and reason) when nothing can be loaded, including a
// log run without any job line or with an unreadable input. The input
// warnings of a log run (load/input_rules.h) are its figures' `warnings`.
#pragma once

#include <string>

#include "compare/run_figures.h"
#include "load/load_run.h"

namespace pipescope {

/// `options` as for load_run (ingest threads; the analysis defaults are
/// `analyze`'s); ignored for a summary.
RunFigures load_run_figures(const std::string& path, const LoadOptions& options = {});

/// A log run loaded for drawing (the HTML report needs the jobs): the model
/// and its analysis. Throws like load_run_figures; a summary path is refused.
LoadedRun load_log_run(const std::string& path, const LoadOptions& options = {});

}  // namespace pipescope
