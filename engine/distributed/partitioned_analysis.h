// The analysis partitioned across ranks (docs/guide.md, "Running on a
// cluster"; CONTRIBUTING.md, "Make a figure partitionable"): every rank
// starts with the devices it read, ends owning a contiguous range of steps
// across every device, and no rank ever holds more than its part of the jobs.
//
// Every rank calls
//   PartitionedAnalysis mine = analyze_partitioned(exchange, local, options);
// where `local` is the run as this rank read it: every device of the run in
// Run order (index, machine, path, cut), with the jobs only of the devices
// whose files this rank read (each device is read whole by one rank), types
// interned alike on every rank, finalized, its launch segments set. In this
// order it then
//   1. numbers each of its devices' steps (metric_parts.h, step 1) and
//      gathers every device's counts: the segments and the steps;
//   2. gathers every device's step edges: the windows, on every rank;
//   3. gathers the jobs per step and cuts the steps into one range per rank,
//      balanced by jobs (step_partition.h);
//   4. sends every job to the ranks that need it (its step's owner, and the
//      ranks whose windows it overlaps or neighbours): one all-to-all;
//   5. marks the complete steps (the owners answer the job-count questions
//      of the segments' last steps) and computes its windows' busy, idle and
//      comm; the totals are integer sums, added on every rank.
// What it returns are the whole run's figures where they are small, and its
// own steps' figures where they grow with the steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/metric_parts.h"
#include "analysis/metrics.h"
#include "analysis/step_partition.h"
#include "distributed/exchange.h"
#include "model/run.h"

namespace pipescope::distributed {

struct PartitionedAnalysis {
  /// The contract's metrics: every step's window (number, segment, start,
  /// end, complete) and the segments, device totals and ratios of the whole
  /// run; each window's device figures and bubble ratio only for the steps
  /// this rank owns (the others' are zero). `job_step` is empty: the steps of
  /// the jobs it holds are in `part.job_step`.
  Metrics metrics;
  /// Which rank owns which steps (rank r owns range r).
  StepPartition plan;
  /// The jobs this rank holds (step_partition.h PartJobs).
  PartJobs part;
  /// Steps [first, last) of metrics.steps are this rank's.
  std::size_t first = 0;
  std::size_t last = 0;
};

/// See the header. Throws what the exchange throws when another rank fails.
PartitionedAnalysis analyze_partitioned(Exchange& exchange, const Run& local);

}  // namespace pipescope::distributed
