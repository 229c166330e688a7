// The CUDA clock backend of the job timer (timer/job_timer.h): marks are CUDA
// events from a pool, recorded on the job's stream through the CUDA driver
// API (timer/cuda_driver.h: libcuda.so.1 loaded at run time, so the backend
// is always built and links no CUDA library), resolved at flush().
//
// Context: events live in the calling thread's current CUDA context, which in
// a PyTorch or Paddle process is the framework's (its device's primary
// context). With no current context the backend makes a device's primary
// context current on the calling thread, as the CUDA runtime would: `device`,
// or device 0 when it is negative. With device >= 0 that device's primary
// context is used even if another context is current.
//
// Clock anchoring: at creation and at every flush, after the step's events
// have completed, an anchor event is recorded on a private idle stream and
// waited for, with CLOCK_REALTIME read just before the record (t0) and just
// after the wait returns (t1). The GPU timestamped the anchor inside
// [t0, t1], so anchor_host = (t0 + t1) / 2 is off by at most (t1 - t0) / 2.
// An event's time is anchor_host + cuEventElapsedTime(anchor, event); the
// elapsed time is float milliseconds (24-bit mantissa), so its rounding error
// is at most elapsed · 2^-24 — under 60 ns for a step shorter than 1 s and
// under 0.5 µs up to 8 s — which is why the timer re-anchors every flush
// rather than once per run. CUDA documents the event timer's own resolution
// as about 0.5 µs.
//
// Usage:
//   std::string why;
//   if (!pipescope::timer::cuda_timer_available(&why)) { use make_host_timer; }
//   auto timer = pipescope::timer::make_cuda_timer(options);   // current context
#pragma once

#include <memory>
#include <string>

#include "timer/cuda_driver.h"
#include "timer/job_timer.h"

namespace pipescope::timer {

/// True when the CUDA driver loads, starts and has a device; otherwise false
/// with the reason in *why (no libcuda.so.1, stub library, no device, ...).
bool cuda_timer_available(std::string* why);

/// A backend in the current CUDA context (see above for `device`), with `pool`
/// events created up front. Throws cu::Error, a std::runtime_error (with the driver's
/// error name and text) when the driver is unusable and on any CUDA error,
/// here and in mark()/resolve().
std::unique_ptr<ClockBackend> make_cuda_backend(std::uint32_t pool = 512, int device = -1);

/// A JobTimer on the CUDA backend.
std::unique_ptr<JobTimer> make_cuda_timer(const TimerOptions& options, int device = -1);

}  // namespace pipescope::timer
