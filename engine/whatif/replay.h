// What-if replay: a measured run's own costs (per-stage forward, backward and
// weight-gradient job durations, the latency between dependent jobs of
// neighbouring stages, the optimizer time and the step-to-step overhead),
// replayed through another schedule of the table (analysis/schedule_table.h),
// another micro-batch count M or another chunk count V.
//
// The model (docs/guide.md, "What if"):
//   - a stage's op costs are drawn from its measured jobs of the complete
//     steps (all devices of the stage pooled), one draw per op, so that the
//     replay shows the spread the measured costs imply; with V chunks a
//     stage's costs are divided by V (the measured ones multiplied by the
//     measured V first); a stage that logged no split backward has its
//     whole backward split by ReplayOptions::weight_share where a schedule
//     splits it, and one that logged only halves has them joined (input
//     half + weight half) where a schedule runs a whole backward;
//   - every job starts the measured launch overhead after both its device is
//     free and its input is there (whatif/link_costs.h); an overlapped F+B
//     action (DualPipeV's) runs as torch runs it, its backward launched with
//     its forward and both outputs sent after it (WhatifInputs::
//     overlap_actions), or as one job where the run timed it so; Paddle's
//     backward-forward overlap pieces run interleaved in 1F1B scenarios
//     (WhatifInputs::pieces);
//   - data sent between ranks arrives the measured latency after its
//     producer ends (the median over the dependent pairs whose consumer
//     waited for its input, same machine and across machines separately);
//     two chunks of one rank pass data without latency;
//   - after its last op each stage runs its optimizer (drawn) the measured
//     optimizer wait later, and its next step starts the measured step
//     overhead later (stage 0's optimizer end to the first job of its next
//     step, less the launch overhead); an `lr` job opens each step when the
//     measured run logged one.
// Only job durations are drawn, so a replay's spread is the measured cost
// spread: none on a run without jitter.
// The replay writes its timeline as a Run and measures it with the metric
// contract (analysis/metrics.h), so a predicted step time and bubble ratio
// mean exactly what the measured ones mean. Send/recv jobs are not replayed
// as device time, and a different M scales the global batch.
//
// Usage:
//   WhatifInputs in = measure_whatif_inputs(loaded.run, loaded.metrics, loaded.pipeline);
//   std::string problem = scenario_problem({ScheduleId::paddle_vpp, 8, 2}, in.measured.stages);
//   Replay r = replay_scenario(in, {ScheduleId::paddle_vpp, 8, 2}, ReplayOptions{});
//   r.prediction.step_ns, r.run (the predicted timeline), r.metrics
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/schedule_table.h"
#include "model/run.h"
#include "whatif/link_costs.h"

