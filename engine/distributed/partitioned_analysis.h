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
//      ranks whose windows it overlaps or neighbours), in rounds of bounded
//      bytes, and drops each of its devices' jobs once they have gone (what
//      the outputs still need of them is kept as ReadFacts and lanes);
//   5. marks the complete steps (the owners answer the job-count questions
//      of the segments' last steps) and computes its windows' busy, idle and
//      comm; the totals are integer sums, added on every rank;
//   6. takes the layout from the run's head (its first kLayoutSteps steps,
//      gathered on every rank) and the schedule from every range's votes;
//   7. finds its steps' dependencies, and decides the clock offsets from
//      every range's evidence; when they are applied, every part sends the
//      jobs of its own steps back to their readers and steps 1 to 5 run
//      again on the corrected times (the windows move, so the halo does);
//   8. summarizes its windows' bubbles; the sums and the longest are merged.
// What it returns are the whole run's figures where they are small, and its
// own steps' figures where they grow with the steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/critical_path.h"
#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "analysis/layout.h"
#include "analysis/metric_parts.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/replicas.h"
#include "analysis/schedule_detect.h"
#include "analysis/step_partition.h"
#include "distributed/exchange.h"
#include "model/run.h"

namespace pipescope::distributed {

/// A replica's windows (replicas.h): its devices' own steps and windows.
struct ReplicaWindows {
  int index = 0;                     ///< its number in the layout
  std::vector<std::size_t> devices;  ///< positions in Run::devices
  Metrics metrics;                   ///< its windows; its device figures of this rank's steps
  StepCounts counts;
  std::vector<std::size_t> to_global;  ///< replica step -> the run's step
};

/// A job's trace lane: `position` is the job's in its device's array.
struct JobLane {
  std::uint32_t position = 0;
  std::int32_t lane = 0;
};

/// The facts of the jobs a rank read that outlive them: the jobs travel to
/// the parts that need them and leave the reader (so that no rank holds its
/// jobs twice), but the summary, the traces and the checks still read these.
struct ReadFacts {
  /// Every device's reader (-1: no rank read it) and job count, on every rank.
  std::vector<int> reader;
  std::vector<std::uint64_t> device_jobs;
  /// Of the devices this rank read (zero elsewhere): their compute jobs in
  /// steps (input_rules.h compute_jobs_in_steps) and trace lane counts (1
  /// elsewhere).
  std::vector<std::uint64_t> compute_in_steps;
  std::vector<int> lane_count;

  /// Whether this rank read device d.
  bool mine(std::size_t d, int rank) const { return d < reader.size() && reader[d] == rank; }
};

struct PartitionedAnalysis {
  /// The contract's metrics: every step's window (number, segment, start,
  /// end, complete) and the segments, device totals and ratios of the whole
  /// run and every window's bubble ratio; each window's device figures only
  /// for the steps this rank owns (the others' `devices` are empty). `job_step` is empty: the
  /// steps of the jobs it holds are in `part.job_step`.
  Metrics metrics;
  /// Which rank owns which steps (rank r owns range r).
  StepPartition plan;
  /// The jobs this rank holds (step_partition.h PartRun).
  PartRun part;
  /// Steps [first, last) of metrics.steps are this rank's.
  std::size_t first = 0;
  std::size_t last = 0;
  /// Whether each step has a job on some device (StepEdges::has_job).
  std::vector<char> step_has_job;
  /// What the run's devices' readers knew of their jobs before the jobs
  /// left for the parts (ReadFacts).
  ReadFacts read;
  /// The trace lanes (trace_layout.h trace_job_lanes, of the whole device)
  /// of the part's jobs that are not on lane 0, by device, ascending.
  std::vector<std::vector<JobLane>> part_lanes;

  /// The pipeline analysis (pipeline.h) of the whole run, as one process
  /// makes it, on every rank, but for what grows with the run:
  /// `dependencies` are those whose consumer is in this rank's steps, in
  /// `part`'s job indices (on corrected times when the clocks were
  /// corrected); `bubbles.per_step` holds this rank's windows only
  /// (per_step[k - first]); `critical_paths` holds the path of the run's
  /// longest complete step, with its jobs, or nothing (this rank's steps'
  /// paths are in `paths`); `critical_dependency_hops` is empty;
  /// `bottleneck` is the slowest replica's when there are replicas;
  /// `warnings` are check_data_quality's (the run's whole list, in load_run's
  /// order, is made on rank 0 by partitioned_summary.h whole_run_view).
  PipelineAnalysis pipeline;
  /// Each replica's windows (when the layout has two replicas or more).
  std::vector<ReplicaWindows> replica_windows;
  /// The split's rows of this rank's steps (pipeline.split.inherent is
  /// empty): split_inherent[k - first].
  std::vector<std::vector<std::int64_t>> split_inherent;
  /// The paths of this rank's steps (critical_path.h
  /// summarize_critical_path_range: JobRefs are the whole run's), and how
  /// many paths the ranks before this one have.
  CriticalPathSummary paths;
  std::size_t paths_before = 0;

  /// The path of the run's longest complete step (pipeline.critical_paths),
  /// or null.
  const CriticalPath* longest_path() const {
    return pipeline.critical_paths.empty() ? nullptr : &pipeline.critical_paths.front();
  }
};

/// See the header. Every job of `local` is moved to the parts (what is left
/// of its devices is their place, cut and events; `read` keeps its jobs'
/// facts), and its log events have its machines' clock offsets applied when
/// the analysis corrected the clocks (as analyze_run corrects a run). Throws
/// std::invalid_argument as analyze_run does, and what the exchange throws
/// when another rank fails.
PartitionedAnalysis analyze_partitioned(Exchange& exchange, Run& local,
                                        const PipelineOptions& options);

}  // namespace pipescope::distributed
