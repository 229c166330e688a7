#include "analysis/critical_path.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace pipescope {

namespace {

constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

}  // namespace

std::vector<CriticalPath> critical_paths(const Run& run, const Metrics& metrics,
                                         const StageMap& stages,
                                         const std::vector<Dependency>& deps,
                                         const std::vector<JobRole>& roles) {
  std::vector<CriticalPath> paths;
  const std::size_t devices = std::min(run.devices.size(), metrics.job_step.size());

  // producer[d][i]: the cross-stage input of job i of device d (device kNone if none).
  std::vector<std::vector<JobRef>> producer(devices);
  for (std::size_t d = 0; d < devices; ++d) {
    producer[d].assign(run.devices[d].jobs.size(), JobRef{kNone, 0});
  }
  for (const Dependency& dep : deps) {
    if (dep.consumer.device >= devices) continue;
    auto& of = producer[dep.consumer.device];
    of[dep.consumer.job] = dep.producer;
    // A blocking recv just before the job waits for the same producer.
    const auto& jobs = run.devices[dep.consumer.device].jobs;
    for (std::uint32_t i = dep.consumer.job; i-- > 0;) {
      const TypeId t = jobs[i].type;
      if (t >= roles.size() || roles[t].role != PipelineRole::comm) break;
      if (of[i].device == kNone) of[i] = dep.producer;
    }
  }

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
    // Each hop moves to an earlier-ending job; the cap guards odd data.
    std::size_t budget = 0;
    for (std::size_t d = 0; d < devices; ++d) budget += run.devices[d].jobs.size();
    while (true) {
      chain.emplace_back(at, via);
      if (budget-- == 0) break;
      std::optional<JobRef> previous;
      if (at.job > 0 && metrics.job_step[at.device][at.job - 1] == static_cast<std::int32_t>(k)) {
        previous = JobRef{at.device, at.job - 1};
      }
      std::optional<JobRef> input;
      const JobRef from = producer[at.device][at.job];
      if (from.device != kNone &&
          metrics.job_step[from.device][from.job] == static_cast<std::int32_t>(k)) {
        input = from;
      }
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
      if (i > 0) entry.wait_ns = job.start_ns - job_of(chain[i - 1].first).end_ns;
      path.wait_ns += entry.wait_ns;
      if (entry.stage >= 0 && static_cast<std::size_t>(entry.stage) < p) {
        path.stage_ns[static_cast<std::size_t>(entry.stage)] += job.duration_ns();
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
