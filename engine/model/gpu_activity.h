// What a PyTorch profiler trace's GPU activities leave for the kernel view
// (analysis/kernel_view.h): one RankKernels per trace, kept whether or not
// the trace names jobs. It is bounded by what the analysis must keep, not by
// the trace: the compute activities merged into disjoint intervals as they
// are read (16 bytes per interval kept), one extent per step (24 bytes),
// and every communication kernel whole (CommKernel, ~100 bytes each: they
// are a few per micro-batch, where compute kernels are hundreds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pipescope {

/// A half-open time interval [start, end) in ns.
struct TimeSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  friend bool operator==(const TimeSpan&, const TimeSpan&) = default;
};

/// The operation a communication kernel carries out, from its
/// `Collective name` (PyTorch's record_param_comms names).
enum class CommOp : std::uint8_t {
  unknown,  // no `Collective name` (older traces)
  send,
  recv,
  collective,  // every other name: allreduce, broadcast, allgather, ...
};

/// One NCCL kernel (a `kernel` whose name starts with `nccl`).
struct CommKernel {
  std::int64_t start = 0;  // ns, on the trace's clock
  std::int64_t end = 0;
  /// N of the ProfilerStep#N span holding its launch; nullopt: none.
  std::optional<std::int64_t> step;
  CommOp op = CommOp::unknown;
  /// `Collective name` as written (empty: none).
  std::string collective;
  /// `Process Group Name` and `Process Group Description` (empty: none).
  std::string group_name;
  std::string group_description;
  /// The group's global ranks (`Process Group Ranks`, else `Global rank
  /// start`/`stride`/`Group size`); empty: not known.
  std::vector<int> group_ranks;
  /// send: `Dst Rank`; recv: `Src Rank` (global ranks); -1: not known.
  int peer = -1;
  /// `Comms Id`: one value on every rank for one communication.
  std::optional<std::uint64_t> comms_id;
};

/// One rank's GPU activities, as the kernel view needs them.
struct RankKernels {
  /// The trace's path and its device's place among the inputs.
  std::string path;
  int device = 0;
  int machine = 0;
  /// `distributedInfo.rank`; -1 when the trace does not say.
  int global_rank = -1;
  /// The union of the compute activities (kernels other than NCCL's,
  /// copies, sets), sorted, disjoint, never touching.
  std::vector<TimeSpan> compute;
  /// Communication kernels, sorted by start.
  std::vector<CommKernel> comm;
  /// Per ProfilerStep#N with a GPU activity launched inside it: the first
  /// start and last end of those activities, sorted by step.
  struct StepExtent {
    std::int64_t step = 0;
    std::int64_t first_start = 0;
    std::int64_t last_end = 0;
  };
  std::vector<StepExtent> steps;
  /// Whether the trace holds ProfilerStep#N spans.
  bool step_spans = false;
  /// GPU activities read (kernels, copies, sets) and those without a launch
  /// record in the trace.
  std::uint64_t activities = 0;
  std::uint64_t without_launch = 0;
  /// The first start and last end of every activity (empty: none).
  std::int64_t first_start = 0;
  std::int64_t last_end = 0;
  /// Where the trace was cut inside its events (a crash): kNotCut otherwise.
  std::int64_t cut_ns = kNotCut;
  static constexpr std::int64_t kNotCut = INT64_MAX;
};

}  // namespace pipescope
