#include "analysis/critical_path.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_set>
#include <utility>

namespace pipescope {

namespace {

/// The dependency whose consumer is `job`, if any (deps are sorted by
/// consumer: device, then job).
const Dependency* dependency_of(const std::vector<Dependency>& deps, JobRef job) {
  const auto it = std::lower_bound(deps.begin(), deps.end(), job,
                                   [](const Dependency& dep, JobRef key) {
                                     return std::pair(dep.consumer.device, dep.consumer.job) <
                                            std::pair(key.device, key.job);
                                   });
  if (it == deps.end() || it->consumer.device != job.device || it->consumer.job != job.job) {
    return nullptr;
  }
  return &*it;
}

/// Whether `job` is a send/recv (comm) job.
bool is_comm(const Run& run, const std::vector<JobRole>& roles, JobRef job) {
  const TypeId t = run.devices[job.device].jobs[job.job].type;
  return t < roles.size() && roles[t].role == PipelineRole::comm;
}

/// The cross-stage input of `job`: its own dependency's producer, or for a
/// blocking recv (a run of comm jobs) just before a job with one, that
/// producer: the recv waits for the same data. Looked up per hop of a path
/// instead of tabulated per job, which cost 8 bytes per job of the run.
std::optional<JobRef> producer_of(const Run& run, const std::vector<Dependency>& deps,
                                  const std::vector<JobRole>& roles, JobRef job) {
  const auto& jobs = run.devices[job.device].jobs;
  if (const Dependency* own = dependency_of(deps, job)) return own->producer;
  if (!is_comm(run, roles, job)) return std::nullopt;
  for (std::size_t k = job.job + 1; k < jobs.size(); ++k) {
    const JobRef next{job.device, static_cast<std::uint32_t>(k)};
    if (const Dependency* dep = dependency_of(deps, next)) return dep->producer;
    if (!is_comm(run, roles, next)) break;
  }
  return std::nullopt;
}

}  // namespace

std::vector<CriticalPath> critical_paths(const Run& run, const Metrics& metrics,
                                         const StageMap& stages,
                                         const std::vector<Dependency>& deps,
                                         const std::vector<JobRole>& roles) {
  std::vector<CriticalPath> paths;
  const std::size_t devices = std::min(run.devices.size(), metrics.job_step.size());

  // The job that ends each step (latest end; ties: lower device, earlier job).
  std::vector<std::optional<JobRef>> last(metrics.steps.size());
  for (std::size_t d = 0; d < devices; ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto k = static_cast<std::size_t>(metrics.job_step[d][i]);
      if (k >= last.size()) continue;
      auto& best = last[k];
      if (!best || jobs[i].end_ns > run.devices[best->device].jobs[best->job].end_ns) {
        best = JobRef{static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(i)};
      }
    }
  }

  const std::size_t p = stages.stage_count();
  auto job_of = [&](JobRef r) -> const Job& { return run.devices[r.device].jobs[r.job]; };
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    if (!last[k] || metrics.steps[k].window_ns() <= 0) continue;
    CriticalPath path;
    path.step = k;
    path.stage_ns.assign(p, 0);
    std::vector<std::pair<JobRef, bool>> chain;  // backwards
    JobRef at = *last[k];
    bool via = false;
    // A path is a chain of distinct jobs. On sound data each hop moves to an
    // earlier-ending job; with a wrong stage map the implied dependencies and
    // the devices' job orders can form a cycle, which must not be walked.
    std::unordered_set<std::uint64_t> on_chain;
    auto key = [](JobRef r) { return (std::uint64_t{r.device} << 32) | r.job; };
    while (true) {
      chain.emplace_back(at, via);
      on_chain.insert(key(at));
      std::optional<JobRef> previous;
      if (at.job > 0 && metrics.job_step[at.device][at.job - 1] == static_cast<std::int32_t>(k)) {
        previous = JobRef{at.device, at.job - 1};
      }
      std::optional<JobRef> input = producer_of(run, deps, roles, at);
      if (input && (input->device >= devices ||
                    metrics.job_step[input->device][input->job] != static_cast<std::int32_t>(k))) {
        input.reset();
      }
      if (previous && on_chain.count(key(*previous))) previous.reset();
      if (input && on_chain.count(key(*input))) input.reset();
      // The input that arrived last released the job; on a tie, the dependency.
      if (input && (!previous || job_of(*input).end_ns >= job_of(*previous).end_ns)) {
        at = *input;
        via = true;
      } else if (previous) {
        at = *previous;
        via = false;
      } else {
        break;
      }
    }
    std::reverse(chain.begin(), chain.end());
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const JobRef r = chain[i].first;
      const Job& job = job_of(r);
      CriticalPathJob entry;
      entry.job = r;
      entry.stage = r.device < stages.stage_of.size() ? stages.stage_of[r.device] : 0;
      // The part of the job on the path. A blocking recv is posted early
      // and waits inside itself for its data: entered through its input,
      // only its time after that input ended is on the path (not a
      // negative wait for the time it was already waiting).
      std::int64_t on_path_from = job.start_ns;
      if (i > 0) {
        const std::int64_t input_end = job_of(chain[i - 1].first).end_ns;
        const bool waited_on_input = chain[i - 1].second;
        if (waited_on_input && is_comm(run, roles, r) && on_path_from < input_end) {
          on_path_from = std::min(input_end, job.end_ns);
        }
        entry.wait_ns = on_path_from - input_end;
      }
      path.wait_ns += entry.wait_ns;
      if (entry.stage >= 0 && static_cast<std::size_t>(entry.stage) < p) {
        path.stage_ns[static_cast<std::size_t>(entry.stage)] += job.end_ns - on_path_from;
      }
      path.jobs.push_back(entry);
    }
    // chain[i].second says whether the backward hop that reached job i came
    // through a dependency, i.e. whether job i+1 waited on job i as its input.
    for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
      path.jobs[i + 1].via_dependency = chain[i].second;
    }
    path.lead_in_ns = job_of(chain.front().first).start_ns - metrics.steps[k].start_ns;
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace pipescope
