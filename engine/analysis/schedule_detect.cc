#include "analysis/schedule_detect.h"

#include <algorithm>
#include <set>

namespace pipescope {

namespace {

ScheduleStep f(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::forward, mb, chunk};
}
ScheduleStep b(std::int64_t mb, std::int32_t chunk = 0) {
  return {PipelineRole::backward, mb, chunk};
}
ScheduleStep w(std::int64_t mb) { return {PipelineRole::weight, mb, 0}; }

// 1F1B-shaped order with `warmup` forwards before the steady F/B pairs.
std::vector<ScheduleStep> one_f_one_b(int m, int warmup) {
  std::vector<ScheduleStep> ops;
  for (int i = 0; i < warmup; ++i) ops.push_back(f(i));
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back(f(warmup + i));
    ops.push_back(b(i));
  }
  for (int i = m - warmup; i < m; ++i) ops.push_back(b(i));
  return ops;
}

// ZB-H1: 1F1B's warm-up; the first P-s-1 steady iterations defer their W,
// every later B (steady and cool-down) is followed by one W, and the W's
// still owed close the step.
std::vector<ScheduleStep> zb_h1(int p, int m, int stage) {
  const int warmup = std::min(p - stage - 1, m);
  const int deferred = p - stage - 1;
  std::vector<ScheduleStep> ops;
  int next_w = 0;
  for (int i = 0; i < warmup; ++i) ops.push_back(f(i));
  for (int i = 0; i < m - warmup; ++i) {
    ops.push_back(f(warmup + i));
    ops.push_back(b(i));
    if (i >= deferred) ops.push_back(w(next_w++));
  }
  for (int i = m - warmup; i < m; ++i) {
    ops.push_back(b(i));
    ops.push_back(w(next_w++));
  }
  while (next_w < m) ops.push_back(w(next_w++));
  return ops;
}

// Megatron-LM's interleaved order: virtual op k runs micro-batch
// (k / PV)·P + k % P on chunk (k % PV) / P (backwards: chunks reversed).
std::vector<ScheduleStep> interleaved(int p, int m, int v, int stage) {
  const int total = m * v;
  const int warmup = m == p ? total : std::min((p - stage - 1) * 2 + (v - 1) * p, total);
  auto chunk_of = [&](int k, bool forward) {
    const int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  std::vector<ScheduleStep> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back(f(mb_of(k), chunk_of(k, true)));
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(f(mb_of(warmup + k), chunk_of(warmup + k, true)));
    ops.push_back(b(mb_of(k), chunk_of(k, false)));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(b(mb_of(k), chunk_of(k, false)));
  return ops;
}

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
        expected[i].micro_batch != observed[i].micro_batch - base) {
      return false;
    }
  }
  return true;
}

bool matches(PipelineSchedule schedule, const std::vector<std::vector<ScheduleStep>>& orders, int m,
             int v) {
  const int p = static_cast<int>(orders.size());
  for (int s = 0; s < p; ++s) {
    const auto expected = canonical_order(schedule, p, m, v, s);
    if (expected.empty() || !same_order(expected, orders[s])) return false;
  }
  return true;
}

}  // namespace

std::string_view pipeline_schedule_name(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::unknown:
      return "unknown";
    case PipelineSchedule::fthenb:
      return "FThenB";
    case PipelineSchedule::one_f_one_b:
      return "1F1B";
    case PipelineSchedule::eager_one_f_one_b:
      return "Eager1F1B";
    case PipelineSchedule::interleaved:
      return "VPP";
    case PipelineSchedule::zero_bubble:
      return "ZB-H1";
  }
  return "unknown";
}

