#include "analysis/dependencies.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

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

// A device's F and B jobs, indexed by (step, role, chunk, micro-batch). The
// normal case (micro-batches 0..M-1, chunks 0..V-1) uses a dense table, one
// slot per possible key: a dense 1 GB log has millions of jobs, and sorting
// them and binary-searching each dependency was most of the analysis time.
// Odd ids (negative or huge micro-batches) fall back to a sorted list.
class OpIndex {
 public:
  OpIndex(const Device& device, const std::vector<std::int32_t>& steps,
          const std::vector<JobRole>& roles) {
    // Pass 1: the key ranges, to size the table (no per-op allocation).
    std::int32_t max_step = -1, max_chunk = 0;
    std::int64_t max_mb = 0;
    std::size_t ops = 0;
    bool dense = true;
    for_each(device, steps, roles, [&](const OpKey& key) {
      ++ops;
      max_step = std::max(max_step, key.step);
      max_chunk = std::max(max_chunk, key.chunk);
      max_mb = std::max(max_mb, key.micro_batch);
      dense = dense && key.micro_batch >= 0 && key.chunk >= 0;
    });
    ops_ = ops;
    steps_ = static_cast<std::size_t>(max_step + 1);
    chunks_ = static_cast<std::size_t>(max_chunk) + 1;
    micro_batches_ = static_cast<std::size_t>(max_mb) + 1;
    const double slots = static_cast<double>(steps_) * 2.0 * static_cast<double>(chunks_) *
                         static_cast<double>(micro_batches_);
    // Pass 2: fill the table, or the sorted fallback.
    if (dense && slots <= 4.0 * static_cast<double>(ops) + 4096.0) {
      table_.assign(static_cast<std::size_t>(slots), kEmpty);
      for_each(device, steps, roles, [&](const OpKey& key) {
        std::uint32_t& slot = table_[slot_of(key.step, key.role, key.chunk, key.micro_batch)];
        if (slot == kEmpty) slot = key.job;  // the first job with this key, as the sorted list
      });
    } else {
      keys_.reserve(ops);
      for_each(device, steps, roles, [&](const OpKey& key) { keys_.push_back(key); });
      std::sort(keys_.begin(), keys_.end(),
                [](const OpKey& a, const OpKey& b) { return a.tie() < b.tie(); });
    }
  }

  /// How many ops were indexed.
  std::size_t size() const { return ops_; }

  /// The job with this key, or nullopt.
  std::optional<std::uint32_t> find(std::int32_t step, PipelineRole role, std::int32_t chunk,
                                    std::int64_t micro_batch) const {
    if (!table_.empty()) {
      if (step < 0 || static_cast<std::size_t>(step) >= steps_ || chunk < 0 ||
          static_cast<std::size_t>(chunk) >= chunks_ || micro_batch < 0 ||
          static_cast<std::uint64_t>(micro_batch) >= micro_batches_) {
        return std::nullopt;
      }
      const std::uint32_t job = table_[slot_of(step, role, chunk, micro_batch)];
      if (job == kEmpty) return std::nullopt;
      return job;
    }
    const OpKey probe{step, role, chunk, micro_batch, 0};
    const auto it =
        std::lower_bound(keys_.begin(), keys_.end(), probe,
                         [](const OpKey& a, const OpKey& b) { return a.tie() < b.tie(); });
    if (it == keys_.end() || it->step != step || it->role != role || it->chunk != chunk ||
        it->micro_batch != micro_batch) {
      return std::nullopt;
    }
    return it->job;
  }

  /// Every indexed op, in job order (the order dependencies are reported in).
  template <typename F>
  static void for_each(const Device& device, const std::vector<std::int32_t>& steps,
                       const std::vector<JobRole>& roles, F&& f) {
    for_each_in(device, steps, roles, 0, device.jobs.size(), f);
  }

