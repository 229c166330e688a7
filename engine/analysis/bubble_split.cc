#include "analysis/bubble_split.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "analysis/step_rule.h"

namespace pipescope {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Op kinds the simulation prices: forward, whole backward, input-gradient
// half of a split backward, weight half.
constexpr std::size_t kOpKinds = 4;

std::optional<std::size_t> op_kind(const JobRole& role) {
  // An F+B action timed as one job (JobRole::joined) is neither op's cost.
  if (role.joined) return std::nullopt;
  switch (role.role) {
    case PipelineRole::forward:
      return 0;
    case PipelineRole::backward:
      return role.split_backward ? 2 : 1;
    case PipelineRole::weight:
      return 3;
    default:
      return std::nullopt;
  }
}

static_assert(kOpKinds == std::tuple_size_v<decltype(OpCostSums::ns)>);

/// The costs of one step: its means, else the run's, else 1 ns (a kind the
/// lists do not use). The sums are exact integers, as the long double sums
/// in job order they replace were: the means do not depend on the order.
OpCosts step_costs(const OpCostSums& step, const OpCostSums& run) {
  std::array<double, kOpKinds> mean{};
  for (std::size_t i = 0; i < kOpKinds; ++i) {
    if (step.count[i] > 0) {
      mean[i] = static_cast<double>(static_cast<long double>(step.ns[i]) / step.count[i]);
    } else if (run.count[i] > 0) {
      mean[i] = static_cast<double>(static_cast<long double>(run.ns[i]) / run.count[i]);
    }
    if (!(mean[i] > 0)) mean[i] = 1;
  }
  return {mean[0], mean[1], mean[2], mean[3]};
}

/// The contract's busy union of a device: every job but comm jobs.
std::vector<Interval> compute_union(const Device& device, const TypeKinds& kinds) {
  std::vector<Interval> out;
  for (const Job& job : device.jobs) {
    if (job.end_ns <= job.start_ns) continue;
    if (job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm) continue;
    if (!out.empty() && job.start_ns <= out.back().second) {
      out.back().second = std::max(out.back().second, job.end_ns);
    } else {
      out.emplace_back(job.start_ns, job.end_ns);
    }
  }
  return out;
}

/// |[begin, end) − busy ∩ complete windows| (of `windows`, in time order).
std::int64_t comm_only(std::int64_t begin, std::int64_t end, const std::vector<Interval>& busy,
                       std::span<const StepWindow> windows) {
  std::int64_t total = 0;
  auto in_windows = [&](std::int64_t b, std::int64_t e) {
    // Windows are disjoint and in time order.
    auto it = std::lower_bound(windows.begin(), windows.end(), b,
                               [](const StepWindow& w, std::int64_t at) { return w.end_ns <= at; });
    for (; it != windows.end() && it->start_ns < e; ++it) {
      if (!it->complete) continue;
      total += std::max<std::int64_t>(0, std::min(e, it->end_ns) - std::max(b, it->start_ns));
    }
  };
  auto it = std::lower_bound(busy.begin(), busy.end(), begin,
                             [](const Interval& i, std::int64_t at) { return i.second <= at; });
  for (; it != busy.end() && it->first < end && begin < end; ++it) {
    if (it->first > begin) in_windows(begin, it->first);
    begin = std::max(begin, it->second);
  }
  if (begin < end) in_windows(begin, end);
  return total;
}

/// Comm time of every device in `windows` by the stage it waits for.
void comm_waits(const Run& run, std::span<const StepWindow> windows, const StageMap& stages,
                SplitEvidence& split) {
  const std::size_t p = stages.stage_count();
  split.receive_wait_ns.assign(p, 0);
  split.send_wait_ns.assign(p, 0);
  if (p == 0) return;
  const TypeKinds kinds(run.types);
  const auto is_comm = [&](const Job& job) {
    return job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm;
  };
  // Devices in parallel, each into its own sums (integers: the totals do not
  // depend on the order they are added in).
  const std::size_t devices = std::min(run.devices.size(), stages.stage_of.size());
  struct Waits {
    std::vector<std::int64_t> receive, send;
  };
  std::vector<Waits> waits(devices);
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    const Device& device = run.devices[d];
    // A device without a comm job waits for nothing: its union is not needed.
    if (std::none_of(device.jobs.begin(), device.jobs.end(), is_comm)) return;
    std::vector<std::int64_t>& receive_wait = waits[d].receive;
    std::vector<std::int64_t>& send_wait = waits[d].send;
    receive_wait.assign(p, 0);
    send_wait.assign(p, 0);
    const auto s = static_cast<std::size_t>(stages.stage_of[d]);
    const std::vector<Interval> busy = compute_union(device, kinds);
    std::int64_t cursor = std::numeric_limits<std::int64_t>::min();
    for (const Job& job : device.jobs) {
      if (job.type >= kinds.kind.size() || kinds.kind[job.type] != JobKind::comm) continue;
      const std::int64_t begin = std::max(job.start_ns, cursor);
      const std::int64_t end = job.end_ns;
      cursor = std::max(cursor, end);
      if (end <= begin) continue;
      const std::string_view type = run.types.name(job.type);
      const bool receive = kinds.receive[job.type];
      const bool forward = type.find("forward") != std::string_view::npos;
      const bool backward = type.find("backward") != std::string_view::npos;
      if (forward == backward) continue;  // the peer cannot be told
      // Forward data flows to the next stage, backward data to the previous.
      const bool from_before = receive == forward;
      const std::size_t peer = from_before ? (s + p - 1) % p : (s + 1) % p;
      (receive ? receive_wait : send_wait)[peer] += comm_only(begin, end, busy, windows);
    }
  });
  for (const Waits& w : waits) {
    for (std::size_t s = 0; s < w.receive.size(); ++s) {
      split.receive_wait_ns[s] += w.receive[s];
      split.send_wait_ns[s] += w.send[s];
    }
  }
}

}  // namespace

