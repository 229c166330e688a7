// End-to-end tests of a relaunch appended to the logs (testdata/relaunch,
// its EXPECTED.md): the warning, the segments in summary.json, --segment,
// SEG:STEP step lists in the traces, and check's warm-up skip per segment.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;

std::string relaunch() { return std::string(PIPESCOPE_TESTDATA) + "/relaunch"; }

struct Step {
  std::int64_t step;
  std::int64_t segment;
  bool complete;
};

std::vector<Step> steps_of(simdjson::dom::element summary) {
  std::vector<Step> out;
  for (simdjson::dom::element s : simdjson::dom::array(summary["steps"])) {
    out.push_back({int64_t(s["step"]), int64_t(s["segment"]), bool(s["complete"])});
  }
  return out;
}

TEST(RelaunchCli, AnalyzeSaysSoAndNumbersEachLaunch) {
  TempDir out;
  const CommandResult r =
      run_cli("analyze " + shell_quote(relaunch()) + " --no-trace -o " + shell_quote(out / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("warning: the logs hold 2 launches of the training program"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("segment 1 begins 180.0 s after the first job"), std::string::npos);
  EXPECT_NE(r.output.find("workerlog.0:15"), std::string::npos);  // the glued step-start line
  EXPECT_NE(r.output.find("1 incomplete step (0:12; step 0:12: device 0 ran 0 backward jobs"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("0:12     200.000  40.000 ms   37.5%  incomplete (not in the totals)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 incomplete step left out"), std::string::npos);

  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out / "o/summary.json").get(summary), simdjson::SUCCESS);
  const std::vector<Step> steps = steps_of(summary);
  ASSERT_EQ(steps.size(), 5u);
  const Step want[] = {{10, 0, true}, {11, 0, true}, {12, 0, false}, {12, 1, true}, {13, 1, true}};
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(steps[k].step, want[k].step) << k;
    EXPECT_EQ(steps[k].segment, want[k].segment) << k;
    EXPECT_EQ(steps[k].complete, want[k].complete) << k;
  }
  EXPECT_EQ(int64_t(summary["incomplete_steps"]), 1);
  EXPECT_DOUBLE_EQ(double(summary["bubble_ratio"]), 240.0 / 760.0);
  simdjson::dom::array segments = summary["segments"];
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(std::string_view(segments.at(1)["found_by"]), "step_start_line");
  bool relaunch_warning = false;
  for (simdjson::dom::element w : simdjson::dom::array(summary["warnings"])) {
    if (std::string_view(w["code"]) == "relaunch") relaunch_warning = int64_t(w["count"]) == 2;
  }
  EXPECT_TRUE(relaunch_warning);
}

TEST(RelaunchCli, SegmentSelectsOneLaunch) {
  TempDir out;
  for (const char* which : {"last", "1", "0"}) {
    SCOPED_TRACE(which);
    const std::string dir = out / which;
    const CommandResult r = run_cli("analyze " + shell_quote(relaunch()) + " --segment " + which +
                                    " --no-trace --quiet -o " + shell_quote(dir));
    ASSERT_EQ(r.status, 0) << r.output;
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    ASSERT_EQ(parser.load(dir + "/summary.json").get(summary), simdjson::SUCCESS);
    const std::vector<Step> steps = steps_of(summary);
    simdjson::dom::array segments = summary["segments"];
    ASSERT_EQ(segments.size(), 1u);
    // Both launches' complete steps have the same figures: 60/190 each.
    EXPECT_DOUBLE_EQ(double(summary["bubble_ratio"]), 120.0 / 380.0);
    if (std::string(which) == "0") {
      EXPECT_EQ(int64_t(segments.at(0)["index"]), 0);
      ASSERT_EQ(steps.size(), 3u);
      EXPECT_FALSE(steps[2].complete);
      EXPECT_EQ(int64_t(summary["first_step"]), 10);
    } else {
      EXPECT_EQ(int64_t(segments.at(0)["index"]), 1);
      ASSERT_EQ(steps.size(), 2u);
      EXPECT_EQ(steps[0].step, 12);
      EXPECT_EQ(steps[0].segment, 1);
      EXPECT_EQ(int64_t(summary["first_step"]), 12);
    }
  }
  CommandResult r = run_cli("analyze " + shell_quote(relaunch()) + " --segment 2 --quiet -o " +
                            shell_quote(out / "bad"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("segment 2: the run has 2 launch segments (0-1)"), std::string::npos)
      << r.output;
  r = run_cli("analyze " + shell_quote(relaunch()) + " --segment first --quiet -o " +
              shell_quote(out / "bad"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--segment: 'first' is not a segment"), std::string::npos) << r.output;
}

/// The names of the step slices in a Chrome trace.
std::vector<std::string> step_slices(const std::string& trace_path) {
  simdjson::dom::parser parser;
  simdjson::dom::element trace;
  EXPECT_EQ(parser.load(trace_path).get(trace), simdjson::SUCCESS);
  std::vector<std::string> names;
  for (simdjson::dom::element event : simdjson::dom::array(trace["traceEvents"])) {
    if (std::string_view(event["ph"]) == "X" && std::string_view(event["cat"]) == "step") {
      names.emplace_back(std::string_view(event["name"]));
    }
  }
  return names;
}

TEST(RelaunchCli, StepListsTakeSegStepForms) {
  TempDir out;
  const auto trace_steps = [&](const std::string& spec) {
    // fmt, not "s" + std::string&&: GCC 12 warns (-Wrestrict) on that form.
    const std::string dir = out / fmt::format("s{}{}", spec.size(), spec.substr(0, 1));
    const CommandResult r = run_cli("analyze " + shell_quote(relaunch()) + " --quiet --steps '" +
                                    spec + "' -o " + shell_quote(dir));
    EXPECT_EQ(r.status, 0) << r.output;
    return step_slices(dir + "/trace.json");
  };
  // A plain number means the last segment that has it.
  EXPECT_EQ(trace_steps("12"), (std::vector<std::string>{"step 1:12"}));
  EXPECT_EQ(trace_steps("0:12"), (std::vector<std::string>{"step 0:12 (incomplete)"}));
  EXPECT_EQ(trace_steps("0:11-12,13"),
            (std::vector<std::string>{"step 0:11", "step 0:12 (incomplete)", "step 1:13"}));
  const CommandResult r = run_cli("analyze " + shell_quote(relaunch()) +
                                  " --quiet --steps 1:10 -o " + shell_quote(out / "bad"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--steps: segment 1 has no step 10 (steps 10-12 in segment 0, 12-13 in "
                          "segment 1)"),
            std::string::npos)
      << r.output;
}

TEST(RelaunchCli, CheckSkipsWarmUpPerSegmentAndNeverComparesIncompleteSteps) {
  const CommandResult r = run_cli("check " + shell_quote(relaunch()) + " --baseline " +
                                  shell_quote(relaunch()) + " --max-bubble-increase 1%");
  EXPECT_EQ(r.status, 0) << r.output;
  // Four complete steps, two per launch: one warm-up step of each left out.
  EXPECT_NE(r.output.find("1 warm-up step of each launch segment left out of both runs"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("2 incomplete steps never compared; comparing 2 baseline and 2 current "
                          "steps"),
            std::string::npos)
      << r.output;
  const CommandResult none =
      run_cli("check " + shell_quote(relaunch()) + " --baseline " + shell_quote(relaunch()) +
              " --max-bubble-increase 1% --skip-steps 2");
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.output.find("4 complete steps, none left after skipping 2 warm-up steps of each "
                             "launch segment"),
            std::string::npos)
      << none.output;
}

}  // namespace
}  // namespace pipescope
