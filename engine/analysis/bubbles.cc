#include "analysis/bubbles.h"

#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <span>

#include "analysis/step_rule.h"

namespace pipescope {

namespace {

// One maximal busy interval of a device: the union of overlapping jobs.
struct BusyInterval {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t first_job = kNoJob;  // the job that starts it
  std::int64_t last_job = kNoJob;   // the job whose end is its end
};

// The contract's busy union (metrics.cc: every job but comm jobs), kept with
// the jobs at its edges so that bubbles can name their neighbours. Built as
// it is read, and only the intervals still in reach are held: from one
// before the first that may meet the current window to the furthest one
// looked at (a device's whole union was 32 bytes per job).
class BusyUnion {
 public:
  BusyUnion(const Device& device, const TypeKinds& kinds) : device_(device), kinds_(kinds) {}

  /// Whether interval i exists (building it when needed).
  bool has(std::size_t i) {
    while (i >= base_ + held_.size()) {
      if (!next()) return false;
    }
    return true;
  }

  /// Interval i; has(i) was true and i >= the last forget(i) - 1.
  const BusyInterval& operator[](std::size_t i) const { return held_[i - base_]; }

  /// Intervals before `i - 1` are not looked at again.
  void forget_before(std::size_t i) {
    while (base_ + 1 < i && !held_.empty()) {
      held_.pop_front();
      ++base_;
    }
  }

 private:
  /// Completes one more interval; false when the jobs are done.
  bool next() {
    const auto& jobs = device_.jobs;
    for (; job_ < jobs.size(); ++job_) {
      const Job& job = jobs[job_];
      if (job.end_ns <= job.start_ns) continue;
      if (job.type < kinds_.kind.size() && kinds_.kind[job.type] == JobKind::comm) continue;
      if (open_ && job.start_ns <= pending_.end) {
        if (job.end_ns > pending_.end) {
          pending_.end = job.end_ns;
          pending_.last_job = static_cast<std::int64_t>(job_);
        }
        continue;
      }
      const bool complete = open_;
      const BusyInterval done = pending_;
      pending_ = {job.start_ns, job.end_ns, static_cast<std::int64_t>(job_),
                  static_cast<std::int64_t>(job_)};
      open_ = true;
      if (complete) {
        held_.push_back(done);
        ++job_;
        return true;
      }
    }
    if (!open_) return false;
    held_.push_back(pending_);
    open_ = false;
    return true;
  }

  const Device& device_;
  const TypeKinds& kinds_;
  std::size_t job_ = 0;
  bool open_ = false;
  BusyInterval pending_;
  std::deque<BusyInterval> held_;
  std::size_t base_ = 0;  // index of held_.front()
};

// Orders bubbles for the "longest" list: longer first, then earlier, then device.
bool longer(const Bubble& a, const Bubble& b) {
  if (a.length_ns() != b.length_ns()) return a.length_ns() > b.length_ns();
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  return a.device < b.device;
}

}  // namespace

std::string_view bubble_kind_name(BubbleKind kind) {
  switch (kind) {
    case BubbleKind::fill:
      return "fill";
    case BubbleKind::interior:
      return "interior";
    case BubbleKind::drain:
      return "drain";
  }
  return "interior";
}

void BubbleTime::add(const BubbleTime& other) {
  for (std::size_t i = 0; i < 3; ++i) ns[i] += other.ns[i];
}

void BubbleTotals::add(const BubbleTotals& other) {
  for (std::size_t i = 0; i < 3; ++i) {
    ns[i] += other.ns[i];
    count[i] += other.count[i];
  }
}

namespace {

// One device's walk over windows in order: the busy union read as far as the
// windows reach, and the first interval that may still meet the next one.
// `job_index`, when given, maps the device's jobs to their indices in the
// whole run's device (a part's jobs: step_partition.h).
class DeviceWindowWalk {
 public:
  DeviceWindowWalk(const Device& device, std::size_t d, const std::vector<std::uint32_t>* job_index,
                   const TypeKinds& kinds)
      : busy_(device, kinds), d_(d), job_index_(job_index) {}

  /// Calls `visit` for every bubble of window `window` (Metrics::steps[step]);
  /// windows come in order.
  template <typename Visit>
  void window(const StepWindow& window, std::size_t step, Visit&& visit) {
    if (window.window_ns() <= 0) return;
    while (busy_.has(first_) && busy_[first_].end <= window.start_ns) ++first_;
    busy_.forget_before(first_);
    Bubble bubble;
    bubble.device = d_;
    bubble.step = step;
    std::int64_t cursor = window.start_ns;
    std::int64_t before = first_ > 0 ? busy_[first_ - 1].last_job : kNoJob;
    bool seen_busy = false;
    std::size_t i = first_;
    for (; busy_.has(i) && busy_[i].begin < window.end_ns; ++i) {
      const std::int64_t begin = std::max(busy_[i].begin, window.start_ns);
      if (begin > cursor) {
        bubble.start_ns = cursor;
        bubble.end_ns = begin;
        bubble.kind = seen_busy ? BubbleKind::interior : BubbleKind::fill;
        bubble.job_before = global(before);
        bubble.job_after = global(busy_[i].first_job);
        visit(bubble);
      }
      seen_busy = true;
      cursor = std::min(busy_[i].end, window.end_ns);
      before = busy_[i].last_job;
    }
    if (cursor < window.end_ns) {
      bubble.start_ns = cursor;
      bubble.end_ns = window.end_ns;
      bubble.kind = seen_busy ? BubbleKind::drain : BubbleKind::fill;
      bubble.job_before = global(before);
      bubble.job_after = busy_.has(i) ? global(busy_[i].first_job) : kNoJob;
      visit(bubble);
    }
  }

