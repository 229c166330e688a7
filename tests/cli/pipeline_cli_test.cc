// `analyze` with the pipeline analysis end to end: the acceptance run through
// the CLI, its summary.json sections and the trace's bubble lanes, counter
// and flow arrows.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;

TEST(PipelineCli, AcceptanceRunThroughTheCli) {
  testing::TempDir dir;
  ASSERT_EQ(run_cli("simulate -o '" + (dir / "run") +
                    "' --schedule vpp --stages 4 --micro-batches 8 --chunks 2 --machines 2 "
                    "--slow-stage 2:1.5 --skew 1:3000000 --steps 3")
                .status,
            0);
  const CommandResult analyze =
      run_cli("analyze '" + (dir / "run") + "' -o '" + (dir / "out") + "' --flows --top-bubbles 4");
  const std::string& out = analyze.output;
  ASSERT_EQ(analyze.status, 0) << out;
  EXPECT_NE(out.find("schedule: VPP (P=4 stages, M=8 micro-batches, V=2 chunks"), std::string::npos)
      << out;
  EXPECT_NE(out.find("bottleneck: stage 2"), std::string::npos) << out;

  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(s["schema"]), "pipescope.summary/1");
  EXPECT_EQ(std::string_view(s["schedule"]["name"]), "VPP");
  EXPECT_EQ(int64_t(s["schedule"]["chunks"]), 2);
  EXPECT_EQ(int64_t(s["bottleneck"]["slowest_stage"]), 2);
  EXPECT_EQ(std::string_view(s["clock"]["method"]), "estimated");
  const int64_t offset = int64_t(s["clock"]["machines"].at(1)["offset_ns"]);
  EXPECT_LE(std::llabs(offset - 3'000'000), 200'000);
  EXPECT_EQ(uint64_t(s["clock"]["violations_after"]), 0u);
  EXPECT_EQ(simdjson::dom::array(s["bubbles"]["longest"]).size(), 4u);
  // Bubble kinds add up to the devices' idle time.
  int64_t idle = 0;
  for (simdjson::dom::element d : simdjson::dom::array(s["devices"])) idle += int64_t(d["idle_ns"]);
  EXPECT_EQ(int64_t(s["bubbles"]["fill_ns"]) + int64_t(s["bubbles"]["interior_ns"]) +
                int64_t(s["bubbles"]["drain_ns"]),
            idle);
  EXPECT_EQ(int64_t(s["bubbles"]["idle_ns"]), idle);
  EXPECT_EQ(simdjson::dom::array(s["critical_path"]["steps"]).size(), 3u);
  EXPECT_EQ(simdjson::dom::array(s["warnings"]).size(), 0u);

  simdjson::dom::parser trace_parser;
  simdjson::dom::element trace;
  ASSERT_EQ(trace_parser.load(dir / "out/trace.json").get(trace), simdjson::SUCCESS);
  int64_t bubble_ns = 0;
  std::size_t counters = 0, flow_starts = 0, flow_ends = 0, critical = 0;
  for (simdjson::dom::element e : simdjson::dom::array(trace["traceEvents"])) {
    const std::string_view ph(e["ph"]);
    if (ph == "X" && std::string_view(e["cat"]) == "bubble")
      bubble_ns += int64_t(e["args"]["length_ns"]);
    if (ph == "C") ++counters;
    if (ph == "s") ++flow_starts;
    if (ph == "f") ++flow_ends;
    if ((ph == "s" || ph == "f") && std::string_view(e["cat"]) == "critical_path") ++critical;
  }
  EXPECT_EQ(bubble_ns, idle);
  EXPECT_EQ(counters, 4u);  // one per step and the closing 0
  EXPECT_GT(flow_starts, 0u);
  EXPECT_EQ(flow_starts, flow_ends);
  EXPECT_GT(critical, 0u);

  // Bad flag values are usage errors.
  EXPECT_EQ(
      run_cli("analyze '" + (dir / "run") + "' -o '" + (dir / "o2") + "' --stages tp=3").status, 2);
  EXPECT_EQ(
      run_cli("analyze '" + (dir / "run") + "' -o '" + (dir / "o2") + "' --clock-offset machine1=3")
          .status,
      2);
}

