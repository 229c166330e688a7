// What the CUDA job timer costs the executor's launching thread: begin()+end()
// per job (two cudaEventRecord calls plus bookkeeping) and flush() per step
// (waiting for the step's events, converting, writing one block), next to the
// host backend. The GPU is idle, so the figures are the timer's own overhead,
// not time spent waiting for work. Prints medians of several repetitions.
//
//   cuda_timer_cost [JOBS_PER_STEP [STEPS]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "timer/cuda_backend.h"
#include "timer/job_timer.h"

namespace {

using pipescope::timer::JobTimer;

struct Cost {
  double begin_end_ns = 0;  // per job
  double flush_us = 0;      // per step
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class MakeTimer>
Cost measure(MakeTimer make, const std::string& path, int jobs, int steps) {
  std::vector<double> per_job;
  std::vector<double> per_flush;
  pipescope::timer::TimerOptions options;
  options.path = path;
  options.marks_per_step = static_cast<std::uint32_t>(2 * jobs);
  std::unique_ptr<JobTimer> timer = make(options);
  const auto type = timer->job_type("forward");
  for (int step = 0; step < steps; ++step) {
    const std::int64_t t0 = now_ns();
    for (int job = 0; job < jobs; ++job) {
      timer->begin(type, job, nullptr);
      timer->end(nullptr);
    }
    const std::int64_t t1 = now_ns();
    timer->flush();
    const std::int64_t t2 = now_ns();
    if (step == 0) continue;  // warm-up: first allocations, first write
    per_job.push_back(static_cast<double>(t1 - t0) / jobs);
    per_flush.push_back(static_cast<double>(t2 - t1) / 1000.0);
  }
  timer->close();
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(per_job), median(per_flush)};
}

}  // namespace

int main(int argc, char** argv) {
  const int jobs = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 50;
  const std::string dir = std::filesystem::temp_directory_path() / "pipescope-timer-cost";
  std::filesystem::create_directories(dir);
  std::printf("%d jobs per step, %d steps (median of steps 2..%d)\n", jobs, steps, steps);
  std::printf("%-8s %18s %16s\n", "backend", "begin+end ns/job", "flush us/step");
  const Cost host = measure([](const auto& o) { return pipescope::timer::make_host_timer(o); },
                            dir + "/host.ivl", jobs, steps);
  std::printf("%-8s %18.0f %16.1f\n", "host", host.begin_end_ns, host.flush_us);
  std::string why;
  if (!pipescope::timer::cuda_timer_available(&why)) {
    std::printf("%-8s no usable GPU: %s\n", "cuda", why.c_str());
  } else {
    const Cost cuda = measure([](const auto& o) { return pipescope::timer::make_cuda_timer(o); },
                              dir + "/cuda.ivl", jobs, steps);
    std::printf("%-8s %18.0f %16.1f\n", "cuda", cuda.begin_end_ns, cuda.flush_us);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
