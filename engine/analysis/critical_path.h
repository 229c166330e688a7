// The critical path of each step: the chain of jobs that set the step's
// length. Walking back from the job that ends the step, each job's
// predecessor is whichever of its inputs arrived last: the previous job on
// its device, or the job of another stage it depends on (dependencies.h; a
// recv job that precedes a dependent job waits for that job's producer too).
// The chain's job time per stage says which stage the step waited for.
//
//   lead_in + Σ job lengths on the path + Σ waits == step window length
// when the step's last job ends the window (waits are gaps between a job and
// its predecessor: transfer latency; negative only if clocks disagree).
//
// Usage:
//   auto paths = critical_paths(run, metrics, stages, deps, roles);  // every path's jobs
//   CriticalPathSummary s = summarize_critical_paths(run, metrics, stages, deps, roles);
// The summary keeps the jobs of one path only (the longest complete step's,
// the one the reports list) and the jobs entered through a dependency on any
// path (the trace's critical-path arrows): a path per step job by job is
// 24 bytes per job on it, about 7 per job of a dense run.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

// Fields ordered so an entry takes 24 bytes.
struct CriticalPathJob {
  JobRef job;
  /// Start of this job minus the end of its predecessor on the path (0 for
  /// the first). A blocking recv entered through its input, posted before
  /// that input ended, is on the path from the input's end only: wait 0.
  std::int64_t wait_ns = 0;
  int stage = 0;
  /// True when the predecessor was a job of another device (a dependency).
  bool via_dependency = false;
};

struct CriticalPath {
  /// Index into Metrics::steps.
  std::size_t step = 0;
  /// In time order (summarize_critical_paths: the longest step's only).
  std::vector<CriticalPathJob> jobs;
  /// How many jobs the path has (jobs.size() where they are kept).
  std::size_t job_count = 0;
  /// From the window's start to the first job's start.
  std::int64_t lead_in_ns = 0;
  /// Σ wait_ns.
  std::int64_t wait_ns = 0;
  /// stage_ns[s]: Σ lengths of the path's jobs on stage s.
  std::vector<std::int64_t> stage_ns;
};

/// One path per non-empty step window, in step order.
std::vector<CriticalPath> critical_paths(const Run& run, const Metrics& metrics,
                                         const StageMap& stages, const Dependencies& deps,
                                         const std::vector<JobRole>& roles);

/// The paths of `steps` (indices into Metrics::steps) only, each with its
/// jobs, in step order (a step with an empty window or no job has none):
/// the HTML report's, for the steps it embeds, without a path per step of
/// the whole run.
std::vector<CriticalPath> critical_paths_of_steps(const Run& run, const Metrics& metrics,
                                                  const StageMap& stages, const Dependencies& deps,
                                                  const std::vector<JobRole>& roles,
                                                  const std::vector<std::size_t>& steps);

struct CriticalPathSummary {
  /// One path per non-empty step window, in step order; only the path of
  /// `longest` keeps its jobs.
  std::vector<CriticalPath> paths;
  /// Index into `paths` of the longest complete step's path (the first of
  /// equal windows), or nullopt when no complete step has one.
  std::optional<std::size_t> longest;
  /// Every job that some path entered through a dependency (its
  /// via_dependency), sorted by device, then job.
  std::vector<JobRef> via_dependency;
};

/// The same paths and figures, with only what the reports read kept.
CriticalPathSummary summarize_critical_paths(const Run& run, const Metrics& metrics,
                                             const StageMap& stages, const Dependencies& deps,
                                             const std::vector<JobRole>& roles);

/// The step whose path the summary keeps with its jobs: the longest
/// complete step with a job (`has_job`: StepEdges::has_job) and a non-empty
/// window, the first of equal windows.
std::optional<std::size_t> longest_critical_step(std::span<const StepWindow> steps,
                                                 const std::vector<char>& has_job);

/// summarize_critical_paths over steps [first, last) of metrics.steps only,
/// for a part of the partitioned analysis (analysis/step_partition.h): `run`
/// holds the part's jobs, `metrics.job_step` their steps and `metrics.steps`
/// every window; `deps` the part's dependencies. The path of `keep_jobs_of`
/// (longest_critical_step of the whole run) keeps its jobs; the JobRefs
/// returned are the whole run's through `job_index` (PartRun::job_index).
/// A part's paths are the whole run's for its steps: a walk reads the jobs
/// of one step and their neighbours on each device, which a part holds.
CriticalPathSummary summarize_critical_path_range(const Run& run, const Metrics& metrics,
                                                  const StageMap& stages, const Dependencies& deps,
                                                  const std::vector<JobRole>& roles,
                                                  std::size_t first, std::size_t last,
                                                  std::optional<std::size_t> keep_jobs_of,
                                                  const JobIndices* job_index);

/// Appends the next steps' summary (in step order) to `into`.
void append_critical_paths(CriticalPathSummary& into, CriticalPathSummary&& part);

}  // namespace pipescope
