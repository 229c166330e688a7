// What one trace's GPU activities leave for the kernel view
// (model/gpu_activity.h), gathered as the torch trace reader applies its
// events in file order. Kineto writes the CPU events (the ProfilerStep#N
// spans among them) first, then the runtime calls interleaved with the GPU
// activities in time order: each activity's step is known when it comes (by
// the launch that has the same correlation id), so only launches still
// waiting for their activity, and activities that came before their launch,
// are held. Compute activities are merged into disjoint intervals as they
// come; communication kernels are kept whole.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model/gpu_activity.h"

namespace pipescope {

struct ParsedEvent;

class KernelCollector {
 public:
  /// A ProfilerStep#N span (host times, ns after the trace's base).
  void on_step_span(std::int64_t start, std::int64_t end, std::int64_t step);
  /// A runtime or driver call that launches GPU work; `graph`: a CUDA
  /// graph launch, whose many activities share its correlation id.
  void on_launch(std::int64_t correlation, std::int64_t ts, bool graph);
  /// A GPU activity (kernel, copy, set); takes `e.comm`.
  void on_activity(ParsedEvent& e);
  /// Starts over (the reader's second pass reads every event again).
  void reset();

  /// Whether any GPU activity was read.
  bool any() const { return out_.activities > 0; }
  /// The rank's record, times moved by `base_ns` onto the trace's clock.
  /// Call once, after the last event.
  RankKernels finish(std::int64_t base_ns);

  /// Merges [start, end) into `spans` (sorted, disjoint, never touching).
  static void add_span(std::vector<TimeSpan>& spans, std::int64_t start, std::int64_t end);

 private:
  std::optional<std::int64_t> step_at(std::int64_t ts);
  void place(std::optional<std::int64_t> step, std::int64_t start, std::int64_t end, long comm);

  struct StepSpan {
    std::int64_t start, end, step;
  };
  struct Early {
    std::int64_t start, end;
    long comm;  // index into out_.comm, or -1
  };
  std::vector<StepSpan> step_spans_;
  bool spans_sorted_ = true;
  struct Launch {
    std::optional<std::int64_t> step;
    bool graph = false;  // kept for every activity of the graph
  };
  std::unordered_map<std::int64_t, Launch> launches_;   // correlation -> launch
  std::unordered_multimap<std::int64_t, Early> early_;  // activities before their launch
  std::unordered_map<std::int64_t, RankKernels::StepExtent> extents_;
  RankKernels out_;
};

}  // namespace pipescope