namespace pipescope {

/// The short name of a schedule with a job list ("fthenb", "1f1b",
/// "eager1f1b", "vpp", "zbh1", "dygraph-1f1b", "dygraph-interleave",
/// "torch-gpipe", "torch-1f1b", "torch-interleaved1f1b",
/// "torch-interleavedzerobubble", "torch-zbvzerobubble", "torch-dualpipev":
/// the names `simulate` takes); "" for ZBVPP (no job list).
std::string_view whatif_schedule_name(ScheduleId id);
/// The schedule of a short name (case-insensitive); nullopt otherwise.
std::optional<ScheduleId> parse_whatif_schedule(std::string_view name);
/// Every schedule the replay knows, in table order.
std::vector<ScheduleId> whatif_schedules();

/// One stage's measured costs, each sample in ns for the whole stage (a
/// chunk's duration times the measured V).
struct StageSamples {
  std::vector<double> forward;
  /// Whole backwards (a replay joins the two halves where a stage logged none).
  std::vector<double> backward;
  /// Input and weight halves (a replay splits a whole backward by the weight
  /// share where a stage logged none; Paddle's ZBH1 logs both kinds).
  std::vector<double> backward_input;
  std::vector<double> weight;
  std::vector<double> optimizer;
  std::vector<double> lr;
  /// Optimizer start − the end of the stage's previous job of the step, less
  /// the launch overhead (≥ 0): a wait before the optimizer (a gradient
  /// all-reduce, for one) that is none of the pipeline's ops.
  std::vector<double> optimizer_wait;
  /// PyTorch's overlapped F+B actions that the trace timed as one job
  /// (JobRole::joined), by the chunk of their forward: the action's duration
  /// (ns, as measured: the forward, any wait for the backward's input, the
  /// backward). Only a DualPipeV scenario of a DualPipeV run replays them.
  std::vector<std::vector<double>> joined;
  /// Paddle's 1F1B with backward-forward overlap: each piece's share of its
  /// op (the mean of piece k over the mean of the pieces' sum), forwards and
  /// backwards apart; empty where the stage logged no piece.
  std::vector<double> forward_piece_share;
  std::vector<double> backward_piece_share;
  /// The machine of the stage's first device.
  int machine = 0;
};

struct MeasuredRun {
  /// The detected schedule's short name, or its detection name when it is not
  /// one of the table's job lists ("zero-bubble", "unknown", ...).
  std::string schedule;
  std::optional<ScheduleId> id;
  int stages = 0;
  int micro_batches = 0;
  int chunks = 1;
  /// Median window of the complete steps (median_ns_exact), and the
  /// contract's bubble ratio.
  double step_ns = 0;
  double bubble_ratio = 0;
  std::size_t complete_steps = 0;
  /// With several data-parallel replicas: the one replayed (the slowest,
  /// which bounds the step; analysis/replicas.h) and how many there are.
  /// -1 and 0 for a single pipeline.
  int replica = -1;
  int replicas = 0;
  /// The bubble ratio the replay of the measured schedule is held to: the
  /// run's, or the replayed replica's with several.
  double replayed_bubble_ratio = 0;
  /// Per stage: mean busy and idle time of its replayed devices per
  /// complete step (the contract's busy(d,k) and idle(d,k)).
  std::vector<double> stage_busy_ns;
  std::vector<double> stage_idle_ns;
};

/// What a replay needs from a measured run.
struct WhatifInputs {
  MeasuredRun measured;
  std::vector<StageSamples> stages;
  /// True when some stage logged split backwards (backward_b / backward_w).
  bool split_backward = false;
  /// How a scenario runs an overlapped F+B action (ScheduleStep::overlap_next,
  /// DualPipeV's): true as torch's runtime runs its OVERLAP_F_B actions, the
  /// backward right after the forward (no launch overhead of its own, once
  /// its input is there) and both outputs sent after the action
  /// (_add_send_recv); false only for a DualPipeV run that logged those ops
  /// as jobs of their own (no JobRole::overlap mark), each output then sent
  /// at its op's end, as that run did.
  bool overlap_actions = true;
  /// True when some stage holds StageSamples::joined samples.
  bool joined = false;
  /// The pieces Paddle's 1F1B with enable_backward_forward_overlap cut each
  /// steady-phase backward and forward into (forward(chunkK), backward(chunkK),
  /// run interleaved: backward piece 0, forward piece 0, backward piece 1,
  /// ...); 0 without pieces. Paddle's 1F1B scenarios run each such (backward,
  /// forward) pair so (StageSamples::*_piece_share), every other one whole.
  int pieces = 0;
  /// Launch overhead and link latencies (whatif/link_costs.h).
  LinkCosts links;
  /// Stage 0's optimizer end (or last job end) to its next step's first job,
  /// less the launch overhead (≥ 0).
  std::vector<double> step_overhead;
  /// What the measurement could not see and what it assumed instead ("no
  /// consumer waited for data across machines: latency taken as 0", ...).
  std::vector<std::string> notes;

