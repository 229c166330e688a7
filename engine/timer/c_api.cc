// The C ABI (timer/pipescope_timer.h) over JobTimer: argument checks, the
// backend choice, fork detection, and every C++ exception turned into a
// status and a per-thread error text.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>

#include "timer/cuda_backend.h"
#include "timer/cuda_driver.h"
#include "timer/job_timer.h"
#include "timer/pipescope_timer.h"

namespace {

using pipescope::timer::JobTimer;

thread_local std::string t_last_error;
thread_local int t_last_errno = 0;
thread_local std::string t_scratch;  // cuda_available's reason

/// Bumped in every child of fork(): a timer opened in another generation
/// belongs to an ancestor process.
std::atomic<unsigned> g_fork_generation{0};
std::once_flag g_atfork_once;
void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

int fail(int status, std::string message, int os_errno = 0) {
  t_last_error = std::move(message);
  t_last_errno = os_errno;
  return status;
}

/// The status of the exception in flight (call from a catch block only).
int from_exception() {
  try {
    throw;
  } catch (const std::system_error& e) {
    const bool os = e.code().category() == std::generic_category() ||
                    e.code().category() == std::system_category();
    return fail(PIPESCOPE_TIMER_IO_ERROR, e.what(), os ? e.code().value() : 0);
  } catch (const pipescope::timer::cu::Error& e) {
    return fail(PIPESCOPE_TIMER_CUDA_ERROR, e.what());
  } catch (const std::invalid_argument& e) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(PIPESCOPE_TIMER_INTERNAL_ERROR, "out of memory");
  } catch (const std::exception& e) {
    return fail(PIPESCOPE_TIMER_INTERNAL_ERROR, e.what());
  } catch (...) {
    return fail(PIPESCOPE_TIMER_INTERNAL_ERROR, "unknown error");
  }
}

}  // namespace

struct pipescope_timer {
  std::unique_ptr<JobTimer> timer;
  int backend = PIPESCOPE_TIMER_BACKEND_HOST;
  std::string note;
  std::string path;
  unsigned generation = 0;
  pid_t pid = 0;
};

namespace {

/// OK, or why `t` cannot be used now.
inline int usable(const pipescope_timer* t) {
  if (t == nullptr) return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "timer is NULL");
  if (t->generation != g_fork_generation.load(std::memory_order_relaxed)) [[unlikely]] {
    return fail(PIPESCOPE_TIMER_FORKED,
                "the timer of " + t->path + " was opened by process " + std::to_string(t->pid) +
                    "; this is a child of fork() (process " + std::to_string(::getpid()) +
                    "), which must not write into its parent's file: open a timer of its own");
  }
  if (t->timer->closed()) [[unlikely]] {
    return fail(PIPESCOPE_TIMER_CLOSED, "the timer of " + t->path + " is closed");
  }
  return PIPESCOPE_TIMER_OK;
}

}  // namespace

extern "C" {

int pipescope_timer_options_init(pipescope_timer_options* options) {
  if (options == nullptr) return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "options is NULL");
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->backend = "auto";
  options->device = -1;
  options->first_step = -1;
  return PIPESCOPE_TIMER_OK;
}

