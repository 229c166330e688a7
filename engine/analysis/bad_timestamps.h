// Bad timestamps: a job stamped far outside its neighbours (a clock read as
// 0, a field overwritten), found and left out before anything reads the
// times, so that one job at epoch 0 does not open a launch segment 54 years
// before the run or stretch a step window over decades.
//
// In the order a device's jobs were written (their lines), a job is a bad
// timestamp when its start or end lies more than kBadTimestampGapNs from
// both the job before it and the job after it while those two lie within
// that gap of each other (the first and the last job: from its one
// neighbour, when the device has at least three jobs). A relaunch never
// looks like this: its jobs come after the earlier launch's in line order
// and lie close to one another.
//
// Usage (load_run, before the clock steps):
//   std::vector<BadTimestamp> bad = leave_out_bad_timestamps(run);
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/run.h"

namespace pipescope {

/// How far from both neighbours a job's time must be to be a bad timestamp.
inline constexpr std::int64_t kBadTimestampGapNs = 3'600'000'000'000;  // 1 hour

/// A job left out for its time.
struct BadTimestamp {
  std::size_t device = 0;  ///< position in Run::devices
  std::uint32_t line = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};

/// Removes every bad timestamp's job from `run` (then Run::finalize()) and
/// returns them, in device and line order. Devices whose jobs have no lines
/// are not examined.
std::vector<BadTimestamp> leave_out_bad_timestamps(Run& run);

/// The same for one device (at `position` in Run::devices), which is all
/// the rule reads: its jobs stay in start order. The whole-run form calls it
/// per device.
std::vector<BadTimestamp> leave_out_bad_timestamps(Device& device, std::size_t position);

/// A device's untimed jobs: logged with start and end both 0 (Paddle's PIR
/// executor prints 0 for a job it did not time, a communication-only job with
/// no computing op to start its stream timer). Such a job has no place in
/// time; it is left out before anything reads the jobs (docs/guide.md,
/// "Untimed jobs"), so that the step rule opens steps from the timed ones.
/// Trivially copyable: it travels between processes as bytes.
struct UntimedJobs {
  static constexpr std::size_t kNamedTypes = 4;
  static constexpr std::size_t kNameBytes = 48;

  std::uint64_t count = 0;
  std::uint32_t first_line = 0;  ///< the first one's line in its input (0: none)
  /// The first kNamedTypes distinct job types among them, NUL-padded (a
  /// longer name is cut).
  std::array<std::array<char, kNameBytes>, kNamedTypes> types{};
  /// More distinct types than kNamedTypes.
  bool more_types = false;

  void add_type(std::string_view name);
  std::vector<std::string> type_names() const;
};

/// Removes `device`'s untimed jobs (those with start_ns == end_ns == 0),
/// keeping the others in their order; `types` names their types.
UntimedJobs leave_out_untimed_jobs(Device& device, const TypeTable& types);

}  // namespace pipescope
