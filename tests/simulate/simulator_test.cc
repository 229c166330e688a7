// Unit tests of the schedule simulator: schedule construction, timing
// dependencies, step membership, time formatting, noise and the log writer.
#include "simulate/simulator.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <tuple>
#include <vector>

#include "scan/decimal_time.h"
#include "simulate/expected_metrics.h"
#include "simulate/log_format.h"
#include "simulate/log_writer.h"
#include "simulate/noise.h"
#include "simulate/schedule.h"
#include "support/file_size_limit.h"
#include "support/temp_dir.h"

namespace pipescope::sim {
namespace {

using testing::read_file;
using testing::TempDir;
namespace fs = std::filesystem;

std::vector<ScheduleShape> shapes_to_test() {
  std::vector<ScheduleShape> shapes;
  for (ScheduleKind kind : all_schedule_kinds()) {
    for (int p : {1, 2, 3, 4, 7}) {
      for (int m : {1, 2, 3, 4, 5, 8, 14, 16}) {
        for (int v : {1, 2, 3}) {
          ScheduleShape shape{kind, p, m, v};
          try {
            validate_schedule(shape);
          } catch (const std::invalid_argument&) {
            continue;
          }
          shapes.push_back(shape);
        }
      }
    }
  }
  return shapes;
}

std::string describe(const ScheduleShape& s) {
  return std::string(schedule_kind_name(s.kind)) + " P=" + std::to_string(s.stages) +
         " M=" + std::to_string(s.micro_batches) + " V=" + std::to_string(s.chunks);
}

TEST(Schedule, EveryStageRunsEachOpOnce) {
  std::set<ScheduleKind> kinds;
  for (const ScheduleShape& shape : shapes_to_test()) {
    kinds.insert(shape.kind);
    for (int s = 0; s < shape.stages; ++s) {
      const auto ops = stage_ops(shape, s);
      // F(m, c) once; one backward of (m, c), whole or input half; a W for
      // each input half, after it; every backward after its forward.
      std::map<std::tuple<int, int, int>, std::size_t> position;  // (kind class, mb, chunk)
      std::size_t forwards = 0, backwards = 0, inputs = 0, weights = 0;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const ScheduleOp& op = ops[i];
        const int cls = op.kind == OpKind::forward ? 0 : op.kind == OpKind::weight ? 2 : 1;
        ASSERT_TRUE(position.emplace(std::tuple{cls, op.micro_batch, op.chunk}, i).second)
            << describe(shape) << " stage " << s << " op " << i;
        forwards += op.kind == OpKind::forward;
        backwards += cls == 1;
        inputs += op.kind == OpKind::backward_input;
        weights += op.kind == OpKind::weight;
      }
      const std::size_t per_kind = static_cast<std::size_t>(shape.micro_batches) * shape.chunks;
      ASSERT_EQ(forwards, per_kind) << describe(shape) << " stage " << s;
      ASSERT_EQ(backwards, per_kind) << describe(shape) << " stage " << s;
      ASSERT_EQ(weights, inputs) << describe(shape) << " stage " << s;
      for (const auto& [key, at] : position) {
        const auto [cls, mb, chunk] = key;
        if (cls > 0) {
          EXPECT_LT((position.at({cls - 1, mb, chunk})), at) << describe(shape);
        }
      }
    }
  }
  EXPECT_EQ(kinds.size(), all_schedule_kinds().size() - 1);  // all but zbvpp
}

TEST(Schedule, OneFOneBWarmUpSteadyCoolDown) {
  for (const ScheduleKind kind : {ScheduleKind::one_f_one_b, ScheduleKind::dygraph_one_f_one_b,
                                  ScheduleKind::torch_one_f_one_b}) {
    const ScheduleShape shape{kind, 4, 8, 1};
    for (int s = 0; s < 4; ++s) {
      const int warmup = 4 - s - 1;
      const auto ops = stage_ops(shape, s);
      std::size_t i = 0;
      for (int m = 0; m < warmup; ++m, ++i) EXPECT_EQ(ops[i], (ScheduleOp{OpKind::forward, m, 0}));
      for (int k = 0; k < 8 - warmup; ++k) {
        EXPECT_EQ(ops[i++], (ScheduleOp{OpKind::forward, warmup + k, 0}));
        EXPECT_EQ(ops[i++], (ScheduleOp{OpKind::backward, k, 0}));
      }
      for (int m = 8 - warmup; m < 8; ++m, ++i) {
        EXPECT_EQ(ops[i], (ScheduleOp{OpKind::backward, m, 0}));
      }
    }
  }
  // Fewer micro-batches than warm-up slots (dygraph and PyTorch allow it):
  // all forwards first; Paddle's static pass refuses the shape.
  const std::vector<ScheduleOp> few = {{OpKind::forward, 0, 0},  {OpKind::forward, 1, 0},
                                       {OpKind::forward, 2, 0},  {OpKind::backward, 0, 0},
                                       {OpKind::backward, 1, 0}, {OpKind::backward, 2, 0}};
  EXPECT_EQ(stage_ops({ScheduleKind::dygraph_one_f_one_b, 8, 3, 1}, 0), few);
  EXPECT_EQ(stage_ops({ScheduleKind::torch_one_f_one_b, 8, 3, 1}, 0), few);
  EXPECT_THROW(validate_schedule({ScheduleKind::one_f_one_b, 8, 3, 1}), std::invalid_argument);
}

TEST(Schedule, InterleavedFollowsTheVppPass) {
  const ScheduleShape shape{ScheduleKind::interleaved, 4, 8, 2};
  const auto ops = stage_ops(shape, 0);
  // Micro-batches in groups of P per chunk: chunk 0 of 0-3, chunk 1 of 0-3, chunk 0 of 4-7...
  // and 3·2 + 4 = 10 warm-up forwards on stage 0.
  const std::vector<ScheduleOp> head = {
      {OpKind::forward, 0, 0}, {OpKind::forward, 1, 0}, {OpKind::forward, 2, 0},
      {OpKind::forward, 3, 0}, {OpKind::forward, 0, 1}, {OpKind::forward, 1, 1},
      {OpKind::forward, 2, 1}, {OpKind::forward, 3, 1}, {OpKind::forward, 4, 0},
      {OpKind::forward, 5, 0}, {OpKind::forward, 6, 0}, {OpKind::backward, 0, 1}};
  EXPECT_TRUE(std::equal(head.begin(), head.end(), ops.begin()));
  // M == P: everything is warm-up in Paddle's pass, not in PyTorch's.
  const auto all = stage_ops({ScheduleKind::interleaved, 4, 4, 2}, 2);
  EXPECT_TRUE(std::all_of(all.begin(), all.begin() + 8,
                          [](const ScheduleOp& op) { return op.kind == OpKind::forward; }));
  const auto torch = stage_ops({ScheduleKind::torch_interleaved_1f1b, 4, 4, 2}, 2);
  // (V-1)·4 + 2·(4-1-2) = 6 warm-up forwards, then F, B pairs.
  EXPECT_EQ(torch[6].kind, OpKind::forward);
  EXPECT_EQ(torch[7].kind, OpKind::backward);
}

TEST(Schedule, ShapesTheFrameworksRefuse) {
  try {
    validate_schedule({ScheduleKind::interleaved, 4, 6, 2});
    FAIL() << "accepted M=6, P=4";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Paddle pass asserts"), std::string::npos) << e.what();
  }
  EXPECT_THROW(validate_schedule({ScheduleKind::one_f_one_b, 4, 8, 2}), std::invalid_argument);
  EXPECT_THROW(validate_schedule({ScheduleKind::one_f_one_b, 0, 8, 1}), std::invalid_argument);
  EXPECT_THROW(validate_schedule({ScheduleKind::zbh1, 4, 3, 1}), std::invalid_argument);
  EXPECT_THROW(validate_schedule({ScheduleKind::torch_zbv_zero_bubble, 4, 8, 3}),
               std::invalid_argument);
  EXPECT_THROW(validate_schedule({ScheduleKind::torch_dualpipev, 4, 7, 2}), std::invalid_argument);
  try {
    validate_schedule({ScheduleKind::zbvpp, 4, 8, 2});
    FAIL() << "simulated zbvpp";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("memory-aware search"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_schedule_kind("vpp"), ScheduleKind::interleaved);
  EXPECT_EQ(parse_schedule_kind("zbh1"), ScheduleKind::zbh1);
  EXPECT_EQ(parse_schedule_kind("ZB-H1"), ScheduleKind::zbh1);
  EXPECT_EQ(parse_schedule_kind("torch:DualPipeV"), ScheduleKind::torch_dualpipev);
  EXPECT_EQ(parse_schedule_kind("paddle-dygraph:Interleave"), ScheduleKind::dygraph_interleave);
  EXPECT_EQ(parse_schedule_kind("nope"), std::nullopt);
  for (const ScheduleKind kind : all_schedule_kinds()) {
    EXPECT_EQ(parse_schedule_kind(schedule_kind_name(kind)), kind);
  }
}

TEST(Schedule, PaddleZbh1SplitsTheFirstBackwardsOfLaterStages) {
  const ScheduleShape shape{ScheduleKind::zbh1, 4, 8, 1};
  // The last stage: F0, then (B-input, F) pairs; its W's come at the end.
  const auto last = stage_ops(shape, 3);
  EXPECT_EQ(last[0], (ScheduleOp{OpKind::forward, 0, 0}));
  EXPECT_EQ(last[1], (ScheduleOp{OpKind::backward_input, 0, 0}));
  EXPECT_EQ(last[2], (ScheduleOp{OpKind::forward, 1, 0}));
  EXPECT_EQ(last.back(), (ScheduleOp{OpKind::weight, 2, 0}));
  // Stage s splits s + 1 backwards (stage 0 none) and runs the others whole.
  for (int s = 0; s < 4; ++s) {
    const auto ops = stage_ops(shape, s);
    EXPECT_EQ(std::count_if(ops.begin(), ops.end(),
                            [](const ScheduleOp& op) { return op.kind == OpKind::weight; }),
              s == 0 ? 0 : s + 1);
  }
}

SimConfig small_config(ScheduleKind kind, int p, int m, int v) {
  SimConfig config;
  config.shape = {kind, p, m, v};
  config.steps = 3;
  return config;
}

struct Key {
  SimJobType type;
  int step, micro_batch, chunk;
  auto operator<=>(const Key&) const = default;
};

// Checks the timing rules of every job of a simulated run (no clock skew).
void check_dependencies(const SimConfig& config) {
  const SimulatedRun run = simulate(config);
  const int p = config.shape.stages;
  const int v = config.shape.chunks;
  const std::int64_t latency = config.p2p_latency_ns;
  // Per stage (first device of each stage): compute jobs by key.
  std::vector<std::map<Key, SimJob>> by_stage(p);
  for (const auto& device : run.devices) {
    const auto& jobs = run.jobs[device.index];
    // Jobs on one device run in order and never overlap.
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_LT(jobs[i].start_ns, jobs[i].end_ns);
      if (i > 0) {
        ASSERT_LE(jobs[i - 1].end_ns, jobs[i].start_ns);
      }
    }
    for (const auto& job : jobs) {
      if (!is_compute(job.type)) continue;
      by_stage[device.stage][{job.type, job.step, job.micro_batch, job.chunk}] = job;
    }
    // Tensor-parallel peers run the same jobs at the same times.
    const auto& first_of_stage = run.jobs[device.stage * config.devices_per_stage];
    ASSERT_EQ(jobs.size(), first_of_stage.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      ASSERT_EQ(jobs[i].start_ns, first_of_stage[i].start_ns);
    }
  }
  // By global stage (schedule.h, global_stage): F(m) waits for F(m) on g-1,
  // a backward (whole or input half) for a backward on g+1, W for its own B.
  // Latency applies between devices only.
  const int g_count = p * v;
  auto cls = [](SimJobType t) {
    return t == SimJobType::forward ? 0 : t == SimJobType::backward_w ? 2 : 1;
  };
  std::map<std::tuple<int, int, int, int>, std::pair<SimJob, int>> by_global;  // (cls, g, step, mb)
  for (int s = 0; s < p; ++s) {
    for (const auto& [key, job] : by_stage[s]) {
      const int g = global_stage(config.shape, s, key.chunk);
      by_global[{cls(key.type), g, key.step, key.micro_batch}] = {job, s};
    }
  }
  for (const auto& [key, value] : by_global) {
    const auto [c, g, step, mb] = key;
    const auto& [job, s] = value;
    // Structured bindings are captured by copy, named (clang 14 captures
    // none).
    auto after = [&, step = step, mb = mb, s = s, start = job.start_ns](int other_cls,
                                                                        int other_g) {
      const auto& [up, up_stage] = by_global.at({other_cls, other_g, step, mb});
      ASSERT_GE(start, up.end_ns + (up_stage != s ? latency : 0));
    };
    if (c == 0 && g > 0) after(0, g - 1);
    if (c == 1 && g < g_count - 1) after(1, g + 1);
    if (c == 1) after(0, g);
    if (c == 2) after(1, g);
  }
}

TEST(Simulator, TimingRespectsDependencies) {
  for (const ScheduleShape& shape : shapes_to_test()) {
    if (shape.micro_batches > 8) continue;
    for (bool comm : {false, true}) {
      SimConfig config = small_config(shape.kind, shape.stages, shape.micro_batches, shape.chunks);
      config.comm_jobs = comm;
      config.devices_per_stage = shape.stages == 3 ? 2 : 1;
      config.seed = 7 + shape.stages;
      SCOPED_TRACE(describe(shape) + (comm ? " comm" : ""));
      check_dependencies(config);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// The contract's step detection, applied to the simulated (time-ordered,
// non-overlapping) jobs, must give the step numbers the simulator assigned:
// openers (the first job, an lr after a compute/optimizer/lr job, a forward
// of micro-batch 0 after a backward or optimizer), and the lr and recv jobs
// right before an opener, with no compute or optimizer job between, in its step.
TEST(Simulator, StepMembershipMatchesTheContract) {
  int index = 0;
  for (const ScheduleShape& shape : shapes_to_test()) {
    SimConfig config = small_config(shape.kind, shape.stages, shape.micro_batches, shape.chunks);
    config.comm_jobs = shape.micro_batches % 2 == 0;
    config.lr_jobs = index++ % 3 != 0;
    const SimulatedRun run = simulate(config);
    for (const auto& jobs : run.jobs) {
      std::vector<int> steps(jobs.size(), 0);
      int step = -1;
      std::optional<SimJobType> previous;  // last non-comm job
      std::vector<std::size_t> prologue;   // lr and recv jobs since the last compute/optimizer
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        const SimJob& job = jobs[i];
        const bool lr = job.type == SimJobType::lr;
        const bool recv =
            job.type == SimJobType::recv_forward || job.type == SimJobType::recv_backward;
        const bool comm =
            recv || job.type == SimJobType::send_forward || job.type == SimJobType::send_backward;
        const bool forward = job.type == SimJobType::forward;
        const bool opens = i == 0 || (lr && previous) ||
                           (forward && job.micro_batch == 0 && previous &&
                            *previous != SimJobType::forward && *previous != SimJobType::lr);
        if (opens) {
          ++step;
          for (const std::size_t j : prologue) steps[j] = step;
          prologue.clear();
        }
        steps[i] = step;
        if (lr || recv) {
          prologue.push_back(i);
        } else if (!comm) {
          prologue.clear();
        }
        if (!comm) previous = job.type;
      }
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        ASSERT_EQ(jobs[i].step, steps[i]) << describe(shape) << " job " << i;
      }
      ASSERT_EQ(step, config.steps - 1) << describe(shape);
    }
  }
}

// --lr: each step opens with one lr job per stage, and the step's ops follow it.
TEST(Simulator, LrJobsOpenEveryStep) {
  SimConfig config = small_config(ScheduleKind::one_f_one_b, 3, 4, 1);
  config.comm_jobs = true;
  config.lr_jobs = true;
  config.steps = 2;
  const SimulatedRun run = simulate(config);
  SimConfig plain = config;
  plain.lr_jobs = false;
  const SimulatedRun without = simulate(plain);
  for (std::size_t d = 0; d < run.jobs.size(); ++d) {
    std::size_t lr = 0;
    for (std::size_t i = 0; i < run.jobs[d].size(); ++i) {
      const SimJob& job = run.jobs[d][i];
      if (job.type != SimJobType::lr) continue;
      ++lr;
      EXPECT_TRUE(i == 0 || run.jobs[d][i - 1].type == SimJobType::optimizer) << d << " " << i;
    }
    EXPECT_EQ(lr, 2u) << d;
    EXPECT_EQ(run.jobs[d].size(), without.jobs[d].size() + 2) << d;
  }
  EXPECT_EQ(job_type_name(run.jobs[0][0], false, ChunkNaming::digit), "lr");
}

TEST(Simulator, FThenBBubbleMatchesTheFormula) {
  for (int p : {2, 3, 4, 8}) {
    for (int m : {1, 4, 8, 13}) {
      SimConfig config = small_config(ScheduleKind::fthenb, p, m, 1);
      config.jitter = 0;
      config.p2p_latency_ns = 0;
      config.costs = {5'000'000, 7'000'000, 3'000'000};
      config.steps = 2;
      const SimulatedRun run = simulate(config);
      for (int step = 0; step < config.steps; ++step) {
        // The step's window without the optimizer: first compute start to last compute end.
        std::int64_t begin = INT64_MAX, end = INT64_MIN, busy = 0;
        for (const auto& jobs : run.jobs) {
          for (const auto& job : jobs) {
            if (job.step != step || job.type == SimJobType::optimizer) continue;
            begin = std::min(begin, job.start_ns);
            end = std::max(end, job.end_ns);
            busy += job.end_ns - job.start_ns;
          }
        }
        const double bubble =
            1.0 - static_cast<double>(busy) / (static_cast<double>(end - begin) * p);
        EXPECT_NEAR(bubble, static_cast<double>(p - 1) / (m + p - 1), 1e-9)
            << "P=" << p << " M=" << m;
      }
    }
  }
}

TEST(Simulator, DeterministicAndSeeded) {
  SimConfig config = small_config(ScheduleKind::zbh1, 4, 8, 1);
  config.machines = 2;
  config.machine_skew_ns = {0, 123'456'789};
  const auto a = simulate(config);
  const auto b = simulate(config);
  config.seed = 2;
  const auto c = simulate(config);
  ASSERT_EQ(a.jobs.size(), 4u);
  bool differs = false;
  for (std::size_t d = 0; d < a.jobs.size(); ++d) {
    for (std::size_t i = 0; i < a.jobs[d].size(); ++i) {
      EXPECT_EQ(a.jobs[d][i].start_ns, b.jobs[d][i].start_ns);
      EXPECT_EQ(a.jobs[d][i].start_ns % 1000, d >= 2 ? 789 : 0);  // whole us plus the skew
      differs |= a.jobs[d][i].start_ns != c.jobs[d][i].start_ns;
    }
  }
  EXPECT_TRUE(differs);
  EXPECT_EQ(a.devices[3].machine, 1);
  EXPECT_EQ(a.devices[3].rank, 1);
  EXPECT_EQ(a.jobs[0].front().start_ns, 1'697'793'307'213'000'000);
}

TEST(Simulator, SlowStageSlowsItsJobs) {
  SimConfig config = small_config(ScheduleKind::one_f_one_b, 4, 8, 1);
  config.jitter = 0;
  config.stage_slowdown = {1, 1, 2.5, 1};
  const auto run = simulate(config);
  EXPECT_EQ(run.jobs[2][0].end_ns - run.jobs[2][0].start_ns, 30'000'000);
  EXPECT_EQ(run.jobs[1][0].end_ns - run.jobs[1][0].start_ns, 12'000'000);
  config.machines = 3;
  EXPECT_THROW(simulate(config), std::invalid_argument);  // 4 devices over 3 machines
}

TEST(Simulator, TypeNames) {
  SimJob job;
  job.type = SimJobType::forward;
  job.chunk = 1;
  EXPECT_EQ(job_type_name(job, true, ChunkNaming::digit), "forward1");
  EXPECT_EQ(job_type_name(job, true, ChunkNaming::paren), "forward(chunk1)");
  EXPECT_EQ(job_type_name(job, false, ChunkNaming::paren), "forward");
  job.type = SimJobType::backward_w;
  EXPECT_EQ(job_type_name(job, false, ChunkNaming::digit), "backward_w");
  job.type = SimJobType::recv_backward;
  EXPECT_EQ(job_type_name(job, true, ChunkNaming::digit), "recv_backward");
}

// The grammar's conversion, written out independently: Decimal(text)·10^6
// rounded half up.
std::int64_t reference_ms_to_ns(const std::string& text) {
  const auto dot = text.find('.');
  std::int64_t ns = std::stoll(text.substr(0, dot)) * 1'000'000;
  if (dot == std::string::npos) return ns;
  std::string frac = text.substr(dot + 1);
  frac.resize(9, '0');
  ns += std::stoll(frac.substr(0, 6));
  if (frac[6] >= '5') ++ns;
  return ns;
}

std::string ms_text(std::int64_t ns, int decimals, std::uint64_t bits) {
  fmt::memory_buffer out;
  append_ms_time(out, ns, decimals, bits);
  return fmt::to_string(out);
}

TEST(LogFormat, MillisecondTimesRoundTrip) {
  EXPECT_EQ(ms_text(1697793307213760986, 6, 0), "1697793307213.760986");
  EXPECT_EQ(ms_text(1697793307213000001, 6, 0), "1697793307213.000001");
  EXPECT_EQ(ms_text(1697793307213760500, 3, 0), "1697793307213.761");
  EXPECT_EQ(ms_text(1697793307213000000, 9, 1), "1697793307212.999999500");
  EXPECT_EQ(ms_text(1697793307213000000, 9, 998), "1697793307213.000000499");
  SplitMix random(42);
  std::vector<std::int64_t> values = {1,
                                      999,
                                      1000,
                                      999'999,
                                      1'000'000,
                                      1'000'001,
                                      1'697'793'307'213'000'000,
                                      8'999'999'999'999'999'999};
  for (int i = 0; i < 20000; ++i) {
    values.push_back(1'600'000'000'000'000'000 +
                     static_cast<std::int64_t>(random.below(1ULL << 62) % 400'000'000'000'000'000));
  }
  for (std::int64_t ns : values) {
    for (int decimals : {3, 6, 9}) {
      const std::string text = ms_text(ns, decimals, random.next());
      const std::int64_t printed = printed_ns(ns, decimals);
      ASSERT_EQ(reference_ms_to_ns(text), printed) << text;
      ASSERT_EQ(parse_millis_to_ns(text), printed) << text;
      if (decimals != 3) {
        ASSERT_EQ(printed, ns);
      }
    }
  }
}

TEST(LogFormat, GlogAndPythonPrefixesUseUtc) {
  fmt::memory_buffer out;
  append_glog_prefix(out, 'I', 1'697'793'307'265'326'999, 22317, "standalone_executor.cc:217");
  EXPECT_EQ(fmt::to_string(out), "I1020 09:15:07.265326 22317 standalone_executor.cc:217] ");
  out.clear();
  append_python_time(out, 1'709'210'096'789'000'000);  // leap day 2024
  EXPECT_EQ(fmt::to_string(out), "2024-02-29 12:34:56,789");
}

TEST(Noise, NeverLooksLikeAJobLine) {
  NoiseGenerator noise(5, 22317, 3, 8);
  fmt::memory_buffer out;
  std::map<std::string, int> kinds;
  for (int i = 0; i < 20000; ++i) {
    out.clear();
    noise.append_line(out, 1'697'793'307'213'000'000 + i * 1000LL);
    const std::string line = fmt::to_string(out);
    ASSERT_EQ(line.find("Profiler Info: Job"), std::string::npos) << line;
    ASSERT_EQ(line.find("Schedule Profiler start at step"), std::string::npos) << line;
    ASSERT_EQ(line.find('\n'), std::string::npos) << line;
    ++kinds[line.substr(0, 5)];
  }
  EXPECT_GT(kinds.size(), 5u);
}

TEST(ExpectedMetrics, FollowsTheContractOnAHandExample) {
  // Two devices, two steps; device 1's step-1 job starts inside window 0 and
  // overlaps another job of its own.
  std::vector<SimDeviceInfo> devices = {{0, 0, 0, 0}, {1, 0, 1, 1}};
  ExpectedMetricsBuilder builder(devices, 5);
  builder.add_job(0, 0, 100, 200);
  builder.add_job(0, 0, 250, 300);
  builder.add_job(1, 0, 150, 260);
  builder.add_job(1, 1, 280, 400);
  builder.add_job(1, 1, 350, 380);
  builder.add_job(0, 1, 320, 420);
  const ExpectedMetrics m = builder.finish();
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].step, 5);
  EXPECT_EQ(m.steps[0].start_ns, 100);
  EXPECT_EQ(m.steps[0].end_ns, 300);
  EXPECT_EQ(m.steps[1].start_ns, 300);  // max(280, E_0)
  EXPECT_EQ(m.steps[1].end_ns, 420);
  EXPECT_EQ(m.steps[0].devices[0].busy_ns, 150);
  EXPECT_EQ(m.steps[0].devices[1].busy_ns, 110 + 20);
  EXPECT_EQ(m.steps[1].devices[0].busy_ns, 100);
  EXPECT_EQ(m.steps[1].devices[1].busy_ns, 100);
  EXPECT_EQ(m.total_window_ns, 320);
  EXPECT_EQ(m.jobs, 6);
  EXPECT_DOUBLE_EQ(m.steps[0].bubble_ratio, (50.0 + 70.0) / 400.0);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, (50.0 + 70.0 + 20.0 + 20.0) / 640.0);
  EXPECT_DOUBLE_EQ(m.devices[1].utilization, 230.0 / 320.0);
  EXPECT_EQ(m.devices[1].steps, 2);
}

std::size_t count(const std::string& text, std::string_view what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(LogWriter, WritesTheDiscoveryLayoutAndExpectedJson) {
  TempDir dir;
  SimConfig config = small_config(ScheduleKind::interleaved, 2, 4, 2);
  config.machines = 2;
  config.devices_per_stage = 2;
  LogWriterOptions options;
  options.dir = dir.path() / "run";
  options.first_step = 40;
  options.noise_per_job = 3;
  options.shuffle = true;
  options.ansi = true;
  options.crlf = true;
  options.chunk_naming = ChunkNaming::paren;
  const WriteReport report = write_simulated_logs(config, options);
  ASSERT_EQ(report.files.size(), 4u);
  EXPECT_EQ(report.files[3].path, options.dir / "machine1" / "workerlog.1");
  std::uint64_t jobs = 0;
  for (const auto& file : report.files) {
    const std::string text = read_file(file.path);
    EXPECT_EQ(text.size(), file.bytes);
    EXPECT_EQ(count(text, "Profiler Info: Job"), file.jobs);
    EXPECT_EQ(count(text, "\r\n"), file.lines);
    EXPECT_EQ(count(text, "\n"), file.lines);
    // The first occurrence names the first step; a later one must be ignored.
    EXPECT_EQ(text.find("Schedule Profiler start at step"),
              text.find("Schedule Profiler start at step 40\r\n"));
    EXPECT_NE(text.find("Schedule Profiler start at step 1040"), std::string::npos);
    EXPECT_NE(text.find("type = forward(chunk1)"), std::string::npos);
    jobs += file.jobs;
  }
  EXPECT_EQ(jobs, report.jobs);

  simdjson::dom::parser parser;
  simdjson::dom::element expected;
  ASSERT_EQ(parser.load((options.dir / "expected.json").string()).get(expected), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(expected["jobs"]), static_cast<std::int64_t>(report.jobs));
  EXPECT_EQ(int64_t(expected["first_step"]), 40);
  EXPECT_EQ(simdjson::dom::array(expected["steps"]).size(), 3u);
  EXPECT_EQ(simdjson::dom::array(expected["devices"]).size(), 4u);
  EXPECT_TRUE(fs::exists(options.dir / "simulation.json"));

  // A non-empty folder is refused, and replaced with force (old machine folders go,
  // and so do the temporary files of a run killed before it finished).
  EXPECT_THROW(write_simulated_logs(config, options), std::invalid_argument);
  TempDir::write_to(options.dir / ".workerlog.0.tmp-4242-7", "half a log");
  TempDir::write_to(options.dir / "machine1" / ".workerlog.1.tmp-4242-8", "half a log");
  config.machines = 1;
  options.force = true;
  const WriteReport again = write_simulated_logs(config, options);
  EXPECT_EQ(again.files.size(), 4u);
  EXPECT_FALSE(fs::exists(options.dir / "machine0"));
  EXPECT_TRUE(fs::exists(options.dir / "workerlog.3"));
  for (const auto& entry : fs::directory_iterator(options.dir)) {
    EXPECT_EQ(entry.path().filename().string().find("tmp"), std::string::npos) << entry.path();
  }
}

// Writing past RLIMIT_FSIZE fails with EFBIG, a real write error even as root:
// the simulator throws std::system_error naming the file (model/errors.h) and
// leaves neither a truncated log nor a temporary file behind.
TEST(LogWriter, WriteErrorNamesTheFileAndLeavesNothing) {
  TempDir dir;
  SimConfig config = small_config(ScheduleKind::one_f_one_b, 2, 4, 1);
  LogWriterOptions options;
  options.dir = dir.path() / "logs";
  options.noise_per_job = 4;
  options.target_bytes = 4'000'000;
  std::string message;
  {
    const testing::FileSizeLimit limit(1 << 20);
    ASSERT_TRUE(limit.active());
    try {
      write_simulated_logs(config, options);
    } catch (const std::system_error& e) {
      message = e.what();
    }
  }

  EXPECT_EQ(message.rfind("cannot write " + (options.dir / "workerlog.").string(), 0), 0u)
      << message;
  EXPECT_NE(message.find(": File too large"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(options.dir));
}

TEST(LogWriter, TargetBytesAddsSteps) {
  TempDir dir;
  SimConfig config = small_config(ScheduleKind::one_f_one_b, 2, 4, 1);
  config.steps = 1;
  LogWriterOptions options;
  options.dir = dir.path() / "big";
  options.noise_per_job = 4;
  options.target_bytes = 300'000;
  const WriteReport report = write_simulated_logs(config, options);
  EXPECT_GE(report.bytes, 300'000u);
  EXPECT_LT(report.bytes, 330'000u);
  EXPECT_GT(report.steps, 1);
  EXPECT_EQ(report.expected.steps.size(), static_cast<std::size_t>(report.steps));
}

}  // namespace
}  // namespace pipescope::sim
