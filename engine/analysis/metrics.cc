#include "analysis/metrics.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "analysis/job_kind.h"

namespace pipescope {

namespace {

constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

/// a / b as a double, 0 when b is 0. long double holds any int64 exactly.
double ratio(std::int64_t a, std::int64_t b) {
  return b == 0 ? 0.0
                : static_cast<double>(static_cast<long double>(a) / static_cast<long double>(b));
}

/// Whether a kind counts as the "previous non-comm, non-other job" of the
/// step rule: forward, backward, optimizer or lr.
bool steers_steps(JobKind kind) { return kind != JobKind::comm && kind != JobKind::other; }

/// Whether a kind is forward, backward or optimizer: such a job between a
/// prologue job (lr, recv) and the step's opening job keeps the prologue job
/// in the step it follows.
bool is_fbo(JobKind kind) {
  return kind == JobKind::forward || kind == JobKind::backward || kind == JobKind::optimizer;
}

/// Assigns each job of one device (in start order) to a step index; returns
/// the number of steps. A step begins (opens) at the first job, at every lr
/// job that follows a non-comm, non-other job, and at every forward-kind job
/// of micro-batch 0 whose previous non-comm, non-other job exists and is
/// neither forward nor lr. The lr and receive jobs right before an opening
/// job, with no forward, backward or optimizer job between, belong to the
/// step it opens (the nearest opening job after them); every other job
/// belongs to the step in progress when it starts.
std::int32_t detect_steps(const Device& device, const std::vector<JobKind>& kinds,
                          const std::vector<bool>& receives, std::vector<std::int32_t>& step_of) {
  const std::size_t n = device.jobs.size();
  step_of.assign(n, 0);
  std::vector<bool> opens(n, false);
  std::int32_t step = -1;
  std::optional<JobKind> previous;  // the previous non-comm, non-other job's kind
  for (std::size_t i = 0; i < n; ++i) {
    const Job& job = device.jobs[i];
    const JobKind kind = kinds[job.type];
    opens[i] = i == 0 || (kind == JobKind::lr && previous) ||
               (kind == JobKind::forward && job.micro_batch == 0 && previous &&
                *previous != JobKind::forward && *previous != JobKind::lr);
    if (opens[i]) ++step;
    step_of[i] = step;
    if (steers_steps(kind)) previous = kind;
  }
  // The prologue, walking back: `ahead` holds while the nearest opening job
  // after job i is reached without a forward, backward or optimizer job.
  // Such a job moves from the step in progress to the next one.
  bool ahead = false;
  for (std::size_t i = n; i-- > 0;) {
    const Job& job = device.jobs[i];
    const JobKind kind = kinds[job.type];
    if (ahead && (kind == JobKind::lr || receives[job.type])) ++step_of[i];
    if (opens[i]) {
      ahead = true;
    } else if (is_fbo(kind)) {
      ahead = false;
    }
  }
  return step + 1;
}

/// Adds |[begin, end) ∩ window| to busy(d, k) for every window it meets.
/// Intervals arrive sorted and disjoint, so the first window that can still
/// meet one only moves forward.
class BusyAccumulator {
 public:
  BusyAccumulator(std::vector<StepWindow>& windows, std::size_t device)
      : windows_(windows), device_(device) {}

  void add(std::int64_t begin, std::int64_t end) {
    while (next_ < windows_.size() && windows_[next_].end_ns <= begin) ++next_;
    for (std::size_t k = next_; k < windows_.size() && windows_[k].start_ns < end; ++k) {
      const std::int64_t overlap =
          std::min(end, windows_[k].end_ns) - std::max(begin, windows_[k].start_ns);
      if (overlap > 0) windows_[k].devices[device_].busy_ns += overlap;
    }
  }

