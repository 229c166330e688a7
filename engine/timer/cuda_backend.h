// The CUDA clock backend of the job timer (timer/job_timer.h): marks are
// cudaEvent_t from a pool recorded on the job's stream, resolved at flush().
// Built only when CMake finds the CUDA toolkit (target pipescope_timer_cuda,
// macro PIPESCOPE_HAVE_CUDA_TIMER); needs no GPU to build, one to run.
//
// Clock anchoring: at creation and at every flush, after the step's events
// have completed, an anchor event is recorded on a private idle stream and
// waited for, with CLOCK_REALTIME read just before the record (t0) and just
// after the wait returns (t1). The GPU timestamped the anchor inside
// [t0, t1], so anchor_host = (t0 + t1) / 2 is off by at most (t1 - t0) / 2.
// An event's time is anchor_host + cudaEventElapsedTime(anchor, event); the
// elapsed time is float milliseconds (24-bit mantissa), so its rounding error
// is at most elapsed · 2^-24 — under 60 ns for a step shorter than 1 s and
// under 0.5 µs up to 8 s — which is why the timer re-anchors every flush
// rather than once per run. CUDA documents the event timer's own resolution
// as about 0.5 µs.
//
// Usage:
//   std::string why;
//   if (!pipescope::timer::cuda_timer_available(&why)) { use make_host_timer; }
//   auto timer = pipescope::timer::make_cuda_timer(options);   // current device
#pragma once

#include <memory>
#include <string>

#include "timer/job_timer.h"

namespace pipescope::timer {

/// True when the CUDA runtime finds a usable device; otherwise false with
/// the runtime's reason in *why (no driver, no device, ...).
bool cuda_timer_available(std::string* why);

/// A backend on the current CUDA device, with `pool` events created up front.
/// Throws std::runtime_error (with the CUDA error string) on any CUDA error,
/// here and in mark()/resolve().
std::unique_ptr<ClockBackend> make_cuda_backend(std::uint32_t pool = 512);

/// A JobTimer on the CUDA backend.
std::unique_ptr<JobTimer> make_cuda_timer(const TimerOptions& options);

}  // namespace pipescope::timer
