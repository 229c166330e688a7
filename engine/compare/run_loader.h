// Loads one run for `check` and `diff`, from any of the forms a user has at
// hand, into comparable RunFigures:
//   - a `.json` file: a summary.json written by `analyze` (summary_reader.h);
//   - a folder or file of worker logs/records: loaded and analysed exactly as
//     `analyze` does with the same input options (load/load_run.h: the
//     device selection, stage map, clock options, job patterns, ...), so
//     both commands see the same figures;
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

/// `options` as for load_run (at LoadLevel::schedule or ::metrics, only the
/// sections that level computes: figures_from_run) and `devices` (a device
/// list such as "0-3", empty for all) as for find_inputs; both are ignored
/// for a summary, whose figures are taken as written.
RunFigures load_run_figures(const std::string& path, const LoadOptions& options = {},
                            const std::string& devices = {});

/// A log run loaded for drawing (the HTML report needs the jobs): the model
/// and its analysis. Throws like load_run_figures; a summary path is refused.
LoadedRun load_log_run(const std::string& path, const LoadOptions& options = {},
                       const std::string& devices = {});

}  // namespace pipescope