std::vector<ScheduleStep> canonical_order(PipelineSchedule schedule, int stages, int micro_batches,
                                          int chunks, int stage) {
  const int p = stages, m = micro_batches;
  if (p < 1 || m < 1 || stage < 0 || stage >= p) return {};
  switch (schedule) {
    case PipelineSchedule::unknown:
      return {};
    case PipelineSchedule::fthenb:
      return one_f_one_b(m, m);
    case PipelineSchedule::one_f_one_b:
      return one_f_one_b(m, std::min(p - stage - 1, m));
    case PipelineSchedule::eager_one_f_one_b:
      return one_f_one_b(m, std::min(2 * (p - stage - 1), m));
    case PipelineSchedule::interleaved:
      if (chunks < 1 || m % p != 0) return {};
      return interleaved(p, m, chunks, stage);
    case PipelineSchedule::zero_bubble:
      return zb_h1(p, m, stage);
  }
  return {};
}

ScheduleDetection detect_schedule(const std::vector<std::vector<ScheduleStep>>& orders) {
  ScheduleDetection d;
  d.stages = static_cast<int>(orders.size());
  if (orders.empty()) return d;
  bool has_weight = false;
  std::int32_t max_chunk = 0;
  for (const auto& ops : orders) {
    for (const ScheduleStep& op : ops) {
      has_weight |= op.role == PipelineRole::weight;
      max_chunk = std::max(max_chunk, op.chunk);
    }
  }
  d.chunks = max_chunk + 1;
  std::set<std::int64_t> micro_batches;
  for (const ScheduleStep& op : orders.front()) {
    if (op.role == PipelineRole::forward && op.chunk == 0) micro_batches.insert(op.micro_batch);
  }
  d.micro_batches = static_cast<int>(micro_batches.size());

  std::vector<PipelineSchedule> candidates;
  if (has_weight) {
    candidates = {PipelineSchedule::zero_bubble};
  } else if (d.chunks > 1) {
    candidates = {PipelineSchedule::interleaved};
  } else {
    // 1F1B first: with M = 1 it is also FThenB's order, and 1F1B is the
    // more common reading; Eager1F1B last, as it equals 1F1B when M is small.
    candidates = {PipelineSchedule::one_f_one_b, PipelineSchedule::fthenb,
                  PipelineSchedule::eager_one_f_one_b};
  }
  for (const PipelineSchedule c : candidates) {
    if (matches(c, orders, d.micro_batches, d.chunks)) {
      d.schedule = c;
      d.exact = true;
      return d;
    }
  }
  // No exact match: name the family the types show, or FThenB when every
  // stage runs all its forwards before any backward.
  if (has_weight) {
    d.schedule = PipelineSchedule::zero_bubble;
  } else if (d.chunks > 1) {
    d.schedule = PipelineSchedule::interleaved;
  } else {
    bool all_forwards_first = true;
    for (const auto& ops : orders) {
      bool seen_backward = false;
      for (const ScheduleStep& op : ops) {
        if (op.role == PipelineRole::backward) seen_backward = true;
        if (op.role == PipelineRole::forward && seen_backward) all_forwards_first = false;
      }
    }
    if (all_forwards_first) d.schedule = PipelineSchedule::fthenb;
  }
  return d;
}

std::optional<double> ideal_bubble_ratio(const ScheduleDetection& detection, const OpMeans& means) {
  const double p = detection.stages;
  const double m = detection.micro_batches;
  if (detection.stages < 1 || detection.micro_batches < 1) return std::nullopt;
  switch (detection.schedule) {
    case PipelineSchedule::unknown:
      return std::nullopt;
    case PipelineSchedule::fthenb:
    case PipelineSchedule::one_f_one_b:
    case PipelineSchedule::eager_one_f_one_b:
      return (p - 1) / (m + p - 1);
    case PipelineSchedule::interleaved:
      return (p - 1) / (detection.chunks * m + p - 1);
    case PipelineSchedule::zero_bubble: {
      const double fbw = means.forward_ns + means.backward_ns + means.weight_ns;
      const double bubble =
          (p - 1) * std::max(0.0, means.forward_ns + means.backward_ns - means.weight_ns);
      const double total = bubble + m * fbw;
      return total > 0 ? bubble / total : 0.0;
    }
  }
  return std::nullopt;
}

