#include "model/run.h"

#include <algorithm>

namespace pipescope {

std::string Diagnostic::location() const {
  return line == 0 ? path : path + ":" + std::to_string(line);
}

TypeId TypeTable::intern(std::string_view name) {
  if (auto it = ids_.find(std::string(name)); it != ids_.end()) return it->second;
  const auto id = static_cast<TypeId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(names_.back(), id);
  return id;
}

std::pair<std::size_t, std::size_t> Device::segment_jobs(std::size_t segment) const {
  if (segment_begin.empty())
    return segment == 0 ? std::pair<std::size_t, std::size_t>{0, jobs.size()}
                        : std::pair<std::size_t, std::size_t>{jobs.size(), jobs.size()};
  if (segment >= segment_begin.size()) return {jobs.size(), jobs.size()};
  const std::size_t first = std::min(segment_begin[segment], jobs.size());
  const std::size_t last =
      segment + 1 < segment_begin.size() ? segment_begin[segment + 1] : jobs.size();
  return {first, std::max(first, std::min(last, jobs.size()))};
}

std::uint64_t Run::job_count() const {
  std::uint64_t n = 0;
  for (const auto& device : devices) n += device.jobs.size();
  return n;
}

void Run::finalize() {
  segments.clear();
  for (auto& device : devices) {
    // Logs are usually written in time order: checking is one cheap pass,
    // sorting five million already-sorted jobs is not.
    if (!std::is_sorted(device.jobs.begin(), device.jobs.end(), job_start_order)) {
      std::sort(device.jobs.begin(), device.jobs.end(), job_start_order);
    }
    // Segments index the sorted jobs: they are found afterwards.
    device.segment_begin.clear();
  }
}

std::string_view launch_signal_name(LaunchSignal signal) {
  switch (signal) {
    case LaunchSignal::none:
      return "";
    case LaunchSignal::step_start_line:
      return "step_start_line";
    case LaunchSignal::restart_after_gap:
      return "restart_after_gap";
    case LaunchSignal::profiler_window:
      return "profiler_window";
  }
  return "";
}

}  // namespace pipescope
