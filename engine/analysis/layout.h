// The run's parallel layout: which devices form one pipeline stage and which
// stages form one pipeline replica. A hybrid-parallel run lays its ranks on a
// mesh of pp pipeline stages × dp data-parallel replicas × tp tensor-parallel
// peers; the order of the mesh's axes (outermost first, the last one varying
// fastest) says which global rank holds which place:
//   "dp,pp,tp"  PaddlePaddle fleet's default (hybrid_configs "order":
//               dp, pp, sharding, sep, mp; mp is tensor parallelism)
//   "pp,dp,tp"  Megatron-LM ("tp-cp-ep-dp-pp", tp fastest), DeepSpeed's
//               PipeModelDataParallelTopology, torchtitan's device mesh
// For the bubble every device of a stage (each replica's and each peer's) is
// a device of that stage; for dependencies and clocks what matters is which
// devices form one pipeline: a dependency links stage s and s+1 of the same
// replica, peer t to peer t.
//
// detect_layout finds the mesh from the jobs, without trusting clocks:
//  1. Tensor-parallel peers: consecutive devices of one machine that run the
//     same jobs, 90% of them starting and ending within 5% of their length
//     of each other (peers meet in an all-reduce inside every job).
//  2. Every mesh (pp × dp × tp = the ranks, tp innermost; both orders of dp
//     and pp) is tested, the devices placed by their rank in the run
//     (machine × ranks per machine + rank on the machine: a missing rank
//     leaves a hole where it belongs) and again by their order (a selection
//     of devices is a pipeline of its own): the devices of one stage must
//     run the same job list in (nearly) every step, and along every replica
//     each stage must follow
//     the one before it. "Follow" is read from the dependency timing in a
//     way no clock offset changes: for a link a -> b between two machines
//     whose clocks differ by δ, the forwards give start_b(F m) − end_a(F m)
//     = slack + δ and the backwards start_a(B m) − end_b(B m) = slack − δ, so
//     their sum (the round trip) is the true slack of both, ≥ 0 for a real
//     link. Two copies of one stage (replicas, peers) run the same forward at
//     the same time and give about −(F + B); a link against the pipeline's
//     direction less still. The round trip is taken over the 1% quantile of
//     each side (a damaged line does not decide) and must be at least
//     −(F + B) / 4 (the medians of the link's forward and backward lengths).
//  3. Of the meshes that fit, the one with the most stages wins (a mesh with
//     too few stages also fits: its links skip stages, which keeps round
//     trips positive, but a mesh with more stages than the run has needs a
//     link between two copies of one stage), a mesh with a stage that holds
//     no device coming last; then fewer holes, the tensor-parallel size
//     found in step 1, a smaller tp, and the order as listed above.
//  4. No mesh fits: each device is its own stage, and the clocks are not
//     corrected (a dependency between devices that are not adjacent stages
//     of one pipeline would read as skew).
// Replicas timed identically cannot be told from tensor-parallel peers by
// their timing: they are reported as peers; peers that are not the fastest
// axis of the rank order (no framework lays them out so) are found as
// replicas. Stages and the bubble are the same either way; `--layout`
// states the truth.
//
// Usage:
//   Layout layout = detect_layout(run, metrics.job_step, roles);
//   layout.stages (the stage map), layout.replicas, describe_layout(layout)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/job_role.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

enum class LayoutAxis : std::uint8_t { dp, pp, tp };

/// A mesh: its sizes and the order of its axes, outermost first.
struct LayoutShape {
  int pp = 1;
  int dp = 1;
  int tp = 1;
  std::array<LayoutAxis, 3> order{LayoutAxis::dp, LayoutAxis::pp, LayoutAxis::tp};

  std::int64_t ranks() const {
    return static_cast<std::int64_t>(pp) * static_cast<std::int64_t>(dp) *
           static_cast<std::int64_t>(tp);
  }
  friend bool operator==(const LayoutShape&, const LayoutShape&) = default;
};

/// The place of a global rank in a mesh.
struct MeshPlace {
  int replica = 0;
  int stage = 0;
  int peer = 0;
};

/// Where `rank` sits in `shape` (rank < shape.ranks()).
MeshPlace mesh_place(const LayoutShape& shape, std::int64_t rank);

/// "dp,pp,tp".
std::string layout_order_name(const std::array<LayoutAxis, 3>& order);

/// "pp=4,dp=8,tp=8" or "pp=4,dp=8,tp=8,order=pp,dp,tp" (any order of the
/// sizes; an absent size is 1; order defaults to dp,pp,tp). Throws
/// std::invalid_argument whose message starts with `label` and the spec.
LayoutShape parse_layout_spec(std::string_view spec, std::string_view label);

/// How the layout was found (summary.json layout.method).
enum class LayoutMethod {
  detected,  ///< "detected": from job order and dependency timing
  given,     ///< "given": stated (--layout)
  stages,    ///< "stages": a stage map was given (--stages): one replica
  none,      ///< "none": no mesh fits; each device is its own stage
};

/// "detected", "given", "stages" or "none".
std::string_view layout_method_name(LayoutMethod method);

struct Layout {
  LayoutMethod method = LayoutMethod::none;
  /// The mesh (method none: pp = the devices, dp = tp = 1; stages: pp = the
  /// stage count, tp = the devices of its largest stage).
  LayoutShape shape;
  /// The stage map the analysis uses: each stage's devices are every
  /// replica's and peer's; StageMap::partner pairs them within replicas.
  StageMap stages;
  /// replicas[r]: positions in Run::devices of replica r's devices,
  /// ascending; one replica holding every device when dp is 1.
  std::vector<std::vector<std::size_t>> replicas;
  /// What it was found from ("job order and dependencies", or the option),
  /// and for method none why no mesh fits.
  std::string evidence;
  std::string reason;

  /// Whether the clocks may be corrected from its dependencies.
  bool aligns_clocks() const { return method != LayoutMethod::none; }
};

/// "pp=4 × dp=8 × tp=8": every size, in that order.
std::string describe_layout_shape(const LayoutShape& shape);

/// Detection reads the jobs of the run's first kLayoutSteps steps only (and
/// every device's place): the same layout comes from a run that holds only
/// those jobs, which is all the partitioned analysis gathers to decide it.
inline constexpr std::int32_t kLayoutSteps = 16;

/// Finds the layout (see above). `job_step` is Metrics::job_step.
Layout detect_layout(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<JobRole>& roles);

/// The layout a stated mesh gives. Throws std::invalid_argument (message
/// starting with `label`) when a device's global index lies outside it.
Layout layout_from_shape(const Run& run, const LayoutShape& shape, std::string_view label);

/// The layout of a stage map given as such: one replica.
Layout layout_from_stage_map(const Run& run, StageMap stages);

}  // namespace pipescope
