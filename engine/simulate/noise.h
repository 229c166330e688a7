// Realistic non-job lines for simulated worker logs: GLOG lines of other
// components, Python logging and warnings, launcher output, long config dumps,
// and near misses that mention "Profiler Info" or "Job (" without ever
// containing the job-line literal `Profiler Info: Job` or the first-step
// phrase `Schedule Profiler start at step`.
//
// Usage:
//   NoiseGenerator noise(seed, /*thread_id=*/22317, /*rank=*/0, /*stages=*/4);
//   noise.append_line(buffer, time_ns);   // no line ending
#pragma once

#include <fmt/format.h>

#include <cstdint>

#include "simulate/split_mix.h"

namespace pipescope::sim {

class NoiseGenerator {
 public:
  NoiseGenerator(std::uint64_t seed, int thread_id, int rank, int stages);

  /// Appends one noise line stamped near time ns, without a line ending.
  void append_line(fmt::memory_buffer& out, std::int64_t ns);

  SplitMix& random() { return random_; }

 private:
  SplitMix random_;
  int thread_id_;
  int rank_;
  int stages_;
  std::int64_t counter_ = 0;
};

}  // namespace pipescope::sim
