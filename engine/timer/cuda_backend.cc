#include "timer/cuda_backend.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "timer/cuda_driver.h"

namespace pipescope::timer {

namespace {

class CudaBackend final : public ClockBackend {
 public:
  CudaBackend(std::uint32_t pool, int device) {
    try {
      open(pool, device);
    } catch (...) {
      release();  // no destructor runs for a constructor that throws
      throw;
    }
  }

  ~CudaBackend() override { release(); }

  std::uint32_t mark(Stream stream) override {
    if (used_ == pool_.size()) grow(pool_.size() * 2 + 64);  // first steps only
    driver_->check(driver_->cuEventRecord(pool_[used_], static_cast<cu::Stream>(stream)),
                   "cuEventRecord");
    return used_++;
  }

  std::uint32_t marks() const override { return used_; }

  void resolve(std::span<std::int64_t> out) override {
    const cu::Driver& d = *driver_;
    for (std::uint32_t i = 0; i < used_ && i < out.size(); ++i) {
      // Ask for the elapsed time first and wait only for an event still
      // pending: after the first wait most of a step's events are complete,
      // and one driver call per event instead of two halves the flush.
      float ms = 0;
      cu::Result status = d.cuEventElapsedTime(&ms, anchor_event_, pool_[i]);
      if (status == cu::kErrorNotReady) {
        d.check(d.cuEventSynchronize(pool_[i]), "cuEventSynchronize");
        status = d.cuEventElapsedTime(&ms, anchor_event_, pool_[i]);
      }
      d.check(status, "cuEventElapsedTime");
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
  void open(std::uint32_t pool, int device) {
    std::string why;
    driver_ = cu::load_driver(&why);
    if (!driver_) throw cu::Error("CUDA job timer: " + why);
    const cu::Driver& d = *driver_;
    cu::Context current = nullptr;
    d.check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
    if (current == nullptr || device >= 0) {
      // Nothing current (the framework has not touched CUDA on this thread
      // yet), or a device asked for: its primary context, the one the CUDA
      // runtime uses too.
      d.check(d.cuDeviceGet(&device_, device < 0 ? 0 : device), "cuDeviceGet");
      d.check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
      retained_ = true;
      if (context_ != current) {
        d.check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
        previous_ = current;
        made_current_ = true;
      }
    } else {
      context_ = current;
    }
    d.check(d.cuStreamCreate(&anchor_stream_, cu::kStreamNonBlocking), "cuStreamCreate");
    d.check(d.cuEventCreate(&anchor_event_, cu::kEventDefault), "cuEventCreate");
    grow(pool);
    take_anchor();
  }

  /// Frees what open() created; must not throw (errors cannot be acted upon).
  void release() {
    if (!driver_) return;
    const cu::Driver& d = *driver_;
    for (cu::Event e : pool_) d.cuEventDestroy(e);
    pool_.clear();
    if (anchor_event_ != nullptr) d.cuEventDestroy(anchor_event_);
    if (anchor_stream_ != nullptr) d.cuStreamDestroy(anchor_stream_);
    anchor_event_ = nullptr;
    anchor_stream_ = nullptr;
    // Leave the thread as it was found: what this backend made current is
    // undone before the primary context it retained is released.
    cu::Context current = nullptr;
    if (made_current_ && d.cuCtxGetCurrent(&current) == cu::kSuccess && current == context_) {
      d.cuCtxSetCurrent(previous_);
    }
    made_current_ = false;
    if (retained_) d.cuDevicePrimaryCtxRelease(device_);
    retained_ = false;
  }

  void grow(std::size_t size) {
    while (pool_.size() < size) {
      cu::Event e = nullptr;
      driver_->check(driver_->cuEventCreate(&e, cu::kEventDefault), "cuEventCreate");
      pool_.push_back(e);  // timing enabled
    }
  }

  void take_anchor() {
    const cu::Driver& d = *driver_;
    const std::int64_t t0 = realtime_ns();
    d.check(d.cuEventRecord(anchor_event_, anchor_stream_), "cuEventRecord(anchor)");
    d.check(d.cuEventSynchronize(anchor_event_), "cuEventSynchronize(anchor)");
    const std::int64_t t1 = realtime_ns();
    anchor_realtime_ = t0 + (t1 - t0) / 2;
    anchor_host_steady_ = steady_ns();
    uncertainty_ = (t1 - t0 + 1) / 2;
  }

  std::shared_ptr<const cu::Driver> driver_;
  cu::Device device_ = 0;
  cu::Context context_ = nullptr;
  bool retained_ = false;
  cu::Context previous_ = nullptr;  // current before this backend made context_ current
  bool made_current_ = false;
  cu::Stream anchor_stream_ = nullptr;
  cu::Event anchor_event_ = nullptr;
  std::vector<cu::Event> pool_;
  std::uint32_t used_ = 0;
  std::int64_t anchor_realtime_ = 0;
  std::int64_t anchor_host_steady_ = 0;
  std::int64_t uncertainty_ = 0;
};

}  // namespace

bool cuda_timer_available(std::string* why) {
  std::shared_ptr<const cu::Driver> driver = cu::load_driver(why);
  if (!driver) return false;
  int count = 0;
  const cu::Result status = driver->cuDeviceGetCount(&count);
  if (status != cu::kSuccess) {
    if (why) *why = "cuDeviceGetCount: " + driver->describe(status);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

std::unique_ptr<ClockBackend> make_cuda_backend(std::uint32_t pool, int device) {
  return std::make_unique<CudaBackend>(pool, device);
}

std::unique_ptr<JobTimer> make_cuda_timer(const TimerOptions& options, int device) {
  return std::make_unique<JobTimer>(make_cuda_backend(options.marks_per_step, device), options);
}

}  // namespace pipescope::timer
