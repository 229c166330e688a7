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
//   auto paths = critical_paths(run, metrics, stages, deps, roles);
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

// Fields ordered so an entry takes 24 bytes: every step's path is kept.
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
  /// In time order.
  std::vector<CriticalPathJob> jobs;
  /// From the window's start to the first job's start.
  std::int64_t lead_in_ns = 0;
  /// Σ wait_ns.
  std::int64_t wait_ns = 0;
  /// stage_ns[s]: Σ lengths of the path's jobs on stage s.
  std::vector<std::int64_t> stage_ns;
};

/// One path per non-empty step window, in step order.
std::vector<CriticalPath> critical_paths(const Run& run, const Metrics& metrics,
                                         const StageMap& stages,
                                         const std::vector<Dependency>& deps,
                                         const std::vector<JobRole>& roles);

}  // namespace pipescope
