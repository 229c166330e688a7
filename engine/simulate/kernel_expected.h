// The kernel view (docs/guide.md, "The kernel view") a simulated kernel
// timeline implies, worked out from what the simulation knows rather than
// from the traces: which kernels are one communication (no matching by ids or
// call counts), each activity's step (no launches, no spans), the true clock
// (no offsets to estimate). Its own interval arithmetic, written apart from
// the analysis (which the simulate layer cannot include), so that
// expected.json checks `analyze` rather than repeating it. Integer ns
// throughout; only the ratios are doubles.
//
// Rules, as the contract states them:
//  - Windows: S_k = max(min over ranks of the first start of step k's
//    activities, E_{k-1}), E_k = max(max over ranks of their last end, S_k).
//  - A NCCL kernel waits from its start to the latest start among the other
//    members of its communication (capped at its end) and transfers for the
//    rest. Each wait part is blamed on that latest-starting member (ties: the
//    lowest rank).
//  - Per rank and window, instant by instant: compute > transfer > wait >
//    idle. most_waited_on: the peer with the largest blame inside the window
//    (counted before precedence; ties: the lowest rank), none when the rank
//    waited 0 ns after precedence; over the run, the sums of the steps in
//    which it waited.
//
// Usage:
//   ExpectedKernelView view = expected_kernel_view(timeline, first_step, clock_ns);
//   std::string json = expected_kernel_view_json(view, paths);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulate/kernel_timeline.h"

namespace pipescope::sim {

/// One window's split; the parts add up to `window`.
struct ExpectedKernelSplit {
  std::int64_t window = 0;
  std::int64_t compute = 0;
  std::int64_t transfer = 0;
  std::int64_t wait = 0;
  std::int64_t idle = 0;
};

struct ExpectedKernelWindow {
  /// The `ProfilerStep#N` number (first_step + the 0-based step).
  std::int64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// Every rank has an activity of the step (totals cover these only).
  bool complete = true;
};

struct ExpectedKernelRankStep {
  ExpectedKernelSplit split;
  /// Global rank; -1: none.
  int most_waited_on = -1;
};

struct ExpectedKernelRank {
  int global_rank = 0;
  /// One per ExpectedKernelView::windows.
  std::vector<ExpectedKernelRankStep> steps;
  ExpectedKernelSplit total;
  int most_waited_on = -1;
};

struct ExpectedKernelView {
  std::uint64_t gpu_activities = 0;
  std::uint64_t comm_kernels = 0;
  std::vector<ExpectedKernelWindow> windows;
  std::vector<ExpectedKernelRank> ranks;
  ExpectedKernelSplit total;

  double bubble_ratio() const;
  double share(std::int64_t part) const;
};

/// The figures of `timeline`, every time moved by `clock_ns` (the clock the
/// windows are reported on: machine 0's offset from the true clock).
ExpectedKernelView expected_kernel_view(const KernelTimeline& timeline, std::int64_t first_step,
                                        std::int64_t clock_ns);

/// The `kernel_view` object of summary.json for these figures (every key the
/// analysis writes except `clock`, `layout` and the ranks' `stage`), `paths`
/// naming each rank's trace (global-rank order). Ratios in the shortest
/// round-trip form.
std::string expected_kernel_view_json(const ExpectedKernelView& view,
                                      const std::vector<std::string>& paths);

}  // namespace pipescope::sim
