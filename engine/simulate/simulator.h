// Event-driven timing of a pipeline schedule: when every job of every device
// starts and ends, step after step, under a simple cost model.
//
// Each stage runs its ScheduleOps in order; an op starts when its device is
// free and its input has arrived (list scheduling). With g the global stage of
// an op's chunk (schedule.h, global_stage: c·P + s, or s and 2P-1-s in a V):
//   F(m) on g waits for F(m) on g-1;
//   B(m) (whole or input half) on g waits for B(m) on g+1;
//   W and the last global stage's first B follow their own F/B by order.
// Data sent between devices arrives p2p_latency_ns after the producer (or its
// send job) ends; two chunks of one rank pass data without a send, a recv or
// latency (PyTorch's V-schedule special case). After its last op each stage runs an optimizer job;
// its next step starts step_gap_ns later. Tensor-parallel peers of a stage run the same jobs at the
// same times; a per-machine clock skew is then added.
//
// Usage:
//   SimConfig config;  config.shape = {ScheduleKind::zbh1, 4, 8};
//   SimulatedRun run = simulate(config);      // throws std::invalid_argument
//   for (const SimJob& job : run.jobs[device]) ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/option_words.h"
#include "simulate/schedule.h"

namespace pipescope::sim {

/// Mean durations of one stage's ops, in ns.
struct StageCosts {
  std::int64_t forward_ns = 12'000'000;
  /// B (input gradient) of a split backward; a whole backward costs B + W.
  std::int64_t backward_ns = 12'000'000;
  std::int64_t weight_ns = 10'000'000;
};

/// A stage busy with something else (a checkpoint save, a slow data loader)
/// for `ns` before its first op of 0-based step `step`; the other stages go
/// on and wait for it where the schedule makes them.
struct SimStall {
  int step = 0;
  int stage = 0;
  std::int64_t ns = 0;
};

struct SimConfig {
  ScheduleShape shape;
  /// Training steps simulate() runs (Simulator::next_step can go on).
  int steps = 3;
  /// Devices per stage (a tensor-parallel group running identical jobs).
  int devices_per_stage = 1;
  /// Devices are split evenly over this many machines, stage-major.
  int machines = 1;
  std::uint64_t seed = 1;
  /// Start of the first step, epoch ns (rounded down to resolution_ns).
  std::int64_t start_ns = 1'697'793'307'213'000'000;
  /// Every duration, latency and gap is rounded to a multiple of this (1000 =
  /// whole microseconds, 1 = nanoseconds); job durations are at least one unit.
  std::int64_t resolution_ns = 1000;
  /// Costs of every stage unless stage_costs (one entry per stage) is given.
  StageCosts costs;
  std::vector<StageCosts> stage_costs;
  /// Multiplies a stage's op costs (a slow stage); empty or one per stage.
  std::vector<double> stage_slowdown;
  std::int64_t optimizer_ns = 8'000'000;
  std::int64_t p2p_latency_ns = 150'000;
  /// Duration of a send job and the minimum duration of a recv job.
  std::int64_t comm_ns = 30'000;
  std::int64_t step_gap_ns = 2'000'000;
  /// Each cost is mean · (1 + jitter · u), u uniform in [-1, 1) from the seed.
  double jitter = 0.1;
  /// Emit recv_forward/send_forward/recv_backward/send_backward jobs around
  /// compute jobs (blocking: a recv lasts until its data has arrived).
  bool comm_jobs = false;
  /// Emit an `lr` job at the start of each step on every stage, before its
  /// first op, as Paddle's 2023 static pipeline passes do (lr, forwards,
  /// backwards, optimizer).
  bool lr_jobs = false;
  /// Mean duration of an lr job.
  std::int64_t lr_ns = 200'000;
  /// ns added to every time of a machine's devices; empty or one per machine.
  std::vector<std::int64_t> machine_skew_ns;
  /// Stalls before a stage's first op of a step (`simulate --stall`).
  std::vector<SimStall> stalls;
  /// How the messages name the caller's options (model/option_words.h): the
  /// chunks, the time resolution, replacing a folder's files (force). Never
  /// null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
};

enum class SimJobType : std::uint8_t {
  forward,
  /// A whole backward.
  backward,
  /// The input-gradient half of a split backward (zero-bubble schedules).
  backward_b,
  /// The weight-gradient half of a split backward.
  backward_w,
  optimizer,
  send_forward,
  recv_forward,
  send_backward,
  recv_backward,
  /// The learning-rate job that opens a step (SimConfig::lr_jobs); last, so
  /// that the other types keep their ids.
  lr,
};

/// A send or receive: comm time, not busy time, in the contract.
inline bool is_comm_job(SimJobType type) {
  return type == SimJobType::send_forward || type == SimJobType::recv_forward ||
         type == SimJobType::send_backward || type == SimJobType::recv_backward;
}

struct SimJob {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// 0-based step this job belongs to under the metric contract: the step
  /// whose ops it runs (a recv before a step's first forward opens that step
  /// with it).
  std::int32_t step = 0;
  std::int32_t micro_batch = 0;
  std::int16_t chunk = 0;
  SimJobType type = SimJobType::forward;
};

struct SimDeviceInfo {
  /// Global device index (machines in order, ranks in order).
  int index = 0;
  int machine = 0;
  int rank = 0;
  int stage = 0;
};

/// Validates config (throws std::invalid_argument) and lays out the devices.
std::vector<SimDeviceInfo> layout_devices(const SimConfig& config);

/// Simulates step after step; keeps only what the next step needs, so that
/// arbitrarily long runs can be streamed to disk.
class Simulator {
 public:
  /// Throws std::invalid_argument for an invalid config.
  explicit Simulator(SimConfig config);

