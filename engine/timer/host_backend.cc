// The host clock backend: CLOCK_MONOTONIC marks mapped to CLOCK_REALTIME.
#include <vector>

#include "timer/job_timer.h"

namespace pipescope::timer {

namespace {

std::int64_t default_steady(void*) { return steady_ns(); }
std::int64_t default_realtime(void*) { return realtime_ns(); }

class HostBackend final : public ClockBackend {
 public:
  HostBackend(const HostClocks& clocks, std::uint32_t marks_per_step) : clocks_(clocks) {
    if (clocks_.steady_ns == nullptr) clocks_.steady_ns = default_steady;
    if (clocks_.realtime_ns == nullptr) clocks_.realtime_ns = default_realtime;
    marks_.reserve(marks_per_step);
    take_anchor();
  }

  std::uint32_t mark(Stream) override {
    marks_.push_back(clocks_.steady_ns(clocks_.context));
    return static_cast<std::uint32_t>(marks_.size() - 1);
  }

  std::uint32_t marks() const override { return static_cast<std::uint32_t>(marks_.size()); }

  void resolve(std::span<std::int64_t> out) override {
    // Every mark of this step maps through the anchor taken at the previous
    // flush: within a step, intervals are exact monotonic-clock differences
    // even if NTP steps the wall clock meanwhile.
    for (std::size_t i = 0; i < marks_.size() && i < out.size(); ++i) {
      out[i] = anchor_realtime_ + (marks_[i] - anchor_steady_);
    }
    marks_.clear();
    take_anchor();
  }

  std::pair<std::int64_t, std::int64_t> anchor() const override {
    return {anchor_realtime_, anchor_steady_};
  }
  std::int64_t anchor_uncertainty_ns() const override { return uncertainty_; }

 private:
  /// Reads the realtime clock between two monotonic reads, three times, and
  /// keeps the tightest bracket: the anchor pairs the realtime read with the
  /// bracket's midpoint, off by at most half its width.
  void take_anchor() {
    std::int64_t best = INT64_MAX;
    for (int i = 0; i < 3; ++i) {
      const std::int64_t s0 = clocks_.steady_ns(clocks_.context);
      const std::int64_t r = clocks_.realtime_ns(clocks_.context);
      const std::int64_t s1 = clocks_.steady_ns(clocks_.context);
      if (s1 - s0 < best) {
        best = s1 - s0;
        anchor_realtime_ = r;
        anchor_steady_ = s0 + (s1 - s0) / 2;
      }
    }
    uncertainty_ = (best + 1) / 2;
  }

  HostClocks clocks_;
  std::vector<std::int64_t> marks_;
  std::int64_t anchor_realtime_ = 0;
  std::int64_t anchor_steady_ = 0;
  std::int64_t uncertainty_ = 0;
};

}  // namespace

std::unique_ptr<ClockBackend> make_host_backend(const HostClocks& clocks,
                                                std::uint32_t marks_per_step) {
  return std::make_unique<HostBackend>(clocks, marks_per_step);
}

}  // namespace pipescope::timer
