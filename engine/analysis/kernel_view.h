// The kernel view: every rank's step windows split, instant by instant, into
// compute, transfer, wait and idle from the GPU activities of PyTorch
// profiler traces alone (no job labels needed), as docs/guide.md ("The
// kernel view") defines it:
//
//  - An activity belongs to step N when the call that launched it lies in
//    `ProfilerStep#N`; windows follow the job contract's rule
//    (S_k = max(first start of step k, E_{k-1}), E_k = last end, over ranks).
//  - Precedence: compute (any non-NCCL kernel, copy or set running) >
//    transfer (a NCCL kernel moving data) > wait (only NCCL kernels running,
//    none able to move data yet) > idle.
//  - A NCCL kernel waits from its start to the latest start among its peers
//    (the kernels of the same communication on the other ranks: by `Comms
//    Id`, else the k-th call of the process group, or, for each of its
//    point-to-point operations, the k-th send from a to b); the rest is
//    transfer. Without peers its split is unknown
//    (`comm_kernels_without_peers`; KernelSplit::comm_split_known).
//  - Each instant of wait (after precedence) is blamed on one peer: the one
//    whose late start ends the latest-ending wait at that instant.
//
//  - Clocks: ranks of one machine share a clock. Across machines, the two
//    ends of a matched NCCL communication end together (to within the link's
//    jitter), so each machine pair's offset is the median of their end
//    differences; the offsets are applied (every time of a machine moved by
//    its offset to machine 0's clock) only when one is beyond the noise seen
//    between kernels of one machine, and reported either way.
//
// Guarantees: per rank and step, compute + transfer + wait + idle = window;
// totals and ratios cover the complete steps (every rank has an activity of
// the step, and no rank's trace was cut before the window ends).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpu_activity.h"
#include "model/option_words.h"
#include "model/warning.h"

