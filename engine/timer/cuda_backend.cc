#include "timer/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace pipescope::timer {

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA job timer: ") + what + ": " +
                             cudaGetErrorString(status));
  }
}

class CudaBackend final : public ClockBackend {
 public:
  explicit CudaBackend(std::uint32_t pool) {
    check(cudaStreamCreateWithFlags(&anchor_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreate(&anchor_event_), "cudaEventCreate");
    grow(pool);
    take_anchor();
  }

  ~CudaBackend() override {
    // Destruction must not throw; errors here cannot be acted upon.
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
    cudaEventDestroy(anchor_event_);
    cudaStreamDestroy(anchor_stream_);
  }

  std::uint32_t mark(Stream stream) override {
    if (used_ == pool_.size()) grow(pool_.size() * 2 + 64);  // first steps only
    check(cudaEventRecord(pool_[used_], static_cast<cudaStream_t>(stream)), "cudaEventRecord");
    return used_++;
  }

  std::uint32_t marks() const override { return used_; }

  void resolve(std::span<std::int64_t> out) override {
    for (std::uint32_t i = 0; i < used_ && i < out.size(); ++i) {
      // Ask for the elapsed time first and wait only for an event still
      // pending: after the first wait most of a step's events are complete,
      // and one API call per event instead of two halves the flush.
      float ms = 0;
      cudaError_t status = cudaEventElapsedTime(&ms, anchor_event_, pool_[i]);
      if (status == cudaErrorNotReady) {
        check(cudaEventSynchronize(pool_[i]), "cudaEventSynchronize");
        status = cudaEventElapsedTime(&ms, anchor_event_, pool_[i]);
      }
      check(status, "cudaEventElapsedTime");
      // float ms -> integer ns: the float carries ~7 significant digits; the
      // product is exact enough in double and rounded once.
      out[i] = anchor_realtime_ + std::llround(static_cast<double>(ms) * 1e6);
    }
    used_ = 0;
    take_anchor();
  }

  std::pair<std::int64_t, std::int64_t> anchor() const override {
    return {anchor_realtime_, anchor_host_steady_};
  }
  std::int64_t anchor_uncertainty_ns() const override { return uncertainty_; }

 private:
  void grow(std::size_t size) {
    while (pool_.size() < size) {
      cudaEvent_t e = nullptr;
      check(cudaEventCreate(&e), "cudaEventCreate");  // timing enabled
      pool_.push_back(e);
    }
  }

  void take_anchor() {
    const std::int64_t t0 = realtime_ns();
    check(cudaEventRecord(anchor_event_, anchor_stream_), "cudaEventRecord(anchor)");
    check(cudaEventSynchronize(anchor_event_), "cudaEventSynchronize(anchor)");
    const std::int64_t t1 = realtime_ns();
    anchor_realtime_ = t0 + (t1 - t0) / 2;
    anchor_host_steady_ = steady_ns();
    uncertainty_ = (t1 - t0 + 1) / 2;
  }

  cudaStream_t anchor_stream_ = nullptr;
  cudaEvent_t anchor_event_ = nullptr;
  std::vector<cudaEvent_t> pool_;
  std::uint32_t used_ = 0;
  std::int64_t anchor_realtime_ = 0;
  std::int64_t anchor_host_steady_ = 0;
  std::int64_t uncertainty_ = 0;
};

}  // namespace

bool cuda_timer_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = std::string("CUDA runtime reports: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

std::unique_ptr<ClockBackend> make_cuda_backend(std::uint32_t pool) {
  return std::make_unique<CudaBackend>(pool);
}

std::unique_ptr<JobTimer> make_cuda_timer(const TimerOptions& options) {
  return std::make_unique<JobTimer>(make_cuda_backend(options.marks_per_step), options);
}

}  // namespace pipescope::timer
