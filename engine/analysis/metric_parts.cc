#include "analysis/metric_parts.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace pipescope {

namespace {

constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kNoStart = std::numeric_limits<std::int64_t>::max();

/// a / b as a double, 0 when b is 0. long double holds any int64 exactly.
double ratio(std::int64_t a, std::int64_t b) {
  return b == 0 ? 0.0
                : static_cast<double>(static_cast<long double>(a) / static_cast<long double>(b));
}

using Interval = std::pair<std::int64_t, std::int64_t>;

/// Adds |[begin, end) ∩ window| to one figure of device d (busy or comm) for
/// every window it meets. Intervals arrive sorted and disjoint, so the first
/// window that can still meet one only moves forward.
class WindowAccumulator {
 public:
  WindowAccumulator(std::span<StepWindow> windows, std::size_t device,
                    std::int64_t DeviceStepTime::*figure)
      : windows_(windows), device_(device), figure_(figure) {}

  void add(std::int64_t begin, std::int64_t end) {
    while (next_ < windows_.size() && windows_[next_].end_ns <= begin) ++next_;
    for (std::size_t k = next_; k < windows_.size() && windows_[k].start_ns < end; ++k) {
      const std::int64_t overlap =
          std::min(end, windows_[k].end_ns) - std::max(begin, windows_[k].start_ns);
      if (overlap > 0) windows_[k].devices[device_].*figure_ += overlap;
    }
  }

 private:
  std::span<StepWindow> windows_;
  std::size_t device_;
  std::int64_t DeviceStepTime::*figure_;
  std::size_t next_ = 0;
};

bool is_comm(const Job& job, const TypeKinds& kinds) {
  return job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm;
}

/// The union of a device's job intervals (jobs sorted by start) whose
/// comm-ness is `comm`, as sorted disjoint intervals; overlapping jobs count
/// once, zero-length jobs not at all.
template <typename F>
void for_each_union_interval(const Device& device, const TypeKinds& kinds, bool comm, F&& f) {
  bool open = false;
  std::int64_t begin = 0, end = 0;
  for (const Job& job : device.jobs) {
    if (job.end_ns <= job.start_ns) continue;
    if (is_comm(job, kinds) != comm) continue;
    if (open && job.start_ns <= end) {
      end = std::max(end, job.end_ns);
    } else {
      if (open) f(begin, end);
      open = true;
      begin = job.start_ns;
      end = job.end_ns;
    }
  }
  if (open) f(begin, end);
}

std::vector<Interval> job_union(const Device& device, const TypeKinds& kinds, bool comm) {
  std::vector<Interval> out;
  for_each_union_interval(device, kinds, comm, [&](std::int64_t begin, std::int64_t end) {
    out.emplace_back(begin, end);
  });
  return out;
}

/// a − b for sorted disjoint interval lists.
std::vector<Interval> subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (auto [begin, end] : a) {
    while (j < b.size() && b[j].second <= begin) ++j;
    for (std::size_t i = j; i < b.size() && b[i].first < end; ++i) {
      if (b[i].first > begin) out.emplace_back(begin, b[i].first);
      begin = std::max(begin, b[i].second);
      if (begin >= end) break;
    }
    if (begin < end) out.emplace_back(begin, end);
  }
  return out;
}

}  // namespace

DeviceStepCounts number_device_steps(const Device& device, const TypeKinds& kinds,
                                     std::size_t segments, std::span<std::int32_t> job_step) {
  DeviceStepCounts counts;
  counts.steps.assign(segments, 0);
  counts.begun.assign(segments, 0);
  counts.present.assign(segments, 0);
  counts.begins_inside.assign(segments, 0);
  for (std::size_t s = 0; s < segments; ++s) {
    const auto [first, last] = device.segment_jobs(s);
    if (first == last) continue;
    std::span<std::int32_t> step_of = job_step.subspan(first, last - first);
    const std::int32_t steps = assign_steps(device.jobs, first, last, kinds, step_of);
    counts.present[s] = 1;
    counts.steps[s] = steps;
    // A cut input has begun only the steps of its jobs before the cut.
    if (device.cut_ns != Device::kNotCut) {
      std::int32_t begun = 0;
      for (std::size_t i = first; i < last; ++i) {
        if (device.jobs[i].start_ns < device.cut_ns)
          begun = std::max(begun, step_of[i - first] + 1);
      }
      counts.begun[s] = begun;
    } else {
      counts.begun[s] = steps;
    }
    // Every step of a schedule opens with an lr job or a forward of
    // micro-batch 0 (a receive before it aside): a first step that opens
    // otherwise is the tail of one that began before the input.
    for (std::size_t i = first; i < last; ++i) {
      const Job& job = device.jobs[i];
      const JobKind kind = kinds.kind[job.type];
      if (!steers_steps(kind)) continue;
      counts.begins_inside[s] =
          !(kind == JobKind::lr || (kind == JobKind::forward && job.micro_batch == 0));
      break;
    }
    const std::size_t at = counts.first_start.size();
    counts.first_start.resize(at + static_cast<std::size_t>(steps), kNoStart);
    counts.last_end.resize(at + static_cast<std::size_t>(steps), kNoTime);
    for (std::size_t i = first; i < last; ++i) {
      const std::size_t k = at + static_cast<std::size_t>(step_of[i - first]);
      counts.first_start[k] = std::min(counts.first_start[k], device.jobs[i].start_ns);
      counts.last_end[k] = std::max(counts.last_end[k], device.jobs[i].end_ns);
    }
  }
  return counts;
}