ScheduleReport detect_run_schedule(const Run& run, const Metrics& metrics, const StageMap& stages,
                                   const std::vector<JobRole>& roles) {
  ScheduleReport report;
  report.measured_bubble_ratio = metrics.bubble_ratio;
  const std::size_t p = stages.stage_count();
  const std::size_t steps = metrics.steps.size();

  // Means of F, B and W over every device.
  long double sums[3] = {0, 0, 0};
  std::uint64_t counts[3] = {0, 0, 0};
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      if (job.type >= roles.size()) continue;
      const auto r = static_cast<std::size_t>(roles[job.type].role);
      if (r < 3) {
        sums[r] += static_cast<long double>(job.duration_ns());
        ++counts[r];
      }
    }
  }
  double* means[3] = {&report.means.forward_ns, &report.means.backward_ns, &report.means.weight_ns};
  for (int r = 0; r < 3; ++r) {
    *means[r] = counts[r] == 0 ? 0.0 : static_cast<double>(sums[r] / counts[r]);
  }

  struct Vote {
    ScheduleDetection detection;
    std::int64_t count = 0;
  };
  std::vector<Vote> votes;
  // One step at a time, so memory holds one step's ops, not the run's:
  // order[s] is stage s's compute ops of step k (its first device). Along a
  // device's jobs job_step only decreases after a step's prologue (an lr or
  // recv job moved into the next step, then a send or other job still in the
  // step before), never at a compute job, so a cursor per stage that stops at
  // the first job of a later step walks every job once and misses no compute op.
  std::vector<std::vector<ScheduleStep>> order(p);
  std::vector<std::size_t> cursor(p, 0);
  for (std::size_t k = 0; k < steps; ++k) {
    for (std::size_t s = 0; s < p; ++s) {
      order[s].clear();
      if (stages.devices[s].empty()) continue;
      const std::size_t d = stages.devices[s].front();
      if (d >= run.devices.size() || d >= metrics.job_step.size()) continue;
      const auto& jobs = run.devices[d].jobs;
      const auto& job_step = metrics.job_step[d];
      std::size_t& i = cursor[s];
      for (; i < jobs.size() && i < job_step.size(); ++i) {
        if (job_step[i] >= 0 && static_cast<std::size_t>(job_step[i]) > k) break;
        if (job_step[i] < 0 || static_cast<std::size_t>(job_step[i]) < k) continue;
        const Job& job = jobs[i];
        if (job.type >= roles.size() || !roles[job.type].compute()) continue;
        order[s].push_back({roles[job.type].role, job.micro_batch, roles[job.type].chunk});
      }
    }
    // An incomplete step (a launch cut short) shows only part of the schedule.
    if (!metrics.steps[k].complete) continue;
    if (p == 0 ||
        std::any_of(order.begin(), order.end(), [](const auto& ops) { return ops.empty(); })) {
      continue;
    }
    ++report.steps_examined;
    const ScheduleDetection d = detect_schedule(order);
    auto same = [&](const Vote& v) {
      return v.detection.schedule == d.schedule && v.detection.exact == d.exact &&
             v.detection.stages == d.stages && v.detection.micro_batches == d.micro_batches &&
             v.detection.chunks == d.chunks;
    };
    auto it = std::find_if(votes.begin(), votes.end(), same);
    if (it == votes.end()) {
      votes.push_back({d, 1});
    } else {
      ++it->count;
    }
  }
  if (!votes.empty()) {
    const auto best =
        std::max_element(votes.begin(), votes.end(), [](const Vote& a, const Vote& b) {
          return a.count < b.count;  // max_element keeps the first of equal counts
        });
    report.detection = best->detection;
    report.steps_agreeing = best->count;
  } else {
    report.detection.stages = static_cast<int>(p);
  }
  report.ideal_bubble_ratio = ideal_bubble_ratio(report.detection, report.means);
  if (report.ideal_bubble_ratio) {
    report.excess = report.measured_bubble_ratio - *report.ideal_bubble_ratio;
  }
  return report;
}

}  // namespace pipescope
