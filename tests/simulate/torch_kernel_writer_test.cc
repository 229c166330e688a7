// `pipescope simulate --format torch-kernels`: the kernel timeline's model
// (compute jobs split exactly, receivers posted before their senders, ends
// together), the traces' shape (Kineto's write order, both NCCL name
// generations, with and without Comms Id), and end to end: `analyze` on the
// written traces must report exactly the kernel view of expected.json,
// which the simulator works out from what it knows (simulate/
// kernel_expected.h), and the layout it wrote; with a machine's clock
// offset, the offset found within 10 us and every figure within 1e-4 of the
// window.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "simulate/kernel_expected.h"
#include "simulate/kernel_timeline.h"
#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using sim::ActivityKind;
using sim::KernelActivity;
using testing::CommandResult;
using testing::run_cli;

sim::SimConfig config_of(sim::ScheduleKind kind, int stages, int micro_batches, int chunks,
                         int replicas) {
  sim::SimConfig config;
  config.shape = {kind, stages, micro_batches, chunks};
  config.devices_per_stage = replicas;
  config.steps = 2;
  return config;
}

TEST(KernelTimeline, ComputeJobsAreSplitOverTheirExactIntervals) {
  const sim::SimConfig config = config_of(sim::ScheduleKind::one_f_one_b, 4, 8, 1, 1);
  const sim::KernelTimeline timeline = sim::build_kernel_timeline(config, 7);
  const sim::SimulatedRun run = sim::simulate(config);
  ASSERT_EQ(timeline.ranks.size(), run.jobs.size());
  for (std::size_t g = 0; g < run.jobs.size(); ++g) {
    std::vector<KernelActivity> compute;
    for (const auto& a : timeline.ranks[g]) {
      if (a.kind == ActivityKind::compute) compute.push_back(a);
    }
    std::size_t next = 0;
    for (const sim::SimJob& job : run.jobs[g]) {
      const std::size_t expect = job.type == sim::SimJobType::optimizer ? 1 : 7;
      ASSERT_LE(next + expect, compute.size());
      EXPECT_EQ(compute[next].start_ns, job.start_ns);
      EXPECT_EQ(compute[next + expect - 1].end_ns, job.end_ns);
      for (std::size_t k = next; k < next + expect; ++k) {
        EXPECT_EQ(compute[k].step, job.step);
        EXPECT_GT(compute[k].end_ns, compute[k].start_ns);
        EXPECT_NE(compute[k].name, nullptr);
        if (k + 1 < next + expect) {
          // Gaps of 0.3-2.5 us: not compute.
          EXPECT_GE(compute[k + 1].start_ns - compute[k].end_ns, 300);
          EXPECT_LE(compute[k + 1].start_ns - compute[k].end_ns, 2'500);
        }
      }
      next += expect;
    }
    EXPECT_EQ(next, compute.size());
  }
}

TEST(KernelTimeline, ReceiversWaitForSendersAndEndTogether) {
  for (const auto& config : {config_of(sim::ScheduleKind::one_f_one_b, 4, 8, 1, 2),
                             config_of(sim::ScheduleKind::interleaved, 4, 8, 2, 1),
                             config_of(sim::ScheduleKind::torch_zbv_zero_bubble, 4, 8, 2, 1)}) {
    const sim::KernelTimeline t = sim::build_kernel_timeline(config, 24);
    const int world = static_cast<int>(t.ranks.size());
    std::set<std::uint64_t> ids;
    int above_half = 0, p2p = 0, allreduces = 0;
    // Per (from, to): the sends' and the recvs' starts, in communication order.
    std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> pairs;
    for (const sim::KernelComm& comm : t.comms) {
      EXPECT_NE(comm.comms_id, 0u);
      EXPECT_TRUE(ids.insert(comm.comms_id).second);
      above_half += comm.comms_id >> 63;
      std::set<std::int64_t> ends;
      for (const auto& [rank, at] : comm.members) {
        const KernelActivity& a = t.ranks[rank][at];
        EXPECT_EQ(t.comms[a.comm].comms_id, comm.comms_id);
        ends.insert(a.end_ns);
      }
      EXPECT_EQ(ends.size(), 1u) << "the members of a communication end together";
      if (comm.kind == ActivityKind::allreduce) {
        ++allreduces;
        ASSERT_EQ(comm.members.size(), static_cast<std::size_t>(t.replicas));
        continue;
      }
      ++p2p;
      ASSERT_EQ(comm.members.size(), 2u);
      // Plain variables, not bindings: clang 14 cannot capture a binding.
      const auto from = comm.members[0].first;
      const auto s_at = comm.members[0].second;
      const auto to = comm.members[1].first;
      const auto r_at = comm.members[1].second;
      const KernelActivity& send = t.ranks[from][s_at];
      const KernelActivity& recv = t.ranks[to][r_at];
      EXPECT_EQ(send.kind, ActivityKind::send);
      EXPECT_EQ(recv.kind, ActivityKind::recv);
      EXPECT_EQ(send.peer, to);
      EXPECT_EQ(recv.peer, from);
      EXPECT_LT(recv.start_ns, send.start_ns) << "the receiver is posted first and waits";
      EXPECT_GT(send.end_ns, send.start_ns);
      EXPECT_EQ(send.step, recv.step);
      // Same replica, neighbouring stages (or the ring's ends).
      EXPECT_EQ(from % t.replicas, to % t.replicas);
      // The send starts as a compute job of its rank ends.
      EXPECT_TRUE(std::any_of(t.ranks[from].begin(), t.ranks[from].end(), [&](const auto& a) {
        return a.kind == ActivityKind::compute && a.end_ns == send.start_ns;
      }));
      pairs[{from, to}].emplace_back(send.start_ns, recv.start_ns);
    }
    EXPECT_GT(p2p, 0);
    EXPECT_EQ(allreduces, t.replicas > 1 ? t.stages * t.steps : 0);
    EXPECT_GT(above_half, 0) << "Comms Ids above 2^63";
    EXPECT_LT(above_half, static_cast<int>(t.comms.size()));
    // NCCL's matching: the k-th send from a to b (start order) is the k-th
    // recv on b from a (start order).
    for (auto& [pair, starts] : pairs) {
      for (std::size_t k = 1; k < starts.size(); ++k) {
        EXPECT_LT(starts[k - 1].first, starts[k].first);
        EXPECT_LT(starts[k - 1].second, starts[k].second);
      }
    }
    // Every activity belongs to a simulated step, on a rank of the run.
    for (int g = 0; g < world; ++g) {
      for (const KernelActivity& a : t.ranks[g]) {
        EXPECT_GE(a.step, 0);
        EXPECT_LT(a.step, t.steps);
        if (a.kind == ActivityKind::send || a.kind == ActivityKind::recv) {
          EXPECT_GE(a.peer, 0);
          EXPECT_LT(a.peer, world);
          EXPECT_GE(a.stream, sim::kFirstPeerStream);
        }
      }
    }
  }
}

TEST(KernelTimeline, ConsumersStartWhenTheirDataHasArrived) {
  // Each transfer's consumer (the job taking the producer's output: F(m) of
  // global stage g+1 after F(m) of g, a backward of g-1 after one of g)
  // starts no earlier than the recv ends, and the send starts as the
  // producer ends.
  for (const auto& config : {config_of(sim::ScheduleKind::one_f_one_b, 4, 8, 1, 2),
                             config_of(sim::ScheduleKind::interleaved, 4, 8, 2, 1)}) {
    const sim::KernelTimeline t = sim::build_kernel_timeline(config, 24);
    const sim::SimulatedRun run = sim::simulate(config);
    int checked = 0;
    for (const sim::KernelComm& comm : t.comms) {
      if (comm.kind != ActivityKind::send) continue;
      // Plain variables, not bindings: clang 14 cannot capture a binding.
      const auto from = comm.members[0].first;
      const auto s_at = comm.members[0].second;
      const auto to = comm.members[1].first;
      const auto r_at = comm.members[1].second;
      const KernelActivity& send = t.ranks[from][s_at];
      const KernelActivity& recv = t.ranks[to][r_at];
      const auto producer =
          std::find_if(run.jobs[from].begin(), run.jobs[from].end(), [&](const sim::SimJob& j) {
            return sim::is_compute(j.type) && j.end_ns == send.start_ns && j.step == send.step;
          });
      ASSERT_NE(producer, run.jobs[from].end());
      const bool forward = producer->type == sim::SimJobType::forward;
      const int g = sim::global_stage(config.shape, t.devices[from].stage, producer->chunk);
      const auto consumer =
          std::find_if(run.jobs[to].begin(), run.jobs[to].end(), [&](const sim::SimJob& j) {
            return j.step == producer->step && j.micro_batch == producer->micro_batch &&
                   (j.type == sim::SimJobType::forward) == forward && sim::is_compute(j.type) &&
                   j.type != sim::SimJobType::backward_w &&
                   sim::global_stage(config.shape, t.devices[to].stage, j.chunk) ==
                       g + (forward ? 1 : -1);
          });
      ASSERT_NE(consumer, run.jobs[to].end());
      EXPECT_GE(consumer->start_ns, recv.end_ns);
      EXPECT_EQ(recv.end_ns - send.start_ns,
                std::min(config.p2p_latency_ns, consumer->start_ns - send.start_ns));
      ++checked;
    }
    EXPECT_GT(checked, 0);
  }
}

TEST(KernelTimeline, RefusesWhatItCannotExpress) {
  sim::SimConfig config = config_of(sim::ScheduleKind::one_f_one_b, 2, 4, 1, 1);
  EXPECT_THROW(sim::build_kernel_timeline(config, 0), std::invalid_argument);
  config.comm_jobs = true;
  EXPECT_THROW(sim::build_kernel_timeline(config, 4), std::invalid_argument);
  config.comm_jobs = false;
  config.lr_jobs = true;
  EXPECT_THROW(sim::build_kernel_timeline(config, 4), std::invalid_argument);
  config.lr_jobs = false;
  config.p2p_latency_ns = 0;
  EXPECT_THROW(sim::build_kernel_timeline(config, 4), std::invalid_argument);
  config.p2p_latency_ns = 150'000;
  config.resolution_ns = 1;
  config.costs.forward_ns = 500;
  EXPECT_THROW(sim::build_kernel_timeline(config, 4), std::invalid_argument);
}

TEST(KernelExpected, PartsAddUpAndWaitIsBlamedOnTheSender) {
  const sim::SimConfig config = config_of(sim::ScheduleKind::one_f_one_b, 4, 8, 1, 2);
  const sim::KernelTimeline t = sim::build_kernel_timeline(config, 24);
  const sim::ExpectedKernelView view = sim::expected_kernel_view(t, 5, 0);
  ASSERT_EQ(view.windows.size(), 2u);
  EXPECT_EQ(view.windows[0].step, 5);
  EXPECT_EQ(view.windows[1].start_ns, view.windows[0].end_ns);
  sim::ExpectedKernelSplit sum;
  for (const auto& rank : view.ranks) {
    sim::ExpectedKernelSplit rank_sum;
    for (std::size_t k = 0; k < rank.steps.size(); ++k) {
      const auto& s = rank.steps[k].split;
      EXPECT_EQ(s.window, view.windows[k].end_ns - view.windows[k].start_ns);
      EXPECT_EQ(s.compute + s.transfer + s.wait + s.idle, s.window);
      EXPECT_GE(s.idle, 0);
      EXPECT_GE(s.transfer, 0);
      EXPECT_GE(s.wait, 0);
      rank_sum.window += s.window;
      rank_sum.wait += s.wait;
    }
    EXPECT_EQ(rank_sum.window, rank.total.window);
    EXPECT_EQ(rank_sum.wait, rank.total.wait);
    sum.window += rank.total.window;
    sum.compute += rank.total.compute;
  }
  EXPECT_EQ(sum.window, view.total.window);
  EXPECT_EQ(sum.compute, view.total.compute);
  // 1F1B's fill: the last stage (ranks 6, 7) waits at the start of each
  // step for its stage-2 replica (ranks 4, 5), on which it waits most.
  EXPECT_EQ(view.ranks[6].most_waited_on, 4);
  EXPECT_EQ(view.ranks[7].most_waited_on, 5);
  EXPECT_GT(view.total.wait, 0);
  EXPECT_NEAR(
      view.bubble_ratio(),
      view.share(view.total.idle) + view.share(view.total.wait) + view.share(view.total.transfer),
      1e-12);
}

// ---------------------------------------------------------------------------
// End to end through the CLI.

bool is_ratio_key(std::string_view key) {
  return key == "bubble_ratio" || key == "idle_share" || key == "wait_share" ||
         key == "transfer_share";
}

/// Where `actual` differs from `expected` (the check of
/// tests/reference/check_kernel_view.py): every key of expected present and
/// equal (integers exactly, ratios within 1e-9, "path" by file name), no
/// key in actual that expected lacks except `skip`. Empty when they agree.
std::string differences(simdjson::dom::element actual, simdjson::dom::element expected,
                        const std::string& where, const std::set<std::string>& skip) {
  using simdjson::dom::element_type;
  const std::string key = where.substr(where.find_last_of('.') + 1);
  switch (expected.type()) {
    case element_type::OBJECT: {
      simdjson::dom::object a, e = expected.get_object();
      if (actual.get_object().get(a)) return where + ": not an object\n";
      std::string out;
      for (auto [k, v] : e) {
        simdjson::dom::element got;
        if (a[k].get(got)) {
          out += fmt::format("{}.{}: missing\n", where, k);
          continue;
        }
        out += differences(got, v, fmt::format("{}.{}", where, k), skip);
      }
      for (auto [k, v] : a) {
        simdjson::dom::element unused;
        if (e[k].get(unused) && !skip.contains(std::string(k))) {
          out += fmt::format("{}.{}: not in expected.json\n", where, k);
        }
      }
      return out;
    }
    case element_type::ARRAY: {
      simdjson::dom::array a, e = expected.get_array();
      if (actual.get_array().get(a)) return where + ": not an array\n";
      if (a.size() != e.size()) {
        return fmt::format("{}: {} entries, expected {}\n", where, a.size(), e.size());
      }
      std::string out;
      for (std::size_t i = 0; i < e.size(); ++i) {
        out += differences(a.at(i), e.at(i), fmt::format("{}[{}]", where, i), skip);
      }
      return out;
    }
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: {
      if (is_ratio_key(key)) {
        double x = 0, y = 0;
        if (actual.get_double().get(x) || expected.get_double().get(y) || std::fabs(x - y) > 1e-9) {
          return fmt::format("{}: {}, expected {}\n", where, x, y);
        }
        return {};
      }
      std::int64_t x = 0, y = 0;
      if (actual.type() != element_type::INT64 || actual.get_int64().get(x) ||
          expected.get_int64().get(y) || x != y) {
        return fmt::format("{}: {}, expected {}\n", where, simdjson::to_string(actual),
                           simdjson::to_string(expected));
      }
      return {};
    }
    case element_type::STRING: {
      std::string_view x, y = expected.get_string();
      if (actual.get_string().get(x)) return where + ": not a string\n";
      if (key == "path") {
        if (fs::path(x).filename() != fs::path(y).filename()) {
          return fmt::format("{}: {}, expected {}\n", where, x, y);
        }
      } else if (x != y) {
        return fmt::format("{}: {}, expected {}\n", where, x, y);
      }
      return {};
    }
    default:
      if (simdjson::to_string(actual) != simdjson::to_string(expected)) {
        return fmt::format("{}: {}, expected {}\n", where, simdjson::to_string(actual),
                           simdjson::to_string(expected));
      }
      return {};
  }
}

/// The layout analyze found against the one the simulator wrote.
std::string layout_differences(simdjson::dom::element kernel_view, simdjson::dom::element layout) {
  std::string out;
  simdjson::dom::element found;
  if (kernel_view["layout"].get(found)) return "no layout in summary.json\n";
  if (std::string_view(found["source"]) != "process_group" ||
      std::string_view(found["group"]) != std::string_view(layout["group"]) ||
      std::int64_t(found["pp"]) != std::int64_t(layout["pp"]) ||
      std::int64_t(found["dp"]) != std::int64_t(layout["dp"])) {
    out += fmt::format("layout {}, expected {}\n", simdjson::to_string(found),
                       simdjson::to_string(layout));
  }
  simdjson::dom::array ranks = kernel_view["ranks"], want = layout["ranks"];
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::int64_t(ranks.at(i)["stage"]) != std::int64_t(want.at(i)["stage"])) {
      out += fmt::format("rank {}: stage {}, expected {}\n", i,
                         simdjson::to_string(ranks.at(i)["stage"]),
                         simdjson::to_string(want.at(i)["stage"]));
    }
  }
  return out;
}