namespace {

/// One device's steps in one segment, in its own numbering.
struct DeviceSegmentSteps {
  std::size_t device = 0;
  std::int64_t steps = 0;
  bool begins_inside = false;
  std::span<const std::int64_t> first_start, last_end;
};

/// The leads of one segment's devices (the contract's "Steps": a device whose
/// input begins mid-run takes the number of the window its first step starts
/// in). The devices that began with the segment are those whose first job
/// starts before any device ends its first step (in a pipeline no stage ends
/// its first step before every stage has begun); they number from the
/// segment's first step, and their windows number the others: a device's
/// first step that opens whole (its first step, or the second when the
/// first is a tail) takes the number of the first of those windows that
/// ends after it starts (after the last one: the next number), as long as
/// its steps then end within theirs.
std::vector<std::int64_t> segment_leads(std::span<const DeviceSegmentSteps> devices) {
  std::vector<std::int64_t> lead(devices.size(), 0);
  // A step may hold no job (an lr that follows an lr): the first with one.
  auto first_with_job = [](const DeviceSegmentSteps& d, std::int64_t from) {
    auto k = static_cast<std::size_t>(from);
    while (k + 1 < d.first_start.size() && d.first_start[k] == kNoStart) ++k;
    return k;
  };
  std::int64_t first_end = kNoStart;
  for (const DeviceSegmentSteps& d : devices) {
    first_end = std::min(first_end, d.last_end[first_with_job(d, 0)]);
  }
  std::vector<char> begun_with(devices.size(), 0);
  std::int64_t reference_steps = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    begun_with[i] = devices[i].first_start[first_with_job(devices[i], 0)] <= first_end;
    if (begun_with[i]) reference_steps = std::max(reference_steps, devices[i].steps);
  }
  if (std::all_of(begun_with.begin(), begun_with.end(), [](char b) { return b != 0; })) return lead;
  // The windows of the devices that began with the segment (place_windows'
  // rule on their steps alone).
  std::vector<std::int64_t> start(static_cast<std::size_t>(reference_steps), kNoStart);
  std::vector<std::int64_t> end(static_cast<std::size_t>(reference_steps), kNoTime);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!begun_with[i]) continue;
    for (std::int64_t k = 0; k < devices[i].steps; ++k) {
      const auto j = static_cast<std::size_t>(k);
      start[j] = std::min(start[j], devices[i].first_start[j]);
      end[j] = std::max(end[j], devices[i].last_end[j]);
    }
  }
  std::int64_t previous_end = kNoTime;
  for (std::size_t k = 0; k < end.size(); ++k) {
    if (start[k] == kNoStart) {  // a step without a job: empty, at the previous end
      end[k] = previous_end;
      continue;
    }
    const std::int64_t s = std::max(start[k], previous_end);
    end[k] = std::max(end[k], s);
    previous_end = end[k];
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (begun_with[i]) continue;
    const std::int64_t whole =
        std::min<std::int64_t>(devices[i].begins_inside, devices[i].steps - 1);
    const std::int64_t t = devices[i].first_start[first_with_job(devices[i], whole)];
    const auto window =
        static_cast<std::int64_t>(std::upper_bound(end.begin(), end.end(), t) - end.begin());
    // A lead never takes the device past the last of those steps: a device
    // whose steps fit them by count is a clock ahead, not a late input.
    lead[i] = std::clamp<std::int64_t>(
        window - whole, 0, std::max<std::int64_t>(0, reference_steps - devices[i].steps));
  }
  return lead;
}

}  // namespace

