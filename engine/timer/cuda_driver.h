// The few CUDA driver API entry points the job timer uses, declared here and
// loaded at run time with dlopen("libcuda.so.1"): the timer links no CUDA
// library, so it is always built (Debian 12 has no package with cuda.h), and
// it never brings a CUDA runtime of its own into a process that already has
// one (PyTorch, Paddle). The driver's C ABI is stable; each entry point is
// looked up under the versioned name cuda.h maps it to (cuEventDestroy is
// cuEventDestroy_v2, ...), with the older name as a fallback where the driver
// predates the newer one (cuEventElapsedTime_v2 since CUDA 12.8).
//
// The driver API accepts the cudaStream_t a framework hands out (a runtime
// stream is a driver CUstream), and events recorded here live in the calling
// thread's current context, which is the framework's (the runtime makes its
// device's primary context current).
//
// Usage:
//   std::string why;
//   std::shared_ptr<const cu::Driver> driver = cu::load_driver(&why);
//   if (!driver) { /* no driver: why says what failed */ }
//   driver->check(driver->cuEventRecord(event, stream), "cuEventRecord");
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace pipescope::timer::cu {

/// CUresult: 0 is success; the values used here are named below.
using Result = int;
inline constexpr Result kSuccess = 0;
inline constexpr Result kErrorStubLibrary = 34;
inline constexpr Result kErrorNoDevice = 100;
inline constexpr Result kErrorNotReady = 600;
/// CU_STREAM_NON_BLOCKING, CU_EVENT_DEFAULT.
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0x0;

using Device = int;                        // CUdevice
using Context = struct CUctx_st*;          // CUcontext
using Stream = struct CUstream_st*;        // CUstream (== cudaStream_t)
using Event = struct CUevent_st*;          // CUevent
using DevicePtr = unsigned long long;      // CUdeviceptr (64-bit)
using HostFn = void (*)(void* user_data);  // CUhostFn

/// What Driver::check throws: a CUDA driver call failed.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The loaded entry points (cuda.h's signatures; "_v2" where cuda.h maps the
/// name to it). The ones after the first group are used by the GPU tests
/// only, to make work without kernels; all exist in every driver since
/// CUDA 10.
struct Driver {
  Result (*cuInit)(unsigned flags);
  Result (*cuDriverGetVersion)(int* version);
  Result (*cuDeviceGetCount)(int* count);
  Result (*cuDeviceGet)(Device* device, int ordinal);
  Result (*cuCtxGetCurrent)(Context* context);
  Result (*cuCtxSetCurrent)(Context context);
  Result (*cuDevicePrimaryCtxRetain)(Context* context, Device device);
  Result (*cuDevicePrimaryCtxRelease)(Device device);  // _v2
  Result (*cuStreamCreate)(Stream* stream, unsigned flags);
  Result (*cuStreamDestroy)(Stream stream);  // _v2
  Result (*cuEventCreate)(Event* event, unsigned flags);
  Result (*cuEventDestroy)(Event event);  // _v2
  Result (*cuEventRecord)(Event event, Stream stream);
  Result (*cuEventQuery)(Event event);
  Result (*cuEventSynchronize)(Event event);
  Result (*cuEventElapsedTime)(float* ms, Event start, Event end);  // _v2, else v1
  Result (*cuGetErrorName)(Result error, const char** name);
  Result (*cuGetErrorString)(Result error, const char** text);
  // Tests only.
  Result (*cuStreamSynchronize)(Stream stream);
  Result (*cuLaunchHostFunc)(Stream stream, HostFn fn, void* user_data);
  Result (*cuMemAlloc)(DevicePtr* ptr, std::size_t bytes);  // _v2
  Result (*cuMemFree)(DevicePtr ptr);                       // _v2
  Result (*cuMemAllocHost)(void** ptr, std::size_t bytes);  // _v2
  Result (*cuMemFreeHost)(void* ptr);
  Result (*cuMemcpyHtoDAsync)(DevicePtr dst, const void* src, std::size_t bytes,
                              Stream stream);  // _v2

  /// The library that was opened (for messages).
  std::string library;
  /// cuDriverGetVersion: 12040 for CUDA 12.4.
  int version = 0;

  /// "NAME (text)" for a CUresult.
  std::string describe(Result result) const;
  /// Throws cu::Error("CUDA job timer: WHAT: NAME (text)") unless
  /// result is kSuccess.
  void check(Result result, const char* what) const;
};

/// The driver library loaded by default: $PIPESCOPE_CUDA_DRIVER when set (a
/// stand-in driver for tests), else "libcuda.so.1".
std::string default_driver_library();

/// Opens `library` (default_driver_library() when empty), resolves every
/// entry point and calls cuInit(0). Returns nullptr with the reason in *why
/// (the library cannot be opened, lacks an entry point, or cuInit fails: no
/// device, stub library, ...). The default library is loaded once per process
/// and shared; a failure is not cached.
std::shared_ptr<const Driver> load_driver(std::string* why, const std::string& library = {});

}  // namespace pipescope::timer::cu
