// summary.json of a partitioned run (docs/formats.md, "summary.json"), byte
// for byte what the single process writes for the same inputs, written by
// rank 0 while no rank holds more than its part of the jobs or of the step
// rows.
//
// Every rank calls, after load_partitioned and analyze_partitioned,
//   SummaryJobFacts facts = gather_whole_run_facts(exchange, load, mine, load_options.pipeline);
//   write_partitioned_summary(exchange, load, mine, facts, path, traces);
// The first
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
//   3. on rank 0: makes the analysis's warnings the run's final list, as
//      load_run lists them (input warnings, short devices, launch warnings,
//      data quality, pipeline_tail_warnings).
// So rank 0 then holds the whole-run view the outputs read (the analysis's
// `pipeline` and the facts), and can say the warnings before anything is
// written. The second
//   4. makes the whole-run figures on rank 0 (summary_figures with
//      SummaryRows::none); every rank renders its steps' rows of each step
//      list; rank 0 writes the document and, at each list, the ranks' pieces
//      in rank order, each sent alone to rank 0 (one all-to-all per list and
//      rank, empty but for that rank's piece), so rank 0 holds one piece at
//      a time.
#pragma once

#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "distributed/exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "export/summary_figures.h"

namespace pipescope::distributed {

/// Steps 1-3 of the header. `load` is the rank's LocalLoad after
/// analyze_partitioned ran on load.run (its clocks corrected when the
/// analysis corrected them), `analysis` what it returned, `options` the
/// pipeline options of the analysis (the warnings name its labels). Returns
/// the facts of the jobs on rank 0 (empty elsewhere), where
/// analysis.pipeline.warnings becomes the run's whole list. Throws what the
/// exchange throws when another rank fails.
SummaryJobFacts gather_whole_run_facts(Exchange& exchange, const LocalLoad& load,
                                       PartitionedAnalysis& analysis,
                                       const PipelineOptions& options);

/// Step 4. `facts` is what gather_whole_run_facts returned; `traces` the
/// "traces" entries (read on rank 0). Rank 0 writes `path` atomically; the
/// folder must exist. The events section (few beside the jobs, and every
/// rank holds every device's events from the files' headers) is placed and
/// written whole by rank 0. Throws what write_summary_json throws (rank 0),
/// and what the exchange throws when another rank fails.
void write_partitioned_summary(Exchange& exchange, const LocalLoad& load,
                               const PartitionedAnalysis& analysis, const SummaryJobFacts& facts,
                               const std::string& path,
                               const std::vector<TraceFileFigures>& traces = {});

}  // namespace pipescope::distributed