  /// One micro-batch's costs on one stage in one step, whole-stage ns as the
  /// samples of StageSamples (the mean of its ops of a kind, an op's pieces
  /// summed, times the measured V); 0 for a kind it did not log.
  struct CostRow {
    double forward = 0;
    double backward = 0;
    double backward_input = 0;
    double weight = 0;
  };
  /// rows[k][j][s]: stage s's costs of the j-th micro-batch of the k-th
  /// complete step in which every stage ran the same M micro-batches.
  std::vector<std::vector<std::vector<CostRow>>> rows;
  /// The median over pairs of stages of the (Pearson) correlation between
  /// the stages' mean costs per micro-batch: near 1 when the same
  /// micro-batches are dear on every stage, whatever their number; NaN when
  /// it cannot be measured (M < 3, no full row, or a stage whose
  /// micro-batches all cost the same).
  double micro_batch_correlation = 0;
  /// True when micro_batch_correlation >= kSharedPatternCorrelation: a
  /// replay draws a micro-batch's costs on every stage from one measured
  /// micro-batch (rows), keeping what makes it cheap or dear on all of them
  /// (its sequence length, say); else each stage's costs are drawn apart.
  bool shared_pattern = false;
};

/// The correlation from which micro-batch costs count as a pattern the
/// stages share (WhatifInputs::shared_pattern).
inline constexpr double kSharedPatternCorrelation = 0.5;

/// Measures the inputs of a replay. Throws std::invalid_argument when the run
/// has no complete step, no detected pipeline, or a stage without forward or
/// backward jobs.
WhatifInputs measure_whatif_inputs(const Run& run, const Metrics& metrics,
                                   const PipelineAnalysis& pipeline);

struct Scenario {
  ScheduleId schedule = ScheduleId::paddle_1f1b;
  int micro_batches = 1;
  int chunks = 1;
};

/// "" when the schedule runs P stages, M micro-batches and V chunks; else
/// why not, and which M and V work with it (the message names M and V, not
/// any command's options).
std::string scenario_problem(const Scenario& scenario, int stages);

/// Every scenario of the sweep: each schedule × M in {M, 2M, 4M} × V in
/// {1, 2, 4} that the schedule accepts for P stages; of scenarios with the
/// same job lists, the first in table order.
std::vector<Scenario> sweep_scenarios(int stages, int micro_batches);

inline constexpr int kMaxReplaySteps = 1000;
/// The steps, first and last left out, a prediction's spread is taken from
/// (a replay of that many more when it replays fewer).
inline constexpr int kSpreadSteps = 16;

struct ReplayOptions {
  /// Share of a whole backward given to the weight half when a zero-bubble
  /// schedule replays an unsplit run.
  double weight_share = 0.5;
  /// Steps replayed (job durations drawn per op per step); 0: as many as the
  /// measured run's complete steps (at most kMaxReplaySteps), so that a step
  /// that closes the run weighs in the replay what it weighs in the run (the
  /// contract counts the next step's work inside a window; the last has none).
  int steps = 0;
  std::uint64_t seed = 1;
};

/// The steps a replay runs: options.steps, or with 0 the measured complete
/// steps (1 to kMaxReplaySteps).
int replayed_steps(const ReplayOptions& options, const MeasuredRun& measured);

/// Mean costs a scenario used (ns; per chunk op).
struct UsedCosts {
  std::vector<double> forward_ns;
  std::vector<double> backward_ns;  ///< whole backward, or the input half
  std::vector<double> weight_ns;    ///< 0 unless split
  std::vector<double> optimizer_ns;
  double latency_same_machine_ns = 0;
  double latency_cross_machine_ns = 0;
  double launch_overhead_ns = 0;
  std::vector<double> optimizer_wait_ns;
  double step_overhead_ns = 0;
};

struct Prediction {
  Scenario scenario;
  /// Median window of the replayed complete steps (median_ns_exact), and the
  /// 10th and 90th percentiles (rounded_rank: actual windows) of the steps
  /// of a replay of at least kSpreadSteps + 2, its first and last left out:
  /// equal without cost spread. numeric/statistics.h.
  double step_ns = 0;
  double step_p10_ns = 0;
  double step_p90_ns = 0;
  double bubble_ratio = 0;
  /// step_ns / M: the time per micro-batch (the micro-batch size unchanged).
  double step_ns_per_micro_batch = 0;
  /// Per stage: the most micro-batches whose activations are held at once
  /// (from a forward's start to the end of the backward, or weight half, that
  /// frees them), a chunk counting 1/V.
  std::vector<double> in_flight_max;
  UsedCosts costs;
  /// What the scenario predicts beyond what the run measured, each a short
  /// tag (scenario_extrapolations): "V" (another chunk count: a stage split
  /// evenly, no per-chunk cost, which one run cannot measure) and "split
  /// backward" (halves of a backward the run never split, by the weight
  /// share). Empty: the scenario replays only what was measured.
  std::vector<std::string> extrapolates;
};

/// The extrapolations of `scenario` on the measured inputs (Prediction::extrapolates).
std::vector<std::string> scenario_extrapolations(const WhatifInputs& inputs,
                                                 const Scenario& scenario);

struct Replay {
  Prediction prediction;
  /// The predicted timeline: one device per stage, and its metrics.
  Run run;
  Metrics metrics;
};

/// Replays `scenario`. Throws std::invalid_argument with scenario_problem's
/// text for a scenario the schedule does not take.
Replay replay_scenario(const WhatifInputs& inputs, const Scenario& scenario,
                       const ReplayOptions& options);

}  // namespace pipescope