void OpCostSums::add(const OpCostSums& other) {
  for (std::size_t i = 0; i < ns.size(); ++i) {
    ns[i] += other.ns[i];
    count[i] += other.count[i];
  }
}

SplitEvidence split_evidence(const Run& run, const Metrics& metrics, const StageMap& stages,
                             const std::vector<JobRole>& roles, std::size_t first,
                             std::size_t last) {
  SplitEvidence out;
  last = std::min(last, metrics.steps.size());
  first = std::min(first, last);
  out.first = first;
  const auto windows = std::span<const StepWindow>(metrics.steps).subspan(first, last - first);
  comm_waits(run, windows, stages, out);
  // Mean cost of each op kind per step, over every device (all stages).
  out.step_sums.resize(last - first);
  for (std::size_t d = 0; d < run.devices.size() && d < metrics.job_step.size(); ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size() && i < metrics.job_step[d].size(); ++i) {
      const Job& job = jobs[i];
      if (job.type >= roles.size()) continue;
      const auto kind = op_kind(roles[job.type]);
      const auto k = static_cast<std::size_t>(metrics.job_step[d][i]);
      if (!kind || k < first || k >= last || !metrics.steps[k].complete) continue;
      // The pieces of one op (JobRole::piece) count once.
      const std::uint64_t ops = roles[job.type].piece <= 0 ? 1 : 0;
      out.step_sums[k - first].ns[*kind] += job.duration_ns();
      out.step_sums[k - first].count[*kind] += ops;
      out.run_sums.ns[*kind] += job.duration_ns();
      out.run_sums.count[*kind] += ops;
    }
  }
  return out;
}

namespace {

/// The detected schedule's job lists, when it has them for the stage map.
struct SplitLists {
  std::vector<std::vector<ScheduleStep>> lists;
  StagePlacement placement = StagePlacement::looped;
  int chunks = 1;
};

std::optional<SplitLists> split_lists(const StageMap& stages, const ScheduleReport& schedule) {
  const ScheduleDetection& detection = schedule.detection;
  if (!detection.exact || !detection.id) return std::nullopt;
  const int p = detection.stages;
  if (p < 1 || static_cast<std::size_t>(p) != stages.stage_count()) return std::nullopt;
  SplitLists out;
  for (int s = 0; s < p; ++s) {
    auto list = schedule_job_list(*detection.id, p, detection.micro_batches, detection.chunks, s);
    if (!list) return std::nullopt;
    out.lists.push_back(std::move(*list));
  }
  out.placement = schedule_entry(*detection.id).placement;
  out.chunks = detection.chunks;
  return out;
}

}  // namespace