StepCounts combine_device_steps(const Run& run, std::span<const DeviceStepCounts> devices,
                                Metrics& metrics) {
  const std::size_t device_count = run.devices.size();
  const std::size_t segment_count = std::max<std::size_t>(1, run.segments.size());
  metrics.devices.resize(device_count);
  metrics.segments.clear();
  StepCounts counts;
  counts.begun.assign(segment_count, std::vector<std::int64_t>(device_count, 0));
  // Where each device's steps of each segment begin in its flat edges.
  std::vector<std::size_t> edge_at(std::min(device_count, devices.size()), 0);
  std::size_t step_count = 0;
  for (std::size_t s = 0; s < segment_count; ++s) {
    SegmentSteps segment;
    segment.index = run.segments.empty() ? 0 : run.segments[s].index;
    segment.first_step =
        run.segments.empty() ? run.first_step.value_or(0) : run.segments[s].first_step;
    segment.first = step_count;
    std::vector<DeviceSegmentSteps> present;
    for (std::size_t d = 0; d < device_count && d < devices.size(); ++d) {
      const DeviceStepCounts& device = devices[d];
      if (s >= device.present.size()) continue;
      const auto steps = static_cast<std::size_t>(device.steps[s]);
      const std::size_t at = edge_at[d];
      edge_at[d] += steps;
      if (!device.present[s] || steps == 0 || at + steps > device.first_start.size()) continue;
      present.push_back({d, device.steps[s], device.begins_inside[s] != 0,
                         std::span(device.first_start).subspan(at, steps),
                         std::span(device.last_end).subspan(at, steps)});
    }
    const std::vector<std::int64_t> lead = segment_leads(present);
    for (std::size_t i = 0; i < present.size(); ++i) {
      const std::size_t d = present[i].device;
      counts.begun[s][d] = lead[i] + devices[d].begun[s];
      metrics.devices[d].steps += present[i].steps;
      segment.count = std::max(segment.count, static_cast<std::size_t>(lead[i] + present[i].steps));
      segment.devices.push_back(d);
      segment.lead.push_back(lead[i]);
      segment.first_whole.push_back(lead[i] + (present[i].begins_inside ? 1 : 0));
    }
    step_count += segment.count;
    metrics.segments.push_back(std::move(segment));
  }
  counts.steps = step_count;
  return counts;
}

std::int64_t segment_lead(const SegmentSteps& segment, std::size_t d) {
  const auto at = std::lower_bound(segment.devices.begin(), segment.devices.end(), d);
  if (at == segment.devices.end() || *at != d) return 0;
  const auto i = static_cast<std::size_t>(at - segment.devices.begin());
  return i < segment.lead.size() ? segment.lead[i] : 0;
}

void offset_device_steps(const Device& device, std::size_t d,
                         const std::vector<SegmentSteps>& segments,
                         std::span<std::int32_t> job_step) {
  for (std::size_t s = 0; s < segments.size(); ++s) {
    const SegmentSteps& segment = segments[s];
    const auto offset = static_cast<std::int32_t>(static_cast<std::int64_t>(segment.first) +
                                                  segment_lead(segment, d));
    if (offset == 0) continue;
    const auto [first, last] = device.segment_jobs(s);
    for (std::size_t i = first; i < last && i < job_step.size(); ++i) job_step[i] += offset;
  }
}

StepCounts number_steps(const Run& run, const TypeKinds& kinds, Metrics& metrics) {
  const std::size_t device_count = run.devices.size();
  const std::size_t segment_count = std::max<std::size_t>(1, run.segments.size());
  metrics.job_step.resize(device_count);
  std::vector<DeviceStepCounts> devices(device_count);
  // Devices are independent: each numbers its own jobs' steps (its array
  // faulted in and zeroed on its own thread).
  tbb::parallel_for(std::size_t{0}, device_count, [&](std::size_t d) {
    metrics.job_step[d].resize(run.devices[d].jobs.size());
    devices[d] = number_device_steps(run.devices[d], kinds, segment_count, metrics.job_step[d]);
  });
  StepCounts counts = combine_device_steps(run, devices, metrics);
  tbb::parallel_for(std::size_t{0}, device_count, [&](std::size_t d) {
    offset_device_steps(run.devices[d], d, metrics.segments, metrics.job_step[d]);
  });
  return counts;
}

StepEdges::StepEdges(std::size_t steps)
    : first_start(steps, kNoStart), last_end(steps, kNoTime), has_job(steps, 0) {}

void StepEdges::add(std::size_t step, const Job& job) {
  first_start[step] = std::min(first_start[step], job.start_ns);
  last_end[step] = std::max(last_end[step], job.end_ns);
  has_job[step] = 1;
}

