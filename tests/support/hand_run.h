// Test helper: a run written job by job, for analysis tests whose expected
// figures are worked out by hand from a handful of jobs.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/run.h"

namespace pipescope::testing {

/// The device at position d, created as needed (index = position, machine 0).
inline Device& device_at(Run& run, std::size_t d) {
  while (run.devices.size() <= d) {
    run.devices.emplace_back();
    run.devices.back().index = static_cast<int>(run.devices.size() - 1);
  }
  return run.devices[d];
}

/// Appends a job to the device at position d. Its line is its 1-based place
/// among that device's jobs as added (before Run::finalize() sorts them).
inline void add_job(Run& run, std::size_t d, std::string_view type, std::int64_t micro_batch,
                    std::int64_t start_ns, std::int64_t end_ns) {
  JobVector& jobs = device_at(run, d).jobs;
  Job job;
  job.start_ns = start_ns;
  job.end_ns = end_ns;
  job.job_id = static_cast<std::int64_t>(jobs.size());
  job.micro_batch = micro_batch;
  job.type = run.types.intern(type);
  job.line = static_cast<std::uint32_t>(jobs.size() + 1);
  jobs.push_back(job);
}

/// The job at (device position, index in start order).
inline const Job& job_at(const Run& run, std::size_t d, std::size_t i) {
  return run.devices[d].jobs[i];
}

}  // namespace pipescope::testing
