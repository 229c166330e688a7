// What one trace's GPU activities leave for the kernel view
// (model/gpu_activity.h), gathered as the torch trace reader applies its
// events in file order. Kineto writes the CPU events (the ProfilerStep#N
// spans among them) first, then the runtime calls interleaved with the GPU
// activities in time order: each activity's step is known when it comes (by
// the launch that has the same correlation id), so only launches still
// waiting for their activity, and activities that came before their launch,
// are held. A communication kernel's operations and peers are read from the
// host calls that launched it (docs/guide.md, "The kernel view": one
// record_param_comms per operation of a batched kernel), else from its own
// args, once every event is in (finish). Compute activities are merged into disjoint intervals
// (SpanUnion: in O(n log n) whatever their order); communication kernels are
// kept whole.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/span_union.h"
#include "model/gpu_activity.h"

namespace pipescope {

struct ParsedEvent;

class KernelCollector {
 public:
  /// A ProfilerStep#N span (host times, ns after the trace's base).
  void on_step_span(std::int64_t start, std::int64_t end, std::int64_t step);
  /// A runtime or driver call that launches GPU work on host thread
  /// `thread`; `graph`: a CUDA graph launch, whose many activities share its
  /// correlation id.
  void on_launch(std::int64_t correlation, std::int64_t ts, bool graph, std::int64_t thread);
  /// A GPU activity (kernel, copy, set); takes `e.comm`.
  void on_activity(ParsedEvent& e);
  /// A communication's host call (record_param_comms, nccl:<op>); takes
  /// `e.comm`.
  void on_comm_call(ParsedEvent& e);
  /// Starts over (the reader's second pass reads every event again).
  void reset();

  /// Whether any GPU activity was read.
  bool any() const { return out_.activities > 0; }
  /// The rank's record, times moved by `base_ns` onto the trace's clock.
  /// Call once, after the last event.
  RankKernels finish(std::int64_t base_ns);

 private:
  struct Launch;
  std::optional<std::int64_t> step_at(std::int64_t ts);
  void place(const Launch& launch, std::int64_t start, std::int64_t end, long comm);
  void resolve_operations();

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
    std::int64_t ts = 0;
    std::int64_t thread = -1;
  };
  /// A communication kernel's links to its host calls (one per out_.comm).
  struct CommLink {
    std::int64_t external_id = -1;
    std::int64_t launch_ts = 0;
    std::int64_t launch_thread = -1;  // -1: its launch is not in the trace
  };
  /// A communication's host call.
  struct HostCall {
    std::int64_t thread = -1;
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::int64_t external_id = -1;
    std::string name;
    std::optional<CommKernel> args;  // none: no communication args
  };
  std::vector<CommLink> links_;
  std::vector<HostCall> calls_;
  std::unordered_map<std::int64_t, Launch> launches_;   // correlation -> launch
  std::unordered_multimap<std::int64_t, Early> early_;  // activities before their launch
  std::unordered_map<std::int64_t, RankKernels::StepExtent> extents_;
  SpanUnion compute_;  // the compute activities, merged in finish()
  RankKernels out_;
};

}  // namespace pipescope
