#include "analysis/bad_timestamps.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace pipescope {

namespace {

/// |a - b| > gap, without overflow.
bool far(std::int64_t a, std::int64_t b) {
  const std::int64_t lo = std::min(a, b), hi = std::max(a, b);
  return hi - kBadTimestampGapNs > lo;
}

bool far_job(const Job& a, const Job& b) {
  return far(a.start_ns, b.start_ns) || far(a.end_ns, b.end_ns);
}

}  // namespace

std::vector<BadTimestamp> leave_out_bad_timestamps(Run& run) {
  // Devices are independent: each one on its own thread, then listed in
  // device order.
  std::vector<std::vector<BadTimestamp>> per_device(run.devices.size());
  tbb::parallel_for(std::size_t{0}, run.devices.size(), [&](std::size_t d) {
    per_device[d] = leave_out_bad_timestamps(run.devices[d], d);
  });
  std::vector<BadTimestamp> bad;
  for (const std::vector<BadTimestamp>& mine : per_device) {
    bad.insert(bad.end(), mine.begin(), mine.end());
  }
  if (!bad.empty()) run.finalize();
  return bad;
}

std::vector<BadTimestamp> leave_out_bad_timestamps(Device& device, std::size_t position) {
  std::vector<BadTimestamp> bad;
  const std::size_t d = position;
  JobVector& jobs = device.jobs;
  if (jobs.size() < 3) return bad;
  if (std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return j.line == 0; })) return bad;
  // Usually the lines are in start order already: one pass, no sort and no
  // index (a list of every job's position, 8 bytes a job of fresh memory).
  const bool in_line_order = std::is_sorted(
      jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.line < b.line; });
  std::vector<std::size_t> order;
  if (!in_line_order) {
    order.resize(jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return jobs[a].line < jobs[b].line; });
  }
  const std::size_t n = jobs.size();
  const auto position_of = [&](std::size_t k) { return in_line_order ? k : order[k]; };
  const auto at = [&](std::size_t k) -> const Job& { return jobs[position_of(k)]; };
  std::vector<char> drop;  // made at the first bad timestamp
  for (std::size_t k = 0; k < n; ++k) {
    const Job& job = at(k);
    bool isolated = false;
    if (k == 0) {
      isolated = far_job(job, at(1)) && !far_job(at(1), at(2));
    } else if (k + 1 == n) {
      isolated = far_job(job, at(k - 1)) && !far_job(at(k - 1), at(k - 2));
    } else {
      isolated =
          far_job(job, at(k - 1)) && far_job(job, at(k + 1)) && !far_job(at(k - 1), at(k + 1));
    }
    if (isolated) {
      if (drop.empty()) drop.assign(n, 0);
      drop[position_of(k)] = 1;
      bad.push_back({d, job.line, job.start_ns, job.end_ns});
    }
  }
  if (drop.empty()) return bad;
  JobVector kept;
  kept.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!drop[i]) kept.push_back(jobs[i]);
  }
  jobs = std::move(kept);
  // In line order; removing jobs keeps the others in start order.
  std::sort(bad.begin(), bad.end(),
            [](const BadTimestamp& a, const BadTimestamp& b) { return a.line < b.line; });
  return bad;
}

void UntimedJobs::add_type(std::string_view name) {
  for (auto& slot : types) {
    const std::string_view held(slot.data(), ::strnlen(slot.data(), slot.size()));
    if (held.empty()) {
      const std::size_t n = std::min(name.size(), slot.size() - 1);
      std::copy_n(name.data(), n, slot.data());
      return;
    }
    if (held == name.substr(0, slot.size() - 1)) return;
  }
  more_types = true;
}

std::vector<std::string> UntimedJobs::type_names() const {
  std::vector<std::string> out;
  for (const auto& slot : types) {
    if (slot[0] != '\0') out.emplace_back(slot.data(), ::strnlen(slot.data(), slot.size()));
  }
  return out;
}

UntimedJobs leave_out_untimed_jobs(Device& device, const TypeTable& types) {
  UntimedJobs out;
  const auto untimed = [](const Job& job) { return job.start_ns == 0 && job.end_ns == 0; };
  if (std::none_of(device.jobs.begin(), device.jobs.end(), untimed)) return out;
  std::uint32_t first_line = UINT32_MAX;
  for (const Job& job : device.jobs) {
    if (!untimed(job)) continue;
    ++out.count;
    first_line = std::min(first_line, job.line);
    if (job.type < types.size()) out.add_type(types.name(job.type));
  }
  out.first_line = first_line;
  std::erase_if(device.jobs, untimed);
  return out;
}

}  // namespace pipescope
