// The human-readable result of `pipescope analyze`: the overall bubble ratio
// and why, then aligned tables of devices, steps and inputs and the first
// diagnostics. Durations are printed from the integer nanoseconds
// ("12.345 ms", "1.234 s"); nothing is re-read from the logs.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "model/option_words.h"
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
  /// Every row of every table. Otherwise a table of more than 64 rows
  /// (devices, inputs, stages) shows its first 16 and last 8 rows and those
  /// beyond 3 MADs of their column (export/table_rows.h), and the steps
  /// their first 10 and last 5 of more than 20.
  bool all_rows = false;
  /// How the notes of the rows left out name the option that lists them all
  /// (CallerOption::all_rows). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

/// Writes the report to `out` (e.g. stdout): the headline (devices, jobs,
/// steps; why; the bubble ratio) first, then the tables. Folded tables say
/// how many rows were left out. The longest bubbles are listed once per stage
/// and time, peers folded with their count (analysis/bubbles.h,
/// fold_peer_bubbles). Does not close or flush `out`.
void write_text_report(const Run& run, const Metrics& metrics, std::FILE* out,
                       const ReportOptions& options = {});

}  // namespace pipescope
