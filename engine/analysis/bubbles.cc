#include "analysis/bubbles.h"

#include <tbb/parallel_for.h>

#include <algorithm>

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
// the jobs at its edges so that bubbles can name their neighbours.
/// The device's busy time as disjoint intervals, into `out` (cleared; its
/// memory is reused from one device to the next).
void busy_intervals(const Device& device, const TypeKinds& kinds, std::vector<BusyInterval>& out) {
  out.clear();
  for (std::size_t i = 0; i < device.jobs.size(); ++i) {
    const Job& job = device.jobs[i];
    if (job.end_ns <= job.start_ns) continue;
    if (job.type < kinds.kind.size() && kinds.kind[job.type] == JobKind::comm) continue;
    if (!out.empty() && job.start_ns <= out.back().end) {
      if (job.end_ns > out.back().end) {
        out.back().end = job.end_ns;
        out.back().last_job = static_cast<std::int64_t>(i);
      }
      continue;
    }
    out.push_back(
        {job.start_ns, job.end_ns, static_cast<std::int64_t>(i), static_cast<std::int64_t>(i)});
  }
}

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

void BubbleTotals::add(const BubbleTotals& other) {
  for (std::size_t i = 0; i < 3; ++i) {
    ns[i] += other.ns[i];
    count[i] += other.count[i];
  }
}

namespace {

/// Calls `visit` for every bubble of device d, windows in order, then time;
/// `busy` is scratch memory, reused from one call to the next.
template <typename Visit>
void device_bubbles(const Run& run, const Metrics& metrics, const TypeKinds& kinds, std::size_t d,
                    std::vector<BusyInterval>& busy, Visit&& visit) {
  busy_intervals(run.devices[d], kinds, busy);
  std::size_t first = 0;  // first interval that may still meet a window
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    const StepWindow& window = metrics.steps[k];
    if (window.window_ns() <= 0) continue;
    while (first < busy.size() && busy[first].end <= window.start_ns) ++first;
    Bubble bubble;
    bubble.device = d;
    bubble.step = k;
    std::int64_t cursor = window.start_ns;
    std::int64_t before = first > 0 ? busy[first - 1].last_job : kNoJob;
    bool seen_busy = false;
    std::size_t i = first;
    for (; i < busy.size() && busy[i].begin < window.end_ns; ++i) {
      const std::int64_t begin = std::max(busy[i].begin, window.start_ns);
      if (begin > cursor) {
        bubble.start_ns = cursor;
        bubble.end_ns = begin;
        bubble.kind = seen_busy ? BubbleKind::interior : BubbleKind::fill;
        bubble.job_before = before;
        bubble.job_after = busy[i].first_job;
        visit(bubble);
      }
      seen_busy = true;
      cursor = std::min(busy[i].end, window.end_ns);
      before = busy[i].last_job;
    }
    if (cursor < window.end_ns) {
      bubble.start_ns = cursor;
      bubble.end_ns = window.end_ns;
      bubble.kind = seen_busy ? BubbleKind::drain : BubbleKind::fill;
      bubble.job_before = before;
      bubble.job_after = i < busy.size() ? busy[i].first_job : kNoJob;
      visit(bubble);
    }
  }
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

void for_each_bubble(const Run& run, const Metrics& metrics,
                     const std::function<void(const Bubble&)>& visit) {
  std::vector<BusyInterval> busy;
  const TypeKinds kinds(run.types);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    device_bubbles(run, metrics, kinds, d, busy, visit);
  }
}

BubbleSummary summarize_bubbles(const Run& run, const Metrics& metrics, std::size_t top_n) {
  BubbleSummary summary;
  const std::size_t devices = run.devices.size();
  summary.per_step.assign(metrics.steps.size(), std::vector<BubbleTotals>(devices));
  summary.per_device.assign(devices, BubbleTotals{});
  const TypeKinds kinds(run.types);
  // Devices are independent: each fills its own column of per_step and keeps
  // its own longest bubbles. `longer` orders any two bubbles strictly (two
  // bubbles of one device never share a start), so the longest of the
  // devices' longest are the run's, whatever the order they are merged in.
  std::vector<std::vector<Bubble>> longest(devices);
  tbb::parallel_for(std::size_t{0}, devices, [&](std::size_t d) {
    std::vector<BusyInterval> busy;
    std::vector<Bubble>& heap = longest[d];
    device_bubbles(run, metrics, kinds, d, busy, [&](const Bubble& b) {
      // Incomplete steps are left out of every total, as of the bubble ratio.
      if (!metrics.steps[b.step].complete) return;
      const auto kind = static_cast<std::size_t>(b.kind);
      BubbleTotals& t = summary.per_step[b.step][b.device];
      t.ns[kind] += b.length_ns();
      ++t.count[kind];
      offer_longest(heap, top_n, b);
    });
  });
  std::vector<Bubble>& heap = summary.longest;
  for (const std::vector<Bubble>& some : longest) {
    for (const Bubble& b : some) offer_longest(heap, top_n, b);
  }
  std::sort(heap.begin(), heap.end(), longer);
  for (const auto& step : summary.per_step) {
    for (std::size_t d = 0; d < devices; ++d) {
      summary.per_device[d].add(step[d]);
      summary.total.add(step[d]);
    }
  }
  return summary;
}

}  // namespace pipescope