SplitRows split_rows(const SplitEvidence& part, const OpCostSums& run_sums,
                     std::span<const StepWindow> windows, const StageMap& stages,
                     const ScheduleReport& schedule) {
  SplitRows rows;
  const std::optional<SplitLists> lists = split_lists(stages, schedule);
  if (!lists) {
    rows.failed = true;
    return rows;
  }
  const std::size_t steps = part.step_sums.size();
  // The range's own windows carry the device figures (a partitioned run
  // keeps them only where it owns the steps).
  const std::size_t devices =
      steps == 0 || part.first >= windows.size() ? 0 : windows[part.first].devices.size();
  rows.inherent.assign(steps, std::vector<std::int64_t>(devices, 0));
  rows.device_inherent.assign(devices, 0);
  // Steps are independent once their costs are known: each simulated in
  // parallel into its own row; the integer totals are added up after.
  std::atomic<bool> failed = false;
  tbb::parallel_for(
      tbb::blocked_range<std::size_t>(0, steps, 16),
      [&](const tbb::blocked_range<std::size_t>& range) {
        for (std::size_t j = range.begin(); j != range.end(); ++j) {
          const StepWindow& window = windows[part.first + j];
          if (!window.complete || failed.load(std::memory_order_relaxed)) continue;
          const auto simulated = simulate_job_lists(lists->lists, lists->placement, lists->chunks,
                                                    step_costs(part.step_sums[j], run_sums));
          if (!simulated) {
            failed = true;
            continue;
          }
          for (std::size_t d = 0; d < devices && d < stages.stage_of.size(); ++d) {
            const auto s = static_cast<std::size_t>(stages.stage_of[d]);
            const double stage_idle = simulated->makespan - simulated->busy[s];
            const auto ns = static_cast<std::int64_t>(std::llround(std::max(0.0, stage_idle)));
            rows.inherent[j][d] = std::min(ns, window.devices[d].idle_ns);
          }
        }
      });
  if (failed) {
    rows.failed = true;
    return rows;
  }
  for (std::size_t j = 0; j < steps; ++j) {
    const StepWindow& window = windows[part.first + j];
    if (!window.complete) continue;
    for (std::size_t d = 0; d < devices; ++d) {
      rows.idle_ns += window.devices[d].idle_ns;
      if (d >= stages.stage_of.size()) continue;
      const std::int64_t inherent = rows.inherent[j][d];
      rows.device_inherent[d] += inherent;
      rows.inherent_ns += inherent;
    }
  }
  return rows;
}

BubbleSplit assemble_split(std::span<const SplitEvidence> parts, std::vector<SplitRows>&& rows,
                           const StageMap& stages, std::size_t devices) {
  BubbleSplit split;
  const std::size_t p = stages.stage_count();
  split.receive_wait_ns.assign(p, 0);
  split.send_wait_ns.assign(p, 0);
  for (const SplitEvidence& part : parts) {
    for (std::size_t s = 0; s < p && s < part.receive_wait_ns.size(); ++s) {
      split.receive_wait_ns[s] += part.receive_wait_ns[s];
      split.send_wait_ns[s] += part.send_wait_ns[s];
    }
  }
  const bool failed = rows.empty() || std::any_of(rows.begin(), rows.end(),
                                                  [](const SplitRows& r) { return r.failed; });
  if (failed) return split;
  split.device_inherent.assign(devices, 0);
  std::int64_t idle = 0;
  for (SplitRows& part : rows) {
    for (auto& row : part.inherent) split.inherent.push_back(std::move(row));
    for (std::size_t d = 0; d < devices && d < part.device_inherent.size(); ++d) {
      split.device_inherent[d] += part.device_inherent[d];
    }
    split.inherent_ns += part.inherent_ns;
    idle += part.idle_ns;
  }
  split.excess_ns = idle - split.inherent_ns;
  split.known = true;
  return split;
}

BubbleSplit split_bubbles(const Run& run, const Metrics& metrics, const StageMap& stages,
                          const std::vector<JobRole>& roles, const ScheduleReport& schedule) {
  const SplitEvidence all = split_evidence(run, metrics, stages, roles, 0, metrics.steps.size());
  std::vector<SplitRows> rows;
  rows.push_back(split_rows(all, all.run_sums, metrics.steps, stages, schedule));
  return assemble_split(std::span<const SplitEvidence>(&all, 1), std::move(rows), stages,
                        run.devices.size());
}

std::optional<std::int64_t> bubble_inherent_ns(const BubbleSplit& split, const Metrics& metrics,
                                               const Bubble& bubble) {
  if (!split.known || bubble.step >= split.inherent.size() || bubble.step >= metrics.steps.size() ||
      !metrics.steps[bubble.step].complete) {
    return std::nullopt;
  }
  return bubble_inherent_ns(true, metrics.steps[bubble.step],
                            split.inherent[bubble.step][bubble.device], bubble);
}

std::optional<std::int64_t> bubble_inherent_ns(bool known, const StepWindow& window,
                                               std::int64_t inherent, const Bubble& bubble) {
  if (!known || !window.complete) return std::nullopt;
  const std::int64_t idle = window.devices[bubble.device].idle_ns;
  if (idle <= 0) return 0;
  return static_cast<std::int64_t>(static_cast<__int128>(inherent) * bubble.length_ns() / idle);
}

}  // namespace pipescope