int pipescope_timer_open(const pipescope_timer_options* options, pipescope_timer** out) {
  if (out == nullptr) return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "timer out-pointer is NULL");
  *out = nullptr;
  if (options == nullptr) return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "options is NULL");
  if (options->struct_size != sizeof(pipescope_timer_options)) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT,
                "options.struct_size is " + std::to_string(options->struct_size) + ", expected " +
                    std::to_string(sizeof(pipescope_timer_options)) +
                    " (call pipescope_timer_options_init; header and library differ?)");
  }
  if (options->path == nullptr || options->path[0] == '\0') {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "options.path is empty");
  }
  const std::string backend = options->backend != nullptr ? options->backend : "auto";
  if (backend != "auto" && backend != "host" && backend != "cuda") {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT,
                "unknown backend '" + backend + "' (auto, host or cuda)");
  }
  try {
    std::call_once(g_atfork_once, [] {
      if (::pthread_atfork(nullptr, nullptr, on_fork_child) != 0) throw std::bad_alloc();
    });
    auto handle = std::make_unique<pipescope_timer>();
    handle->path = options->path;
    handle->generation = g_fork_generation.load(std::memory_order_relaxed);
    handle->pid = ::getpid();
    pipescope::timer::TimerOptions o;
    o.path = options->path;
    o.machine = options->machine;
    o.rank = options->rank;
    if (options->machine_name != nullptr) o.machine_name = options->machine_name;
    if (options->producer != nullptr) o.producer = options->producer;
    if (options->first_step >= 0) o.first_step = options->first_step;
    if (options->marks_per_step != 0) o.marks_per_step = options->marks_per_step;
    bool cuda = backend == "cuda";
    if (backend == "auto") {
      std::string why;
      cuda = pipescope::timer::cuda_timer_available(&why);
      if (!cuda) handle->note = "no usable CUDA driver (" + why + "): using the host clock";
    }
    if (cuda) {
      try {
        handle->timer = pipescope::timer::make_cuda_timer(o, options->device);
        handle->backend = PIPESCOPE_TIMER_BACKEND_CUDA;
        if (backend == "auto") handle->note = "CUDA driver found: using CUDA events";
      } catch (const pipescope::timer::cu::Error& e) {
        if (backend == "cuda") throw;
        handle->note = std::string("the CUDA backend failed to start (") + e.what() +
                       "): using the host clock";
      }
    }
    if (!handle->timer) handle->timer = pipescope::timer::make_host_timer(o);
    *out = handle.release();
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_job_type(pipescope_timer* t, const char* name, uint32_t* id) {
  if (const int s = usable(t); s != PIPESCOPE_TIMER_OK) return s;
  if (name == nullptr || id == nullptr) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "job type name or id pointer is NULL");
  }
  try {
    *id = t->timer->job_type(name);
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_begin(pipescope_timer* t, uint32_t type, int32_t micro_batch, void* stream) {
  if (const int s = usable(t); s != PIPESCOPE_TIMER_OK) [[unlikely]]
    return s;
  if (type >= t->timer->job_type_count()) [[unlikely]] {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT,
                "job type id " + std::to_string(type) + " was not returned by job_type (" +
                    std::to_string(t->timer->job_type_count()) + " types)");
  }
  try {
    t->timer->begin(type, micro_batch, stream);
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_end(pipescope_timer* t, void* stream) {
  if (const int s = usable(t); s != PIPESCOPE_TIMER_OK) [[unlikely]]
    return s;
  try {
    t->timer->end(stream);
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_flush(pipescope_timer* t) {
  if (const int s = usable(t); s != PIPESCOPE_TIMER_OK) return s;
  try {
    t->timer->flush();
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_close(pipescope_timer* t) {
  if (t != nullptr && t->timer && t->timer->closed() &&
      t->generation == g_fork_generation.load(std::memory_order_relaxed)) {
    return PIPESCOPE_TIMER_OK;
  }
  if (const int s = usable(t); s != PIPESCOPE_TIMER_OK) return s;
  try {
    t->timer->close();
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

int pipescope_timer_free(pipescope_timer* t) {
  if (t == nullptr) return PIPESCOPE_TIMER_OK;
  int status = PIPESCOPE_TIMER_OK;
  if (t->generation != g_fork_generation.load(std::memory_order_relaxed)) {
    status = usable(t);  // FORKED, with its text
    // The parent's timer, copied by fork(): destroying it would flush the
    // parent's buffered records into the parent's file (and release the
    // parent's CUDA objects). It is left as it is: the copy dies with the child.
    (void)t->timer.release();
  } else {
    status = pipescope_timer_close(t);
  }
  delete t;
  return status;
}

int pipescope_timer_counters(const pipescope_timer* t, pipescope_timer_counters_t* c) {
  if (t == nullptr || c == nullptr) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "timer or counters is NULL");
  }
  if (c->struct_size != sizeof(pipescope_timer_counters_t)) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT,
                "counters.struct_size is " + std::to_string(c->struct_size) + ", expected " +
                    std::to_string(sizeof(pipescope_timer_counters_t)));
  }
  const JobTimer& timer = *t->timer;
  c->backend = t->backend;
  c->jobs_recorded = timer.jobs_recorded();
  c->unmatched_ends = timer.unmatched_ends();
  c->open_jobs = timer.open_jobs();
  c->step = timer.step();
  c->streams = static_cast<uint32_t>(timer.streams());
  c->closed = timer.closed() ? 1 : 0;
  c->anchor_uncertainty_ns = timer.backend().anchor_uncertainty_ns();
  return PIPESCOPE_TIMER_OK;
}

int pipescope_timer_backend_note(const pipescope_timer* t, const char** note) {
  if (t == nullptr || note == nullptr) {
    return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "timer or note is NULL");
  }
  *note = t->note.c_str();
  return PIPESCOPE_TIMER_OK;
}

int pipescope_timer_last_error(const char** message, int* os_errno) {
  if (message == nullptr) return PIPESCOPE_TIMER_INVALID_ARGUMENT;
  *message = t_last_error.c_str();
  if (os_errno != nullptr) *os_errno = t_last_errno;
  return PIPESCOPE_TIMER_OK;
}

int pipescope_timer_cuda_available(int* available, const char** why) {
  if (available == nullptr) return fail(PIPESCOPE_TIMER_INVALID_ARGUMENT, "available is NULL");
  try {
    t_scratch.clear();
    *available = pipescope::timer::cuda_timer_available(&t_scratch) ? 1 : 0;
    if (why != nullptr) *why = t_scratch.c_str();
    return PIPESCOPE_TIMER_OK;
  } catch (...) {
    return from_exception();
  }
}

}  // extern "C"
