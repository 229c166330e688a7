// The metric contract's step rule (docs/guide.md, "Metrics"): which of a
// device's steps each of its jobs belongs to. Shared by the metrics and by
// launch-segment detection, which looks for a schedule starting over.
//
//   const TypeKinds kinds(run.types);
//   std::vector<std::int32_t> step_of(last - first);
//   std::int32_t steps = assign_steps(device.jobs, first, last, kinds, step_of);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/job_kind.h"
#include "model/run.h"

namespace pipescope {

/// Each job type's kind, and whether it is a receive, by TypeId.
struct TypeKinds {
  explicit TypeKinds(const TypeTable& types);

  std::vector<JobKind> kind;
  std::vector<bool> receive;
};

/// Whether a kind steers the rule (forward, backward, optimizer or lr): the
/// "previous non-comm, non-other job" of the contract.
inline bool steers_steps(JobKind kind) { return kind != JobKind::comm && kind != JobKind::other; }

/// Whether `job` of kind `kind` opens a step, given the kind of the previous
/// job that steers the rule (none for the first such job). The device's very
/// first job opens a step too; that is the caller's to say.
inline bool opens_step(const Job& job, JobKind kind, std::optional<JobKind> previous) {
  return (kind == JobKind::lr && previous) ||
         (kind == JobKind::forward && job.micro_batch == 0 && previous &&
          *previous != JobKind::forward && *previous != JobKind::lr);
}

/// Assigns jobs[first, last) of one device (in start order) to steps
/// 0, 1, ... as the contract's rule says, as if they were all of the device's
/// jobs: step_of[i - first] receives job i's step. Returns the number of steps.
std::int32_t assign_steps(const JobVector& jobs, std::size_t first, std::size_t last,
                          const TypeKinds& kinds, std::span<std::int32_t> step_of);

}  // namespace pipescope
