#include "analysis/schedule_detect.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_invoke.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

namespace pipescope {

namespace {

// Same ops in the same order; micro-batch numbers may start anywhere (some
// versions count from 1), so they are compared relative to the smallest.
bool same_order(const std::vector<ScheduleStep>& expected,
                const std::vector<ScheduleStep>& observed) {
  if (expected.size() != observed.size()) return false;
  std::int64_t base = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    base = i == 0 ? observed[i].micro_batch : std::min(base, observed[i].micro_batch);
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i].role != observed[i].role || expected[i].chunk != observed[i].chunk ||
        expected[i].split != observed[i].split ||
        expected[i].micro_batch != observed[i].micro_batch - base) {
      return false;
    }
  }
  return true;
}

/// The table's job lists, each built once: a run's every step is compared
/// with the same lists.
class JobListCache {
 public:
  const std::optional<std::vector<ScheduleStep>>& get(ScheduleId id, int p, int m, int v, int s) {
    const auto key = std::make_tuple(static_cast<int>(id), p, m, v, s);
    auto it = lists_.find(key);
    if (it == lists_.end()) it = lists_.emplace(key, schedule_job_list(id, p, m, v, s)).first;
    return it->second;
  }

 private:
  std::map<std::tuple<int, int, int, int, int>, std::optional<std::vector<ScheduleStep>>> lists_;
};

bool matches(ScheduleId id, const std::vector<std::vector<ScheduleStep>>& orders, int m, int v,
             JobListCache& cache) {
  const int p = static_cast<int>(orders.size());
  for (int s = 0; s < p; ++s) {
    const auto& expected = cache.get(id, p, m, v, s);
    if (!expected || !same_order(*expected, orders[s])) return false;
  }
  return true;
}

ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders,
                                  JobListCache& cache);

}  // namespace

std::string_view detection_name(const ScheduleDetection& d) {
  if (d.id) return schedule_entry(*d.id).name;
  if (d.family) return schedule_family_name(*d.family);
  return "unknown";
}

std::string detection_frameworks(const ScheduleDetection& d) {
  std::string out;
  auto add = [&](ScheduleId id) {
    const ScheduleEntry& e = schedule_entry(id);
    if (!out.empty()) out += " = ";
    out += e.framework;
    out += ' ';
    out += e.name;
    // Paddle's VPP pass has two lists: name the one with a split backward.
    if (id == ScheduleId::paddle_vpp_split_backward) out += " with split_backward";
  };
  if (d.exact) {
    for (const ScheduleId id : d.matches) add(id);
  } else if (d.id) {
    add(*d.id);
  }
  return out;
}

ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders) {
  JobListCache cache;
  return detect_schedule(orders, cache);
}

namespace {

ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders,
                                  JobListCache& cache) {
  ScheduleDetection d;
  d.stages = static_cast<int>(orders.size());
  if (orders.empty()) return d;
  bool has_weight = false;
  bool has_split = false;
  std::int32_t max_chunk = 0;
  for (const auto& ops : orders) {
    for (const ScheduleStep& op : ops) {
      has_weight |= op.role == PipelineRole::weight;
      has_split |= op.split;
      max_chunk = std::max(max_chunk, op.chunk);
    }
  }
  d.chunks = max_chunk + 1;
  std::vector<std::int64_t> micro_batches;  // the distinct ones are counted
  for (const ScheduleStep& op : orders.front()) {
    if (op.role == PipelineRole::forward && op.chunk == 0) micro_batches.push_back(op.micro_batch);
  }
  std::sort(micro_batches.begin(), micro_batches.end());
  d.micro_batches = static_cast<int>(std::unique(micro_batches.begin(), micro_batches.end()) -
                                     micro_batches.begin());

  for (const ScheduleEntry& e : schedule_table()) {
    if (e.has_job_list && matches(e.id, orders, d.micro_batches, d.chunks, cache)) {
      d.matches.push_back(e.id);
    }
  }
  if (!d.matches.empty()) {
    d.id = d.matches.front();
    d.family = schedule_entry(*d.id).family;
    d.exact = true;
    return d;
  }
  // No exact match: name the family the types show, or FThenB when every
  // stage runs all its forwards before any backward.
  const bool split = has_weight || has_split;
  if (split && d.chunks > 1) {
    d.id = ScheduleId::paddle_zbvpp;
    d.family = ScheduleFamily::zero_bubble;
  } else if (split) {
    d.family = ScheduleFamily::zero_bubble;
  } else if (d.chunks > 1) {
    d.family = ScheduleFamily::interleaved;
  } else {
    bool all_forwards_first = true;
    for (const auto& ops : orders) {
      bool seen_backward = false;
      for (const ScheduleStep& op : ops) {
        if (op.role == PipelineRole::backward) seen_backward = true;
        if (op.role == PipelineRole::forward && seen_backward) all_forwards_first = false;
      }
    }
    if (all_forwards_first) d.family = ScheduleFamily::fthenb;
  }
  return d;
}

}  // namespace