 private:
  std::int64_t global(std::int64_t job) const {
    return job == kNoJob || job_index_ == nullptr
               ? job
               : static_cast<std::int64_t>((*job_index_)[static_cast<std::size_t>(job)]);
  }

  BusyUnion busy_;
  std::size_t d_;
  const std::vector<std::uint32_t>* job_index_;
  std::size_t first_ = 0;  // first interval that may still meet a window
};

/// Calls `visit` for every bubble of `device` in `windows` (Metrics::steps
/// from index `first_step`), windows in order, then time.
template <typename Visit>
void device_bubbles(const Device& device, std::size_t d, std::span<const StepWindow> windows,
                    std::size_t first_step, const std::vector<std::uint32_t>* job_index,
                    const TypeKinds& kinds, Visit&& visit) {
  DeviceWindowWalk walk(device, d, job_index, kinds);
  for (std::size_t w = 0; w < windows.size(); ++w) walk.window(windows[w], first_step + w, visit);
}

/// Keeps the `top_n` longest bubbles offered in `heap`, a min-heap by `longer`.
void offer_longest(std::vector<Bubble>& heap, std::size_t top_n, const Bubble& b) {
  if (top_n == 0) return;
  if (heap.size() < top_n) {
    heap.push_back(b);
    std::push_heap(heap.begin(), heap.end(), longer);
  } else if (longer(b, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), longer);
    heap.back() = b;
    std::push_heap(heap.begin(), heap.end(), longer);
  }
}

}  // namespace

struct WindowBubbles::Walk : DeviceWindowWalk {
  using DeviceWindowWalk::DeviceWindowWalk;
};

WindowBubbles::WindowBubbles(const Device& device, std::size_t d,
                             const std::vector<std::uint32_t>* job_index, const TypeKinds& kinds)
    : walk_(std::make_unique<Walk>(device, d, job_index, kinds)) {}
WindowBubbles::WindowBubbles(WindowBubbles&&) noexcept = default;
WindowBubbles& WindowBubbles::operator=(WindowBubbles&&) noexcept = default;
WindowBubbles::~WindowBubbles() = default;

void WindowBubbles::window(const StepWindow& window, std::size_t step,
                           const std::function<void(const Bubble&)>& visit) {
  walk_->window(window, step, visit);
}

void for_each_bubble(const Run& run, const Metrics& metrics,
                     const std::function<void(const Bubble&)>& visit) {
  const TypeKinds kinds(run.types);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    device_bubbles(run.devices[d], d, metrics.steps, 0, nullptr, kinds, visit);
  }
}

void for_each_device_bubble(const Run& run, const Metrics& metrics, std::size_t device,
                            const std::function<void(const Bubble&)>& visit) {
  device_bubbles(run.devices[device], device, metrics.steps, 0, nullptr, TypeKinds(run.types),
                 visit);
}

namespace {

// summarize_bubble_windows, also keeping the `candidates` longest bubbles in
// `kept` (longest first) when `kept` is given: each thread keeps its own
// heap of them (memory: threads x candidates, not devices x candidates), and
// `longer` orders bubbles strictly, so the merge is the run's list.
BubbleSummary summarize_windows(std::span<const Device> devices, const JobIndices* job_index,
                                const TypeTable& types, std::span<const StepWindow> windows,
                                std::size_t first_step, std::size_t top_n, std::size_t candidates,
                                std::vector<Bubble>* kept) {
  BubbleSummary summary;
  const std::size_t device_count = devices.size();
  summary.per_step.assign(windows.size(), std::vector<BubbleTime>(device_count));
  summary.per_device.assign(device_count, BubbleTotals{});
  const TypeKinds kinds(types);
  // Devices are independent: each fills its own column of per_step and its
  // own totals, and keeps its own longest bubbles. `longer` orders any two
  // bubbles strictly (two bubbles of one device never share a start), so the
  // longest of the devices' longest are the run's, whatever the order they
  // are merged in.
  std::vector<std::vector<Bubble>> longest(device_count);
  tbb::enumerable_thread_specific<std::vector<Bubble>> candidate_heaps;
  tbb::parallel_for(std::size_t{0}, device_count, [&](std::size_t d) {
    std::vector<Bubble>& heap = longest[d];
    std::vector<Bubble>* more = kept != nullptr ? &candidate_heaps.local() : nullptr;
    device_bubbles(devices[d], d, windows, first_step,
                   job_index == nullptr ? nullptr : &(*job_index)[d], kinds, [&](const Bubble& b) {
                     // Incomplete steps are left out of every total, as of the bubble ratio.
                     if (!windows[b.step - first_step].complete) return;
                     const auto kind = static_cast<std::size_t>(b.kind);
                     summary.per_step[b.step - first_step][b.device].ns[kind] += b.length_ns();
                     BubbleTotals& t = summary.per_device[b.device];
                     t.ns[kind] += b.length_ns();
                     ++t.count[kind];
                     offer_longest(heap, top_n, b);
                     if (more != nullptr) offer_longest(*more, candidates, b);
                   });
  });
  if (kept != nullptr) {
    kept->clear();
    for (const std::vector<Bubble>& some : candidate_heaps) {
      for (const Bubble& b : some) offer_longest(*kept, candidates, b);
    }
    std::sort(kept->begin(), kept->end(), longer);
  }
  std::vector<Bubble>& heap = summary.longest;
  for (const std::vector<Bubble>& some : longest) {
    for (const Bubble& b : some) offer_longest(heap, top_n, b);
  }
  std::sort(heap.begin(), heap.end(), longer);
  for (const BubbleTotals& t : summary.per_device) summary.total.add(t);
  return summary;
}

}  // namespace

