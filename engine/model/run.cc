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

std::uint64_t Run::job_count() const {
  std::uint64_t n = 0;
  for (const auto& device : devices) n += device.jobs.size();
  return n;
}

void Run::finalize() {
  for (auto& device : devices) {
    // Logs are usually written in time order: checking is one cheap pass,
    // sorting five million already-sorted jobs is not.
    if (!std::is_sorted(device.jobs.begin(), device.jobs.end(), job_start_order)) {
      std::sort(device.jobs.begin(), device.jobs.end(), job_start_order);
    }
  }
}

}  // namespace pipescope
