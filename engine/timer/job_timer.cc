#include "timer/job_timer.h"

#include <time.h>

#include <stdexcept>

namespace pipescope::timer {

namespace {

ivl::FileInfo file_info(const TimerOptions& options, const ClockBackend& backend) {
  ivl::FileInfo info;
  info.machine = options.machine;
  info.rank = options.rank;
  info.machine_name = options.machine_name;
  info.producer = options.producer;
  info.first_step = options.first_step;
  info.types = options.job_types;
  const auto [realtime, own] = backend.anchor();
  info.anchor_realtime_ns = realtime;
  info.anchor_steady_ns = own;
  return info;
}

std::unique_ptr<ClockBackend> checked(std::unique_ptr<ClockBackend> backend) {
  if (!backend) throw std::invalid_argument("JobTimer needs a clock backend");
  return backend;
}

}  // namespace

JobTimer::JobTimer(std::unique_ptr<ClockBackend> backend, const TimerOptions& options)
    : backend_(checked(std::move(backend))),
      writer_(options.path, file_info(options, *backend_)),
      step_(options.first_step.value_or(0)) {
  done_.reserve(options.marks_per_step / 2);
  resolved_.reserve(options.marks_per_step);
}

JobTimer::~JobTimer() {
  if (closed_) return;
  try {
    flush();
  } catch (const std::exception&) {
    // Destructors must not throw; close() reports failures.
  }
}

JobTimer::StreamState& JobTimer::find_stream(Stream stream) {
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].handle == stream) {
      last_ = i;
      return streams_[i];
    }
  }
  // The stream number is the order of first use; records carry it.
  streams_.push_back({stream, {}});
  last_ = streams_.size() - 1;
  return streams_.back();
}

void JobTimer::flush() {
  if (closed_) throw std::logic_error("JobTimer used after close()");
  resolved_.resize(backend_->marks());
  backend_->resolve(resolved_);
  const auto step = static_cast<std::int32_t>(step_);
  for (const Done& d : done_) {
    ivl::Record r;
    r.start_ns = d.job.begin_ns != kUnresolved ? d.job.begin_ns : resolved_[d.job.begin_mark];
    r.end_ns = resolved_[d.end_mark];
    r.type = d.job.type;
    r.micro_batch = d.job.micro_batch;
    r.step = step;
    r.stream = d.stream;
    writer_.append(r);
  }
  done_.clear();
  // Jobs still running keep their start: their begin marks are freed now.
  for (StreamState& s : streams_) {
    for (Open& job : s.open) {
      if (job.begin_ns == kUnresolved) job.begin_ns = resolved_[job.begin_mark];
    }
  }
  writer_.flush();
  ++step_;
}

void JobTimer::close() {
  if (closed_) return;
  flush();
  closed_ = true;
  writer_.close();
}

std::int64_t realtime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t steady_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::unique_ptr<JobTimer> make_host_timer(const TimerOptions& options) {
  return std::make_unique<JobTimer>(make_host_backend({}, options.marks_per_step), options);
}

}  // namespace pipescope::timer
