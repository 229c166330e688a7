// What one trace's GPU activities leave for the kernel view
// (model/gpu_activity.h), gathered as the torch trace reader applies its
// events in file order: every activity counts, compute activities are merged
// into disjoint intervals (SpanUnion: in O(n log n) whatever their order),
// communication kernels are kept whole. Each activity's step is the
// ProfilerStep#N span that holds the call that launched it: the reader joins
// activities to their launches (launch_join.h) and places the pairs here once
// the step spans they need are known (place), so the spans may come anywhere
// in the file. A communication kernel's operations and peers are read from
// the host calls that launched it (docs/guide.md, "The kernel view": one
// record_param_comms per operation of a batched kernel), else from its own
// args, once every event is in (finish).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/launch_join.h"
#include "ingest/span_union.h"
#include "model/gpu_activity.h"

namespace pipescope {

struct ParsedEvent;

/// A communication kernel's links to its host calls (one per kernel).
struct CommLink {
  std::int64_t external_id = -1;
  std::int64_t launch_ts = 0;
  std::int64_t launch_thread = -1;  // -1: its launch is not in the trace
};

/// A communication's host call.
struct CommHostCall {
  std::int64_t thread = -1;
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t external_id = -1;
  std::string name;
  std::optional<CommKernel> args;  // none: no communication args
};

/// Each of `rank.comm`'s kernels' operations from the host `calls` (the
/// rule in kernel_collector.cc), `links[k]` being kernel k's, then the rank
/// the collectives' args give (RankKernels::comm_rank). KernelCollector::finish
/// does this with the calls it was given; a reader that knows its calls'
/// args only once every file is read (an Nsight export: the peers' global
/// ranks, nsys_reader.h) finishes without calls and calls this later, on
/// kernels still in launch order (base 0: finish moves nothing after it).
void resolve_comm_operations(RankKernels& rank, const std::vector<CommLink>& links,
                             const std::vector<CommHostCall>& calls);

class KernelCollector {
 public:
  /// A ProfilerStep#N span (host times, ns after the trace's base).
  void on_step_span(std::int64_t start, std::int64_t end, std::int64_t step);
  /// A GPU activity (kernel, copy, set); takes `e.comm`. Returns the index
  /// of a communication kernel in the record's list, else -1.
  long on_activity(ParsedEvent& e);
  /// A plain compute activity (read by read_plain_event); `launched`: it has
  /// a correlation id (else it counts as without launch).
  void on_compute(std::int64_t start, std::int64_t end, int gpu, bool launched) {
    count(start, end, gpu);
    compute_.add(start, end);
    if (!launched) ++out_.without_launch;
  }
  /// A communication's host call (record_param_comms, nccl:<op>); takes
  /// `e.comm`.
  void on_comm_call(ParsedEvent& e);
  /// Activities joined to their launches: each counts in the step whose
  /// span holds its launch (LaunchPair::launch). Every step span that may
  /// hold them must have been given.
  void place(const PairList& pairs);
  /// Communication kernels joined to their launches (as place).
  void place(const std::vector<CommLaunch>& launches);
  /// Starts over (the reader's second pass reads every event again).
  void reset();

  /// Whether any GPU activity was read.
  bool any() const { return out_.activities > 0; }
  /// The rank's record, times moved by `base_ns` onto the trace's clock.
  /// Call once, after the last event: `join` has read every launch, its
  /// activities still waiting had no launch in the trace, and every pair it
  /// found has been placed.
  RankKernels finish(std::int64_t base_ns, const LaunchJoin& join);
  /// As above, for a reader that joins activities to their launches itself
  /// (an Nsight export: ingest/nsys_reader.h): `unmatched` activities had no
  /// launch beyond those already counted, and `earliest_launch` is the
  /// earliest launch of the activities (INT64_MAX: none).
  RankKernels finish(std::int64_t base_ns, std::uint64_t unmatched, std::int64_t earliest_launch);

 private:
  void count(std::int64_t start, std::int64_t end, int gpu) {
    if (out_.activities == 0) {
      out_.first_start = start;
      out_.last_end = end;
    }
    ++out_.activities;
    if (out_.device_ordinal < 0 && gpu >= 0) out_.device_ordinal = gpu;
    out_.first_start = std::min(out_.first_start, start);
    out_.last_end = std::max(out_.last_end, end);
  }
  void sort_steps();
  /// N of the span holding host time `ts` (see the .cc); `hint`: where the
  /// last search ended (times close together are found at once).
  std::optional<std::int64_t> step_at(std::int64_t ts, std::size_t& hint) const;
  struct StepSpan {
    std::int64_t start, end, step;
  };
  std::vector<StepSpan> step_spans_;  // in file order
  std::vector<StepSpan> sorted_;      // by start (std::sort of the file's order)
  bool sorted_stale_ = false;
  std::vector<CommLink> links_;
  std::vector<CommHostCall> calls_;
  std::unordered_map<std::int64_t, RankKernels::StepExtent> extents_;
  SpanUnion compute_;  // the compute activities, merged in finish()
  RankKernels out_;
};

}  // namespace pipescope