void StepEdges::combine(const StepEdges& other) {
  for (std::size_t k = 0; k < other.has_job.size() && k < has_job.size(); ++k) {
    if (!other.has_job[k]) continue;
    first_start[k] = std::min(first_start[k], other.first_start[k]);
    last_end[k] = std::max(last_end[k], other.last_end[k]);
    has_job[k] = 1;
  }
}

StepEdges device_step_edges(const Device& device, std::span<const std::int32_t> job_step,
                            std::size_t steps) {
  StepEdges edges(steps);
  for (std::size_t i = 0; i < device.jobs.size() && i < job_step.size(); ++i) {
    edges.add(static_cast<std::size_t>(job_step[i]), device.jobs[i]);
  }
  return edges;
}

void place_windows(const StepEdges& edges, std::size_t devices, Metrics& metrics) {
  const std::size_t step_count = edges.has_job.size();
  // Windows: S_k = max(min_d first start, E_{k-1}); E_k = max_d last end. A
  // step without a job on any device (consecutive lr jobs each open a step,
  // and the first one moves into the second one's step) gets an empty window
  // at E_{k-1}, or at the earliest job start for k = 0.
  const std::int64_t earliest =
      step_count == 0 ? 0 : *std::min_element(edges.first_start.begin(), edges.first_start.end());
  metrics.steps.resize(step_count);
  for (const SegmentSteps& segment : metrics.segments) {
    for (std::size_t j = 0; j < segment.count; ++j) {
      metrics.steps[segment.first + j].segment = segment.index;
      metrics.steps[segment.first + j].step = segment.first_step + static_cast<std::int64_t>(j);
    }
  }
  for (std::size_t k = 0; k < step_count; ++k) {
    StepWindow& window = metrics.steps[k];
    window.devices.resize(devices);
    if (!edges.has_job[k]) {
      window.start_ns = window.end_ns = k == 0 ? earliest : metrics.steps[k - 1].end_ns;
      continue;
    }
    window.start_ns =
        k == 0 ? edges.first_start[k] : std::max(edges.first_start[k], metrics.steps[k - 1].end_ns);
    window.end_ns = std::max(edges.last_end[k], window.start_ns);  // empty, never negative
  }
  for (SegmentSteps& segment : metrics.segments) {
    if (segment.count > 0) {
      segment.start_ns = metrics.steps[segment.first].start_ns;
      segment.end_ns = metrics.steps[segment.first + segment.count - 1].end_ns;
    }
  }
}

KindCounts step_kind_counts(const Device& device, std::span<const std::int32_t> job_step,
                            std::size_t step, const TypeKinds& kinds) {
  KindCounts counts{};
  for (std::size_t i = 0; i < device.jobs.size() && i < job_step.size(); ++i) {
    if (static_cast<std::size_t>(job_step[i]) == step) {
      ++counts[static_cast<std::size_t>(kinds.kind[device.jobs[i].type])];
    }
  }
  return counts;
}

void mark_complete_steps(const StepCounts& counts, std::span<const std::int64_t> cut_ns,
                         const KindCountsOf& kind_counts, Metrics& metrics) {
  for (std::size_t s = 0; s < metrics.segments.size(); ++s) {
    SegmentSteps& segment = metrics.segments[s];
    const std::vector<std::int64_t>& begun_steps = counts.begun[s];
    const std::size_t n = segment.count;
    const bool cut = std::any_of(segment.devices.begin(), segment.devices.end(),
                                 [&](std::size_t d) { return cut_ns[d] != Device::kNotCut; });
    std::optional<std::size_t> previous_complete;  // local index
    for (std::size_t k = 0; k < n; ++k) {
      bool complete = true;
      for (std::size_t i = 0; i < segment.devices.size(); ++i) {
        const std::size_t d = segment.devices[i];
        // A step that began before a device's input is not whole there.
        complete = complete && (i >= segment.first_whole.size() ||
                                static_cast<std::int64_t>(k) >= segment.first_whole[i]);
        complete = complete && static_cast<std::size_t>(begun_steps[d]) > k + 1;
        // The window must also end before the cut: a job timed by the host
        // after the cut could otherwise fall into it.
        complete = complete && metrics.steps[segment.first + k].end_ns <= cut_ns[d];
      }
      // A cut input never completes its segment's last step: what it lost
      // there is unknown.
      if (!complete && k + 1 == n && !cut) {
        if (n == 1) {
          complete = true;  // a first and only step
        } else if (previous_complete) {
          complete = true;
          for (const std::size_t d : segment.devices) {
            const KindCounts now = kind_counts(d, segment.first + k);
            const KindCounts before = kind_counts(d, segment.first + *previous_complete);
            for (std::size_t kind = 0; kind < now.size(); ++kind) {
              complete = complete && now[kind] >= before[kind];
            }
          }
        }
      }
      metrics.steps[segment.first + k].complete = complete;
      if (complete) previous_complete = k;
    }
    segment.complete = 0;
    for (std::size_t j = 0; j < segment.count; ++j) {
      segment.complete += metrics.steps[segment.first + j].complete;
    }
  }
}

