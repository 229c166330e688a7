// The kernel-level timeline of a simulated run: the GPU activities each rank
// of a Megatron-style run (pipeline stages x data-parallel replicas, no
// labels) executes, on the true clock, built from the Simulator's jobs.
//
//  - Ranks: the simulator's device index is the global rank, which is
//    Megatron's order (pp outermost, then dp): rank g = d + D·s runs stage s
//    as data-parallel replica d (SimConfig::devices_per_stage = D replicas,
//    each running the stage's jobs at the same times).
//  - Compute. Every compute job (forward, backward, backward_b, backward_w,
//    optimizer) becomes up to `kernels_per_job` kernels on stream 7 that split
//    its exact interval: the first starts at the job's start, the last ends at
//    its end, with gaps of 0.3-2.5 us between them (at most 1/8 of the job;
//    at most one kernel per microsecond of job).
//  - Point-to-point. Every input a job takes from another rank (F(m) of global
//    stage g from g-1, B(m) from g+1) is a NCCL send on the producer's rank
//    and a recv on the consumer's: the send starts when the producing job ends
//    (t_p) and both end together at t_p + the simulator's p2p latency
//    (capped at the consumer's start, which the simulator puts no earlier).
//    The recv is posted when the consumer's rank is free (its previous job's
//    end, or the step's start) but at least 1-5 us before the send, so it
//    always starts first and waits for the sender; kept in the send order of
//    each rank pair, so that the k-th send from a to b is the k-th recv on b
//    from a (NCCL's matching, used when traces have no `Comms Id`).
//  - Data parallel (D > 1). Each step's optimizer job begins with an
//    allreduce over the stage's replicas: replica d's kernel starts 1-31 us
//    after the job starts (at most 1/8 of it), every member's ends at the
//    job's midpoint; the optimizer's kernels split the second half.
//  - Every activity belongs to the step of the job it comes from (a send to
//    its producer's step, a recv to its consumer's). Every NCCL communication
//    has a unique non-zero 64-bit id (its `Comms Id`), a pure function of the
//    seed and its place in the run.
//
// Usage:
//   KernelTimeline timeline = build_kernel_timeline(config, /*kernels_per_job=*/24);
//   for (const KernelActivity& a : timeline.ranks[g]) ...   // start order
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "simulate/simulator.h"

namespace pipescope::sim {

enum class ActivityKind : std::uint8_t {
  compute,
  /// A NCCL point-to-point send (Dst Rank = peer).
  send,
  /// A NCCL point-to-point recv (Src Rank = peer).
  recv,
  /// A NCCL allreduce over the data-parallel group.
  allreduce,
};

/// Streams the activities run on.
inline constexpr int kComputeStream = 7;
inline constexpr int kDataParallelStream = 13;
/// + 4 per peer, in the order of the rank's first kernel with it.
inline constexpr int kFirstPeerStream = 17;

struct KernelActivity {
  /// True clock (before any machine's clock offset), ns.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// 0-based step of the job it comes from.
  std::int32_t step = 0;
  ActivityKind kind = ActivityKind::compute;
  std::int32_t stream = kComputeStream;
  /// A compute kernel's name (static storage); nullptr for NCCL kernels.
  const char* name = nullptr;
  /// NCCL kernels: index into KernelTimeline::comms; -1 for compute.
  std::int32_t comm = -1;
  /// send: the destination's global rank; recv: the source's; else -1.
  std::int32_t peer = -1;
};

/// One NCCL communication: the kernels of its members.
struct KernelComm {
  /// send: a point-to-point pair (its sender first); allreduce.
  ActivityKind kind = ActivityKind::send;
  /// Unique and non-zero over the run.
  std::uint64_t comms_id = 0;
  /// (global rank, index into that rank's activities).
  std::vector<std::pair<int, std::size_t>> members;
};

struct KernelTimeline {
  /// Index = global rank (SimDeviceInfo::index).
  std::vector<SimDeviceInfo> devices;
  int stages = 0;
  /// Data-parallel replicas of each stage (SimConfig::devices_per_stage).
  int replicas = 1;
  int steps = 0;
  /// Per global rank, in start order (ties: end, then kind).
  std::vector<std::vector<KernelActivity>> ranks;
  std::vector<KernelComm> comms;
};

/// Simulates `config` (its machine_skew_ns is ignored: the timeline is on the
/// true clock) and builds the kernel timeline. Throws std::invalid_argument
/// for what it cannot express: kernels_per_job outside 1..10000, lr jobs or
/// comm jobs (the NCCL kernels are the transfers), a p2p latency below the
/// time resolution (a transfer takes time), a job shorter than 1 us, or an
/// invalid config (as Simulator does).
KernelTimeline build_kernel_timeline(SimConfig config, int kernels_per_job);

}  // namespace pipescope::sim
