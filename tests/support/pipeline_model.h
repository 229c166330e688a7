// Test helper: a small discrete-event model of a pipeline-parallel run,
// written apart from engine/simulate and from the what-if replay's timing
// (engine/whatif/replay.cc) so that the replay can be checked against rules
// it did not write (tests/whatif/fidelity_test.cc, tests/cli/whatif_cli_test.cc).
//
// It takes only the job lists from the schedule table (transcribed from the
// frameworks and tested on their own) and the replay's documented cost
// assumptions: a stage's costs divided by V, a whole backward split by the
// weight share where a schedule splits it, a micro-batch's cost unchanged
// with M. Everything else is its own:
//   - one time-ordered event queue: a job ends, data arrives, a device wakes;
//   - global stage g of (rank s, chunk c) is c·P + s (looped) or s / 2P-1-s
//     (V-shaped), placed here, not through the table's global_stage();
//   - a forward of g needs the forward of g-1, a backward (or its input half)
//     of g the one of g+1 (the last global stage: its own forward), a weight
//     half its own input half;
//   - data arrives `latency` after its producer ends: latency_same_ns between
//     ranks of one machine, latency_cross_ns across machines, 0 between two
//     chunks of one rank;
//   - a job starts launch_overhead_ns after both its device is free and its
//     input has arrived (a device still busy when the data arrives starts it
//     when free: the queueing the replay must not take for latency);
//   - after its last op a rank runs its optimizer by the same rule, then waits
//     the step's host gap (host_gap_ns, one per step boundary, cycled) before
//     its next step;
//   - an overlapped F+B action (ScheduleStep::overlap_next: DualPipeV's, as
//     torch's runtime runs an OVERLAP_F_B action) starts its backward, with no
//     launch overhead, once its forward is done and the backward's input is
//     there, and sends both outputs when the backward ends; their job types
//     carry the `(overlap)` mark, as pipescope names them from a trace;
//   - ranks are split into `machines` contiguous blocks;
//   - optionally, a host stall on one rank (stall_ns), which the replay has
//     no rule for: a run it must say it cannot reproduce.
// Its figures (step windows, busy, bubble) are computed here too, from the
// contract's definitions, so a test can also check them against
// compute_metrics on the same Run.
//
// Usage:
//   ModelConfig c; c.schedule = ScheduleId::paddle_1f1b; c.stages = 4; ...
//   ModelRun m = run_model(c);   // m.run (a finalized Run), m.step_ns, m.bubble_ratio
//   write_model_logs(m, dir);    // dir/machineK/workerlog.N job lines
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/schedule_table.h"
#include "model/run.h"

