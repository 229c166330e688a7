// The executor-side job timer: an executor calls begin()/end() around every
// job (forward, backward, optimizer, ...) on the stream the job runs on, and
// flush() at each step boundary; the timer writes one .ivl record per job
// (records/ivl_format.h) that `pipescope analyze` reads like a worker log.
//
// Times come from a ClockBackend:
//   - the CUDA backend (timer/cuda_backend.h) records a pooled cudaEvent_t on
//     the stream at begin and end, so the interval is what the GPU did and the
//     hot path never waits for the GPU; events are resolved at flush(), which
//     waits for the step's events and converts them to wall-clock ns with a
//     clock anchor (docs/timer.md: "Clock anchoring and its error bound");
//   - the host backend (make_host_timer) reads the monotonic clock and maps it
//     to CLOCK_REALTIME with the same anchoring; used without a GPU and in tests.
//
// Usage (one timer per rank, on the thread that launches the jobs):
//
//   pipescope::timer::TimerOptions options;
//   options.path = "/logs/run42/machine0/workerlog.3.ivl";
//   options.machine = 0;  options.rank = 3;  options.first_step = 5;
//   auto timer = pipescope::timer::make_cuda_timer(options);   // or make_host_timer
//   const auto fwd = timer->job_type("forward");              // once per type
//   for (each step) {
//     for (each job) {
//       timer->begin(fwd, micro_batch, stream);   // cudaStream_t, or any key for the host
//       launch(job, stream);
//       timer->end(stream);
//     }
//     timer->flush();   // resolves this step's events, appends one block to the file
//   }
//   timer->close();     // or let the destructor flush and close
//
// Not thread-safe: use one timer per thread (each writes its own file).
// Errors (file, CUDA) throw std::system_error / std::runtime_error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "records/ivl_writer.h"

namespace pipescope::timer {

/// Where a job runs: a cudaStream_t for the CUDA backend (nullptr is the
/// legacy default stream); any distinct pointer-sized key for the host one.
using Stream = void*;

struct TimerOptions {
  /// The .ivl file to create (truncated if it exists).
  std::string path;
  std::int32_t machine = 0;
  std::int32_t rank = 0;
  std::string machine_name;
  std::string producer = "pipescope job_timer";
  /// Step number of the first flush (and the header's first step); 0 if unset.
  std::optional<std::int64_t> first_step;
  /// Job types known up front (header table); job_type() adds more.
  std::vector<std::string> job_types;
  /// Events/marks to pre-allocate (the pool grows on demand past it).
  std::uint32_t marks_per_step = 512;
};

/// A time source for JobTimer: marks recorded on streams, resolved to
/// wall-clock nanoseconds at each flush.
class ClockBackend {
 public:
  virtual ~ClockBackend() = default;
  /// Records a time mark on `stream`; returns its index (0, 1, ... since the
  /// last resolve). Must not wait for the device.
  virtual std::uint32_t mark(Stream stream) = 0;
  /// Marks recorded since the last resolve.
  virtual std::uint32_t marks() const = 0;
  /// Waits for every mark, writes mark i's CLOCK_REALTIME ns to out[i]
  /// (out.size() == marks()), frees the marks and takes a new clock anchor.
  virtual void resolve(std::span<std::int64_t> out) = 0;
  /// The latest anchor: {CLOCK_REALTIME ns, the backend's own clock ns}.
  virtual std::pair<std::int64_t, std::int64_t> anchor() const = 0;
  /// Half-width of the latest anchor's uncertainty window, ns (the host
  /// clock read brackets the anchor point).
  virtual std::int64_t anchor_uncertainty_ns() const = 0;
};

class JobTimer {
 public:
  /// Creates options.path and writes its header. Throws std::system_error
  /// for I/O errors, std::invalid_argument for bad names.
  JobTimer(std::unique_ptr<ClockBackend> backend, const TimerOptions& options);
  /// Flushes completed jobs and closes the file (errors swallowed).
  ~JobTimer();
  JobTimer(const JobTimer&) = delete;
  JobTimer& operator=(const JobTimer&) = delete;

