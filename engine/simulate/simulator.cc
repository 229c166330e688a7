#include "simulate/simulator.h"

#include <fmt/core.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "simulate/split_mix.h"

namespace pipescope::sim {

namespace {

constexpr std::int64_t kNotYet = std::numeric_limits<std::int64_t>::min();
constexpr int kMaxDevicesPerStage = 1024;
constexpr int kMaxDevices = 1 << 16;
// Keeps every simulated time far from int64 overflow (about year 2096).
constexpr std::int64_t kMaxStartNs = 4'000'000'000'000'000'000;

/// Uniform in [-1, 1), a pure function of its arguments.
double unit_noise(std::uint64_t seed, int step, int stage, int op, int salt) {
  std::uint64_t h = mix(seed);
  h = mix(h ^ static_cast<std::uint64_t>(step));
  h = mix(h ^ (static_cast<std::uint64_t>(stage) << 20 ^ static_cast<std::uint64_t>(salt)));
  h = mix(h ^ static_cast<std::uint64_t>(op));
  return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
}

std::int64_t round_to(std::int64_t ns, std::int64_t resolution) {
  return (ns + resolution / 2) / resolution * resolution;
}

void require(bool ok, std::string_view message) {
  if (!ok) throw std::invalid_argument(std::string(message));
}

bool valid_costs(const StageCosts& c) {
  return c.forward_ns > 0 && c.backward_ns > 0 && c.weight_ns > 0;
}

// Salts keep the jitter of different job types of one op independent.
enum Salt : int { kSaltCompute = 1, kSaltRecv = 2, kSaltSend = 3, kSaltOptimizer = 4, kSaltLr = 5 };

}  // namespace

std::vector<SimDeviceInfo> layout_devices(const SimConfig& config) {
  validate_schedule(config.shape, *config.words);
  const int p = config.shape.stages;
  require(config.steps >= 1,
          fmt::format("number of steps must be at least 1, got {}", config.steps));
  require(config.devices_per_stage >= 1 && config.devices_per_stage <= kMaxDevicesPerStage,
          fmt::format("devices per stage must be in 1..{}, got {}", kMaxDevicesPerStage,
                      config.devices_per_stage));
  const long long device_count = static_cast<long long>(p) * config.devices_per_stage;
  require(device_count <= kMaxDevices,
          fmt::format("at most {} devices, got {}", kMaxDevices, device_count));
  require(config.machines >= 1 && config.machines <= device_count &&
              device_count % config.machines == 0,
          fmt::format("{} devices cannot be split evenly over {} machines", device_count,
                      config.machines));
  require(config.resolution_ns >= 1 && config.resolution_ns <= 1'000'000,
          fmt::format("time resolution must be 1..1000000 ns, got {}", config.resolution_ns));
  require(config.start_ns > 0 && config.start_ns < kMaxStartNs,
          fmt::format("start time must be a positive epoch ns value, got {}", config.start_ns));
  require(valid_costs(config.costs), "forward, backward and weight costs must be positive");
  require(config.stage_costs.empty() || static_cast<int>(config.stage_costs.size()) == p,
          fmt::format("need one cost entry per stage ({}), got {}", p, config.stage_costs.size()));
  for (const auto& c : config.stage_costs) {
    require(valid_costs(c), "forward, backward and weight costs must be positive");
  }
  require(config.stage_slowdown.empty() || static_cast<int>(config.stage_slowdown.size()) == p,
          fmt::format("need one slowdown factor per stage ({}), got {}", p,
                      config.stage_slowdown.size()));
  for (double f : config.stage_slowdown) {
    require(std::isfinite(f) && f > 0 && f <= 1000,
            fmt::format("slowdown factors must be in (0, 1000], got {}", f));
  }
  require(config.optimizer_ns > 0 && config.comm_ns > 0 && config.lr_ns > 0,
          "optimizer, comm and lr costs must be positive");
  require(config.p2p_latency_ns >= 0 && config.step_gap_ns >= 0,
          "p2p latency and step gap must not be negative");
  for (const SimStall& stall : config.stalls) {
    require(stall.step >= 0 && stall.stage >= 0 && stall.stage < p,
            fmt::format("a stall needs a step >= 0 and a stage in 0..{}, got step {} stage {}",
                        p - 1, stall.step, stall.stage));
    require(stall.ns > 0 && stall.ns <= 3'600'000'000'000,
            fmt::format("a stall lasts more than 0 and at most an hour, got {} ns", stall.ns));
  }
  require(std::isfinite(config.jitter) && config.jitter >= 0 && config.jitter <= 0.9,
          fmt::format("jitter must be in [0, 0.9], got {}", config.jitter));
  require(config.machine_skew_ns.empty() ||
              static_cast<int>(config.machine_skew_ns.size()) == config.machines,
          fmt::format("need one clock skew per machine ({}), got {}", config.machines,
                      config.machine_skew_ns.size()));
  for (std::int64_t skew : config.machine_skew_ns) {
    // Keeps every skewed time positive and far from overflow.
    require(skew > -config.start_ns / 2 && skew < kMaxStartNs,
            fmt::format("clock skew {} ns is out of range", skew));
  }

  const int per_machine = static_cast<int>(device_count / config.machines);
  std::vector<SimDeviceInfo> devices(static_cast<std::size_t>(device_count));
  for (int d = 0; d < static_cast<int>(device_count); ++d) {
    devices[d] = {d, d / per_machine, d % per_machine, d / config.devices_per_stage};
  }
  return devices;
}

Simulator::Simulator(SimConfig config) : config_(std::move(config)) {
  devices_ = layout_devices(config_);
  const int p = config_.shape.stages;
  ops_.reserve(p);
  for (int s = 0; s < p; ++s) ops_.push_back(stage_ops(config_.shape, s));
  const std::int64_t res = config_.resolution_ns;
  stage_start_.assign(p, config_.start_ns / res * res);
}

std::int64_t Simulator::cost(int stage, int op_index, int salt, std::int64_t mean_ns) const {
  double factor = 1.0 + config_.jitter * unit_noise(config_.seed, step_, stage, op_index, salt);
  if (!config_.stage_slowdown.empty()) factor *= config_.stage_slowdown[stage];
  const auto ns = static_cast<std::int64_t>(std::llround(static_cast<double>(mean_ns) * factor));
  const std::int64_t res = config_.resolution_ns;
  return std::max(round_to(ns, res), res);
}

namespace {

/// Where an op's input comes from and its output goes (a recv/send job and
/// the p2p latency when that is another device: two chunks of one rank pass
/// data in memory), and its mean cost and job types.
struct OpFlow {
  bool has_input = false;
  bool has_output = false;
  bool remote_input = false;
  bool remote_output = false;
  std::int64_t input_ready = kNotYet;  ///< when its input is there (kNotYet: not yet)
  std::int64_t mean = 0;
  SimJobType type = SimJobType::forward;
  SimJobType recv_type = SimJobType::recv_forward;
  SimJobType send_type = SimJobType::send_forward;
};

/// The flow of `op` of rank `s` at global stage g; `rank_of`: the rank of
/// each global stage; `f_ready`/`b_ready`: outputs' times by (stage, micro-batch).
OpFlow op_flow(const ScheduleOp& op, int g, int s, const std::vector<int>& rank_of,
               const StageCosts& costs, const std::vector<std::int64_t>& f_ready,
               const std::vector<std::int64_t>& b_ready, int m) {
  OpFlow f;
  const int global_stages = static_cast<int>(rank_of.size());
  auto slot = [&](int stage, int mb) { return static_cast<std::size_t>(stage) * m + mb; };
  switch (op.kind) {
    case OpKind::forward:
      if (g > 0) {
        f.has_input = true;
        f.remote_input = rank_of[g - 1] != s;
        f.input_ready = f_ready[slot(g - 1, op.micro_batch)];
      }
      f.has_output = g < global_stages - 1;
      f.remote_output = f.has_output && rank_of[g + 1] != s;
      f.mean = costs.forward_ns;
      break;
    case OpKind::backward:
    case OpKind::backward_input:
      if (g < global_stages - 1) {
        f.has_input = true;
        f.remote_input = rank_of[g + 1] != s;
        f.input_ready = b_ready[slot(g + 1, op.micro_batch)];
      }
      f.has_output = g > 0;
      f.remote_output = f.has_output && rank_of[g - 1] != s;
      if (op.kind == OpKind::backward) {
        f.mean = costs.backward_ns + costs.weight_ns;
        f.type = SimJobType::backward;
      } else {
        f.mean = costs.backward_ns;
        f.type = SimJobType::backward_b;
      }
      f.recv_type = SimJobType::recv_backward;
      f.send_type = SimJobType::send_backward;
      break;
    case OpKind::weight:
      f.mean = costs.weight_ns;
      f.type = SimJobType::backward_w;
      break;
  }
  return f;
}

}  // namespace

void Simulator::next_step(std::vector<std::vector<SimJob>>& jobs) {
  const ScheduleShape& shape = config_.shape;
  const int p = shape.stages;
  const int m = shape.micro_batches;
  const int v = shape.chunks;
  const std::int64_t res = config_.resolution_ns;
  const std::int64_t latency = round_to(config_.p2p_latency_ns, res);
  const int step = step_;

  // Time at which the output of F(m) / B(m) of global stage g (chunk c of
  // rank s, see global_stage) is available to its consumer; kNotYet until
  // that op has been scheduled.
  const int global_stages = p * v;
  const std::size_t slots = static_cast<std::size_t>(m) * global_stages;
  std::vector<std::int64_t> f_ready(slots, kNotYet);
  std::vector<std::int64_t> b_ready(slots, kNotYet);
  auto slot = [&](int g, int mb) { return static_cast<std::size_t>(g) * m + mb; };
  // Rank holding each global stage.
  std::vector<int> rank_of(global_stages, 0);
  for (int s = 0; s < p; ++s) {
    for (int c = 0; c < v; ++c) rank_of[global_stage(shape, s, c)] = s;
  }

  std::vector<std::vector<SimJob>> stage_jobs(p);
  std::vector<std::size_t> next(p, 0);
  std::vector<std::int64_t> free_at = stage_start_;
  for (const SimStall& stall : config_.stalls) {
    if (stall.step == step) free_at[stall.stage] += round_to(stall.ns, res);
  }
  if (config_.lr_jobs) {
    // The step's first job on every stage (it opens the step under the contract).
    for (int s = 0; s < p; ++s) {
      const std::int64_t end = free_at[s] + cost(s, 0, kSaltLr, config_.lr_ns);
      stage_jobs[s].push_back({free_at[s], end, step, 0, 0, SimJobType::lr});
      free_at[s] = end;
    }
  }
  std::size_t remaining = 0;
  for (const auto& ops : ops_) remaining += ops.size();

  // Round-robin over stages, running each as far as its inputs allow. The
  // schedules are deadlock-free, so every sweep makes progress.
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      const auto& ops = ops_[s];
      const StageCosts& costs =
          config_.stage_costs.empty() ? config_.costs : config_.stage_costs[s];
      auto& out = stage_jobs[s];
      while (next[s] < ops.size()) {
        const ScheduleOp& op = ops[next[s]];
        const int index = static_cast<int>(next[s]);
        const int g = global_stage(shape, s, op.chunk);
        const OpFlow flow = op_flow(op, g, s, rank_of, costs, f_ready, b_ready, m);
        const bool has_input = flow.has_input, remote_input = flow.remote_input;
        const bool remote_output = flow.remote_output;
        const std::int64_t input_ready = flow.input_ready, mean = flow.mean;
        const SimJobType type = flow.type, recv_type = flow.recv_type, send_type = flow.send_type;
        if (has_input && input_ready == kNotYet) break;

        const auto mb = op.micro_batch;
        const auto chunk = static_cast<std::int16_t>(op.chunk);
        std::int64_t t = free_at[s];
        if (remote_input && config_.comm_jobs) {
          // A blocking recv: busy from when the device asks until data arrives.
          const std::int64_t end =
              std::max(t + cost(s, index, kSaltRecv, config_.comm_ns), input_ready);
          out.push_back({t, end, step, mb, chunk, recv_type});
          t = end;
        } else if (has_input) {
          t = std::max(t, input_ready);
        }
        const std::int64_t end = t + cost(s, index, kSaltCompute, mean);
        out.push_back({t, end, step, mb, chunk, type});
        t = end;
        if (remote_output && config_.comm_jobs) {
          const std::int64_t send_end = t + cost(s, index, kSaltSend, config_.comm_ns);
          out.push_back({t, send_end, step, mb, chunk, send_type});
          t = send_end;
        }
        const std::int64_t ready = t + (remote_output ? latency : 0);
        if (op.kind == OpKind::forward) f_ready[slot(g, mb)] = ready;
        if (op.kind == OpKind::backward || op.kind == OpKind::backward_input) {
          b_ready[slot(g, mb)] = ready;
        }
        free_at[s] = t;
        ++next[s];
        --remaining;
        progress = true;
      }
    }
    if (!progress) throw std::logic_error("pipeline schedule deadlocked (simulator bug)");
  }

  const std::int64_t gap = round_to(config_.step_gap_ns, res);
  for (int s = 0; s < p; ++s) {
    const std::int64_t t = free_at[s];
    const std::int64_t end = t + cost(s, 0, kSaltOptimizer, config_.optimizer_ns);
    stage_jobs[s].push_back({t, end, step, 0, 0, SimJobType::optimizer});
    stage_start_[s] = end + gap;
    // Under the contract the recv before a step's first forward opens that
    // step with it, so every job of this step keeps its step number.
  }

  jobs.resize(devices_.size());
  for (const auto& device : devices_) {
    auto& out = jobs[device.index];
    out = stage_jobs[device.stage];
    if (!config_.machine_skew_ns.empty()) {
      const std::int64_t skew = config_.machine_skew_ns[device.machine];
      for (auto& job : out) {
        job.start_ns += skew;
        job.end_ns += skew;
      }
    }
  }
  ++step_;
}

