// `analyze` with the pipeline analysis end to end: the acceptance run through
// the CLI, its summary.json sections and the trace's bubble lanes, counter
// and flow arrows.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
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

}  // namespace
}  // namespace pipescope
