// `pipescope diff`: the text and JSON forms, figures that a source lacks, and
// the schedule comparison.
#include "compare/diff.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

RunFigures with_schedule(const std::string& name, int m) {
  RunFigures r;
  r.source = name;
  r.origin = "test";
  r.jobs = 10;
  r.bubble_ratio = 0.25;
  r.steps.push_back({0, 0, true, 0, 100, 100, 0.25, {{0, 75, 25, {}}}});
  r.devices.push_back({0, 0, "", 0, "", 10, 0, 75, 25, 0.75, {}});
  r.job_types.push_back({"forward", "forward", 5, 50 * 5});
  ScheduleFigures& s = r.schedule.emplace();
  s.name = "1F1B";
  s.exact = true;
  s.stages = 4;
  s.micro_batches = m;
  s.chunks = 1;
  return r;
}

TEST(CompareDiff, ScheduleChangesAndDeltas) {
  RunFigures a = with_schedule("a", 8);
  RunFigures b = with_schedule("b", 4);
  b.schedule->name = "FThenB";
  b.bubble_ratio = 0.40;
  b.job_types[0].total_ns = 60 * 5;
  const std::string text = format_diff_text(a, b);
  EXPECT_NE(text.find("changed: schedule 1F1B -> FThenB"), std::string::npos) << text;
  EXPECT_NE(text.find("changed: M (micro-batches) 8 -> 4"), std::string::npos) << text;
  EXPECT_NE(text.find("+15.00 pp"), std::string::npos) << text;
  EXPECT_NE(text.find("+10 ns (+20.00%)"), std::string::npos) << text;  // forward mean 50 -> 60 ns

  b.schedule.reset();
  b.job_types[0].total_ns.reset();
  const std::string degraded = format_diff_text(a, b);
  EXPECT_NE(degraded.find("schedule not analysed in B"), std::string::npos) << degraded;

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string json = format_diff_json(a, b);
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(std::string_view(doc["schema"]), "pipescope.diff/1");
  EXPECT_TRUE(doc["schedule"]["b"].is_null());
  EXPECT_EQ(std::string_view(doc["schedule"]["note"]), "schedule not analysed");
  simdjson::dom::element kinds = doc["job_kinds"].at(0);
  EXPECT_EQ(std::string_view(kinds["kind"]), "forward");
  EXPECT_EQ(int64_t(kinds["mean_ns_a"]), 50);
  EXPECT_TRUE(kinds["mean_ns_b"].is_null());
  EXPECT_NEAR(double(doc["metrics"].at(3)["delta"]), 0.15, 1e-12);
}

TEST(CompareDiff, CliLogsAgainstSummary) {
  const std::string sample = std::string(PIPESCOPE_TESTDATA) + "/single";
  const testing::CommandResult r =
      testing::run_cli("diff " + testing::shell_quote(sample) + " " +
                       testing::shell_quote(sample + "/expected.json") + " --json -");
  const std::string& out = r.output;
  ASSERT_EQ(r.status, 0) << out;

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  EXPECT_EQ(std::string_view(doc["a"]["origin"]), "logs");
  EXPECT_EQ(std::string_view(doc["b"]["origin"]), "summary");
  // Same run: every metric delta is 0.
  for (simdjson::dom::element m : simdjson::dom::array(doc["metrics"])) {
    EXPECT_EQ(double(m["delta"]), 0.0) << std::string_view(m["metric"]);
  }
  EXPECT_EQ(simdjson::dom::array(doc["devices"]).size(), 4u);
  EXPECT_EQ(simdjson::dom::array(doc["steps"]).size(), 2u);
  EXPECT_EQ(int64_t(doc["steps"].at(0)["a"]["step"]), 5);
  // Logs carry job durations, the hand-written expected.json does not.
  for (simdjson::dom::element k : simdjson::dom::array(doc["job_kinds"])) {
    EXPECT_FALSE(k["mean_ns_a"].is_null());
    EXPECT_TRUE(k["mean_ns_b"].is_null());
  }
}

// diff shows where it changed: a stage 1.6 times slower is the largest
// change, stage by stage, whether the runs are logs or summaries.
TEST(CompareDiff, StageByStageLargestChangesFirst) {
  testing::TempDir dir;
  const std::string common = " --schedule 1f1b --stages 4 --micro-batches 8 --steps 4 --seed 3";
  ASSERT_EQ(testing::run_cli("simulate -o " + testing::shell_quote(dir / "a") + common).status, 0);
  ASSERT_EQ(testing::run_cli("simulate -o " + testing::shell_quote(dir / "b") + common +
                             " --slow-stage 2:1.6")
                .status,
            0);
  ASSERT_EQ(testing::run_cli("analyze " + testing::shell_quote(dir / "b") + " -q --no-trace -o " +
                             testing::shell_quote(dir / "b-out"))
                .status,
            0);
  for (const std::string& b : {std::string(dir / "b"), std::string(dir / "b-out/summary.json")}) {
    const testing::CommandResult r = testing::run_cli("diff " + testing::shell_quote(dir / "a") +
                                                      " " + testing::shell_quote(b) + " --json -");
    ASSERT_EQ(r.status, 0) << r.output;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(r.output).get(doc), simdjson::SUCCESS) << r.output;
    simdjson::dom::array largest = doc["largest_changes"];
    ASSERT_GE(largest.size(), 4u) << b;
    // The four figures of stage 2 and device 2 moved by 60%; they lead.
    for (std::size_t i = 0; i < 4; ++i) {
      const std::string_view name = largest.at(i)["figure"];
      EXPECT_TRUE(name.find("stage 2") == 0 || name.find("device 2") == 0) << name;
    }
    const double a = largest.at(0)["a"], bb = largest.at(0)["b"];
    EXPECT_NEAR(bb / a, 1.6, 1e-3) << b;
    bool stage0_unchanged = false;
    for (simdjson::dom::element row : simdjson::dom::array(doc["stages"])) {
      if (std::string_view(row["figure"]) == "stage 0 forward mean") {
        stage0_unchanged = double(row["delta"]) == 0.0;
      }
    }
    EXPECT_TRUE(stage0_unchanged) << b;
  }
}

// diff takes analyze's input options and applies them to both runs: a
// device selection, and the job pattern a profiler trace needs.
TEST(CompareDiff, CliTakesTheInputOptionsOfAnalyze) {
  const std::string sample = testing::shell_quote(std::string(PIPESCOPE_TESTDATA) + "/single");
  testing::CommandResult r =
      testing::run_cli("diff " + sample + " " + sample + " --devices 1-2 --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.output).get(doc), simdjson::SUCCESS) << r.output;
  simdjson::dom::array devices = doc["devices"];
  ASSERT_EQ(devices.size(), 2u) << r.output;
  EXPECT_EQ(int64_t(devices.at(0)["device"]), 1);
  EXPECT_EQ(int64_t(devices.at(1)["device"]), 2);

  const std::string resnet = testing::shell_quote(
      std::string(PIPESCOPE_TESTDATA) + "/kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz");
  r = testing::run_cli("diff " + resnet + " " + resnet +
                       " --job-pattern '## (?P<op>forward|backward) ##' --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(parser.parse(r.output).get(doc), simdjson::SUCCESS) << r.output;
  EXPECT_EQ(simdjson::dom::array(doc["devices"]).size(), 1u) << r.output;
  EXPECT_FALSE(simdjson::dom::array(doc["steps"]).size() == 0) << r.output;
  // Without the pattern the trace holds no job: compared by its kernel view.
  r = testing::run_cli("diff " + resnet + " " + resnet + " --json -");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("kernel bubble ratio"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace pipescope
