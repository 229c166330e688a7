// The dependencies between stages that a pipeline schedule implies, matched
// job to job within each step (the contract's per-device step numbering):
// the forward of global stage g needs the forward of g-1, the backward of g
// the backward of g+1, with global stages placed on the ranks (the stages of
// the stage map) as the schedule places them. Looped (1F1B, interleaved):
//   F(m, c) on stage s   needs F(m, c) on stage s-1
//                        (stage 0, c > 0: F(m, c-1) on the last stage)
//   B(m, c) on stage s   needs B(m, c) on stage s+1
//                        (last stage, c < V-1: B(m, c+1) on stage 0)
// V-shaped (ZB-V, DualPipeV: stage s holds global stages s and 2P-1-s):
//   F(m, 0) needs F(m, 0) on s-1; F(m, 1) needs F(m, 1) on s+1 (the last
//   stage: its own F(m, 0)); B(m, 1) needs B(m, 1) on s-1; B(m, 0) needs
//   B(m, 0) on s+1 (the last stage: its own B(m, 1)).
// An input made on the same device needs no edge (it runs its jobs in order).
// B is a whole backward or ZB's backward_b; W and the jobs of one device in
// order need no edge here (one device runs its jobs in order). The i-th
// device of a stage pairs with the (i mod size)-th device of the other stage.
// When a type appears twice with one micro-batch and chunk in a step, its
// first job is used.
//
// Usage:
//   std::vector<Dependency> deps = find_dependencies(run, metrics.job_step, stages, roles);
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/schedule_table.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

/// A job: position in Run::devices and index into Device::jobs.
struct JobRef {
  std::uint32_t device = 0;
  std::uint32_t job = 0;

  friend bool operator==(const JobRef&, const JobRef&) = default;
};

struct Dependency {
  JobRef producer;
  JobRef consumer;
};

/// All cross-stage dependencies, ordered by consumer (device, then job).
/// job_step is Metrics::job_step (or any per-device step numbering).
std::vector<Dependency> find_dependencies(const Run& run,
                                          const std::vector<std::vector<std::int32_t>>& job_step,
                                          const StageMap& stages,
                                          const std::vector<JobRole>& roles,
                                          StagePlacement placement = StagePlacement::looped);

}  // namespace pipescope