void add_window_times(std::span<const Device> devices, const TypeKinds& kinds,
                      std::span<StepWindow> windows) {
  // busy(d,k) = |union of d's non-comm jobs ∩ [S_k, E_k)|; idle is the
  // rest; comm(d,k) = |(union of comm jobs − that union) ∩ [S_k, E_k)|.
  // Devices are independent: each writes its own entry of every window.
  tbb::parallel_for(std::size_t{0}, devices.size(), [&](std::size_t d) {
    const Device& device = devices[d];
    const bool has_comm = std::any_of(device.jobs.begin(), device.jobs.end(),
                                      [&](const Job& job) { return is_comm(job, kinds); });
    WindowAccumulator busy(windows, d, &DeviceStepTime::busy_ns);
    if (!has_comm) {
      // The union streamed into the windows, never held.
      for_each_union_interval(device, kinds, false,
                              [&](std::int64_t begin, std::int64_t end) { busy.add(begin, end); });
    } else {
      const std::vector<Interval> compute = job_union(device, kinds, false);
      for (const auto& [begin, end] : compute) busy.add(begin, end);
      WindowAccumulator comm(windows, d, &DeviceStepTime::comm_ns);
      for (const auto& [begin, end] : subtract(job_union(device, kinds, true), compute)) {
        comm.add(begin, end);
      }
    }
    for (StepWindow& window : windows) {
      window.devices[d].idle_ns = window.window_ns() - window.devices[d].busy_ns;
    }
  });
}

WindowSums::WindowSums(std::size_t devices) : device(devices) {}

void WindowSums::add(const WindowSums& other) {
  for (std::size_t d = 0; d < device.size() && d < other.device.size(); ++d) {
    device[d].busy_ns += other.device[d].busy_ns;
    device[d].idle_ns += other.device[d].idle_ns;
    device[d].comm_ns += other.device[d].comm_ns;
  }
  window_ns += other.window_ns;
  idle_ns += other.idle_ns;
  comm_ns += other.comm_ns;
  incomplete += other.incomplete;
}

WindowSums sum_windows(std::span<StepWindow> windows, std::size_t devices) {
  WindowSums sums(devices);
  for (StepWindow& window : windows) {
    std::int64_t idle = 0;
    for (std::size_t d = 0; d < devices; ++d) idle += window.devices[d].idle_ns;
    window.bubble_ratio = ratio(idle, static_cast<std::int64_t>(devices) * window.window_ns());
    if (!window.complete) {
      ++sums.incomplete;
      continue;
    }
    for (std::size_t d = 0; d < devices; ++d) {
      sums.device[d].busy_ns += window.devices[d].busy_ns;
      sums.device[d].idle_ns += window.devices[d].idle_ns;
      sums.device[d].comm_ns += window.devices[d].comm_ns;
      sums.comm_ns += window.devices[d].comm_ns;
    }
    sums.window_ns += window.window_ns();
    sums.idle_ns += idle;
  }
  return sums;
}

void finish_totals(const WindowSums& sums, Metrics& metrics) {
  const std::size_t device_count = metrics.devices.size();
  for (std::size_t d = 0; d < device_count && d < sums.device.size(); ++d) {
    metrics.devices[d].busy_ns += sums.device[d].busy_ns;
    metrics.devices[d].idle_ns += sums.device[d].idle_ns;
    metrics.devices[d].comm_ns += sums.device[d].comm_ns;
  }
  metrics.comm_ns += sums.comm_ns;
  metrics.total_window_ns += sums.window_ns;
  metrics.incomplete_steps += sums.incomplete;
  for (DeviceTotals& totals : metrics.devices) {
    totals.utilization = ratio(totals.busy_ns, metrics.total_window_ns);
  }
  metrics.bubble_ratio =
      ratio(sums.idle_ns, static_cast<std::int64_t>(device_count) * metrics.total_window_ns);
}

void add_totals(Metrics& metrics) {
  // Ratios: per step, and per device and overall over the complete steps.
  finish_totals(sum_windows(metrics.steps, metrics.devices.size()), metrics);
}

}  // namespace pipescope
