// The metrics the metric contract implies for a simulated run, computed from
// the simulator's known step membership with deliberately simple code (an
// interval union per device, windows by definition). It never calls the
// analysis layer: expected.json is an independent check of it.
//
// Usage:
//   ExpectedMetricsBuilder builder(simulator.devices(), first_step);
//   builder.add_job(device, step, start_ns, end_ns);   // times as printed
//   std::string json = expected_metrics_json(builder.finish());
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "simulate/simulator.h"

namespace pipescope::sim {

struct ExpectedDevice {
  int device = 0;
  int machine = 0;
  int rank = 0;
  std::int64_t jobs = 0;
  std::int64_t steps = 0;
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t comm_ns = 0;
  double utilization = 0;
};

struct ExpectedStepDevice {
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t comm_ns = 0;
};

struct ExpectedStep {
  std::int64_t step = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  double bubble_ratio = 0;
  std::vector<ExpectedStepDevice> devices;
};

struct ExpectedMetrics {
  std::int64_t jobs = 0;
  std::int64_t first_step = 0;
  double bubble_ratio = 0;
  std::int64_t total_window_ns = 0;
  std::int64_t comm_ns = 0;
  std::vector<ExpectedDevice> devices;
  std::vector<ExpectedStep> steps;
  /// The `events` object (log_events.h), written as is when not empty.
  std::string events_json;
};

class ExpectedMetricsBuilder {
 public:
  ExpectedMetricsBuilder(const std::vector<SimDeviceInfo>& devices, std::int64_t first_step);

  /// One job of `device` in 0-based step `step`, with the times a reader of
  /// the log gets back; `comm` for a send/recv job (not busy time: the
  /// contract's comm time where no other job overlaps it).
  void add_job(int device, int step, std::int64_t start_ns, std::int64_t end_ns, bool comm = false);

  ExpectedMetrics finish() const;

 private:
  struct StepSpan {
    bool any = false;
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
  };
  std::vector<SimDeviceInfo> devices_;
  std::int64_t first_step_;
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> intervals_;  // per device
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> comm_intervals_;
  std::vector<std::vector<StepSpan>> spans_;  // [step][device]
};

/// expected.json: exactly the summary.json fields jobs, first_step,
/// bubble_ratio, total_window_ns, comm_ns, devices and steps (same names and meaning),
/// so that a summary can be checked field by field against it. Ratios use
/// the shortest round-trip form.
std::string expected_metrics_json(const ExpectedMetrics& metrics);

}  // namespace pipescope::sim