namespace pipescope::testing {

struct ModelConfig {
  ScheduleId schedule = ScheduleId::paddle_1f1b;
  int stages = 4;
  int micro_batches = 8;
  int chunks = 1;
  /// Per stage (the whole stage, all its chunks): a forward and a whole
  /// backward of one micro-batch, and the optimizer.
  std::vector<std::int64_t> forward_ns;
  std::vector<std::int64_t> backward_ns;
  std::vector<std::int64_t> optimizer_ns;
  double weight_share = 0.5;
  std::int64_t latency_same_ns = 0;
  std::int64_t latency_cross_ns = 0;
  std::int64_t launch_overhead_ns = 0;
  int machines = 1;
  /// The host's time between a rank's optimizer end and its next step, one
  /// per step boundary (cycled; empty: 0).
  std::vector<std::int64_t> host_gap_ns;
  int steps = 3;
  /// A host stall the replay cannot see (a garbage collection, a data-loader
  /// hiccup): every stall_every-th op of rank stall_rank starts stall_ns
  /// later than the rule says (0: none).
  std::int64_t stall_ns = 0;
  int stall_rank = 0;
  int stall_every = 4;
  /// Where time 0 of the run lies (epoch ns: the logs hold absolute times).
  std::int64_t epoch_ns = 1'700'000'000'000'000'000;
};

struct ModelRun {
  ModelConfig config;
  /// One device per rank, machine = its block; finalized.
  Run run;
  /// Per step: the contract's window [S_k, E_k) and Σ_d idle.
  std::vector<std::int64_t> window_ns;
  std::vector<std::int64_t> idle_ns;
  /// Median window and Σ idle / (D · Σ window) over all steps.
  double step_ns = 0;
  double bubble_ratio = 0;
};

namespace model_detail {

enum class Op : std::uint8_t { forward, backward, input_half, weight, optimizer };

struct PlannedOp {
  Op op;
  int chunk = 0;
  std::int64_t micro_batch = 0;
  int step = 0;
  /// 1 and 2: the first and second op of an overlapped F+B action; 0 else.
  int overlap = 0;
};

inline int global_of(StagePlacement placement, int p, int rank, int chunk) {
  if (placement == StagePlacement::v_shape) return chunk == 0 ? rank : 2 * p - 1 - rank;
  return chunk * p + rank;
}

// The data an op waits for: (kind of producer, global stage, micro-batch, step).
// kind 0: forward output, 1: backward (or input half) output.
using DataKey = std::tuple<int, int, std::int64_t, int>;

}  // namespace model_detail

inline ModelRun run_model(const ModelConfig& c) {
  using namespace model_detail;
  const int p = c.stages;
  const int v = c.chunks;
  const int g_count = p * v;
  const StagePlacement placement = schedule_entry(c.schedule).placement;
  std::vector<int> rank_of(g_count), chunk_of(g_count);
  for (int s = 0; s < p; ++s) {
    for (int ch = 0; ch < v; ++ch) {
      rank_of[global_of(placement, p, s, ch)] = s;
      chunk_of[global_of(placement, p, s, ch)] = ch;
    }
  }
  const auto machine_of = [&](int rank) { return rank * c.machines / p; };
  const auto cost = [&](Op op, int rank) -> std::int64_t {
    const double f = static_cast<double>(c.forward_ns[rank]) / v;
    const double b = static_cast<double>(c.backward_ns[rank]) / v;
    switch (op) {
      case Op::forward:
        return std::llround(f);
      case Op::backward:
        return std::llround(b);
      case Op::input_half:
        return std::llround(b * (1 - c.weight_share));
      case Op::weight:
        return std::llround(b * c.weight_share);
      case Op::optimizer:
        return c.optimizer_ns[rank];
    }
    return 0;
  };

  // Every rank's ops of every step, in order, each step closed by its optimizer.
  std::vector<std::vector<PlannedOp>> plan(p);
  for (int s = 0; s < p; ++s) {
    auto list = schedule_job_list(c.schedule, p, c.micro_batches, v, s);
    if (!list) throw std::invalid_argument("the schedule does not run this shape");
    for (int step = 0; step < c.steps; ++step) {
      for (std::size_t i = 0; i < list->size(); ++i) {
        const ScheduleStep& op = (*list)[i];
        Op kind = Op::forward;
        if (op.role == PipelineRole::backward) kind = op.split ? Op::input_half : Op::backward;
        if (op.role == PipelineRole::weight) kind = Op::weight;
        const int overlap = op.overlap_next ? 1 : i > 0 && (*list)[i - 1].overlap_next ? 2 : 0;
        plan[s].push_back({kind, op.chunk, op.micro_batch, step, overlap});
      }
      plan[s].push_back({Op::optimizer, 0, 0, step});
    }
  }
  // What op `o` on rank s waits for; nullopt-like {-1,...} when nothing.
  const auto needs = [&](int s, const PlannedOp& o) -> DataKey {
    const int g = global_of(placement, p, s, o.chunk);
    switch (o.op) {
      case Op::forward:
        return g > 0 ? DataKey{0, g - 1, o.micro_batch, o.step} : DataKey{-1, 0, 0, 0};
      case Op::backward:
      case Op::input_half:
        return g < g_count - 1 ? DataKey{1, g + 1, o.micro_batch, o.step}
                               : DataKey{0, g, o.micro_batch, o.step};
      case Op::weight:
        return DataKey{1, g, o.micro_batch, o.step};
      case Op::optimizer:
        return DataKey{-1, 0, 0, 0};
    }
    return DataKey{-1, 0, 0, 0};
  };

  // arrival[rank][key]: when data the rank needs is there.
  std::vector<std::map<DataKey, std::int64_t>> arrival(p);
  std::vector<std::size_t> next(p, 0);
  std::vector<std::int64_t> free_at(p, 0);
  std::vector<bool> running(p, false);
  struct Event {
    std::int64_t at;
    std::uint64_t seq;
    int rank;
    bool operator>(const Event& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::uint64_t seq = 0;
  struct Done {
    std::int64_t start, end;
    PlannedOp op;
  };
  std::vector<std::vector<Done>> done(p);
  struct Running {
    std::int64_t end = 0;
    PlannedOp op{};
  };
  std::vector<Running> current(p);
  // The first op of an overlapped action, whose output waits for the action's end.
  std::vector<std::optional<PlannedOp>> held(p);

  // A rank at time t: start its next op if it is free and its input is there.
  const auto try_start = [&](int s, std::int64_t t) {
    if (running[s] || next[s] >= plan[s].size() || free_at[s] > t) return;
    const PlannedOp& o = plan[s][next[s]];
    const DataKey key = needs(s, o);
    if (std::get<0>(key) >= 0) {
      const auto it = arrival[s].find(key);
      if (it == arrival[s].end() || it->second > t) return;
    }
    // The second op of an overlapped action is launched with the first.
    std::int64_t start = t + (o.overlap == 2 ? 0 : c.launch_overhead_ns);
    if (c.stall_ns > 0 && s == c.stall_rank &&
        next[s] % static_cast<std::size_t>(c.stall_every) == 0) {
      start += c.stall_ns;
    }
    const std::int64_t end = start + std::max<std::int64_t>(1, cost(o.op, s));
    running[s] = true;
    current[s] = {end, o};
    done[s].push_back({start, end, o});
    events.push({end, seq++, s});
  };
  for (int s = 0; s < p; ++s) events.push({0, seq++, s});
  std::size_t total = 0;
  for (const auto& ops : plan) total += ops.size();
  std::size_t finished = 0;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    const int s = e.rank;
    if (running[s] && current[s].end == e.at) {
      // The rank's op ends: its output leaves, the rank is free (after a
      // step's optimizer, once the host gap has passed).
      running[s] = false;
      const PlannedOp o = current[s].op;
      ++next[s];
      ++finished;
      free_at[s] = e.at;
      if (o.op == Op::optimizer && !c.host_gap_ns.empty()) {
        free_at[s] += c.host_gap_ns[static_cast<std::size_t>(o.step) % c.host_gap_ns.size()];
        events.push({free_at[s], seq++, s});
      }
      const auto send_output = [&](const PlannedOp& made) {
        const int g = global_of(placement, p, s, made.chunk);
        const auto send = [&](int kind, int to_g) {
          const int to = rank_of[to_g];
          std::int64_t at = e.at;
          if (to != s)
            at += machine_of(to) == machine_of(s) ? c.latency_same_ns : c.latency_cross_ns;
          arrival[to][DataKey{kind, g, made.micro_batch, made.step}] = at;
          events.push({at, seq++, to});
        };
        if (made.op == Op::forward) {
          send(0, g < g_count - 1 ? g + 1 : g);
        } else if (made.op == Op::backward || made.op == Op::input_half) {
          if (g > 0) send(1, g - 1);
          if (made.op == Op::input_half) send(1, g);  // its own weight half
        }
      };
      if (o.overlap == 1) {
        held[s] = o;
      } else {
        send_output(o);
        if (o.overlap == 2 && held[s]) {
          send_output(*held[s]);
          held[s].reset();
        }
      }
    }
    try_start(s, e.at);
  }
  if (finished != total) throw std::logic_error("the model deadlocked");

  ModelRun out;
  out.config = c;
  Run& run = out.run;
  const auto type_name = [&](const PlannedOp& o) {
    const char* base = "optimizer";
    switch (o.op) {
      case Op::forward:
        base = "forward";
        break;
      case Op::backward:
        base = "backward";
        break;
      case Op::input_half:
        base = "backward_b";
        break;
      case Op::weight:
        base = "backward_w";
        break;
      case Op::optimizer:
        return std::string(base);
    }
    return fmt::format("{}{}{}", base, v > 1 ? std::to_string(o.chunk) : "",
                       o.overlap != 0 ? "(overlap)" : "");
  };
  for (int s = 0; s < p; ++s) {
    Device d;
    d.index = s;
    d.machine = machine_of(s);
    d.machine_name = c.machines > 1 ? fmt::format("machine{}", d.machine) : "";
    int first_of_machine = s;
    while (first_of_machine > 0 && machine_of(first_of_machine - 1) == d.machine)
      --first_of_machine;
    d.rank = s - first_of_machine;
    d.path = c.machines > 1 ? fmt::format("{}/workerlog.{}", d.machine_name, d.rank)
                            : fmt::format("workerlog.{}", s);
    std::uint32_t line = 0;
    for (const Done& j : done[s]) {
      Job job;
      job.start_ns = c.epoch_ns + j.start;
      job.end_ns = c.epoch_ns + j.end;
      job.job_id = line;
      job.micro_batch = j.op.micro_batch;
      job.type = run.types.intern(type_name(j.op));
      job.line = ++line;
      d.jobs.push_back(job);
    }
    run.devices.push_back(std::move(d));
  }
  run.finalize();

  // The contract's figures: S_k = max(first start of step k, E_{k-1}),
  // E_k = last end of step k, busy = the device's time in jobs inside it.
  std::int64_t previous_end = 0;
  std::int64_t idle_total = 0, window_total = 0;
  for (int k = 0; k < c.steps; ++k) {
    std::int64_t first = INT64_MAX, last = INT64_MIN;
    for (int s = 0; s < p; ++s) {
      for (const Done& j : done[s]) {
        if (j.op.step != k) continue;
        first = std::min(first, j.start);
        last = std::max(last, j.end);
      }
    }
    const std::int64_t begin = k == 0 ? first : std::max(first, previous_end);
    const std::int64_t end = std::max(begin, last);
    std::int64_t idle = 0;
    for (int s = 0; s < p; ++s) {
      std::int64_t busy = 0;
      for (const Done& j : done[s]) {
        busy += std::max<std::int64_t>(0, std::min(j.end, end) - std::max(j.start, begin));
      }
      idle += (end - begin) - busy;
    }
    out.window_ns.push_back(end - begin);
    out.idle_ns.push_back(idle);
    idle_total += idle;
    window_total += end - begin;
    previous_end = end;
  }
  std::vector<std::int64_t> sorted = out.window_ns;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  out.step_ns = n % 2 ? static_cast<double>(sorted[n / 2])
                      : (static_cast<double>(sorted[n / 2 - 1]) + sorted[n / 2]) / 2;
  out.bubble_ratio = window_total > 0 ? static_cast<double>(idle_total) / (p * window_total) : 0;
  return out;
}

/// Writes the model's run as PaddlePaddle job lines: dir/workerlog.N, or
/// dir/machineK/workerlog.N with several machines (times in ms, 6 decimals:
/// exact to the ns).
inline void write_model_logs(const ModelRun& m, const std::filesystem::path& dir) {
  for (const Device& d : m.run.devices) {
    const std::filesystem::path file = dir / d.path;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file);
    const auto ms = [](std::int64_t ns) {
      return fmt::format("{}.{:06}", ns / 1'000'000, ns % 1'000'000);
    };
    std::int64_t job = 0;
    for (const Job& j : d.jobs) {
      out << fmt::format(
          "I1120 10:00:00.000000 4242 standalone_executor.cc:217] Profiler Info: Job ({}), type = "
          "{}, micro_batch_id = {}, job_start_time = {}, job_end_time = {}\n",
          job++, m.run.types.name(j.type), j.micro_batch, ms(j.start_ns), ms(j.end_ns));
    }
  }
}

}  // namespace pipescope::testing