  const SimConfig& config() const { return config_; }
  const std::vector<SimDeviceInfo>& devices() const { return devices_; }
  int steps_done() const { return step_; }
  /// When the next step (the one next_step simulates) begins on `stage`: the
  /// run's start for the first step, else the stage's optimizer end plus the
  /// step gap; before any clock skew. A device of the stage is free from then
  /// until its first job of the step.
  std::int64_t step_start(int stage) const { return stage_start_.at(stage); }

  /// Simulates the next step; jobs[d] receives device d's jobs in execution
  /// order (non-overlapping, increasing times). jobs is resized to the device count.
  void next_step(std::vector<std::vector<SimJob>>& jobs);

 private:
  std::int64_t cost(int stage, int op_index, int salt, std::int64_t mean_ns) const;

  SimConfig config_;
  std::vector<SimDeviceInfo> devices_;
  std::vector<std::vector<ScheduleOp>> ops_;  // per stage
  std::vector<std::int64_t> stage_start_;     // next step's start, per stage
  int step_ = 0;
};

struct SimulatedRun {
  std::vector<SimDeviceInfo> devices;
  /// jobs[d]: device d's jobs of all steps, in execution order.
  std::vector<std::vector<SimJob>> jobs;
};

/// Runs config.steps steps.
SimulatedRun simulate(const SimConfig& config);

/// How chunk numbers appear in interleaved type names.
enum class ChunkNaming {
  digit,  ///< forward0, backward1
  paren,  ///< forward(chunk0), backward(chunk1)
};

/// The PaddlePaddle type name of a job: forward, backward, backward_b,
/// backward_w, optimizer, send_forward, ..., lr; compute jobs of a schedule
/// with chunks (has_chunks) carry their chunk ("forward1" or "forward(chunk1)").
std::string job_type_name(const SimJob& job, bool chunked, ChunkNaming naming);

/// Whether a type begins a compute op (not a send/recv/optimizer job).
bool is_compute(SimJobType type);

}  // namespace pipescope::sim
