// The figures of one run that `check` and `diff` compare, whatever they were
// read from: worker logs or record files (through the same scan and metrics as
// `analyze`) or a summary.json written earlier. They are summary.json's own
// figures (export/summary_figures.h), so both sources fill the same fields
// the same way, plus where they came from.
//
// From logs, every section is computed as `analyze` computes it, with the
// same options; a run loaded at LoadLevel::schedule (load/load_run.h) has
// only the contract's figures and the schedule `analyze` detects. Nothing
// here analyses again. From a summary, each section is there when the file
// has it.
//
// Usage:
//   RunFigures base = load_run_figures("base/summary.json");   // compare/run_loader.h
//   RunFigures cur  = figures_from_run(loaded.run, loaded.metrics, loaded.pipeline, "logs/");
#pragma once

#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "model/run.h"

namespace pipescope {

struct RunFigures : SummaryFigures {
  /// The path given, and what it was: "logs" or "summary".
  std::string source;
  std::string origin;
};

/// The contract's figures of a run (summary_figures) and, when `schedule` is
/// not null, the "schedule" section of that detection report (a run loaded
/// at LoadLevel::schedule). A summary's are read by compare/run_from_summary.h.
RunFigures figures_from_run(const Run& run, const Metrics& metrics, const ScheduleReport* schedule,
                            std::string source);

/// Every section, as `analyze` writes them (the stages and bubbles `diff`
/// compares included): from a run loaded with its pipeline analysis.
RunFigures figures_from_run(const Run& run, const Metrics& metrics,
                            const PipelineAnalysis& pipeline, std::string source);

}  // namespace pipescope
