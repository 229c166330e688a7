// The HTML report of a partitioned run (partitioned_analysis.h), written by
// rank 0 while no rank holds more than its part of the jobs: rank 0 receives
// the jobs of the steps the report draws (and the few around them that its
// walks read), never the run's. The report is the single process's with
// HtmlOptions::embed_drawn_only (its interactive timeline embeds the drawn
// steps only), byte for byte.
//
// Every rank calls, after gather_whole_run_facts, with the same options:
//   write_partitioned_html(exchange, load, mine, facts, options, path);
// In this order:
//   1. the owner of each drawn step (options.steps) sends every rank, for
//      each device, the whole-run indices [first, last) of the jobs the
//      report reads for the step: its own jobs, the jobs that overlap its
//      window, the busy jobs its edge bubbles name (as step_partition.h
//      gives a part that owned the step alone) and one job on each side;
//      and rank 0 the step's device figures and split row;
//   2. every rank sends rank 0 the jobs of those ranges whose step it owns,
//      each with its step and its producer (dependencies.h), in rounds of
//      bounded bytes (job_rounds.h);
//   3. rank 0 asks for what a walk of the report would read beyond them:
//      where a range ends on a comm job, the jobs on to the next compute job
//      (a recv's data, a send's consumer); the producer a job of the ranges
//      depends on, with the job after it (a recv's peer send); until nothing
//      is missing (one request and one answer a round, a job asked once);
//   4. rank 0 renders the report (export/html_report.h) over that view: the
//      run's devices and log events with the jobs received, the whole run's
//      windows with the drawn steps' figures, the whole-run analysis with the
//      view's dependencies and split rows, and the whole run's job facts
//      (job count, registered figures, the longest bubbles' jobs).
// The log events are placed as write_partitioned_summary places them (on
// the windows, from every device's events, which rank 0 holds).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "distributed/exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "export/html_report.h"
#include "export/summary_figures.h"
#include "model/run.h"

namespace pipescope::distributed {

/// Rank 0's view of the drawn steps (steps 1-3 of the header).
struct HtmlView {
  /// The run's devices (place, events), types, segments and event kinds,
  /// with the jobs received, in start order.
  Run run;
  /// The whole run's windows, segments, totals and ratios; the drawn steps'
  /// device figures; `job_step` of the jobs received.
  Metrics metrics;
  /// The whole-run analysis (partitioned_analysis.h `pipeline` on rank 0)
  /// without what grows with the run, with the dependencies among the jobs
  /// received and the drawn steps' split rows.
  PipelineAnalysis pipeline;
  /// job_index[d][i]: the whole-run index of run.devices[d].jobs[i].
  JobIndices job_index;
};

/// Steps 1-3 of the header: the view on rank 0, an empty one elsewhere.
/// `drawn` are indices into the metrics' steps, the same on every rank.
/// Throws WireError for a message that does not decode, and what the
/// exchange throws when another rank fails.
HtmlView gather_html_view(Exchange& exchange, const LocalLoad& load,
                          const PartitionedAnalysis& analysis,
                          const std::vector<std::size_t>& drawn);

/// See the header. `options` as the single process's (its steps the drawn
/// ones; its pipeline, kernels, facts and events are set here); `facts` is
/// what gather_whole_run_facts returned. Rank 0 writes `path` atomically
/// (its folder must exist): throws std::system_error there when it cannot,
/// and what gather_html_view throws.
void write_partitioned_html(Exchange& exchange, const LocalLoad& load,
                            const PartitionedAnalysis& analysis, const SummaryJobFacts& facts,
                            const HtmlOptions& options, const std::string& path);

}  // namespace pipescope::distributed
