// One executed job (forward, backward, optimizer, ...) of one device, as read
// from any input format. Times are integer nanoseconds since the Unix epoch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/large_page_allocator.h"

namespace pipescope {

/// Index into Run::types (model/run.h, TypeTable): the job type names.
using TypeId = std::uint32_t;

struct Job {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// The number printed in `Job (ID)`: a job index, a per-type counter or the
  /// micro-batch id, depending on the PaddlePaddle version.
  std::int64_t job_id = 0;
  std::int64_t micro_batch = 0;
  TypeId type = 0;
  /// 1-based line in the input file (0 when the input has no lines;
  /// saturates at 2^32-1, beyond which it only labels diagnostics).
  std::uint32_t line = 0;

  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

/// The jobs of one device (possibly hundreds of MB).
using JobVector = std::vector<Job, LargePageAllocator<Job>>;

/// Each job's index in the whole run's device, device by device: what a part
/// of a partitioned run keeps beside the jobs it holds (step_partition.h
/// PartJobs). 32 bits: a device of 4 billion jobs (160 GB of them) is
/// refused where the parts are made.
using JobIndices = std::vector<std::vector<std::uint32_t>>;

/// Jobs on one device are analysed in start order; ties are broken by end time
/// and then by input line so that every run orders them identically.
inline bool job_start_order(const Job& a, const Job& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
  return a.line < b.line;
}

}  // namespace pipescope
