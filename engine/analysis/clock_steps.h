// Clock steps: a machine's clock that jumped mid-run (NTP stepping a clock
// back, or forward), found in the jobs and undone before anything else reads
// their times.
//
// A step moves every timestamp the machine writes after it by the same
// amount, on every one of its devices at once. In the order the jobs were
// written (their lines), a device's compute jobs never overlap and always
// start after the previous one ended; so:
//   - a step back shows as a job that starts well before its predecessor
//     ended (by ClockStepOptions::min_step_ns or more), on every device of
//     the machine at about the same time; its size is the largest such
//     overlap on the machine (a device that ran back to back at the step
//     shows it whole), and a job the step cut in two (end before start) is
//     mended with it;
//   - a step forward shows on every device of the machine at once as a job
//     that lasts ClockStepOptions::min_forward_step_ns or more longer than
//     its type usually does on the device (the step fell inside it), or as
//     that much more time than usual between two jobs (it fell between
//     them); its size is the median of the devices' excesses. Taken only
//     when the machine's steps, which began in step with the other
//     machines' before, begin that much later after it, for good: a pause
//     of one machine (a fast replica waiting at the gradient all-reduce)
//     leaves them as they were, a pause of the whole run is on every
//     machine. So a single machine's steps forward are not found.
// The jobs after a step are moved back by its size (Run::finalize re-sorts
// them), so each machine reads one continuous clock; correct_clocks then
// estimates each machine's offset as ever and reports the pieces
// (MachineClock::pieces). Jobs without lines (`.ivl` records hold no line
// order) are not examined.
//
// Usage (load_run, before the segments are split):
//   run.clock_steps = undo_clock_steps(run, {});
#pragma once

#include <cstdint>
#include <vector>

#include "model/run.h"

namespace pipescope {

struct ClockStepOptions {
  /// The least jump taken for a step; smaller ones are timing noise (a host
  /// stamp moves by tens of microseconds) or jobs that really overlap.
  std::int64_t min_step_ns = 1'000'000;  // 1 ms
  /// The least jump forward taken for a step: a device idle (or a job slow)
  /// for this much longer than usual. NTP slews offsets below 128 ms and
  /// steps only larger ones; a shorter pause is a wait, not a clock.
  std::int64_t min_forward_step_ns = 50'000'000;  // 50 ms
};

/// Finds the clock steps of every machine, undoes them in `run` (the jobs
/// after each step moved back by its size, then Run::finalize()), and
/// returns them in machine, then time order.
std::vector<ClockStep> undo_clock_steps(Run& run, const ClockStepOptions& options);

}  // namespace pipescope
