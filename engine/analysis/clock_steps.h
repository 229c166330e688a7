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

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "analysis/step_rule.h"
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

/// The end of an undo of clock steps (this one's, or the partitioned load's):
/// `run` finalized when jobs `moved`, the steps put in machine, then time
/// order.
void finish_clock_steps(Run& run, bool moved, std::vector<ClockStep>& steps);

// The same in parts, for a run whose devices' jobs are on different
// processes (distributed/partitioned_load.h): undo_clock_steps is made of
// them. Each machine in turn:
//   1. steps back, at most kMaxBackRounds times: device_back_jumps per
//      device (its jobs alone), shows_back_step from the machine's devices'
//      counts; then device_back_step per device, every one of them
//      found, back_step_size from all of them, and shift_device_jobs on each;
//   2. then (with two machines or more, after every machine's steps back)
//      steps forward, at most kMaxForwardRounds times: device_forward_step
//      per device, every one found, forward_step_window from their spans;
//      only for such a window add_step_starts per device (its steps by the
//      contract's rule, device-local), combined by min in any order, and
//      forward_step_moves_machine; then shift_device_jobs on each, and the
//      devices' jobs re-sorted (Run::finalize).
// A step's `at_ns` is the least of its devices' first moved starts, `jobs`
// their sum.

/// How many steps back, and forward, of one machine are looked for.
inline constexpr int kMaxBackRounds = 16;
inline constexpr int kMaxForwardRounds = 4;

/// How many times a device's compute jobs, in line order, jump back (by
/// ClockStepOptions::min_step_ns or more; none when they have no lines).
std::uint64_t device_back_jumps(const Device& device, const TypeKinds& kinds,
                                const ClockStepOptions& options);

/// A device's first jump back: the line from which its
/// jobs are in the new clock, how far that job starts before the latest
/// earlier end, what the device says of the step's whole size (from the job
/// the step cut, or the usual gap between the two jobs), and the job the
/// step cut in two (an index into the device's jobs), which the shift mends.
struct DeviceBackStep {
  std::uint32_t line = 0;
  std::int64_t overlap = 0;
  std::optional<std::int64_t> estimate;
  std::optional<std::size_t> cut_job;
};
std::optional<DeviceBackStep> device_back_step(const Device& device, const TypeKinds& kinds,
                                               const ClockStepOptions& options);
/// The size of a machine's step back from every device's part (in any
/// order): the largest overlap, or the median estimate when larger.
std::int64_t back_step_size(const std::vector<DeviceBackStep>& parts);

/// A device's first jump forward (see the header): `size` its excess over
/// the usual, the step lying in [from, to - size] on the old clock.
struct ForwardJumpSpan {
  std::int64_t size = 0;
  std::int64_t from = 0;
  std::int64_t to = 0;
};

/// A device's first jump forward: its span, the first line in the new
/// clock, and the job the step fell in (which the shift mends).
struct DeviceForwardStep {
  ForwardJumpSpan span;
  std::uint32_t line = 0;
  std::optional<std::size_t> stretched_job;
};
std::optional<DeviceForwardStep> device_forward_step(const Device& device, const TypeKinds& kinds,
                                                     const ClockStepOptions& options);

/// Moves `device`'s jobs of lines `line` and after, and its log events, by
/// `shift` (the step undone: +size for a step back, -size forward), and the
/// mended job's end with them. Returns how many jobs moved and the least
/// of their new starts (max when none).
struct DeviceShift {
  std::uint64_t jobs = 0;
  std::int64_t first_start = std::numeric_limits<std::int64_t>::max();
};
DeviceShift shift_device_jobs(Device& device, std::uint32_t line, std::int64_t shift,
                              std::optional<std::size_t> mended_job);

/// Whether a machine's devices (their back-jump counts) show a step back:
/// every device jumps back the same number of times, at least once and at
/// most a few (more is a log out of time order).
bool shows_back_step(const std::vector<std::uint64_t>& back_jumps);

/// Where a machine's step forward lies: its size (the median excess) and
/// the instants every device's span allows.
struct ForwardStepWindow {
  std::int64_t size = 0;
  std::int64_t latest_from = 0;
  std::int64_t earliest_to = 0;
};
/// From every device's jump of one machine; none unless they meet at one
/// moment (give or take a quarter of the step).
std::optional<ForwardStepWindow> forward_step_window(const std::vector<ForwardJumpSpan>& jumps);

/// Per step number (device-local numbering): the first start on the machine
/// looked at, and the first start on the other machines.
using MachineStepStarts = std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>>;
/// Adds a device's jobs (`steps`: each job's step) as the machine's when
/// `on_machine`, else as another machine's.
void add_step_starts(MachineStepStarts& into, const Device& device,
                     const std::vector<std::int32_t>& steps, bool on_machine);
/// Adds what another part gathered (min per side).
void add_step_starts(MachineStepStarts& into, const MachineStepStarts& more);
/// Whether the machine's steps begin about `window.size` later, relative to
/// the other machines', after the window than before it: the jump was its
/// clock, not a pause.
bool forward_step_moves_machine(const MachineStepStarts& starts, const ForwardStepWindow& window);

}  // namespace pipescope