  /// The id of a job type (interned; call once per type, not per job).
  std::uint32_t job_type(std::string_view name) { return writer_.type_id(name); }

  /// Starts a job of `type` on `stream`. Jobs on one stream nest (end()
  /// closes the latest one), jobs on different streams are independent.
  void begin(std::uint32_t type, std::int32_t micro_batch, Stream stream) {
    StreamState& s = stream_state(stream);
    s.open.push_back({type, micro_batch, backend_->mark(stream), kUnresolved});
  }
  void begin(std::string_view type, std::int32_t micro_batch, Stream stream) {
    begin(job_type(type), micro_batch, stream);
  }
  /// Ends the latest open job on `stream`. An end without an open job is
  /// counted (unmatched_ends()) and ignored.
  void end(Stream stream) {
    StreamState& s = stream_state(stream);
    if (s.open.empty()) {
      ++unmatched_ends_;
      return;
    }
    const Open job = s.open.back();
    s.open.pop_back();
    done_.push_back(
        {job, backend_->mark(stream), static_cast<std::uint32_t>(&s - streams_.data())});
  }

  /// Step boundary: waits for this step's marks, turns finished jobs into
  /// records of the current step, writes them as one block, then advances
  /// the step. Jobs still open keep their resolved start and are recorded
  /// when they end.
  void flush();
  /// flush() and close the file; throws on I/O failure.
  void close();

  std::int64_t step() const { return step_; }
  std::uint64_t jobs_recorded() const { return writer_.records_written(); }
  std::uint64_t unmatched_ends() const { return unmatched_ends_; }
  std::size_t streams() const { return streams_.size(); }
  /// Job types interned so far (valid ids are 0 .. job_type_count() - 1).
  std::size_t job_type_count() const { return writer_.type_count(); }
  /// Jobs begun and not yet ended, on all streams.
  std::size_t open_jobs() const {
    std::size_t n = 0;
    for (const StreamState& s : streams_) n += s.open.size();
    return n;
  }
  bool closed() const { return closed_; }
  const ClockBackend& backend() const { return *backend_; }

 private:
  static constexpr std::int64_t kUnresolved = INT64_MIN;
  struct Open {
    std::uint32_t type;
    std::int32_t micro_batch;
    std::uint32_t begin_mark;
    std::int64_t begin_ns;  // set when a flush resolved the begin mark
  };
  struct Done {
    Open job;
    std::uint32_t end_mark;
    std::uint32_t stream;
  };
  struct StreamState {
    Stream handle;
    std::vector<Open> open;
  };

  StreamState& stream_state(Stream stream) {
    if (last_ < streams_.size() && streams_[last_].handle == stream) return streams_[last_];
    return find_stream(stream);
  }
  StreamState& find_stream(Stream stream);

  std::unique_ptr<ClockBackend> backend_;
  ivl::Writer writer_;
  std::vector<StreamState> streams_;
  std::size_t last_ = 0;
  std::vector<Done> done_;
  std::vector<std::int64_t> resolved_;
  std::int64_t step_ = 0;
  std::uint64_t unmatched_ends_ = 0;
  bool closed_ = false;
};

/// Clocks of the host backend; defaults read CLOCK_MONOTONIC and
/// CLOCK_REALTIME. Tests inject fake clocks to check the anchoring.
struct HostClocks {
  std::int64_t (*steady_ns)(void* context) = nullptr;
  std::int64_t (*realtime_ns)(void* context) = nullptr;
  void* context = nullptr;
};

/// The host backend: marks read the monotonic clock (the stream is only a
/// label); resolve maps them to CLOCK_REALTIME through the anchor taken at the
/// previous flush, then re-anchors.
std::unique_ptr<ClockBackend> make_host_backend(const HostClocks& clocks = {},
                                                std::uint32_t marks_per_step = 512);

/// A JobTimer on the host backend.
std::unique_ptr<JobTimer> make_host_timer(const TimerOptions& options);

/// CLOCK_REALTIME now, ns.
std::int64_t realtime_ns();
/// CLOCK_MONOTONIC now, ns.
std::int64_t steady_ns();

}  // namespace pipescope::timer
