#include "export/trace_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace pipescope {

namespace {

constexpr std::int64_t kStepsPid = 1;
constexpr std::int64_t kStepsTid = 1;
constexpr std::string_view kStepsName = "Steps";
// Thread sort indices leave room for this many lanes per device before they
// would run into the next device's.
constexpr std::int64_t kMinLaneStride = 16;

}  // namespace

std::vector<int> trace_job_lanes(const JobVector& jobs, int& lane_count) {
  std::vector<int> lanes(jobs.size(), 0);
  std::vector<std::int64_t> lane_end;
  const auto place = [&](std::size_t i) {
    const Job& job = jobs[i];
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > job.start_ns) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(job.end_ns);
    // A zero-length job must not make the lane end earlier than it did.
    lane_end[lane] = std::max(lane_end[lane], job.end_ns);
    lanes[i] = static_cast<int>(lane);
  };
  // Run::finalize() has sorted them already; stay correct if it has not.
  if (std::is_sorted(jobs.begin(), jobs.end(), job_start_order)) {
    for (std::size_t i = 0; i < jobs.size(); ++i) place(i);
  } else {
    std::vector<std::size_t> order(jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return job_start_order(jobs[a], jobs[b]);
    });
    for (const std::size_t i : order) place(i);
  }
  lane_count = std::max<int>(1, static_cast<int>(lane_end.size()));
  return lanes;
}

namespace {

// "GPU 3 (machine 1)" for lane 0, "GPU 3 (machine 1) · overlap 2" for others
// (U+00B7 MIDDLE DOT, in UTF-8).
std::string lane_name(const Device& device, int lane) {
  return lane == 0 ? fmt::format("GPU {} (machine {})", device.index, device.machine)
                   : fmt::format("GPU {} (machine {}) \xC2\xB7 overlap {}", device.index,
                                 device.machine, lane);
}

std::string bubble_lane_name(const Device& device) {
  return fmt::format("GPU {} (machine {}) \xC2\xB7 bubbles", device.index, device.machine);
}

std::string machine_label(const Device& device) {
  return device.machine_name.empty() ? fmt::format("Machine {}", device.machine)
                                     : device.machine_name;
}

}  // namespace

TraceLayout::TraceLayout(const Run& run, bool bubble_lanes) {
  std::vector<int> lane_counts(run.devices.size(), 1);
  lanes_.resize(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    lanes_[d] = trace_job_lanes(run.devices[d].jobs, lane_counts[d]);
  }
  declare(run, lane_counts, bubble_lanes);
}

TraceLayout::TraceLayout(const Run& run, const std::vector<int>& lane_counts, bool bubble_lanes) {
  declare(run, lane_counts, bubble_lanes);
}

void TraceLayout::declare(const Run& run, const std::vector<int>& lane_counts, bool bubble_lanes) {
  const std::size_t devices = run.devices.size();
  // The stride of tids and sort indices must fit the busiest device.
  std::int64_t stride = kMinLaneStride;
  for (std::size_t d = 0; d < devices; ++d) {
    stride = std::max<std::int64_t>(stride, lane_counts[d] + (bubble_lanes ? 1 : 0));
  }
  lane_counts_ = lane_counts;
  const auto sort_index = [&](std::size_t d, int lane) {
    return static_cast<std::int64_t>(d) * stride + lane;
  };
  const auto tid = [&](std::size_t d, int lane) { return kStepsTid + 1 + sort_index(d, lane); };

  std::map<int, std::size_t> first_device_of_machine;
  for (std::size_t d = 0; d < devices; ++d) {
    first_device_of_machine.emplace(run.devices[d].machine, d);
  }
  for (const auto& [machine, d] : first_device_of_machine) {
    machines_.push_back({std::int64_t{machine} + 2, std::int64_t{machine} + 1,
                         machine_label(run.devices[d]), tid(d, 0)});
  }

  first_lane_.reserve(devices + 1);
  for (std::size_t d = 0; d < devices; ++d) {
    const Device& device = run.devices[d];
    const std::int64_t pid = std::int64_t{device.machine} + 2;
    first_lane_.push_back(threads_.size());
    for (int lane = 0; lane < lane_counts[d]; ++lane) {
      threads_.push_back({pid, tid(d, lane), sort_index(d, lane), lane_name(device, lane)});
    }
    if (bubble_lanes) {
      const int lane = lane_counts[d];
      threads_.push_back({pid, tid(d, lane), sort_index(d, lane), bubble_lane_name(device)});
    }
  }
  first_lane_.push_back(threads_.size());
}

TraceProcess TraceLayout::steps_process() {
  return {kStepsPid, 0, std::string(kStepsName), kStepsTid};
}

TraceThread TraceLayout::steps_thread() {
  return {kStepsPid, kStepsTid, 0, std::string(kStepsName)};
}

std::string TraceLayout::bubble_ratio_track_name(BubbleKind kind) {
  return fmt::format("{} \xC2\xB7 {}", kBubbleRatioName, bubble_kind_name(kind));
}

}  // namespace pipescope
