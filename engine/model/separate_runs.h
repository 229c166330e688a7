// Inputs of two runs given as one: where they fall into two groups in time,
// every device (rank) of one ending at least kSeparateRunsGapNs before any of
// the other begins, and none spanning both, they are refused (one window over
// both would be idle for the whole time between them). The jobs' rule is
// load/input_rules.h refuse_separate_runs; the kernel view's (ranks with GPU
// activities and no jobs) is in analysis/kernel_view.cc.
#pragma once

#include <cstdint>

namespace pipescope {

/// The least gap between two groups of inputs that makes them two runs: far
/// longer than any pause inside a run's profiled window, far shorter than the
/// time between two launches of a job.
inline constexpr std::int64_t kSeparateRunsGapNs = 60'000'000'000;  // 60 s

}  // namespace pipescope
