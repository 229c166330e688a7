// A stand-in for libcuda.so.1 (loaded through PIPESCOPE_CUDA_DRIVER), so the
// CUDA backend's code runs where no GPU is: every entry point of
// timer/cuda_driver.h with cuda.h's C signature. The "device" is the host:
// a stream's work runs when it is enqueued (cuLaunchHostFunc calls the
// function at once, copies are memcpy), and an event records CLOCK_MONOTONIC
// when it is recorded. Every third event reports CUDA_ERROR_NOT_READY to the
// first cuEventElapsedTime after its record, until cuEventSynchronize, so the
// backend's wait path runs too.
//
// Built twice: fake_cuda_driver, and fake_cuda_driver_no_device
// (FAKE_CUDA_NO_DEVICE: cuInit fails with CUDA_ERROR_NO_DEVICE, as a
// machine with a driver and no GPU does).
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidValue = 1;
constexpr int kNoDevice = 100;
constexpr int kNotReady = 600;

struct FakeEvent {
  std::int64_t ns = 0;
  bool recorded = false;
  bool pending = false;  // NOT_READY until synchronized
};
struct FakeStream {
  int id = 0;
};
struct FakeContext {
  int device = 0;
};

FakeContext g_primary;
thread_local FakeContext* t_current = nullptr;
unsigned g_records = 0;

std::int64_t now_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

extern "C" {

int cuInit(unsigned) {
#ifdef FAKE_CUDA_NO_DEVICE
  return kNoDevice;
#else
  return kSuccess;
#endif
}
int cuDriverGetVersion(int* version) {
  *version = 12040;
  return kSuccess;
}
int cuDeviceGetCount(int* count) {
  *count = 1;
  return kSuccess;
}
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *device = 0;
  return kSuccess;
}
int cuCtxGetCurrent(void** context) {
  *context = t_current;
  return kSuccess;
}
int cuCtxSetCurrent(void* context) {
  t_current = static_cast<FakeContext*>(context);
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(void** context, int) {
  *context = &g_primary;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
int cuStreamCreate(void** stream, unsigned) {
  static int next = 1;
  *stream = new FakeStream{next++};
  return kSuccess;
}
int cuStreamDestroy_v2(void* stream) {
  delete static_cast<FakeStream*>(stream);
  return kSuccess;
}
int cuStreamSynchronize(void*) { return kSuccess; }
int cuEventCreate(void** event, unsigned) {
  *event = new FakeEvent;
  return kSuccess;
}
int cuEventDestroy_v2(void* event) {
  delete static_cast<FakeEvent*>(event);
  return kSuccess;
}
int cuEventRecord(void* event, void*) {
  if (t_current == nullptr) return 201;  // CUDA_ERROR_INVALID_CONTEXT
  auto* e = static_cast<FakeEvent*>(event);
  e->ns = now_ns();
  e->recorded = true;
  e->pending = ++g_records % 3 == 0;
  return kSuccess;
}
int cuEventQuery(void* event) {
  return static_cast<FakeEvent*>(event)->pending ? kNotReady : kSuccess;
}
int cuEventSynchronize(void* event) {
  static_cast<FakeEvent*>(event)->pending = false;
  return kSuccess;
}
int cuEventElapsedTime_v2(float* ms, void* start, void* end) {
  const auto* a = static_cast<FakeEvent*>(start);
  const auto* b = static_cast<FakeEvent*>(end);
  if (!a->recorded || !b->recorded) return kInvalidValue;
  if (a->pending || b->pending) return kNotReady;
  *ms = static_cast<float>(static_cast<double>(b->ns - a->ns) / 1e6);
  return kSuccess;
}
int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case kSuccess:
      *name = "CUDA_SUCCESS";
      return kSuccess;
    case kInvalidValue:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return kSuccess;
    case kNoDevice:
      *name = "CUDA_ERROR_NO_DEVICE";
      return kSuccess;
    case kNotReady:
      *name = "CUDA_ERROR_NOT_READY";
      return kSuccess;
    case 201:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      return kSuccess;
    default:
      *name = nullptr;
      return kInvalidValue;
  }
}
int cuGetErrorString(int error, const char** text) {
  switch (error) {
    case kNoDevice:
      *text = "no CUDA-capable device is detected";
      return kSuccess;
    case 201:
      *text = "invalid device context";
      return kSuccess;
    default:
      *text = "fake driver error";
      return kSuccess;
  }
}
int cuLaunchHostFunc(void*, void (*fn)(void*), void* data) {
  fn(data);
  return kSuccess;
}
int cuMemAlloc_v2(unsigned long long* ptr, std::size_t bytes) {
  *ptr = reinterpret_cast<unsigned long long>(std::malloc(bytes));
  return *ptr ? kSuccess : 2;
}
int cuMemFree_v2(unsigned long long ptr) {
  std::free(reinterpret_cast<void*>(ptr));
  return kSuccess;
}
int cuMemAllocHost_v2(void** ptr, std::size_t bytes) {
  *ptr = std::malloc(bytes);
  return *ptr ? kSuccess : 2;
}
int cuMemFreeHost(void* ptr) {
  std::free(ptr);
  return kSuccess;
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, std::size_t bytes, void*) {
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return kSuccess;
}

}  // extern "C"
