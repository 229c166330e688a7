// What load_run says of the passes it runs before the analysis (the bad
// timestamps, the launch segments, the segment kept), written from small
// whole-run facts so that a run whose devices' jobs are on different
// processes (distributed/partitioned_load.h) says it in the same words:
// load_run and the partitioned load both call these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/bad_timestamps.h"
#include "analysis/launch_segments.h"
#include "model/run.h"

namespace pipescope {

/// The bad_timestamp input warning: `first` is the run's first bad job (in
/// device, then line order), on `device`; `count` the run's bad jobs.
Warning bad_timestamp_warning(const Device& device, const BadTimestamp& first, std::size_t count);

/// The untimed_jobs input warning, when any device had untimed jobs:
/// `per_device[d]` is what leave_out_untimed_jobs removed from
/// Run::devices[d].
std::optional<Warning> untimed_jobs_warning(const Run& run,
                                            std::span<const UntimedJobs> per_device);

/// The launch warnings (launch_signal_ignored for each ignored signal, then
/// relaunch or profiler_windows when there are several segments):
/// `segments` as number_launch_segments wrote them, `origin` the run's first
/// job start, `segment_starts[s]` the first job start of segment s over
/// every device (INT64_MAX for none).
std::vector<Warning> launch_warnings(const std::vector<IgnoredLaunchSignal>& ignored,
                                     const std::vector<LaunchSegment>& segments,
                                     std::int64_t origin,
                                     const std::vector<std::int64_t>& segment_starts);

/// "12.5 s" (or "840 ms") from `origin` to `t`: where a segment or a clock
/// step lies after the run's first job.
std::string offset_from(std::int64_t origin, std::int64_t t);

/// "machine1" (its folder name) or "machine 1".
std::string machine_label_of(const Run& run, int machine);

/// The clock_step input warning of a step undo_clock_steps undid: `origin`
/// is the run's first job start once the steps are undone.
Warning clock_step_warning(const Run& run, const ClockStep& step, std::int64_t origin);

/// The position in Run::segments of LoadOptions::segment `wanted` (an index
/// or kLastSegment) among `count` segments. Throws std::invalid_argument,
/// naming the segments there are, for one the run does not have.
std::size_t segment_position(int wanted, std::size_t count);

}  // namespace pipescope
