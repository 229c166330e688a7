#include "load/load_prelude.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "load/load_run.h"
#include "numeric/units.h"

namespace pipescope {

Warning bad_timestamp_warning(const Device& device, const BadTimestamp& first, std::size_t count) {
  return {WarningCode::bad_timestamp,
          fmt::format("{} job{} stamped more than an hour from both {} neighbours in the log "
                      "(first: {}:{}, start {} ns since the epoch): bad timestamp{}, left out",
                      count, count == 1 ? "" : "s", count == 1 ? "its" : "their", device.path,
                      first.line, first.start_ns, count == 1 ? "" : "s"),
          device.index, -1, static_cast<std::uint64_t>(count)};
}

std::optional<Warning> untimed_jobs_warning(const Run& run,
                                            std::span<const UntimedJobs> per_device) {
  std::uint64_t count = 0;
  std::size_t devices = 0;
  std::optional<std::size_t> first;
  std::vector<std::string> names;
  bool more = false;
  for (std::size_t d = 0; d < per_device.size() && d < run.devices.size(); ++d) {
    const UntimedJobs& u = per_device[d];
    if (u.count == 0) continue;
    count += u.count;
    ++devices;
    if (!first) first = d;
    more = more || u.more_types;
    for (std::string& name : u.type_names()) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      if (names.size() < UntimedJobs::kNamedTypes) {
        names.push_back(std::move(name));
      } else {
        more = true;
      }
    }
  }
  if (!first) return std::nullopt;
  const Device& device = run.devices[*first];
  std::string types;
  for (const std::string& name : names) types += (types.empty() ? "" : ", ") + name;
  if (more) types += ", ...";
  return Warning{WarningCode::untimed_jobs,
                 fmt::format("{} job{} on {} device{} logged with start and end 0 ({}; first: "
                             "{}:{}): not timed by the executor (Paddle's PIR prints 0 for a job "
                             "with no computing op), left out; steps open from the timed jobs",
                             count, count == 1 ? "" : "s", devices, devices == 1 ? "" : "s", types,
                             device.path, per_device[*first].first_line),
                 devices == 1 ? device.index : -1, -1, count};
}

std::string offset_from(std::int64_t origin, std::int64_t t) {
  const std::int64_t ms = (t - origin) / 1'000'000;
  return ms >= 10'000 ? fmt::format("{:.1f} s", static_cast<double>(ms) / 1000.0)
                      : fmt::format("{} ms", ms);
}

std::vector<Warning> launch_warnings(const std::vector<IgnoredLaunchSignal>& ignored,
                                     const std::vector<LaunchSegment>& segments,
                                     std::int64_t origin,
                                     const std::vector<std::int64_t>& segment_starts) {
  std::vector<Warning> warnings;
  for (const IgnoredLaunchSignal& signal : ignored) {
    warnings.push_back(
        {WarningCode::launch_signal_ignored,
         fmt::format("{}: a sign of a new launch ({}) while the other devices kept running: "
                     "not treated as a relaunch",
                     signal.where,
                     signal.found_by == LaunchSignal::step_start_line
                         ? "a `Schedule Profiler start` line after jobs"
                     : signal.found_by == LaunchSignal::profiler_window
                         ? "the rank's next profiling window"
                         : "the schedule starting over after a gap"),
         -1, -1, 1});
  }
  if (segments.size() < 2) return warnings;
  std::string where;
  for (std::size_t s = 1; s < segments.size(); ++s) {
    const LaunchSegment& segment = segments[s];
    std::string evidence;
    for (const std::string& item : segment.evidence) {
      evidence += fmt::format("{}{}", evidence.empty() ? "" : ", ", item);
    }
    where += fmt::format(
        "; segment {} begins {} after the first job ({}: {}){}", segment.index,
        offset_from(origin, segment_starts[s]),
        segment.found_by == LaunchSignal::profiler_window ? "the rank's next trace"
        : segment.found_by == LaunchSignal::step_start_line
            ? "a new `Schedule Profiler start` line"
            : "the schedule starts over after a gap",
        evidence,
        segment.numbered_by_line
            ? fmt::format(", at step {}", segment.first_step)
            : fmt::format(", no step-start line: steps numbered on from {}", segment.first_step));
  }
  const bool windows = std::all_of(
      segments.begin() + 1, segments.end(),
      [](const LaunchSegment& s) { return s.found_by == LaunchSignal::profiler_window; });
  if (windows) {
    // A profiler schedule with repeat: one launch, profiled in windows.
    warnings.push_back(
        {WarningCode::profiler_windows,
         fmt::format("the traces hold {} profiling windows of each rank (a torch.profiler "
                     "schedule with repeat, one trace per window){}; each window is a segment "
                     "of its own, its steps numbered by its ProfilerStep#N, and the time "
                     "between windows, not profiled, is in no figure",
                     segments.size(), where),
         -1, -1, static_cast<std::uint64_t>(segments.size())});
  } else {
    warnings.push_back(
        {WarningCode::relaunch,
         fmt::format("the logs hold {} launches of the training program (a crash and relaunch "
                     "appended to the same logs){}; each launch is a segment of its own, no "
                     "step spans two, and the step a crash cut short is left out of the figures",
                     segments.size(), where),
         -1, -1, static_cast<std::uint64_t>(segments.size())});
  }
  return warnings;
}

std::size_t segment_position(int wanted, std::size_t count) {
  const int n = static_cast<int>(count);
  const int position = wanted == kLastSegment ? n - 1 : wanted;
  if (position < 0 || position >= n) {
    throw std::invalid_argument(
        fmt::format("segment {}: the run has {} launch segment{} ({})", wanted, n,
                    n == 1 ? "" : "s", n == 1 ? std::string("0") : fmt::format("0-{}", n - 1)));
  }
  return static_cast<std::size_t>(position);
}

std::string machine_label_of(const Run& run, int machine) {
  for (const Device& d : run.devices) {
    if (d.machine == machine && !d.machine_name.empty()) return d.machine_name;
  }
  return fmt::format("machine {}", machine);
}

Warning clock_step_warning(const Run& run, const ClockStep& step, std::int64_t origin) {
  return {WarningCode::clock_step,
          fmt::format("{}: its clock jumped {} by {} at {} after the run's first job (every "
                      "device of the machine at once: {}); the {} jobs after it were moved {} "
                      "by it (the size is estimated from the jobs)",
                      machine_label_of(run, step.machine), step.size_ns < 0 ? "back" : "forward",
                      format_duration(std::llabs(step.size_ns)), offset_from(origin, step.at_ns),
                      step.size_ns < 0
                          ? "jobs that start before the previous one started"
                          : "a job or a gap that much longer than usual, and the machine's steps "
                            "beginning that much later than the other machines' from then on",
                      step.jobs, step.size_ns < 0 ? "later" : "earlier"),
          -1, -1, step.jobs};
}

}  // namespace pipescope
