// Launch segments: PaddlePaddle's launcher appends to `workerlog.N`, so a
// crash and relaunch leaves two launches of the training program in one run,
// minutes apart, the second usually resuming from a checkpoint and repeating
// step numbers. No step may span two launches, and each launch numbers its
// own steps. docs/guide.md ("Launches and segments") is the user's account.
//
// The signals, per device, that a new launch began:
//   step_start_line    a `Schedule Profiler start at step N` line that comes
//                      after job lines of the device (every launch prints one
//                      before its first job);
//   restart_after_gap  a gap between consecutive jobs longer than ten times
//                      the device's median step (and at least 1 s) after
//                      which the schedule starts over mid-step: the job after
//                      the gap opens no step, yet the first forward,
//                      backward, optimizer or lr job from it on is an lr or a
//                      forward of micro-batch 0.
// A device's signal marks a launch of the run only where every device was
// idle for a while inside it (a relaunch follows the death of every rank);
// the run is cut at the end of the longest such all-idle gap, so every
// device, with or without a signal of its own, is split at the same time.
// Launcher lines are not used: their wording varies with the launcher's
// version, and the launcher writes most of them to its own log.
//
//   run.finalize();
//   split_launch_segments(run);        // Run::segments, Device::segment_begin
//   select_launch_segment(run, last);  // optional: keep one
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/step_rule.h"
#include "model/run.h"

namespace pipescope {

struct SegmentOptions {
  /// restart_after_gap: the gap must exceed this many median steps...
  std::int64_t gap_steps = 10;
  /// ...and this many nanoseconds.
  std::int64_t min_gap_ns = 1'000'000'000;
  /// Numbers the first segment from this step instead of its step-start
  /// lines (`--first-step`); later segments keep theirs.
  std::optional<std::int64_t> first_step;
};

/// A signal that did not mark a launch: the other devices kept running
/// through it (a step-start line printed twice by one process, say).
struct IgnoredLaunchSignal {
  LaunchSignal found_by = LaunchSignal::none;
  /// "workerlog.3:1234".
  std::string where;
};

// The same in parts, for the partitioned analysis, where each device's jobs
// are on the rank that read them: split_launch_segments is
//   1. device_launch_evidence, per device (its jobs alone);
//   2. decide_launch_cuts, once, from every device's evidence (in device
//      order) and, for each candidate, every device's busy intervals inside
//      it (busy_between, per device: the idle gap holds few);
//   3. cut_device, per device;
//   4. device_segment_numbering per device, add_segment_numbering (min of
//      the opening step-start lines, max of the steps), and
//      number_launch_segments, once.

/// One device's sign that a new launch began between two of its jobs.
struct LaunchCandidate {
  std::int64_t stop_ns = 0;     ///< last end of the device's jobs before it
  std::int64_t restart_ns = 0;  ///< first start of its jobs after it
  LaunchSignal found_by = LaunchSignal::none;
  std::string where;  ///< "path:line"
};

struct DeviceLaunchEvidence {
  std::vector<LaunchCandidate> candidates;  ///< step-start lines first
  std::vector<IgnoredLaunchSignal> ignored;
};
DeviceLaunchEvidence device_launch_evidence(const Device& device, const TypeKinds& kinds,
                                            const SegmentOptions& options);

/// The union of the device's job intervals that meets [from, to).
std::vector<std::pair<std::int64_t, std::int64_t>> busy_between(const Device& device,
                                                                std::int64_t from, std::int64_t to);

/// Every device's busy intervals that meet [from, to), in any order.
using BusyBetween =
    std::function<std::vector<std::pair<std::int64_t, std::int64_t>>(std::int64_t, std::int64_t)>;

/// Where the run is cut: the end of the all-idle gap inside a candidate.
struct LaunchCut {
  std::int64_t at = 0;
  LaunchSignal found_by = LaunchSignal::none;
  std::vector<std::string> evidence;
};
struct LaunchCuts {
  std::vector<LaunchCut> cuts;  ///< in time order
  std::vector<IgnoredLaunchSignal> ignored;
};
LaunchCuts decide_launch_cuts(const std::vector<DeviceLaunchEvidence>& devices,
                              const BusyBetween& busy, const SegmentOptions& options);

/// Device::segment_begin from the cuts.
void cut_device(Device& device, const std::vector<LaunchCut>& cuts);

/// What one device says of a segment's number: the step-start line that
/// opens it on the device, and its steps there (counted with several
/// segments only).
struct SegmentNumbering {
  std::optional<std::int64_t> opening_step;
  std::int32_t steps = 0;
};
std::vector<SegmentNumbering> device_segment_numbering(const Device& device, const TypeKinds& kinds,
                                                       std::size_t segments);
/// Adds a device's numbering (any order: min and max).
void add_segment_numbering(std::vector<SegmentNumbering>& into,
                           const std::vector<SegmentNumbering>& device);
/// Run::segments (and Run::first_step) from the cuts and the numbering.
void number_launch_segments(LaunchCuts&& cuts, const std::vector<SegmentNumbering>& numbering,
                            const SegmentOptions& options, Run& run);

/// Finds the run's launches and writes Run::segments and every
/// Device::segment_begin (always at least one segment when the run has a
/// job). Requires run.finalize(). Returns the signals that did not mark one.
std::vector<IgnoredLaunchSignal> split_launch_segments(Run& run,
                                                       const SegmentOptions& options = {});

/// Keeps only the segment at `position` in Run::segments: its jobs, its
/// step-start lines, and the devices with a job in it (the others move to
/// Run::left_out, reason "not_in_segment"). The segment keeps its index.
/// Throws std::out_of_range for a position past the end.
void select_launch_segment(Run& run, std::size_t position);

/// The same with each device's say (one per Run::devices) of whether it has
/// a job in the segment: for a run that holds the jobs of only some of its
/// devices (the others' jobs stay as they are: none).
void select_launch_segment(Run& run, std::size_t position, const std::vector<char>& in_segment);

}  // namespace pipescope