 private:
  std::vector<StepWindow>& windows_;
  std::size_t device_;
  std::size_t next_ = 0;
};

/// Feeds the union of a device's job intervals (jobs sorted by start) to
/// `busy`, one maximal merged interval at a time; overlapping jobs count once.
void add_busy_time(const Device& device, BusyAccumulator& busy) {
  bool open = false;
  std::int64_t begin = 0, end = 0;
  for (const Job& job : device.jobs) {
    if (job.end_ns <= job.start_ns) continue;
    if (open && job.start_ns <= end) {
      end = std::max(end, job.end_ns);
      continue;
    }
    if (open) busy.add(begin, end);
    open = true;
    begin = job.start_ns;
    end = job.end_ns;
  }
  if (open) busy.add(begin, end);
}

}  // namespace

Metrics compute_metrics(const Run& run) {
  Metrics metrics;
  const std::size_t device_count = run.devices.size();
  const std::int64_t first_step = run.first_step.value_or(0);

  std::vector<JobKind> kinds(run.types.size());
  std::vector<bool> receives(run.types.size());
  for (TypeId t = 0; t < run.types.size(); ++t) {
    kinds[t] = classify_job_type(run.types.name(t));
    receives[t] = kinds[t] == JobKind::comm && is_receive_type(run.types.name(t));
  }

  // Steps per device, and each step's first start and last end per device.
  std::size_t step_count = 0;
  metrics.job_step.resize(device_count);
  metrics.devices.resize(device_count);
  for (std::size_t d = 0; d < device_count; ++d) {
    const auto steps = static_cast<std::size_t>(
        detect_steps(run.devices[d], kinds, receives, metrics.job_step[d]));
    metrics.devices[d].steps = static_cast<std::int64_t>(steps);
    step_count = std::max(step_count, steps);
  }
  std::vector<std::int64_t> first_start(step_count, std::numeric_limits<std::int64_t>::max());
  std::vector<std::int64_t> last_end(step_count, kNoTime);
  std::vector<bool> has_job(step_count, false);
  for (std::size_t d = 0; d < device_count; ++d) {
    const auto& jobs = run.devices[d].jobs;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto k = static_cast<std::size_t>(metrics.job_step[d][i]);
      first_start[k] = std::min(first_start[k], jobs[i].start_ns);
      last_end[k] = std::max(last_end[k], jobs[i].end_ns);
      has_job[k] = true;
    }
  }

  // Windows: S_k = max(min_d first start, E_{k-1}); E_k = max_d last end. A
  // step without a job on any device (consecutive lr jobs each open a step,
  // and the first one moves into the second one's step) gets an empty window
  // at E_{k-1}, or at the earliest job start for k = 0.
  const std::int64_t earliest =
      step_count == 0 ? 0 : *std::min_element(first_start.begin(), first_start.end());
  metrics.steps.resize(step_count);
  for (std::size_t k = 0; k < step_count; ++k) {
    StepWindow& window = metrics.steps[k];
    window.step = first_step + static_cast<std::int64_t>(k);
    if (!has_job[k]) {
      window.start_ns = window.end_ns = k == 0 ? earliest : metrics.steps[k - 1].end_ns;
      window.devices.resize(device_count);
      continue;
    }
    window.start_ns =
        k == 0 ? first_start[k] : std::max(first_start[k], metrics.steps[k - 1].end_ns);
    window.end_ns = std::max(last_end[k], window.start_ns);  // an empty window, never negative
    window.devices.resize(device_count);
  }

  // busy(d,k) = |union of d's jobs ∩ [S_k, E_k)|; idle is the rest.
  for (std::size_t d = 0; d < device_count; ++d) {
    BusyAccumulator busy(metrics.steps, d);
    add_busy_time(run.devices[d], busy);
    for (StepWindow& window : metrics.steps) {
      window.devices[d].idle_ns = window.window_ns() - window.devices[d].busy_ns;
    }
  }

  // Ratios: per step, per device and overall.
  std::int64_t total_idle = 0;
  for (StepWindow& window : metrics.steps) {
    std::int64_t idle = 0;
    for (std::size_t d = 0; d < device_count; ++d) {
      idle += window.devices[d].idle_ns;
      metrics.devices[d].busy_ns += window.devices[d].busy_ns;
      metrics.devices[d].idle_ns += window.devices[d].idle_ns;
    }
    window.bubble_ratio = ratio(idle, static_cast<std::int64_t>(device_count) * window.window_ns());
    metrics.total_window_ns += window.window_ns();
    total_idle += idle;
  }
  for (DeviceTotals& totals : metrics.devices) {
    totals.utilization = ratio(totals.busy_ns, metrics.total_window_ns);
  }
  metrics.bubble_ratio =
      ratio(total_idle, static_cast<std::int64_t>(device_count) * metrics.total_window_ns);
  return metrics;
}

}  // namespace pipescope
