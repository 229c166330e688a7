// Test helper: a small run with log events, built by hand for the exporters'
// tests (trace.json, trace.pftrace, the HTML report), so that every expected
// time, track and mark is read off the numbers below.
//
// Two devices (0 and 1, machine 0), three steps whose windows are, from
// t0 = kEventRunT0 in milliseconds:
//   step 10 [0, 100)   step 11 [200, 300)   step 12 [400, 700) (slow: an outlier)
// Each device has a forward and a backward job per step. The events, with
// where place_step_events puts them:
//   device 0: e0 checkpoint_save (info)  at  60 ms  in step 10, captures path
//             e1 nccl_warn (warning)     at 150 ms  before step 11, approximate
//             e2 cuda_error (error)      at 230 ms  in step 11
//             e3 checkpoint_save         unplaced
//             e4 checkpoint_save         at 900 ms  after the last window
//   device 1: e0 nccl_warn               at  -5 ms  before step 10 (and every job)
//             e1 nccl_warn               at 280 ms  in step 11
//             e2 cuda_error              at 650 ms  in step 12
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "model/run.h"

namespace pipescope::testing {

inline constexpr std::int64_t kEventRunMs = 1'000'000;
inline constexpr std::int64_t kEventRunT0 = 1'697'793'307'000'000'000;

struct LogEventRun {
  Run run;
  Metrics metrics;
};

/// The epoch time of `ms` milliseconds after kEventRunT0.
inline std::int64_t event_run_time(std::int64_t ms) { return kEventRunT0 + ms * kEventRunMs; }

inline LogEventRun log_event_run() {
  LogEventRun r;
  Run& run = r.run;
  const TypeId forward = run.types.intern("forward");
  const TypeId backward = run.types.intern("backward");
  run.event_kinds = {{"checkpoint_save", "checkpoint", "info", "A checkpoint is saved."},
                     {"nccl_warn", "nccl", "warning", "NCCL printed a warning."},
                     {"cuda_error", "cuda", "error", "A CUDA call failed."}};
  const std::int64_t starts[] = {0, 200, 400};
  const std::int64_t ends[] = {100, 300, 700};
  r.metrics.job_step.resize(2);
  for (int d = 0; d < 2; ++d) {
    Device device;
    device.index = d;
    device.rank = d;
    device.path = "workerlog." + std::to_string(d);
    for (std::size_t k = 0; k < 3; ++k) {
      // Device 0 starts each step, device 1 ends it with device 0.
      Job f;
      f.type = forward;
      f.start_ns = event_run_time(starts[k] + 10 * d);
      f.end_ns = event_run_time(starts[k] + 40 + 10 * d);
      f.line = static_cast<std::uint32_t>(100 + 2 * k);
      Job b = f;
      b.type = backward;
      b.start_ns = event_run_time(starts[k] + 50 + 10 * d);
      b.end_ns = event_run_time(ends[k]);
      b.line = f.line + 1;
      device.jobs.push_back(f);
      device.jobs.push_back(b);
      r.metrics.job_step[static_cast<std::size_t>(d)].insert(
          r.metrics.job_step[static_cast<std::size_t>(d)].end(), 2, static_cast<std::int32_t>(k));
    }
    run.devices.push_back(std::move(device));
  }
  for (std::size_t k = 0; k < 3; ++k) {
    StepWindow w;
    w.step = 10 + static_cast<std::int64_t>(k);
    w.start_ns = event_run_time(starts[k]);
    w.end_ns = event_run_time(ends[k]);
    w.bubble_ratio = 0.2;
    r.metrics.steps.push_back(w);
  }

  const auto event = [](std::uint32_t kind, std::int64_t ms, std::uint64_t line,
                        EventTime how = EventTime::stamped,
                        std::vector<std::pair<std::string, std::string>> captures = {}) {
    LogEvent e;
    e.kind = kind;
    e.time_kind = how;
    e.line = line;
    e.time_ns = how == EventTime::unplaced ? 0 : event_run_time(ms);
    e.captures = std::move(captures);
    return e;
  };
  run.devices[0].events = {
      event(0, 60, 7, EventTime::stamped, {{"path", "/ckpt/step_10"}}),
      event(1, 150, 12, EventTime::approximate, {{"message", "Call to ibv_reg_mr failed"}}),
      event(2, 230, 15),
      event(0, 0, 20, EventTime::unplaced),
      event(0, 900, 30, EventTime::stamped, {{"path", "/ckpt/final"}}),
  };
  run.devices[1].events = {event(1, -5, 2), event(1, 280, 18), event(2, 650, 25)};
  return r;
}

}  // namespace pipescope::testing
