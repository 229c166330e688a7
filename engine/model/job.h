// One executed job (forward, backward, optimizer, ...) of one device, as read
// from any input format. Times are integer nanoseconds since the Unix epoch.
#pragma once

#include <cstdint>
#include <string_view>
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
/// PartRun). 32 bits: a device of 4 billion jobs (160 GB of them) is
/// refused where the parts are made.
using JobIndices = std::vector<std::vector<std::uint32_t>>;

/// Marks a reader puts at the end of a compute job's type (analysis/job_role.h
/// reads them): an op of PyTorch's overlapped F+B action (OVERLAP_F_B) timed
/// on its own (`forward1(overlap)`), or one timed as a single F+B job with the
/// other op of its action, the trace showing no boundary (`backward0(F+B)`).
inline constexpr std::string_view kOverlapMark = "(overlap)";
inline constexpr std::string_view kJoinedMark = "(F+B)";

/// Jobs on one device are analysed in start order; ties are broken by end time,
/// then by input line and last by job id (the two jobs of one trace event, a
/// PyTorch OVERLAP_F_B range timed as one job, in the order read) so that
/// every run orders them identically.
inline bool job_start_order(const Job& a, const Job& b) {
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
  if (a.line != b.line) return a.line < b.line;
  return a.job_id < b.job_id;
}

}  // namespace pipescope
