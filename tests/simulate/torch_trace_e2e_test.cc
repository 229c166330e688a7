// End-to-end: `pipescope simulate --format torch` writes PyTorch profiler
// traces of pipelining schedules (1F1B, interleaved, zero-bubble, V shapes,
// comm actions, several machines, gzip); `pipescope analyze` must report
// exactly the figures of expected.json, which the simulator computes without
// the analysis (simulate/expected_metrics.h).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/command_runner.h"
#include "support/compress_util.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::run_cli;

std::string differences(simdjson::dom::element expected, simdjson::dom::element actual) {
  std::string out;
  auto ints = [&](simdjson::dom::element e, simdjson::dom::element a, const char* key,
                  const std::string& where) {
    std::int64_t x = 0, y = 0;
    if (e[key].get_int64().get(x) || a[key].get_int64().get(y) || x != y) {
      out += fmt::format("{}{}: expected {}, got {}\n", where, key, x, y);
    }
  };
  auto ratio = [&](simdjson::dom::element e, simdjson::dom::element a, const char* key,
                   const std::string& where) {
    double x = 0, y = 0;
    if (e[key].get_double().get(x) || a[key].get_double().get(y) ||
        std::fabs(x - y) > 1e-12 * std::max(std::fabs(x), std::fabs(y))) {
      out += fmt::format("{}{}: expected {}, got {}\n", where, key, x, y);
    }
  };
  for (const char* key : {"jobs", "first_step", "total_window_ns"}) ints(expected, actual, key, "");
  ratio(expected, actual, "bubble_ratio", "");
  simdjson::dom::array ed = expected["devices"], ad = actual["devices"];
  simdjson::dom::array es = expected["steps"], as = actual["steps"];
  if (ed.size() != ad.size() || es.size() != as.size()) {
    return out + fmt::format("expected {} devices, {} steps; got {}, {}\n", ed.size(), es.size(),
                             ad.size(), as.size());
  }
  for (std::size_t d = 0; d < ed.size(); ++d) {
    for (const char* key : {"device", "machine", "rank", "jobs", "steps", "busy_ns", "idle_ns"}) {
      ints(ed.at(d), ad.at(d), key, fmt::format("devices[{}].", d));
    }
  }
  for (std::size_t k = 0; k < es.size(); ++k) {
    const std::string where = fmt::format("steps[{}].", k);
    for (const char* key : {"step", "start_ns", "end_ns"}) ints(es.at(k), as.at(k), key, where);
    ratio(es.at(k), as.at(k), "bubble_ratio", where);
  }
  return out;
}