std::optional<double> ideal_bubble_ratio(const ScheduleDetection& d) {
  if (!d.exact || !d.id) return std::nullopt;
  return uniform_bubble_ratio(*d.id, d.stages, d.micro_batches, d.chunks);
}

namespace {

using Vote = ScheduleVotes::Vote;

void add_vote(std::vector<Vote>& votes, const ScheduleDetection& d, std::int64_t count) {
  auto it =
      std::find_if(votes.begin(), votes.end(), [&](const Vote& v) { return v.detection == d; });
  if (it == votes.end()) {
    votes.push_back({d, count});
  } else {
    it->count += count;
  }
}

/// Steps per block of the detection: each block is one task with its own
/// votes, combined in block order after.
constexpr std::size_t kStepBlock = 64;

}  // namespace

void ScheduleVotes::add(const ScheduleVotes& later) {
  steps_examined += later.steps_examined;
  for (const Vote& v : later.votes) add_vote(votes, v.detection, v.count);
}

void OpSums::add(const OpSums& other) {
  for (std::size_t r = 0; r < 3; ++r) {
    ns[r] += other.ns[r];
    count[r] += other.count[r];
  }
}

OpSums op_sums(const Run& run, const std::vector<JobRole>& roles,
               const std::vector<std::vector<std::int32_t>>* job_step, std::size_t first,
               std::size_t last) {
  OpSums sums;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const Job& job = jobs[i];
      if (job.type >= roles.size()) continue;
      if (job_step != nullptr) {
        const auto k = static_cast<std::size_t>((*job_step)[d][i]);
        if (k < first || k >= last) continue;
      }
      const auto r = static_cast<std::size_t>(roles[job.type].role);
      // A job of one F+B action timed whole (JobRole::joined) is neither
      // op's duration.
      if (r < 3 && !roles[job.type].joined) {
        sums.ns[r] += job.duration_ns();
        // The pieces of one op (JobRole::piece) count once.
        if (roles[job.type].piece <= 0) ++sums.count[r];
      }
    }
  }
  return sums;
}

