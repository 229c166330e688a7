// What a PyTorch profiler trace's GPU activities leave for the kernel view
// (analysis/kernel_view.h): one RankKernels per trace, kept whether or not
// the trace names jobs. It is bounded by what the analysis must keep, not by
// the trace: the compute activities merged into disjoint intervals as they
// are read (16 bytes per interval kept), one extent per step (24 bytes),
// and every communication kernel whole (CommKernel, ~100 bytes each: they
// are a few per micro-batch, where compute kernels are hundreds).
#pragma once

#include <array>
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

/// What a communication kernel carries out, from its `Collective name` or
/// its host call (PyTorch's record_param_comms and `nccl:<op>` names).
enum class CommOp : std::uint8_t {
  unknown,         // nothing in the trace says (older traces)
  send,            // one point-to-point operation (PeerOp)
  recv,            // one point-to-point operation (PeerOp)
  point_to_point,  // a kernel's point-to-point operations (CommKernel::p2p)
  collective,      // every other name: allreduce, broadcast, allgather, ...
};

/// One point-to-point operation of a NCCL kernel. A batched kernel (one
/// `SendRecv` launch for several `isend`/`irecv`: `batch_isend_irecv`, NCCL
/// group calls, PyTorch's coalescing) carries several.
struct PeerOp {
  /// send or recv; unknown where nothing says which (a kernel whose traces
  /// name nothing: its peer then comes from the order rules alone).
  CommOp op = CommOp::send;
  /// The other end's global rank; -1: not named (PyTorch 2.2's calls name
  /// the direction and the group, not the peer).
  int peer = -1;
  /// Where the peer is not named and the call's group has two members:
  /// those two (the peer is the one that is not this rank); else -1, -1.
  std::array<int, 2> pair{-1, -1};
  friend bool operator==(const PeerOp&, const PeerOp&) = default;
};

/// Where a NCCL kernel's operations were read from (docs/guide.md, "The
/// kernel view": the first of these that names them).
enum class CommSource : std::uint8_t {
  none,    // nothing names them
  host,    // the host calls that launched it (record_param_comms, nccl:<op>)
  kernel,  // the kernel's own args
};

/// One NCCL kernel (a `kernel` whose name starts with `nccl`).
struct CommKernel {
  std::int64_t start = 0;  // ns, on the trace's clock
  std::int64_t end = 0;
  /// N of the ProfilerStep#N span holding its launch; nullopt: none.
  std::optional<std::int64_t> step;
  /// point_to_point (its operations in `p2p`), collective or unknown.
  CommOp op = CommOp::unknown;
  CommSource source = CommSource::none;
  /// What it does, as shown: `Collective name` as written ("allreduce",
  /// "send"), "send/recv" for a batched kernel; empty: not known.
  std::string collective;
  /// `Process Group Name` and `Process Group Description` (empty: none).
  std::string group_name;
  std::string group_description;
  /// The group's global ranks (`Process Group Ranks`, else `Global rank
  /// start`/`stride`/`Group size`); empty: not known (a list PyTorch cut
  /// short is not one).
  std::vector<int> group_ranks;
  /// `Group size` where the ranks are not known (a cut list); 0: not given.
  int group_size = 0;
  /// Point-to-point kernels: their operations in the order issued (several
  /// for a batched kernel); empty for a collective, or when no peer is named.
  std::vector<PeerOp> p2p;
  /// `Comms Id`: one value on every rank for one communication.
  std::optional<std::uint64_t> comms_id;
  /// A collective's `Rank`: this rank's place in the group; -1: not given.
  int group_rank = -1;
};

/// One rank's GPU activities, as the kernel view needs them.
struct RankKernels {
  /// The trace's path and its device's place among the inputs.
  std::string path;
  /// An Nsight Systems export's process (of the several an export may
  /// hold); -1: a PyTorch trace, one rank a file.
  int pid = -1;
  int device = 0;
  int machine = 0;
  /// `distributedInfo.rank`; -1 when the trace does not say.
  int global_rank = -1;
  /// What gave `global_rank`: a PyTorch trace's distributedInfo, or, for an
  /// Nsight Systems export (ingest/nsys_reader.h), the process's environment
  /// (RANK, PMI_RANK, OMPI_COMM_WORLD_RANK) or NCCL's NVTX payloads.
  enum class Claim : std::uint8_t { distributed_info, environment, nccl };
  Claim rank_claim = Claim::distributed_info;
  /// What the kernels were read from: the messages speak of its terms
  /// (a trace's distributedInfo and ProfilerStep#N; an export's processes,
  /// environment and NVTX ranges).
  enum class Origin : std::uint8_t { profiler_trace, nsys_export };
  Origin origin = Origin::profiler_trace;
  /// The global rank the communication args give (a collective's group
  /// ranks at its `Rank`); -1: none; kConflict: two different ones.
  int comm_rank = -1;
  static constexpr int kConflict = -2;
  /// `distributedInfo.world_size`; 0: the trace does not say.
  int world_size = 0;
  /// The CUDA device its kernels ran on (`args.device`); -1: none read.
  int device_ordinal = -1;
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
  /// The step, N−1 of the first ProfilerStep#N span, that activities
  /// launched before that span belong to (the profiler started in it, so
  /// its start is not in the trace: never complete); nullopt: none.
  std::optional<std::int64_t> partial_step;
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