class TorchTraceE2E : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchTraceE2E, AnalyzeReportsTheExpectedFigures) {
  testing::TempDir dir;
  const std::string args = GetParam();
  const std::string run = dir / "run", out = dir / "out";
  const CommandResult sim = run_cli(fmt::format("simulate --format torch -o '{}' {}", run, args));
  ASSERT_EQ(sim.status, 0) << sim.output;
  if (args.find("--machines") == std::string::npos) {
    // One trace compressed: read through gzip alike.
    const fs::path first = fs::path(run) / "rank0.pt.trace.json";
    const std::string text = testing::read_file(first);
    std::ofstream(first.string() + ".gz", std::ios::binary) << testing::gzip(text);
    fs::remove(first);
  }
  const CommandResult analyze = run_cli(fmt::format("analyze -q '{}' -o '{}'", run, out));
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  simdjson::dom::parser p1, p2;
  simdjson::dom::element expected, actual;
  ASSERT_EQ(p1.load(run + "/expected.json").get(expected), simdjson::SUCCESS);
  ASSERT_EQ(p2.load(out + "/summary.json").get(actual), simdjson::SUCCESS);
  EXPECT_EQ(differences(expected, actual), "") << args;
  EXPECT_GT(std::int64_t(expected["jobs"]), 0);
  // The dependencies follow the schedule's placement (V-shaped for ZB-V and
  // DualPipeV): on a simulated run no consumer starts before its input
  // ends, so the clock check finds no violation and no critical-path hop
  // waits a negative time (a blocking recv posted before its data was sent
  // is on the path from the data's end). Not with tensor-parallel peers read
  // as a stage each (the default map, which a warning questions): their
  // dependencies are the wrong ones.
  if (args.find("--devices-per-stage") != std::string::npos) return;
  simdjson::dom::element clock = actual["clock"];
  EXPECT_GT(std::int64_t(clock["dependencies"]), 0) << args;
  EXPECT_EQ(std::int64_t(clock["violations_before"]), 0) << args;
  for (simdjson::dom::element job : actual["critical_path"]["longest_step"]["jobs"]) {
    EXPECT_GE(std::int64_t(job["wait_ns"]), 0) << args;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, TorchTraceE2E,
    ::testing::Values(
        "--schedule torch-1f1b --stages 4 --micro-batches 8",
        "--schedule torch-1f1b --stages 4 --micro-batches 8 --comm --machines 2 --seed 3",
        "--schedule torch-interleaved1f1b --stages 4 --micro-batches 8 --chunks 3 --first-step 12",
        "--schedule torch-interleaved1f1b --stages 2 --micro-batches 4 --devices-per-stage 2 "
        "--comm --steps 4",
        "--schedule torch-interleavedzerobubble --stages 4 --micro-batches 8 --seed 5",
        "--schedule torch-zbvzerobubble --stages 4 --micro-batches 8 --comm",
        "--schedule torch-dualpipev --stages 3 --micro-batches 6 --resolution ns",
        "--schedule torch-zbvzerobubble --stages 4 --micro-batches 8 --machines 2",
        "--schedule torch-dualpipev --stages 4 --micro-batches 8 --machines 2 --comm"));

TEST(TorchTraceCli, SharedStagesArePeersOrWithPipelineKReplicas) {
  // Two data-parallel replicas of a 2-stage pipeline, laid out replica-minor
  // (global ranks 0 and 1 run stage 0, 2 and 3 stage 1). The labels cannot
  // tell them from tensor-parallel peers: by default they are one stage of
  // two devices each, with a warning; with --pipeline K, pipeline k is the
  // k-th rank of each stage, and each gives exactly the single run's figures.
  testing::TempDir dir;
  const std::string one = dir / "one", two = dir / "two";
  ASSERT_EQ(run_cli(fmt::format("simulate --format torch -o '{}' --schedule torch-1f1b "
                                "--stages 2 --micro-batches 4 --steps 2",
                                one))
                .status,
            0);
  fs::create_directories(two);
  const auto copy_as = [&](int from, int to) {
    std::string text =
        testing::read_file(fs::path(one) / fmt::format("rank{}.pt.trace.json", from));
    const std::string key = fmt::format("\"rank\": {}", from);
    const std::size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos);
    text.replace(at, key.size(), fmt::format("\"rank\": {}", to));
    std::ofstream(fs::path(two) / fmt::format("rank{}.pt.trace.json", to), std::ios::binary)
        << text;
  };
  copy_as(0, 0);
  copy_as(0, 1);
  copy_as(1, 2);
  copy_as(1, 3);
  simdjson::dom::parser p1;
  simdjson::dom::element expected;
  ASSERT_EQ(p1.load(one + "/expected.json").get(expected), simdjson::SUCCESS);
  // Without --pipeline: one stage of two devices each, and a warning that
  // says how to read them as replicas instead.
  const CommandResult peers =
      run_cli(fmt::format("analyze '{}' -o '{}' --no-trace", two, dir / "peers"));
  ASSERT_EQ(peers.status, 0) << peers.output;
  EXPECT_NE(peers.output.find(
                "warning: several traces run the same stages (stage 0: rank0.pt.trace.json, "
                "rank1.pt.trace.json; stage 1: rank2.pt.trace.json, rank3.pt.trace.json): they "
                "are analysed as devices of one stage (tensor-parallel peers); if they are "
                "data-parallel replicas, analyse one pipeline at a time (pipeline k = the k-th "
                "trace of each stage, 0-1): pass --pipeline K to analyse pipeline K instead"),
            std::string::npos)
      << peers.output;
  EXPECT_NE(peers.output.find("4 devices on 1 machine"), std::string::npos) << peers.output;
  for (int k = 0; k < 2; ++k) {
    const std::string out = dir / fmt::format("out{}", k);
    const CommandResult r =
        run_cli(fmt::format("analyze '{}' -o '{}' --no-trace --pipeline {}", two, out, k));
    ASSERT_EQ(r.status, 0) << r.output;
    const std::string kept = k == 0 ? "rank0.pt.trace.json, rank2.pt.trace.json"
                                    : "rank1.pt.trace.json, rank3.pt.trace.json";
    const std::string other = k == 0 ? "rank1.pt.trace.json, rank3.pt.trace.json"
                                     : "rank0.pt.trace.json, rank2.pt.trace.json";
    EXPECT_NE(r.output.find(fmt::format(
                  "warning: the traces hold 2 pipelines (data-parallel replicas: several ranks "
                  "run one stage); pipeline {} ({}) is analysed and the others are left out; "
                  "pipeline {}: {}; pass --pipeline K to analyse pipeline K instead",
                  k, kept, 1 - k, other)),
              std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("no input for rank"), std::string::npos) << r.output;
    simdjson::dom::parser p2;
    simdjson::dom::element actual;
    ASSERT_EQ(p2.load(out + "/summary.json").get(actual), simdjson::SUCCESS);
    EXPECT_EQ(differences(expected, actual), "") << k;
  }
  const CommandResult bad =
      run_cli(fmt::format("analyze '{}' -o '{}' --pipeline 2", two, dir / "out2"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("pipeline 2 asked for, but the traces hold 2 pipelines (0-1)"),
            std::string::npos)
      << bad.output;
}

TEST(TorchTraceSimulate, RefusesWorkerLogOptions) {
  testing::TempDir dir;
  const CommandResult r =
      run_cli(fmt::format("simulate --format torch --shuffle -o '{}'", dir / "x"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--format torch writes traces only"), std::string::npos) << r.output;
}

TEST(TorchTraceCli, NoPipelineJobsAndPatterns) {
  testing::TempDir dir;
  const std::string resnet =
      std::string(PIPESCOPE_TESTDATA) + "/kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
  // Without labels: the kernel view alone (exit 0), and summary.json says
  // why there are no pipeline sections.
  const CommandResult none = run_cli(fmt::format("analyze -q '{}' -o '{}'", resnet, dir / "o1"));
  ASSERT_EQ(none.status, 0) << none.output;
  {
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    ASSERT_EQ(parser.load(dir / "o1/summary.json").get(summary), simdjson::SUCCESS);
    EXPECT_EQ(std::int64_t(summary["jobs"]), 0);
    EXPECT_TRUE(std::string_view(summary["no_jobs"]).starts_with("none: kernel-level trace"));
    EXPECT_EQ(summary["schedule"].error(), simdjson::NO_SUCH_FIELD);
    // Figures pinned by tests/reference/kernel_reference.py on this trace.
    EXPECT_EQ(std::int64_t(summary["kernel_view"]["window_ns"]), 480'026'043);
    EXPECT_EQ(std::int64_t(summary["kernel_view"]["compute_ns"]), 472'454'441);
    EXPECT_EQ(summary["kernel_view"]["steps"].get_array().size(), 5u);
  }
  const CommandResult jobs =
      run_cli(fmt::format("analyze -q '{}' -o '{}' --job-pattern '## (?P<op>forward|backward) ##'",
                          resnet, dir / "o2"));
  ASSERT_EQ(jobs.status, 0) << jobs.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(dir / "o2/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(std::int64_t(summary["jobs"]), 10);
  EXPECT_EQ(std::int64_t(summary["first_step"]), 101);
  const CommandResult bad =
      run_cli(fmt::format("analyze -q '{}' -o '{}' --job-pattern 'x'", resnet, dir / "o3"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--job-pattern: it has no named group 'op'"), std::string::npos)
      << bad.output;
}

TEST(TorchTraceCli, JobPatternOnANameOfHundredsOfKilobytes) {
  // 200 KB of tensor shapes before each job's tag: `analyze` died of a
  // stack overflow (exit 139) in a backtracking matcher; it must read the
  // four jobs and exit 0.
  testing::TempDir dir;
  std::string shapes;
  while (shapes.size() < 200'000) shapes += "ab";
  std::string events;
  std::int64_t ts = 10;
  for (const char* tag : {"_mb0_fwd", "_mb1_fwd", "_mb0_bwd", "_mb1_bwd"}) {
    events += fmt::format(
        R"({}{{"ph": "X", "cat": "user_annotation", "name": "{}{}", "pid": 1, "tid": 1, )"
        R"("ts": {}, "dur": 20}})",
        events.empty() ? "" : ", ", shapes, tag, ts);
    ts += 100;
  }
  dir.write("t/rank0.pt.trace.json",
            fmt::format(R"({{"distributedInfo": {{"rank": 0}}, "traceEvents": [{}]}})", events));
  const CommandResult r = run_cli(fmt::format(
      "analyze -q '{}' -o '{}' --no-trace --job-pattern '(?:a|b)*_?mb(?P<mb>\\d+)_(?P<op>fwd|bwd)' "
      "--job-kinds fwd=forward,bwd=backward",
      dir / "t", dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(std::int64_t(summary["jobs"]), 4);
  // What RE2 cannot take is refused by name, before anything is read.
  const CommandResult bad = run_cli(fmt::format(
      "analyze -q '{}' -o '{}' --job-pattern '(?<=x)(?P<op>fwd)'", dir / "t", dir / "o2"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--job-pattern: lookbehind ('(?<=') is not supported"),
            std::string::npos)
      << bad.output;
}

TEST(TorchTraceCli, HostTimedJobsAreOneWarningForTheRun) {
  // Two ranks, CPU spans only (no GPU span, no kernel): every job is
  // host-timed, so the run's busy and idle time is the host's view.
  testing::TempDir dir;
  const auto write_rank = [&](int rank, std::int64_t stage) {
    std::string events = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", )"
                         R"("pid": 1, "tid": 1, "ts": 0, "dur": 1000})";
    std::int64_t ts = 10 + 30 * stage;
    for (const char* op : {"F0", "F1", "B0", "B1"}) {
      events += fmt::format(
          R"(, {{"ph": "X", "cat": "user_annotation", "name": "PP:{}{}", "pid": 1, "tid": 1, )"
          R"("ts": {}, "dur": 20}})",
          stage, op, ts);
      ts += 100;
    }
    return dir.write(
        fmt::format("t/rank{}.pt.trace.json", rank),
        fmt::format(R"({{"distributedInfo": {{"rank": {}}}, "traceEvents": [{}]}})", rank, events));
  };
  const std::string first = write_rank(0, 0);
  write_rank(1, 1);
  const CommandResult r =
      run_cli(fmt::format("analyze '{}' -o '{}' --no-trace", dir / "t", dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string warning = fmt::format(
      "8 of 8 jobs, in 2 of 2 traces (first: {}), are host-timed: no GPU span or kernel was "
      "found for them, so their intervals are the CPU's launch spans and their busy and idle "
      "time is the host's view, not the GPU's (profile with CUDA activities on, or label GPU "
      "ranges)",
      first);
  EXPECT_NE(r.output.find("pipescope: warning: " + warning), std::string::npos) << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(summary), simdjson::SUCCESS);
  int found = 0;
  for (simdjson::dom::element w : summary["warnings"].get_array()) {
    if (std::string_view(w["code"]) != "host_timed_jobs") continue;
    ++found;
    EXPECT_EQ(std::string_view(w["message"]), warning);
    EXPECT_EQ(std::int64_t(w["count"]), 8);
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace pipescope
