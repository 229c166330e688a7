#include "export/trace_lanes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace pipescope {

std::vector<int> assign_trace_lanes(const JobVector& jobs, int& lane_count) {
  std::vector<std::size_t> order(jobs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Run::finalize() has sorted them already; stay correct if it has not.
  if (!std::is_sorted(jobs.begin(), jobs.end(), job_start_order)) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return job_start_order(jobs[a], jobs[b]);
    });
  }
  std::vector<int> lanes(jobs.size(), 0);
  std::vector<std::int64_t> lane_end;
  for (const std::size_t i : order) {
    const Job& job = jobs[i];
    std::size_t lane = 0;
    while (lane < lane_end.size() && lane_end[lane] > job.start_ns) ++lane;
    if (lane == lane_end.size()) lane_end.push_back(job.end_ns);
    // A zero-length job must not make the lane end earlier than it did.
    lane_end[lane] = std::max(lane_end[lane], job.end_ns);
    lanes[i] = static_cast<int>(lane);
  }
  lane_count = std::max<int>(1, static_cast<int>(lane_end.size()));
  return lanes;
}

std::string trace_lane_name(const Device& device, int lane) {
  // U+00B7 MIDDLE DOT, in UTF-8.
  return lane == 0 ? fmt::format("GPU {} (machine {})", device.index, device.machine)
                   : fmt::format("GPU {} (machine {}) \xC2\xB7 overlap {}", device.index,
                                 device.machine, lane);
}

std::string trace_bubble_lane_name(const Device& device) {
  return fmt::format("GPU {} (machine {}) \xC2\xB7 bubbles", device.index, device.machine);
}

std::string trace_machine_label(const Device& device) {
  return device.machine_name.empty() ? fmt::format("Machine {}", device.machine)
                                     : device.machine_name;
}

}  // namespace pipescope
