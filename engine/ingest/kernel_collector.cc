#include "ingest/kernel_collector.h"

#include <algorithm>
#include <utility>

#include "ingest/torch_trace_event.h"

namespace pipescope {

void KernelCollector::add_span(std::vector<TimeSpan>& spans, std::int64_t start, std::int64_t end) {
  if (end <= start) return;  // nothing to cover
  // The usual case: activities come nearly in time order, at the end.
  if (spans.empty() || start > spans.back().end) {
    spans.push_back({start, end});
    return;
  }
  if (start >= spans.back().start) {
    spans.back().end = std::max(spans.back().end, end);
    return;
  }
  // The first span that ends at or after `start` (ends are sorted too).
  auto it = std::lower_bound(spans.begin(), spans.end(), start,
                             [](const TimeSpan& s, std::int64_t v) { return s.end < v; });
  if (it->start > end) {
    spans.insert(it, {start, end});
    return;
  }
  it->start = std::min(it->start, start);
  auto last = it + 1;
  while (last != spans.end() && last->start <= end) {
    end = std::max(end, last->end);
    ++last;
  }
  it->end = std::max(it->end, end);
  spans.erase(it + 1, last);
}

void KernelCollector::on_step_span(std::int64_t start, std::int64_t end, std::int64_t step) {
  if (!step_spans_.empty() && start < step_spans_.back().start) spans_sorted_ = false;
  step_spans_.push_back({start, end, step});
  out_.step_spans = true;
}

/// N of the latest-starting step span holding host time `ts` (both ends
/// included), looking back a few spans (they do not nest in practice).
std::optional<std::int64_t> KernelCollector::step_at(std::int64_t ts) {
  if (!spans_sorted_) {
    std::sort(step_spans_.begin(), step_spans_.end(),
              [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
    spans_sorted_ = true;
  }
  auto it = std::upper_bound(step_spans_.begin(), step_spans_.end(), ts,
                             [](std::int64_t v, const StepSpan& s) { return v < s.start; });
  for (int back = 0; back < 4 && it != step_spans_.begin(); ++back) {
    --it;
    if (it->end >= ts) return it->step;
  }
  return std::nullopt;
}

void KernelCollector::on_launch(std::int64_t correlation, std::int64_t ts, bool graph) {
  const std::optional<std::int64_t> step = step_at(ts);
  const auto [first, last] = early_.equal_range(correlation);
  const bool found = first != last;
  for (auto e = first; e != last; ++e) place(step, e->second.start, e->second.end, e->second.comm);
  early_.erase(first, last);
  if (!found || graph) launches_[correlation] = {step, graph};
}

void KernelCollector::place(std::optional<std::int64_t> step, std::int64_t start, std::int64_t end,
                            long comm) {
  if (comm >= 0) out_.comm[static_cast<std::size_t>(comm)].step = step;
  if (!step) return;  // launched outside every step span: in no step
  auto [it, fresh] = extents_.try_emplace(*step, RankKernels::StepExtent{*step, start, end});
  if (!fresh) {
    it->second.first_start = std::min(it->second.first_start, start);
    it->second.last_end = std::max(it->second.last_end, end);
  }
}

void KernelCollector::on_activity(ParsedEvent& e) {
  if (out_.activities == 0) {
    out_.first_start = e.start;
    out_.last_end = e.end;
  }
  ++out_.activities;
  out_.first_start = std::min(out_.first_start, e.start);
  out_.last_end = std::max(out_.last_end, e.end);
  long comm = -1;
  if (e.communication) {
    CommKernel kernel = e.comm ? std::move(*e.comm) : CommKernel{};
    e.comm.reset();
    kernel.start = e.start;
    kernel.end = e.end;
    if (kernel.collective == "send") {
      kernel.op = CommOp::send;
    } else if (kernel.collective == "recv") {
      kernel.op = CommOp::recv;
    } else if (!kernel.collective.empty()) {
      kernel.op = CommOp::collective;
    }
    comm = static_cast<long>(out_.comm.size());
    out_.comm.push_back(std::move(kernel));
  } else {
    add_span(out_.compute, e.start, e.end);
  }
  if (e.correlation >= 0) {
    if (const auto l = launches_.find(e.correlation); l != launches_.end()) {
      place(l->second.step, e.start, e.end, comm);
      if (!l->second.graph) launches_.erase(l);
      return;
    }
    // Its launch may still come: Kineto writes runtime calls and activities
    // in time order, often a kernel just before its own launch, and the
    // correlation ids of several threads are not in order. Whatever is still
    // here at the end had no launch (counted then).
    early_.emplace(e.correlation, Early{e.start, e.end, comm});
    return;
  }
  ++out_.without_launch;
}

void KernelCollector::reset() { *this = KernelCollector(); }

RankKernels KernelCollector::finish(std::int64_t base_ns) {
  out_.without_launch += early_.size();
  early_.clear();
  launches_.clear();
  for (TimeSpan& s : out_.compute) {
    s.start += base_ns;
    s.end += base_ns;
  }
  for (CommKernel& c : out_.comm) {
    c.start += base_ns;
    c.end += base_ns;
  }
  std::stable_sort(out_.comm.begin(), out_.comm.end(),
                   [](const CommKernel& a, const CommKernel& b) { return a.start < b.start; });
  out_.steps.reserve(extents_.size());
  for (auto& [step, extent] : extents_) {
    extent.first_start += base_ns;
    extent.last_end += base_ns;
    out_.steps.push_back(extent);
  }
  std::sort(out_.steps.begin(), out_.steps.end(),
            [](const RankKernels::StepExtent& a, const RankKernels::StepExtent& b) {
              return a.step < b.step;
            });
  if (out_.activities > 0) {
    out_.first_start += base_ns;
    out_.last_end += base_ns;
  }
  return std::move(out_);
}

}  // namespace pipescope
