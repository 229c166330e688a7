#include "timer/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace pipescope::timer::cu {

namespace {

/// Looks up `name`, then each fallback; false (with *missing set) if none exists.
template <class Fn>
bool resolve(void* handle, Fn& out, std::initializer_list<const char*> names,
             std::string* missing) {
  for (const char* name : names) {
    if (void* symbol = ::dlsym(handle, name)) {
      out = reinterpret_cast<Fn>(symbol);
      return true;
    }
  }
  *missing = *names.begin();
  return false;
}

std::shared_ptr<const Driver> open_driver(const std::string& library, std::string* why) {
  auto driver = std::make_shared<Driver>();
  driver->library = library;
  // Never dlclose'd: a driver stays loaded for the life of the process (its
  // own threads and atexit handlers may still run).
  void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* error = ::dlerror();
    if (why) *why = "cannot load the CUDA driver (" + std::string(error ? error : library) + ")";
    return nullptr;
  }
  std::string missing;
  Driver& d = *driver;
  const bool all =
      resolve(h, d.cuInit, {"cuInit"}, &missing) &&
      resolve(h, d.cuDriverGetVersion, {"cuDriverGetVersion"}, &missing) &&
      resolve(h, d.cuDeviceGetCount, {"cuDeviceGetCount"}, &missing) &&
      resolve(h, d.cuDeviceGet, {"cuDeviceGet"}, &missing) &&
      resolve(h, d.cuCtxGetCurrent, {"cuCtxGetCurrent"}, &missing) &&
      resolve(h, d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, &missing) &&
      resolve(h, d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, &missing) &&
      resolve(h, d.cuDevicePrimaryCtxRelease,
              {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, &missing) &&
      resolve(h, d.cuStreamCreate, {"cuStreamCreate"}, &missing) &&
      resolve(h, d.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, &missing) &&
      resolve(h, d.cuEventCreate, {"cuEventCreate"}, &missing) &&
      resolve(h, d.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, &missing) &&
      resolve(h, d.cuEventRecord, {"cuEventRecord"}, &missing) &&
      resolve(h, d.cuEventQuery, {"cuEventQuery"}, &missing) &&
      resolve(h, d.cuEventSynchronize, {"cuEventSynchronize"}, &missing) &&
      resolve(h, d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &missing) &&
      resolve(h, d.cuGetErrorName, {"cuGetErrorName"}, &missing) &&
      resolve(h, d.cuGetErrorString, {"cuGetErrorString"}, &missing) &&
      resolve(h, d.cuStreamSynchronize, {"cuStreamSynchronize"}, &missing) &&
      resolve(h, d.cuLaunchHostFunc, {"cuLaunchHostFunc"}, &missing) &&
      resolve(h, d.cuMemAlloc, {"cuMemAlloc_v2"}, &missing) &&
      resolve(h, d.cuMemFree, {"cuMemFree_v2"}, &missing) &&
      resolve(h, d.cuMemAllocHost, {"cuMemAllocHost_v2"}, &missing) &&
      resolve(h, d.cuMemFreeHost, {"cuMemFreeHost"}, &missing) &&
      resolve(h, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, &missing);
  if (!all) {
    if (why) *why = "the CUDA driver " + library + " has no entry point " + missing;
    return nullptr;
  }
  const Result init = d.cuInit(0);
  if (init != kSuccess) {
    if (why) *why = "the CUDA driver " + library + " cannot start: cuInit: " + d.describe(init);
    return nullptr;
  }
  d.cuDriverGetVersion(&d.version);
  return driver;
}

}  // namespace

std::string Driver::describe(Result result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName == nullptr || cuGetErrorName(result, &name) != kSuccess) name = nullptr;
  if (cuGetErrorString == nullptr || cuGetErrorString(result, &text) != kSuccess) text = nullptr;
  std::string out = name ? name : "CUresult " + std::to_string(result);
  if (text) out += std::string(" (") + text + ")";
  return out;
}

void Driver::check(Result result, const char* what) const {
  if (result != kSuccess) {
    throw Error(std::string("CUDA job timer: ") + what + ": " + describe(result));
  }
}

std::string default_driver_library() {
  const char* override_library = std::getenv("PIPESCOPE_CUDA_DRIVER");
  return override_library != nullptr && *override_library != '\0' ? override_library
                                                                  : "libcuda.so.1";
}

std::shared_ptr<const Driver> load_driver(std::string* why, const std::string& library) {
  const std::string path = library.empty() ? default_driver_library() : library;
  if (!library.empty()) return open_driver(path, why);
  static std::mutex mutex;
  static std::shared_ptr<const Driver> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded && loaded->library == path) return loaded;
  std::shared_ptr<const Driver> driver = open_driver(path, why);
  if (driver) loaded = driver;
  return driver;
}

}  // namespace pipescope::timer::cu
