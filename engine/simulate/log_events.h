// Log events written into simulated worker logs (`simulate --events`), and
// where the analysis must place them: the lines a training run prints beside
// its job lines (a checkpoint saved during a stall, an evaluation between
// steps, a data loader's cost, a NCCL warning without a timestamp, a
// communication watchdog's warning), at times the simulator knows, in the
// local time zone of `--utc-offset`.
//
// The expected placement is worked out here from what was printed, by the
// rule of docs/guide.md ("Log events") and with code of its own (no analysis
// header): a GLOG stamp is read to the microsecond, a Python one to the
// millisecond; a line without a stamp takes the time of the dated line
// before it (the event lines follow the job line they are written after, in
// time order); each placed event lies in the expected window of one step, in
// the gap before one, or after the last; and outlier steps follow the
// median-absolute-deviation rule over the expected complete steps.
//
// Usage:
//   EventPlan plan(config, utc_offset_ns);
//   auto lines = plan.lines_after_jobs(device, step, jobs, next_start);  // per device and step
//   std::string json = plan.expected_json(expected_metrics);             // "events" of
//   expected.json
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "simulate/expected_metrics.h"
#include "simulate/simulator.h"

namespace pipescope::sim {

/// A line to write right after job `after_job` of a device's step.
struct EventLine {
  std::size_t after_job = 0;
  std::string text;  ///< without its line ending
};

struct PlannedEvent {
  int device = 0;
  std::string id;            ///< the library entry it must match
  std::int64_t time_ns = 0;  ///< where the analysis must place it (epoch ns)
  bool approximate = false;
};

class EventPlan {
 public:
  /// `utc_offset_ns`: local time − UTC of the printed stamps.
  EventPlan(const SimConfig& config, std::int64_t utc_offset_ns);

  /// The event lines of `device` in 0-based step `step`, whose jobs (as the
  /// simulator gave them, in order) are `jobs`; `next_start` is when the
  /// device's next step begins (its stage's step start, skew included).
  /// Records where each must be placed.
  std::vector<EventLine> lines_after_jobs(const SimDeviceInfo& device, int step,
                                          const std::vector<SimJob>& jobs, std::int64_t next_start);

  const std::vector<PlannedEvent>& planned() const { return planned_; }

  /// The `events` object of expected.json: per step (steps with events only)
  /// `{step, before[], events[]}` of `{device, id, time_ns, approximate}`,
  /// `after_last[]`, `total`, and `outliers[]` of `{step, slow, bubble}`.
  std::string expected_json(const ExpectedMetrics& metrics) const;

 private:
  const SimConfig& config_;
  std::int64_t offset_;
  std::vector<PlannedEvent> planned_;
};

}  // namespace pipescope::sim