class TorchKernelE2E : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchKernelE2E, AnalyzeReportsTheExpectedKernelView) {
  testing::TempDir dir;
  const std::string args = GetParam();
  const std::string run = dir / "run", out = dir / "out";
  const CommandResult sim =
      run_cli(fmt::format("simulate --format torch-kernels -o '{}' {}", run, args));
  ASSERT_EQ(sim.status, 0) << sim.output;
  const CommandResult analyze = run_cli(fmt::format("analyze -q '{}' -o '{}'", run, out));
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  simdjson::dom::parser p1, p2;
  simdjson::dom::element expected, summary;
  ASSERT_EQ(p1.load(run + "/expected.json").get(expected), simdjson::SUCCESS);
  ASSERT_EQ(p2.load(out + "/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(std::int64_t(summary["jobs"]), 0) << "no labels: no jobs";
  const simdjson::dom::element actual = summary["kernel_view"];
  const simdjson::dom::element want = expected["kernel_view"];
  EXPECT_EQ(layout_differences(actual, expected["layout"]), "") << args;
  EXPECT_GT(std::int64_t(want["wait_ns"]), 0) << args;
  EXPECT_GT(std::int64_t(want["transfer_ns"]), 0) << args;

  // The offsets the traces were written with, against machine 0's clock.
  std::map<std::int64_t, std::int64_t> offsets;
  for (simdjson::dom::element m : expected["clock"]["machines"]) {
    offsets[std::int64_t(m["machine"])] = std::int64_t(m["offset_ns"]);
  }
  const bool skewed =
      std::any_of(offsets.begin(), offsets.end(), [](const auto& m) { return m.second != 0; });
  if (!skewed) {
    // One clock: nothing applied, every figure to the nanosecond.
    simdjson::dom::element clock;
    if (!actual["clock"].get(clock)) {
      EXPECT_FALSE(bool(clock["applied"])) << args;
    }
    EXPECT_EQ(differences(actual, want, "kernel_view", {"clock", "layout", "stage"}), "") << args;
    return;
  }
  // A machine's clock ahead or behind: the offset found from the matched
  // kernels within 10 us, and every figure within 1e-4 of the window (the
  // tolerance of tests/reference/check_kernel_view.py's offset runs).
  simdjson::dom::element clock = actual["clock"];
  EXPECT_TRUE(bool(clock["applied"])) << simdjson::to_string(clock);
  for (simdjson::dom::element m : clock["machines"]) {
    const std::int64_t machine = m["machine"];
    EXPECT_NEAR(std::int64_t(m["offset_ns"]), offsets.at(machine), 10'000) << "machine " << machine;
  }
  const double window = static_cast<double>(std::int64_t(want["window_ns"]));
  for (const char* key : {"window_ns", "compute_ns", "transfer_ns", "wait_ns", "idle_ns"}) {
    EXPECT_NEAR(static_cast<double>(std::int64_t(actual[key])),
                static_cast<double>(std::int64_t(want[key])), 1e-4 * window)
        << key;
  }
  for (const char* key : {"bubble_ratio", "idle_share", "wait_share", "transfer_share"}) {
    EXPECT_NEAR(double(actual[key]), double(want[key]), 1e-4) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, TorchKernelE2E,
    ::testing::Values(
        // 1F1B and interleaved, pp 2 and 4, one or two data-parallel replicas.
        "--schedule 1f1b --stages 4 --micro-batches 8",
        "--schedule vpp --stages 4 --micro-batches 8 --chunks 2 --devices-per-stage 2 "
        "--first-step 7",
        "--schedule 1f1b --stages 2 --micro-batches 4 --devices-per-stage 2 --no-comms-id "
        "--nccl-names old --kernels-per-job 5",
        "--schedule vpp --stages 2 --micro-batches 4 --chunks 3 --no-comms-id --steps 2 --seed 5",
        // Two machines on one clock; then with machine 1 ahead or behind.
        "--schedule 1f1b --stages 4 --micro-batches 8 --devices-per-stage 2 --machines 2 "
        "--nccl-names old",
        "--schedule 1f1b --stages 4 --micro-batches 8 --devices-per-stage 2 --machines 2 "
        "--skew 1:1500250",
        "--schedule vpp --stages 4 --micro-batches 8 --machines 2 --skew 1:-300000 "
        "--no-comms-id --nccl-names old",
        // Split backwards and a V placement (chunk hand-over without a transfer).
        "--schedule torch-zbvzerobubble --stages 4 --micro-batches 8 --devices-per-stage 2 "
        "--resolution ns"));

TEST(TorchKernelTraces, AreWrittenInKinetoOrderWithoutLabels) {
  testing::TempDir dir;
  for (const char* names : {"old", "new"}) {
    for (const bool ids : {true, false}) {
      const std::string run = dir / fmt::format("run-{}-{}", names, ids);
      const CommandResult sim = run_cli(fmt::format(
          "simulate --format torch-kernels -o '{}' --stages 2 --micro-batches 4 --steps 2 "
          "--devices-per-stage 2 --machines 2 --nccl-names {} {}",
          run, names, ids ? "" : "--no-comms-id"));
      ASSERT_EQ(sim.status, 0) << sim.output;
      const std::string text = testing::read_file(fs::path(run) / "machine1/rank3.pt.trace.json");
      EXPECT_EQ(text.find("PP:"), std::string::npos);
      EXPECT_NE(text.find("\"baseTimeNanoseconds\": "), std::string::npos);
      EXPECT_NE(text.find("\"rank\": 3, \"world_size\": 4"), std::string::npos);
      EXPECT_NE(text.find("\"Process Group Description\": \"PIPELINE_MODEL_PARALLEL_GROUP\""),
                std::string::npos);
      EXPECT_NE(text.find("\"Process Group Description\": \"DATA_PARALLEL_GROUP\""),
                std::string::npos);
      EXPECT_NE(text.find("\"Process Group Ranks\": \"[1, 3]\""), std::string::npos);
      EXPECT_NE(text.find("\"Src Rank\": 1"), std::string::npos);
      EXPECT_NE(text.find("\"Dst Rank\": 1"), std::string::npos);
      EXPECT_EQ(text.find("\"Comms Id\"") != std::string::npos, ids);
      const bool old = std::string_view(names) == "old";
      EXPECT_EQ(text.find("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t") != std::string::npos, old);
      EXPECT_EQ(text.find("\"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernelEx\"") !=
                    std::string::npos,
                !old);
      EXPECT_EQ(text.find("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)") !=
                    std::string::npos,
                !old);

      simdjson::dom::parser parser;
      simdjson::dom::element doc;
      ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
      // Kineto's order: CPU events, then runtime calls and GPU activities in
      // time order, then metadata.
      int phase = 0;  // 0 CPU, 1 runtime and GPU, 2 metadata
      double last_ts = -1;
      std::uint64_t largest_id = 0;
      std::set<std::int64_t> launched, ran;
      for (simdjson::dom::element e : doc["traceEvents"]) {
        const std::string_view ph = e["ph"];
        std::string_view cat;
        if (e["cat"].get(cat)) cat = "";
        const double ts = e["ts"];
        const int event_phase = ph == "M"                                       ? 2
                                : (cat == "cpu_op" || cat == "user_annotation") ? 0
                                                                                : 1;
        ASSERT_GE(event_phase, phase) << simdjson::to_string(e);
        if (event_phase != phase) last_ts = -1;
        phase = event_phase;
        if (phase < 2) {
          EXPECT_GE(ts, last_ts) << simdjson::to_string(e);
          last_ts = ts;
        }
        if (cat == "cuda_runtime" || cat == "cuda_driver") {
          launched.insert(std::int64_t(e["args"]["correlation"]));
        }
        if (cat == "kernel") {
          ran.insert(std::int64_t(e["args"]["correlation"]));
          std::uint64_t id = 0;
          if (!e["args"]["Comms Id"].get_uint64().get(id)) largest_id = std::max(largest_id, id);
        }
      }
      EXPECT_EQ(phase, 2);
      EXPECT_EQ(launched, ran);
      if (ids) {
        EXPECT_GT(largest_id, std::uint64_t{1} << 63) << "read as an unsigned 64-bit integer";
      }
    }
  }
}

TEST(TorchKernelTraces, CommsIdsAndNamesChangeNoTime) {
  // The same run with and without Comms Id, with either name generation:
  // identical times, so identical expected figures.
  testing::TempDir dir;
  std::string first;
  int n = 0;
  for (const char* extra : {"", "--no-comms-id", "--nccl-names old --no-comms-id"}) {
    const std::string run = dir / fmt::format("run{}", n++);
    const CommandResult sim = run_cli(fmt::format(
        "simulate --format torch-kernels -o '{}' --schedule vpp --stages 4 --micro-batches 8 {}",
        run, extra));
    ASSERT_EQ(sim.status, 0) << sim.output;
    simdjson::dom::parser parser;
    simdjson::dom::element expected;
    ASSERT_EQ(parser.load(run + "/expected.json").get(expected), simdjson::SUCCESS);
    const std::string view = simdjson::to_string(expected["kernel_view"]);
    if (first.empty()) {
      first = view;
    } else {
      EXPECT_EQ(view, first) << extra;
    }
  }
}

TEST(TorchKernelTraces, RefusesOptionsOfOtherFormats) {
  testing::TempDir dir;
  const std::string out = dir / "x";
  const auto refused = [&](const std::string& args, std::string_view message) {
    const CommandResult r = run_cli(fmt::format("simulate -o '{}' {}", out, args));
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  };
  refused("--format torch-kernels --shuffle", "--format torch-kernels writes traces only");
  refused("--format torch-kernels --target-bytes 1M", "--format torch-kernels writes traces only");
  refused("--format torch-kernels --comm", "its NCCL kernels are the transfers");
  refused("--format torch-kernels --lr", "its NCCL kernels are the transfers");
  refused("--format torch-kernels --latency-us 0", "--latency-us of at least");
  refused("--format torch-kernels --kernels-per-job 0", "--kernels-per-job");
  refused("--format torch --no-comms-id", "need --format torch-kernels");
  refused("--nccl-names old", "need --format torch-kernels");
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace pipescope