// The machines of a 1F1B run of 8 stages on 2 machines (stages 0-3 on
// machine0, 4-7 on machine1), 16 micro-batches, 6 steps: 7 stage boundaries
// x 16 micro-batches x 2 directions x 6 steps = 1344 dependencies, 192 of
// them across the machine boundary.
std::string simulate_two_machines(const testing::TempDir& dir) {
  const std::string run = dir / "run";
  const CommandResult sim = run_cli("simulate -o '" + run +
                                    "' --schedule 1f1b --stages 8 --micro-batches 16 --steps 6 "
                                    "--machines 2 --comm");
  EXPECT_EQ(sim.status, 0) << sim.output;
  return run;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(PipelineCli, MachinesGivenInReverseAreAnalysedAsTheRunFolder) {
  testing::TempDir dir;
  const std::string run = simulate_two_machines(dir);
  const CommandResult whole = run_cli("analyze '" + run + "' -o '" + (dir / "whole") + "'");
  ASSERT_EQ(whole.status, 0) << whole.output;
  const CommandResult reversed = run_cli("analyze '" + run + "/machine1' '" + run +
                                         "/machine0' -o '" + (dir / "reversed") + "'");
  ASSERT_EQ(reversed.status, 0) << reversed.output;
  // The order used, one line per machine, and the same run as the folder gives.
  EXPECT_NE(reversed.output.find("pipescope: machine 0: " + run +
                                 "/machine0 (4 files, devices 0-3)\n"
                                 "pipescope: machine 1: " +
                                 run + "/machine1 (4 files, devices 4-7)\n"),
            std::string::npos)
      << reversed.output;
  EXPECT_EQ(read_text(dir / "reversed/summary.json"), read_text(dir / "whole/summary.json"));
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "reversed/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(s["clock"]["method"]), "consistent");
  EXPECT_EQ(uint64_t(s["clock"]["violations_before"]), 0u);
  EXPECT_EQ(simdjson::dom::array(s["warnings"]).size(), 0u);
  // --quiet leaves the order out too.
  const CommandResult quiet = run_cli("analyze -q '" + run + "/machine1' '" + run +
                                      "/machine0' -o '" + (dir / "quiet") + "'");
  ASSERT_EQ(quiet.status, 0);
  EXPECT_EQ(quiet.output, "");
}

TEST(PipelineCli, MachinesInTheWrongOrderFitNoLayoutAndAreNotCorrected) {
  // Machine folders whose names put them in the wrong order: "a" holds
  // machine1's logs (stages 4-7), "b" machine0's. Every one of the 192
  // dependencies across the boundary then runs backwards in time (stage 0
  // "waits" for stage 7). Before any clock is read, the layout check sees
  // that device 4 (truly stage 0) does not follow device 3 (truly stage 7):
  // no layout fits, so nothing is estimated, the times stay as read, the
  // warning says which devices and to check the machines' order, and the
  // bubble ratio is the true run's.
  testing::TempDir dir;
  const std::string run = simulate_two_machines(dir);
  std::filesystem::rename(run + "/machine1", dir / "a");
  std::filesystem::rename(run + "/machine0", dir / "b");
  const CommandResult wrong =
      run_cli("analyze '" + (dir / "b") + "' '" + (dir / "a") + "' -o '" + (dir / "out") + "'");
  ASSERT_EQ(wrong.status, 0) << wrong.output;
  EXPECT_NE(wrong.output.find("pipescope: machine 0: " + (dir / "a")), std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("no pipeline layout fits the run (in pp=8 \u00d7 dp=1 \u00d7 tp=1, "
                              "device 4 (stage 4) does not follow device 3"),
            std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("check the order of the machines"), std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("clocks: no-layout; dependency violations 192 before, 192 after"),
            std::string::npos)
      << wrong.output;
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(s["layout"]["method"]), "none");
  EXPECT_EQ(std::string_view(s["clock"]["method"]), "no-layout");
  EXPECT_FALSE(bool(s["clock"]["applied"]));
  EXPECT_EQ(uint64_t(s["clock"]["dependencies"]), 1344u);
  EXPECT_EQ(uint64_t(s["clock"]["violations_before"]), 192u);
  EXPECT_EQ(uint64_t(s["clock"]["violations_after"]), 192u);
  EXPECT_EQ(int64_t(s["clock"]["machines"].at(1)["offset_ns"]), 0);
  EXPECT_EQ(std::string_view(s["warnings"].at(0)["code"]), "layout_not_found");
  EXPECT_EQ(uint64_t(s["warnings"].at(0)["count"]), 8u);

  // The bubble ratio of the same logs in the right order: the times as read.
  std::filesystem::create_directories(dir / "right");
  std::filesystem::rename(dir / "b", dir / "right/machine0");
  std::filesystem::rename(dir / "a", dir / "right/machine1");
  ASSERT_EQ(run_cli("analyze -q '" + (dir / "right") + "' -o '" + (dir / "right_out") + "'").status,
            0);
  simdjson::dom::parser right_parser;
  simdjson::dom::element r;
  ASSERT_EQ(right_parser.load(dir / "right_out/summary.json").get(r), simdjson::SUCCESS);
  EXPECT_EQ(double(s["bubble_ratio"]), double(r["bubble_ratio"]));
  EXPECT_EQ(std::string_view(r["clock"]["method"]), "consistent");
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// Two replicas of a 4-stage 1F1B pipeline, each simulated with its own seed,
// laid out as Megatron-LM lays them (pp,dp,tp: the replicas of a stage are
// neighbouring ranks): machine0 holds stages 0-1 of both, machine1 stages
// 2-3, machine1's clock `skew_ns` ahead.
std::string hybrid_folder(const testing::TempDir& dir, const std::string& skew) {
  for (int r = 0; r < 2; ++r) {
    const std::string out = dir / ("replica" + std::to_string(r));
    EXPECT_EQ(run_cli("simulate -o '" + out + "' --schedule 1f1b --stages 4 --micro-batches 8 " +
                      "--steps 3 --machines 2 --seed " + std::to_string(r + 1) + skew)
                  .status,
              0);
  }
  const std::string run = dir / "hybrid";
  for (int s = 0; s < 4; ++s) {
    for (int r = 0; r < 2; ++r) {
      const int rank = s * 2 + r;
      const std::filesystem::path to = std::filesystem::path(run) /
                                       ("machine" + std::to_string(rank / 4)) /
                                       ("workerlog." + std::to_string(rank % 4));
      std::filesystem::create_directories(to.parent_path());
      std::filesystem::copy_file(std::filesystem::path(dir / ("replica" + std::to_string(r))) /
                                     ("machine" + std::to_string(s / 2)) /
                                     ("workerlog." + std::to_string(s % 2)),
                                 to);
    }
  }
  return run;
}

TEST(PipelineCli, AHybridLayoutIsFoundItsSkewCorrectedAndItsSlowestReplicaReplayed) {
  testing::TempDir dir;
  const std::string run = hybrid_folder(dir, " --skew 1:5000000");
  const CommandResult analyze = run_cli("analyze '" + run + "' -o '" + (dir / "out") + "'");
  ASSERT_EQ(analyze.status, 0) << analyze.output;
  EXPECT_NE(analyze.output.find("layout: pp=4 \u00d7 dp=2 \u00d7 tp=1 (order pp,dp,tp), from job "
                                "order and dependencies"),
            std::string::npos)
      << analyze.output;
  EXPECT_NE(analyze.output.find("replicas: 2, slowest replica "), std::string::npos)
      << analyze.output;
  EXPECT_NE(analyze.output.find("clocks: estimated: machine1 +5.000 ms"), std::string::npos)
      << analyze.output;
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir / "out/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(s["layout"]["method"]), "detected");
  EXPECT_EQ(std::string_view(s["layout"]["order"]), "pp,dp,tp");
  EXPECT_EQ(simdjson::dom::array(s["replicas"]).size(), 2u);
  EXPECT_EQ(int64_t(s["clock"]["machines"].at(1)["offset_ns"]), 5'000'000);
  EXPECT_EQ(uint64_t(s["clock"]["violations_after"]), 0u);
  // The stages hold both replicas' devices: {0, 1}, {2, 3}, ...
  EXPECT_EQ(int64_t(s["stages"]["list"].at(1)["devices"].at(0)), 2);
  EXPECT_EQ(int64_t(s["stages"]["list"].at(1)["devices"].at(1)), 3);

  // Stated, it gives the same figures; with --stages too it is refused.
  const CommandResult given = run_cli("analyze -q '" + run + "' -o '" + (dir / "given") +
                                      "' --layout pp=4,dp=2,order=pp,dp,tp");
  ASSERT_EQ(given.status, 0) << given.output;
  simdjson::dom::parser given_parser;
  simdjson::dom::element g;
  ASSERT_EQ(given_parser.load(dir / "given/summary.json").get(g), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(g["layout"]["method"]), "given");
  EXPECT_EQ(double(g["bubble_ratio"]), double(s["bubble_ratio"]));
  const CommandResult both = run_cli("analyze -q '" + run + "' -o '" + (dir / "both") +
                                     "' --layout pp=4,dp=2 --stages tp=2");
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.output.find("--layout and --stages both say how the devices form stages"),
            std::string::npos)
      << both.output;
  const CommandResult bad =
      run_cli("analyze -q '" + run + "' -o '" + (dir / "bad") + "' --layout pp=4,dp=x");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.output.find("--layout pp=4,dp=x: 'x' is not a size"), std::string::npos)
      << bad.output;
  const CommandResult small =
      run_cli("analyze -q '" + run + "' -o '" + (dir / "small") + "' --layout pp=4");
  EXPECT_EQ(small.status, 2);
  EXPECT_NE(small.output.find("the mesh holds ranks 0-3, but the run has device 4"),
            std::string::npos)
      << small.output;

  const CommandResult whatif = run_cli("whatif '" + run + "' --schedule 1f1b");
  ASSERT_EQ(whatif.status, 0) << whatif.output;
  EXPECT_NE(whatif.output.find("replayed: replica "), std::string::npos) << whatif.output;
  EXPECT_NE(whatif.output.find(", the slowest of the run's 2 data-parallel replicas"),
            std::string::npos)
      << whatif.output;
}

}  // namespace
}  // namespace pipescope
