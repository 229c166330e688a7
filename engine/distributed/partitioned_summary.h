// summary.json of a partitioned run (docs/formats.md, "summary.json"), byte
// for byte what the single process writes for the same inputs, written by
// rank 0 while no rank holds more than its part of the jobs or of the step
// rows.
//
// Every rank calls, after load_partitioned and analyze_partitioned,
//   write_partitioned_summary(exchange, load, mine, load_options.pipeline, path, traces);
// In this order it then
//   1. gathers the small facts the whole-run figures read of the jobs
//      (summary_figures.h SummaryJobFacts): each device's job count and
//      compute jobs in steps, every type's count and total duration (integer
//      sums), the jobs the longest bubbles and the longest critical path
//      name (from the rank that read their device, by whole-run index) and
//      each longest bubble's inherent share (from the owner of its step);
//   2. compares the devices the stage map's checks compare (stage_map.h
//      stage_check_pairs: the guess, or a given map's contradictions), every
//      rank a range of every such device's job indices (one all-to-all of
//      those jobs, once), and gathers each range's evidence, merged in order:
//      exact, as one process compares the whole devices;
//   3. on rank 0: the final warnings as load_run lists them (input warnings,
//      short devices, launch warnings, data quality, pipeline_tail_warnings)
//      and the whole-run figures (summary_figures with SummaryRows::none);
//   4. every rank renders its steps' rows of each step list; rank 0 writes
//      the document and, at each list, the ranks' pieces in rank order, each
//      sent alone to rank 0 (one all-to-all per list and rank, empty but for
//      that rank's piece), so rank 0 holds one piece at a time.
#pragma once

#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "distributed/exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "export/summary_figures.h"

namespace pipescope::distributed {

/// Rank 0's whole-run view, for the text report (text_report.h): the
/// pipeline analysis as summary.json reads it (warnings complete, per-step
/// results left out, critical_paths the longest complete step's) and the
/// facts of the jobs. Empty on the other ranks.
struct WholeRunView {
  PipelineAnalysis pipeline;
  SummaryJobFacts facts;
};

/// See the header. `load` is the rank's LocalLoad after analyze_partitioned
/// ran on load.run (its clocks corrected when the analysis corrected them),
/// `analysis` what it returned; `options` the pipeline options of the
/// analysis (the warnings name its labels); `traces` the "traces" entries
/// (read on rank 0). Rank 0 writes `path` atomically; the folder must exist.
/// The events section (few beside the jobs, and every rank holds every
/// device's events from the files' headers) is placed and written whole by
/// rank 0. Throws what write_summary_json throws (rank 0), and what the
/// exchange throws when another rank fails.
WholeRunView write_partitioned_summary(Exchange& exchange, const LocalLoad& load,
                                       const PartitionedAnalysis& analysis,
                                       const PipelineOptions& options, const std::string& path,
                                       const std::vector<TraceFileFigures>& traces = {});

}  // namespace pipescope::distributed