  /// The same for jobs [first, last) only.
  template <typename F>
  static void for_each_in(const Device& device, const std::vector<std::int32_t>& steps,
                          const std::vector<JobRole>& roles, std::size_t first, std::size_t last,
                          F&& f) {
    for (std::size_t i = first; i < last && i < device.jobs.size() && i < steps.size(); ++i) {
      const Job& job = device.jobs[i];
      if (job.type >= roles.size()) continue;
      const JobRole& r = roles[job.type];
      if (r.role != PipelineRole::forward && r.role != PipelineRole::backward) continue;
      f(OpKey{steps[i], r.role, r.chunk, job.micro_batch, static_cast<std::uint32_t>(i)});
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;

  std::size_t slot_of(std::int32_t step, PipelineRole role, std::int32_t chunk,
                      std::int64_t micro_batch) const {
    const std::size_t r = role == PipelineRole::forward ? 0 : 1;
    return ((static_cast<std::size_t>(step) * 2 + r) * chunks_ + static_cast<std::size_t>(chunk)) *
               micro_batches_ +
           static_cast<std::size_t>(micro_batch);
  }

  std::vector<OpKey> keys_;  // sorted fallback
  std::vector<std::uint32_t> table_;
  std::size_t steps_ = 0, chunks_ = 0, micro_batches_ = 0, ops_ = 0;
};

}  // namespace

Dependencies::Dependencies(const std::vector<Dependency>& list) {
  std::size_t devices = 0;
  for (const Dependency& dep : list) {
    devices = std::max<std::size_t>(devices, std::size_t{dep.consumer.device} + 1);
  }
  std::vector<std::vector<JobRef>> match(devices);
  for (const Dependency& dep : list) {
    auto& m = match[dep.consumer.device];
    if (m.size() <= dep.consumer.job) m.resize(std::size_t{dep.consumer.job} + 1, {kNoDevice, 0});
    if (m[dep.consumer.job].device == kNoDevice) m[dep.consumer.job] = dep.producer;
  }
  for (std::size_t d = 0; d < devices; ++d) set_device(d, match[d]);
}

void Dependencies::set_device(std::size_t device, const std::vector<JobRef>& match) {
  if (consumers_.size() <= device) consumers_.resize(device + 1);
  Consumer& c = consumers_[device];
  std::size_t last = 0, count = 0;
  bool fits = true;
  for (std::size_t j = 0; j < match.size(); ++j) {
    const JobRef& r = match[j];
    if (r.device == kNoDevice) continue;
    ++count;
    last = j + 1;
    if (r.job > kJobMask) fits = false;
    if (std::find(c.producers.begin(), c.producers.end(), r.device) == c.producers.end()) {
      if (c.producers.size() == kMaxSlots) {
        fits = false;
      } else {
        c.producers.push_back(r.device);
      }
    }
  }
  size_ += count;
  if (count == 0) {
    c = Consumer{};
    return;
  }
  if (!fits) {
    c.producers.clear();
    c.wide.assign(match.begin(), match.begin() + static_cast<std::ptrdiff_t>(last));
    return;
  }
  c.packed.assign(last, kNone);
  for (std::size_t j = 0; j < last; ++j) {
    const JobRef& r = match[j];
    if (r.device == kNoDevice) continue;
    const auto slot = static_cast<std::uint32_t>(
        std::find(c.producers.begin(), c.producers.end(), r.device) - c.producers.begin());
    c.packed[j] = (slot << kSlotShift) | r.job;
  }
}

std::optional<JobRef> Dependencies::producer_of(JobRef consumer) const {
  if (consumer.device >= consumers_.size()) return std::nullopt;
  const Consumer& c = consumers_[consumer.device];
  if (consumer.job >= c.jobs() || !c.has(consumer.job)) return std::nullopt;
  return c.producer(consumer.job);
}

std::vector<Dependency> Dependencies::to_vector() const {
  std::vector<Dependency> out;
  out.reserve(size_);
  for (const Dependency& dep : *this) out.push_back(dep);
  return out;
}

Dependencies Dependencies::consumers_in(
    std::span<const std::pair<std::size_t, std::size_t>> jobs) const {
  Dependencies out;
  out.consumers_.resize(std::min(consumers_.size(), jobs.size()));
  for (std::size_t d = 0; d < out.consumers_.size(); ++d) {
    const Consumer& from = consumers_[d];
    Consumer& to = out.consumers_[d];
    const std::size_t last = std::min(jobs[d].second, from.jobs());
    const std::size_t first = std::min(jobs[d].first, last);
    std::size_t count = 0;
    for (std::size_t j = first; j < last; ++j) count += from.has(j) ? 1 : 0;
    if (count == 0) continue;
    out.size_ += count;
    if (!from.wide.empty()) {
      to.wide.assign(last, {kNoDevice, 0});
      std::copy(from.wide.begin() + static_cast<std::ptrdiff_t>(first),
                from.wide.begin() + static_cast<std::ptrdiff_t>(last),
                to.wide.begin() + static_cast<std::ptrdiff_t>(first));
    } else {
      to.producers = from.producers;
      to.packed.assign(last, kNone);
      std::copy(from.packed.begin() + static_cast<std::ptrdiff_t>(first),
                from.packed.begin() + static_cast<std::ptrdiff_t>(last),
                to.packed.begin() + static_cast<std::ptrdiff_t>(first));
    }
  }
  return out;
}

Dependency Dependencies::const_iterator::operator*() const {
  return {owner_->consumers_[device_].producer(job_),
          {static_cast<std::uint32_t>(device_), static_cast<std::uint32_t>(job_)}};
}

void Dependencies::const_iterator::settle() {
  const auto& consumers = owner_->consumers_;
  while (device_ < consumers.size()) {
    const Consumer& c = consumers[device_];
    const std::size_t n = c.jobs();
    if (c.wide.empty()) {
      while (job_ < n && c.packed[job_] == kNone) ++job_;
    } else {
      while (job_ < n && c.wide[job_].device == kNoDevice) ++job_;
    }
    if (job_ < n) return;
    ++device_;
    job_ = 0;
  }
  job_ = 0;
}

Dependencies find_dependencies(const Run& run,
                               const std::vector<std::vector<std::int32_t>>& job_step,
                               const StageMap& stages, const std::vector<JobRole>& roles,
                               StagePlacement placement) {
  Dependencies deps;
  const std::size_t devices = std::min(run.devices.size(), job_step.size());
  const int p = static_cast<int>(stages.stage_count());
  if (p == 0 || devices == 0) return deps;

  // V: chunks seen in the types that occur.
  std::vector<char> occurs(roles.size(), 0);
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      if (job.type < occurs.size()) occurs[job.type] = 1;
    }
  }
  std::int32_t max_chunk = 0;
  for (std::size_t t = 0; t < roles.size(); ++t) {
    if (occurs[t] && roles[t].compute()) max_chunk = std::max(max_chunk, roles[t].chunk);
  }
  const std::int32_t v = max_chunk + 1;
  // A V holds exactly two chunks per stage; anything else is read looped.
  if (v != 2) placement = StagePlacement::looped;
  const int global_stages = p * v;

  // Each device's index, built in parallel.
  std::vector<std::optional<OpIndex>> index(devices);
  tbb::parallel_for(std::size_t{0}, devices,
                    [&](std::size_t d) { index[d].emplace(run.devices[d], job_step[d], roles); });

  // One consumer device at a time, its jobs in blocks matched in parallel:
  // each job's producer (or none) into a transient array of 8 bytes per job
  // of the device, then packed into the result.
  constexpr std::uint32_t kNone = Dependencies::kNoDevice;
  constexpr std::size_t kBlock = 1 << 16;
  std::vector<JobRef> match;
  for (std::size_t d = 0; d < devices; ++d) {
    if (d >= stages.stage_of.size() || stages.stage_of[d] < 0) continue;
    const int s = stages.stage_of[d];
    const std::size_t n = std::min(run.devices[d].jobs.size(), job_step[d].size());
    match.assign(n, JobRef{kNone, 0});
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, n, kBlock),
        [&](const tbb::blocked_range<std::size_t>& range) {
          OpIndex::for_each_in(
              run.devices[d], job_step[d], roles, range.begin(), range.end(), [&](const OpKey& op) {
                if (op.chunk < 0 || op.chunk >= v) return;
                // The backward of one F+B job timed whole (JobRole::joined)
                // starts with its action, not when its input came: no edge.
                if (op.role != PipelineRole::forward &&
                    roles[run.devices[d].jobs[op.job].type].joined) {
                  return;
                }
                const int g = global_stage(placement, p, s, op.chunk);
                const int from_global = op.role == PipelineRole::forward ? g - 1 : g + 1;
                if (from_global < 0 || from_global >= global_stages) return;
                const auto [from_stage, from_chunk] = stage_chunk_of(placement, p, from_global);
                if (from_stage == s) return;  // made on this stage, which runs its jobs in order
                const std::size_t producer =
                    stages.partner(d, static_cast<std::size_t>(from_stage));
                if (producer >= devices || producer == d) return;
                const auto found =
                    index[producer]->find(op.step, op.role, from_chunk, op.micro_batch);
                if (!found) return;
                match[op.job] = {static_cast<std::uint32_t>(producer), *found};
              });
        });
    deps.set_device(d, match);
  }
  return deps;
}

bool is_comm_job(const Run& run, const std::vector<JobRole>& roles, JobRef job) {
  const TypeId t = run.devices[job.device].jobs[job.job].type;
  return t < roles.size() && roles[t].role == PipelineRole::comm;
}

std::optional<JobRef> input_producer(const Run& run, const Dependencies& deps,
                                     const std::vector<JobRole>& roles, JobRef job) {
  const auto& jobs = run.devices[job.device].jobs;
  if (const auto own = deps.producer_of(job)) return own;
  if (!is_comm_job(run, roles, job)) return std::nullopt;
  for (std::size_t k = job.job + 1; k < jobs.size(); ++k) {
    const JobRef next{job.device, static_cast<std::uint32_t>(k)};
    if (const auto dep = deps.producer_of(next)) return dep;
    if (!is_comm_job(run, roles, next)) break;
  }
  return std::nullopt;
}

}  // namespace pipescope