ScheduleVotes vote_schedules(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                             std::span<const StepWindow> windows, std::size_t first,
                             std::size_t last, const StageMap& stages,
                             const std::vector<JobRole>& roles) {
  const std::size_t p = stages.stage_count();
  last = std::min(last, windows.size());
  const std::size_t steps = last > first ? last - first : 0;
  if (steps == 0) return {};
  // order[s] of a step is stage s's compute ops in that step (its first
  // device). Along a device's jobs job_step only decreases after a step's
  // prologue (an lr or recv job moved into the next step, then a send or
  // other job still in the step before), never at a compute job, so a
  // cursor per stage that stops at the first job of a later step walks
  // every job once and misses no compute op. Each block of steps starts its
  // cursors where that walk would have them (`block_start`), so blocks run
  // in parallel and see exactly the ops the serial walk sees.
  const std::size_t blocks = (steps + kStepBlock - 1) / kStepBlock;
  std::vector<ScheduleVotes> block_votes(blocks);
  {
    // block_start[b * p + s]: stage s's cursor at the first step of block b.
    std::vector<std::size_t> block_start(blocks * p, 0);
    tbb::parallel_for(std::size_t{0}, p, [&](std::size_t s) {
      if (stages.devices[s].empty()) return;
      const std::size_t d = stages.devices[s].front();
      if (d >= run.devices.size() || d >= job_step.size()) return;
      const auto& steps_of = job_step[d];
      const std::size_t n = std::min(run.devices[d].jobs.size(), steps_of.size());
      // The serial cursor before step `first`: past every job of an earlier
      // step up to the first job of a later one.
      std::size_t i = 0;
      if (first > 0) {
        for (std::size_t k = 0; k < first; ++k) {
          for (; i < n; ++i) {
            if (steps_of[i] >= 0 && static_cast<std::size_t>(steps_of[i]) > k) break;
          }
        }
      }
      block_start[s] = i;
      for (std::size_t b = 1; b < blocks; ++b) {
        // The serial cursor after step k stops at the first job of a step
        // after k (or the end); the first step of block b is first + b * kStepBlock.
        for (std::size_t k = first + (b - 1) * kStepBlock; k < first + b * kStepBlock; ++k) {
          for (; i < n; ++i) {
            if (steps_of[i] >= 0 && static_cast<std::size_t>(steps_of[i]) > k) break;
          }
        }
        block_start[b * p + s] = i;
      }
    });
    tbb::enumerable_thread_specific<JobListCache> caches;
    tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
      JobListCache& cache = caches.local();
      ScheduleVotes& out = block_votes[b];
      std::vector<std::vector<ScheduleStep>> order(p);
      std::vector<std::size_t> cursor(block_start.begin() + static_cast<std::ptrdiff_t>(b * p),
                                      block_start.begin() + static_cast<std::ptrdiff_t>(b * p + p));
      std::vector<std::vector<ScheduleStep>> last_order;
      std::optional<ScheduleDetection> last;
      const std::size_t block_end = first + std::min(steps, (b + 1) * kStepBlock);
      for (std::size_t k = first + b * kStepBlock; k < block_end; ++k) {
        for (std::size_t s = 0; s < p; ++s) {
          order[s].clear();
          if (stages.devices[s].empty()) continue;
          const std::size_t d = stages.devices[s].front();
          if (d >= run.devices.size() || d >= job_step.size()) continue;
          const auto& jobs = run.devices[d].jobs;
          const auto& steps_of = job_step[d];
          std::size_t& i = cursor[s];
          for (; i < jobs.size() && i < steps_of.size(); ++i) {
            if (steps_of[i] >= 0 && static_cast<std::size_t>(steps_of[i]) > k) break;
            if (steps_of[i] < 0 || static_cast<std::size_t>(steps_of[i]) < k) continue;
            const Job& job = jobs[i];
            if (job.type >= roles.size() || !roles[job.type].compute()) continue;
            const JobRole& role = roles[job.type];
            if (role.piece > 0) continue;  // one op: its first piece stands for it
            order[s].push_back({role.role, job.micro_batch, role.chunk,
                                role.role == PipelineRole::backward && role.split_backward});
          }
        }
        // An incomplete step (a launch cut short) shows only part of the schedule.
        if (!windows[k].complete) continue;
        if (p == 0 ||
            std::any_of(order.begin(), order.end(), [](const auto& ops) { return ops.empty(); })) {
          continue;
        }
        ++out.steps_examined;
        // Detection is a function of the orders alone, and consecutive
        // steps usually run the same ones: detected again only on a change.
        if (!last || order != last_order) {
          last = detect_schedule(order, cache);
          last_order = order;
        }
        add_vote(out.votes, *last, 1);
      }
    });
  }
  ScheduleVotes votes;
  for (const ScheduleVotes& block : block_votes) votes.add(block);
  return votes;
}

ScheduleReport finish_schedule(const ScheduleVotes& votes, const OpSums& sums,
                               std::size_t stage_count, double measured_bubble_ratio) {
  ScheduleReport report;
  report.measured_bubble_ratio = measured_bubble_ratio;
  report.steps_examined = votes.steps_examined;
  // The sums are exact integers, as long double sums of durations in job
  // order were: the means do not depend on how the jobs were split.
  double* means[3] = {&report.means.forward_ns, &report.means.backward_ns, &report.means.weight_ns};
  for (std::size_t r = 0; r < 3; ++r) {
    *means[r] = sums.count[r] == 0
                    ? 0.0
                    : static_cast<double>(static_cast<long double>(sums.ns[r]) / sums.count[r]);
  }
  if (!votes.votes.empty()) {
    const auto best =
        std::max_element(votes.votes.begin(), votes.votes.end(), [](const Vote& a, const Vote& b) {
          return a.count < b.count;  // the first of equal counts
        });
    report.detection = best->detection;
    report.steps_agreeing = best->count;
  } else {
    report.detection.stages = static_cast<int>(stage_count);
  }
  report.ideal_bubble_ratio = ideal_bubble_ratio(report.detection);
  if (report.ideal_bubble_ratio) {
    report.excess = report.measured_bubble_ratio - *report.ideal_bubble_ratio;
  }
  return report;
}

ScheduleReport detect_run_schedule(const Run& run, const Metrics& metrics, const StageMap& stages,
                                   const std::vector<JobRole>& roles) {
  ScheduleVotes votes;
  OpSums sums;
  // Means of F, B and W over every device beside the per-step detection.
  tbb::parallel_invoke([&] { sums = op_sums(run, roles); },
                       [&] {
                         votes = vote_schedules(run, metrics.job_step, metrics.steps, 0,
                                                metrics.steps.size(), stages, roles);
                       });
  return finish_schedule(votes, sums, stages.stage_count(), metrics.bubble_ratio);
}

}  // namespace pipescope
