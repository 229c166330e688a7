// The human-readable result of `pipescope analyze`: aligned tables of
// devices, steps and inputs, the overall bubble ratio and the first
// diagnostics. Durations are printed from the integer nanoseconds
// ("12.345 ms", "1.234 s"); nothing is re-read from the logs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "model/run.h"

namespace pipescope {

struct ReportOptions {
  /// ANSI bold/colour escapes; callers enable it only for a terminal.
  bool color = false;
  /// When set, a "Pipeline" section follows the bubble ratio: schedule and
  /// ideal bubble, bubbles by kind, the longest bubbles, stages and the
  /// bottleneck, the critical path of the longest step, clocks and warnings.
  const PipelineAnalysis* pipeline = nullptr;
  /// What the report reads of the jobs (summary_figures.h): null, from `run`
  /// itself; a partitioned run's rank 0, which holds only some jobs, gives
  /// the run's (with `pipeline` then holding the whole-run figures, its
  /// critical_paths the longest complete step's).
  const SummaryJobFacts* facts = nullptr;
};

/// Writes the report to `out` (e.g. stdout). With more than 20 steps only the
/// first 10 and the last 5 are listed, with a line saying how many were left
/// out. Does not close or flush `out`.
void write_text_report(const Run& run, const Metrics& metrics, std::FILE* out,
                       const ReportOptions& options = {});

}  // namespace pipescope
