#include "analysis/step_rule.h"

namespace pipescope {

namespace {

/// Whether a kind is forward, backward or optimizer: such a job between a
/// prologue job (lr, recv) and the step's opening job keeps the prologue job
/// in the step it follows.
bool is_fbo(JobKind kind) {
  return kind == JobKind::forward || kind == JobKind::backward || kind == JobKind::optimizer;
}

}  // namespace

TypeKinds::TypeKinds(const TypeTable& types) : kind(types.size()), receive(types.size()) {
  for (TypeId t = 0; t < types.size(); ++t) {
    kind[t] = classify_job_type(types.name(t));
    receive[t] = kind[t] == JobKind::comm && is_receive_type(types.name(t));
  }
}

// A step begins (opens) at the first job, at every lr job that follows a
// non-comm, non-other job, and at every forward-kind job of micro-batch 0
// whose previous non-comm, non-other job exists and is neither forward nor
// lr. The lr and receive jobs right before an opening job, with no forward,
// backward or optimizer job between, belong to the step it opens (the nearest
// opening job after them); every other job belongs to the step in progress
// when it starts.
std::int32_t assign_steps(const JobVector& jobs, std::size_t first, std::size_t last,
                          const TypeKinds& kinds, std::span<std::int32_t> step_of) {
  const std::size_t n = last - first;
  std::vector<bool> opens(n, false);
  std::int32_t step = -1;
  std::optional<JobKind> previous;  // the previous non-comm, non-other job's kind
  for (std::size_t i = 0; i < n; ++i) {
    const Job& job = jobs[first + i];
    const JobKind kind = kinds.kind[job.type];
    opens[i] = i == 0 || opens_step(job, kind, previous);
    if (opens[i]) ++step;
    step_of[i] = step;
    if (steers_steps(kind)) previous = kind;
  }
  // The prologue, walking back: `ahead` holds while the nearest opening job
  // after job i is reached without a forward, backward or optimizer job.
  // Such a job moves from the step in progress to the next one.
  bool ahead = false;
  for (std::size_t i = n; i-- > 0;) {
    const Job& job = jobs[first + i];
    const JobKind kind = kinds.kind[job.type];
    if (ahead && (kind == JobKind::lr || kinds.receive[job.type])) ++step_of[i];
    if (opens[i]) {
      ahead = true;
    } else if (is_fbo(kind)) {
      ahead = false;
    }
  }
  return step + 1;
}

}  // namespace pipescope