SimulatedRun simulate(const SimConfig& config) {
  Simulator simulator(config);
  SimulatedRun run;
  run.devices = simulator.devices();
  run.jobs.resize(run.devices.size());
  std::vector<std::vector<SimJob>> step_jobs;
  for (int k = 0; k < config.steps; ++k) {
    simulator.next_step(step_jobs);
    for (std::size_t d = 0; d < step_jobs.size(); ++d) {
      run.jobs[d].insert(run.jobs[d].end(), step_jobs[d].begin(), step_jobs[d].end());
    }
  }
  return run;
}

bool is_compute(SimJobType type) {
  return type == SimJobType::forward || type == SimJobType::backward ||
         type == SimJobType::backward_b || type == SimJobType::backward_w;
}

std::string job_type_name(const SimJob& job, bool chunked, ChunkNaming naming) {
  std::string_view base;
  switch (job.type) {
    case SimJobType::forward:
      base = "forward";
      break;
    case SimJobType::backward:
      base = "backward";
      break;
    case SimJobType::backward_b:
      base = "backward_b";
      break;
    case SimJobType::backward_w:
      base = "backward_w";
      break;
    case SimJobType::optimizer:
      return "optimizer";
    case SimJobType::send_forward:
      return "send_forward";
    case SimJobType::recv_forward:
      return "recv_forward";
    case SimJobType::send_backward:
      return "send_backward";
    case SimJobType::recv_backward:
      return "recv_backward";
    case SimJobType::lr:
      return "lr";
  }
  if (!chunked) return std::string(base);
  if (naming == ChunkNaming::paren) return fmt::format("{}(chunk{})", base, job.chunk);
  return fmt::format("{}{}", base, job.chunk);
}

}  // namespace pipescope::sim
