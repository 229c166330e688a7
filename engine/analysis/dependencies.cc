#include "analysis/dependencies.h"

#include <algorithm>
#include <tuple>

namespace pipescope {

namespace {

struct OpKey {
  std::int32_t step = 0;
  PipelineRole role = PipelineRole::forward;
  std::int32_t chunk = 0;
  std::int64_t micro_batch = 0;
  std::uint32_t job = 0;

  auto tie() const { return std::tie(step, role, chunk, micro_batch, job); }
};

// A device's F and B jobs, sorted for lookup by (step, role, chunk, micro-batch).
std::vector<OpKey> index_device(const Device& device, const std::vector<std::int32_t>& steps,
                                const std::vector<JobRole>& roles) {
  std::vector<OpKey> keys;
  for (std::size_t i = 0; i < device.jobs.size() && i < steps.size(); ++i) {
    const Job& job = device.jobs[i];
    if (job.type >= roles.size()) continue;
    const JobRole& r = roles[job.type];
    if (r.role != PipelineRole::forward && r.role != PipelineRole::backward) continue;
    keys.push_back({steps[i], r.role, r.chunk, job.micro_batch, static_cast<std::uint32_t>(i)});
  }
  std::sort(keys.begin(), keys.end(),
            [](const OpKey& a, const OpKey& b) { return a.tie() < b.tie(); });
  return keys;
}

const OpKey* lookup(const std::vector<OpKey>& keys, std::int32_t step, PipelineRole role,
                    std::int32_t chunk, std::int64_t micro_batch) {
  const OpKey probe{step, role, chunk, micro_batch, 0};
  const auto it =
      std::lower_bound(keys.begin(), keys.end(), probe,
                       [](const OpKey& a, const OpKey& b) { return a.tie() < b.tie(); });
  if (it == keys.end() || it->step != step || it->role != role || it->chunk != chunk ||
      it->micro_batch != micro_batch) {
    return nullptr;
  }
  return &*it;
}

}  // namespace

std::vector<Dependency> find_dependencies(const Run& run,
                                          const std::vector<std::vector<std::int32_t>>& job_step,
                                          const StageMap& stages,
                                          const std::vector<JobRole>& roles) {
  std::vector<Dependency> deps;
  const std::size_t devices = std::min(run.devices.size(), job_step.size());
  const int p = static_cast<int>(stages.stage_count());
  if (p == 0 || devices == 0) return deps;

  // V: chunks seen in the types that occur.
  std::int32_t max_chunk = 0;
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      if (job.type < roles.size() && roles[job.type].compute()) {
        max_chunk = std::max(max_chunk, roles[job.type].chunk);
      }
    }
  }
  const std::int32_t v = max_chunk + 1;

  std::vector<std::vector<OpKey>> index(devices);
  for (std::size_t d = 0; d < devices; ++d)
    index[d] = index_device(run.devices[d], job_step[d], roles);

  for (std::size_t d = 0; d < devices; ++d) {
    if (d >= stages.stage_of.size() || stages.stage_of[d] < 0) continue;
    const int s = stages.stage_of[d];
    const std::size_t rank = stages.rank_in_stage(d);
    for (const OpKey& op : index[d]) {
      int from_stage = -1;
      std::int32_t from_chunk = op.chunk;
      if (op.role == PipelineRole::forward) {
        if (s > 0) {
          from_stage = s - 1;
        } else if (op.chunk > 0) {
          from_stage = p - 1;
          from_chunk = op.chunk - 1;
        }
      } else {
        if (s < p - 1) {
          from_stage = s + 1;
        } else if (op.chunk < v - 1) {
          from_stage = 0;
          from_chunk = op.chunk + 1;
        }
      }
      if (from_stage < 0) continue;
      const auto& group = stages.devices[static_cast<std::size_t>(from_stage)];
      if (group.empty()) continue;
      const std::size_t producer = group[rank % group.size()];
      if (producer >= devices || producer == d) continue;
      const OpKey* found = lookup(index[producer], op.step, op.role, from_chunk, op.micro_batch);
      if (found == nullptr) continue;
      deps.push_back({{static_cast<std::uint32_t>(producer), found->job},
                      {static_cast<std::uint32_t>(d), op.job}});
    }
  }
  std::sort(deps.begin(), deps.end(), [](const Dependency& a, const Dependency& b) {
    return std::tie(a.consumer.device, a.consumer.job) <
           std::tie(b.consumer.device, b.consumer.job);
  });
  return deps;
}

}  // namespace pipescope