namespace pipescope {

/// One window's four-way split (ns); the parts add up to `window`.
struct KernelSplit {
  std::int64_t window = 0;
  std::int64_t compute = 0;
  std::int64_t transfer = 0;
  std::int64_t wait = 0;
  std::int64_t idle = 0;
  /// False when NCCL kernels without peers ran in the window beyond
  /// compute: their time is in `transfer`, but how much of transfer + wait
  /// was waiting is not known (written as unknown, never as measured).
  bool comm_split_known = true;
  void add(const KernelSplit& o);
};

/// One run-wide step window.
struct KernelStepWindow {
  std::int64_t step = 0;
  std::int64_t start = 0;
  std::int64_t end = 0;
  bool complete = false;
};

struct KernelRankStep {
  KernelSplit split;
  /// The global rank blamed for most of the rank's wait in the step; -1:
  /// no wait.
  int most_waited_on = -1;
  std::int64_t waited_on_ns = 0;
};

/// One NCCL kernel as the view split it: wait [start, transfer_from), then
/// transfer [transfer_from, end), on the view's clock (before precedence).
struct KernelCommSlice {
  std::int64_t start = 0;
  std::int64_t transfer_from = 0;
  std::int64_t end = 0;
  /// The peer whose late start ended the wait; -1: no wait or no peer.
  int waited_on = -1;
  bool has_peers = false;
  /// Index into the rank's RankKernels::comm (for its name and group).
  std::size_t kernel = 0;
};

/// Where a trace's global rank came from (docs/guide.md, "The kernel view":
/// the first of these that gives one).
enum class RankSource : std::uint8_t {
  distributed_info,  // `distributedInfo.rank`
  environment,       // an Nsight export: the process's RANK (PMI_RANK, OMPI_COMM_WORLD_RANK)
  nccl,              // an Nsight export: its `Rank` in NCCL's largest communicators
  communication,     // a collective's group ranks at its `Rank`
  device,            // the CUDA device on its machine, after the machines before it
  order,             // the first rank no trace claims, in the traces' order
};

/// The name summary.json writes (`rank_source`).
std::string_view rank_source_name(RankSource source);

/// Each trace's global rank by the one rule (docs/guide.md, "The kernel
/// view"): `distributedInfo.rank` (an Nsight export's environment or NCCL
/// payloads: RankKernels::rank_claim); else the rank its collectives' args give;
/// else its CUDA device on its machine after the ranks of the machines
/// before it (torchrun's LOCAL_RANK order); else the first rank no trace
/// claims, in the traces' order. By position in the input.
struct TraceRanks {
  std::vector<int> rank;
  std::vector<RankSource> source;
  /// Set (rank and source empty) when a trace's args give another rank than
  /// its distributedInfo, or two traces claim one rank: names the traces.
  std::string refusal;
};
TraceRanks trace_ranks(const std::vector<RankKernels>& input);

struct KernelRankView {
  /// Index of the rank's record in the ranks given to compute_kernel_view.
  std::size_t source = 0;
  /// What was subtracted from the trace's times (its machine's offset).
  std::int64_t clock_offset_ns = 0;
  /// Its NCCL kernels, in start order.
  std::vector<KernelCommSlice> comm;
  std::string path;
  int device = 0;
  int machine = 0;
  /// Its global rank, and where that came from.
  int global_rank = 0;
  RankSource rank_source = RankSource::distributed_info;
  /// Its pipeline stage (KernelLayout); -1: not found.
  int stage = -1;
  /// One per KernelView::steps.
  std::vector<KernelRankStep> steps;
  /// Over the complete steps.
  KernelSplit total;
  /// The rank waited on longest over the complete steps; -1: none.
  int most_waited_on = -1;
  std::int64_t waited_on_ns = 0;
};

/// One machine's clock as the kernel view found it.
struct KernelMachineClock {
  int machine = 0;
  /// How far its clock reads ahead of machine 0's (ns); 0 when unknown.
  std::int64_t offset_ns = 0;
  /// Matched communications with machine 0's side (directly or through
  /// another machine) that gave the estimate; 0: none (offset unknown).
  std::uint64_t pairs = 0;
};

/// The cross-machine clock rule's outcome (docs/guide.md, "The kernel view").
struct KernelClock {
  /// Machines in the traces (1: nothing to estimate).
  std::size_t machines = 1;
  /// Whether the offsets were applied.
  bool applied = false;
  /// The end-to-end spread of matched kernels of one machine (p95, doubled,
  /// at least 2 us): an offset within it is not told from jitter.
  std::int64_t noise_ns = 0;
  std::vector<KernelMachineClock> offsets;  // one per machine, machine order
};

/// The pipeline layout the NCCL kernels show (docs/guide.md, "The kernel
/// view"): from the process group whose description or name names the
/// pipeline (`PIPELINE_MODEL_PARALLEL_GROUP`, ...), a rank's stage being its
/// place in the group's ranks; else from the point-to-point pattern (each
/// pipeline a chain of ranks that send to each other, stage 0 the end whose
/// first point-to-point kernel is a send).
/// Where the kernel view's layout came from.
enum class KernelLayoutSource : std::uint8_t {
  none,            ///< not found
  process_group,   ///< a group naming the pipeline
  point_to_point,  ///< the point-to-point pattern
};

/// "process_group", "point_to_point" (summary.json's `kernel_view.layout.source`), "".
std::string_view kernel_layout_source_name(KernelLayoutSource source);

struct KernelLayout {
  KernelLayoutSource source = KernelLayoutSource::none;
  /// The pipeline group's description (or name) for "process_group".
  std::string group;
  int pp = 0;  ///< stages per pipeline (0: not found)
  int dp = 0;  ///< pipelines
};

struct KernelView {
  /// False when no trace has a GPU activity (nothing else is set).
  bool available = false;
  /// Non-empty when the traces' ranks cannot be told (two traces claim one
  /// rank, or a trace's evidence conflicts): the analysis must refuse (exit
  /// 2) with this message, naming the traces; nothing else is set.
  std::string refusal;
  /// Whether steps come from ProfilerStep#N spans (else one window, step 0).
  bool step_spans = false;
  std::vector<KernelStepWindow> steps;
  /// Ranks in global-rank order.
  std::vector<KernelRankView> ranks;
  /// Over ranks and complete steps.
  KernelSplit total;
  std::uint64_t gpu_activities = 0;
  std::uint64_t without_launch = 0;
  std::uint64_t comm_kernels = 0;
  std::uint64_t comm_kernels_without_peers = 0;
  KernelClock clock;
  KernelLayout layout;
  std::vector<Warning> warnings;

  /// (window − compute) / window over ranks and complete steps; 0 for none.
  double bubble_ratio() const;
  /// part / window over ranks and complete steps; 0 for none.
  double share(std::int64_t part) const;
};

struct KernelViewOptions {
  /// Apply the cross-machine offsets found (`--no-clock-fix` turns it off:
  /// they are still estimated and reported).
  bool fix_clocks = true;
  /// How the clock note names the option that turned them off
  /// (model/option_words.h: CallerOption::no_clock_fix). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

/// The kernel view of `ranks` (Run::kernels). Never throws for the data.
KernelView compute_kernel_view(const std::vector<RankKernels>& ranks,
                               const KernelViewOptions& options = {});

}  // namespace pipescope