BubbleSummary summarize_bubble_windows(std::span<const Device> devices, const JobIndices* job_index,
                                       const TypeTable& types, std::span<const StepWindow> windows,
                                       std::size_t first_step, std::size_t top_n) {
  return summarize_windows(devices, job_index, types, windows, first_step, top_n, 0, nullptr);
}

std::vector<FoldedBubble> fold_peer_bubbles(std::span<const Bubble> longest_first,
                                            std::span<const int> stage_of, std::size_t top_n) {
  std::vector<FoldedBubble> groups;
  const auto stage = [&](std::size_t d) { return d < stage_of.size() ? stage_of[d] : -1; };
  for (const Bubble& b : longest_first) {
    FoldedBubble* joined = nullptr;
    if (stage(b.device) >= 0) {
      for (FoldedBubble& g : groups) {
        const Bubble& r = g.bubble;
        if (stage(r.device) == stage(b.device) && r.step == b.step && b.start_ns < r.end_ns &&
            r.start_ns < b.end_ns) {
          joined = &g;
          break;
        }
      }
    }
    if (joined != nullptr) {
      std::vector<std::size_t>& devices = joined->devices;
      const auto at = std::lower_bound(devices.begin(), devices.end(), b.device);
      if (at == devices.end() || *at != b.device) devices.insert(at, b.device);
      joined->shortest_ns = std::min(joined->shortest_ns, b.length_ns());
    } else if (groups.size() < top_n) {
      groups.push_back({b, {b.device}, b.length_ns()});
    }
  }
  return groups;
}

void append_bubble_summary(BubbleSummary& into, BubbleSummary&& part, std::size_t top_n) {
  if (into.per_device.empty()) into.per_device.assign(part.per_device.size(), BubbleTotals{});
  for (auto& step : part.per_step) into.per_step.push_back(std::move(step));
  for (std::size_t d = 0; d < part.per_device.size() && d < into.per_device.size(); ++d) {
    into.per_device[d].add(part.per_device[d]);
  }
  into.total.add(part.total);
  std::vector<Bubble>& heap = into.longest;
  std::make_heap(heap.begin(), heap.end(), longer);
  for (const Bubble& b : part.longest) offer_longest(heap, top_n, b);
  std::sort(heap.begin(), heap.end(), longer);
}

BubbleSummary summarize_bubbles(const Run& run, const Metrics& metrics, std::size_t top_n,
                                std::span<const int> stage_of) {
  if (stage_of.empty() || top_n == 0) {
    return summarize_bubble_windows(run.devices, nullptr, run.types, metrics.steps, 0, top_n);
  }
  // A group's bubble is among the top_n x (largest stage) longest: every
  // longer bubble belongs to one of the fewer than top_n groups before it,
  // each of at most one bubble per device of its stage.
  std::vector<std::size_t> per_stage;
  for (const int s : stage_of) {
    if (s < 0) continue;
    if (static_cast<std::size_t>(s) >= per_stage.size()) per_stage.resize(s + 1, 0);
    ++per_stage[static_cast<std::size_t>(s)];
  }
  std::size_t peers = 1;
  for (const std::size_t n : per_stage) peers = std::max(peers, n);
  // Bounded (each thread keeps this many): past it a group may count fewer
  // peers than it has.
  constexpr std::size_t kMaxCandidates = std::size_t{1} << 18;
  std::vector<Bubble> candidates;
  BubbleSummary summary =
      summarize_windows(run.devices, nullptr, run.types, metrics.steps, 0, top_n,
                        std::min(top_n * peers, std::max(top_n, kMaxCandidates)), &candidates);
  summary.longest_folded = fold_peer_bubbles(candidates, stage_of, top_n);
  return summary;
}

}  // namespace pipescope
