// Unit tests of the comparison layer: the summary reader (schema checks and
// errors), ratio parsing, the config file, spreads and the threshold rules,
// and the markdown/JUnit writers.
#include "compare/check.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "compare/check_report.h"
#include "compare/run_from_summary.h"
#include "ingest/discovery.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

// A run of `durations.size()` steps on two devices; device 1 is busy for
// `busy1[k]` of step k, device 0 for the whole step minus 10 ns.
RunFigures make_run(const std::string& name, const std::vector<std::int64_t>& durations,
                    const std::vector<std::int64_t>& busy1) {
  RunFigures r;
  r.source = name;
  r.origin = "test";
  std::int64_t t = 0;
  for (std::size_t k = 0; k < durations.size(); ++k) {
    StepFigures s;
    s.step = static_cast<std::int64_t>(k);
    s.start_ns = t;
    s.duration_ns = durations[k];
    s.end_ns = t + durations[k];
    t = s.end_ns;
    s.devices.push_back({0, durations[k] - 10, 10, {}});
    s.devices.push_back({1, busy1[k], durations[k] - busy1[k], {}});
    s.bubble_ratio = static_cast<double>(10 + durations[k] - busy1[k]) / (2.0 * durations[k]);
    r.steps.push_back(s);
  }
  r.devices.push_back({0, 0, "", 0, "", 1, 0, 0, 0, 0, {}});
  r.devices.push_back({1, 0, "", 1, "", 1, 0, 0, 0, 0, {}});
  return r;
}

TEST(CompareSpread, QuantilesInterpolate) {
  const Spread s = spread_of({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4u);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.p25, 1.75);
  EXPECT_DOUBLE_EQ(s.p75, 3.25);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(spread_of({7}).median, 7);
  EXPECT_EQ(spread_of({}).count, 0u);
}

TEST(CompareRatio, PercentAndFraction) {
  EXPECT_DOUBLE_EQ(parse_threshold("5%", ThresholdScale::relative, "x"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold(" 2.5 % ", ThresholdScale::points, "x"), 0.025);
  EXPECT_DOUBLE_EQ(parse_threshold("0.25", ThresholdScale::ratio, "x"), 0.25);
  EXPECT_THROW(parse_threshold("five", ThresholdScale::ratio, "x"), InputError);
  EXPECT_THROW(parse_threshold("-1", ThresholdScale::ratio, "x"), InputError);
  EXPECT_THROW(parse_threshold("", ThresholdScale::ratio, "x"), InputError);
  EXPECT_THROW(parse_threshold("5%%", ThresholdScale::ratio, "x"), InputError);
  try {
    parse_threshold("abc", ThresholdScale::ratio, "--max-bubble-ratio");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-bubble-ratio: 'abc' is not a threshold"),
              std::string::npos);
  }
}

// The gate cannot be misread: each scale's forms and limits.
TEST(CompareRatio, ThresholdFormsPerScale) {
  const auto message = [](std::string_view text, ThresholdScale scale) {
    try {
      parse_threshold(text, scale, "--opt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A bare number of 1 or more may mean a percentage or a fraction:
  // ambiguous, with the forms.
  EXPECT_EQ(message("5", ThresholdScale::relative),
            "--opt: '5' is ambiguous: as a fraction it means 500%, but it may mean 5%; write 5% "
            "or 0.05 for an increase of 5 percent of the baseline (150% for 1.5x)");
  EXPECT_EQ(message("2", ThresholdScale::points),
            "--opt: '2' is ambiguous: as a fraction it means 200%, but it may mean 2%; write "
            "2pp, 2% or 0.02 for 2 percentage points");
  EXPECT_EQ(message("1.5", ThresholdScale::ratio),
            "--opt: '1.5' is ambiguous: as a fraction it means 150%, but it may mean 1.5%; "
            "write 25% or 0.25");
  // 1 was read as +100% once: a gate that passes nearly everything.
  EXPECT_NE(message("1", ThresholdScale::relative).find("'1' is ambiguous"), std::string::npos);
  // The reports print limits as "+5%": that form is taken as written.
  EXPECT_DOUBLE_EQ(parse_threshold("+5%", ThresholdScale::relative, "x"), 0.05);
  EXPECT_DOUBLE_EQ(parse_threshold(" +2pp", ThresholdScale::points, "x"), 0.02);
  // pp beside % on points only.
  EXPECT_DOUBLE_EQ(parse_threshold("2pp", ThresholdScale::points, "x"), 0.02);
  EXPECT_DOUBLE_EQ(parse_threshold("2.5 pp", ThresholdScale::points, "x"), 0.025);
  EXPECT_NE(message("5pp", ThresholdScale::relative)
                .find("pp is for thresholds in percentage "
                      "points; this one is a relative"),
            std::string::npos);
  // Over 100%: an error for points and ratios, allowed for a relative increase with %.
  EXPECT_NE(message("120%", ThresholdScale::points).find("is over 100 points"), std::string::npos);
  EXPECT_NE(message("101%", ThresholdScale::ratio).find("is over 100%"), std::string::npos);
  EXPECT_DOUBLE_EQ(parse_threshold("150%", ThresholdScale::relative, "x"), 1.5);
  EXPECT_DOUBLE_EQ(parse_threshold("0.999", ThresholdScale::relative, "x"), 0.999);
  EXPECT_NE(message("-2%", ThresholdScale::points).find("is negative"), std::string::npos);
  EXPECT_EQ(threshold_scale_name(ThresholdScale::points), "points");
}

TEST(CompareSummaryReader, ReadsFieldsAndOptionalSchedule) {
  const std::string json = R"({"schema":"pipescope.summary/1.2","jobs":4,"first_step":3,
    "bubble_ratio":0.25,"total_window_ns":100,
    "devices":[{"device":5,"machine":1,"machine_name":"machine1","rank":0,"jobs":4,"steps":1,
                "busy_ns":75,"idle_ns":25,"utilization":0.75}],
    "steps":[{"step":3,"start_ns":10,"end_ns":110,"duration_ns":100,"bubble_ratio":0.25,
              "devices":[{"device":5,"busy_ns":75,"idle_ns":25}]}],
    "job_types":[{"type":"forward","kind":"forward","jobs":2,"total_ns":40},
                 {"type":"backward","kind":"backward","jobs":2}],
    "schedule":{"name":"1F1B","stages":4,"micro_batches":8,"chunks":1,"exact":true}})";
  const RunFigures r = parse_summary_json(json, "s.json");
  EXPECT_EQ(r.origin, "summary");
  EXPECT_EQ(r.jobs, 4);
  EXPECT_EQ(r.first_step, 3);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.devices[0].device, 5);
  EXPECT_EQ(r.devices[0].machine_name, "machine1");
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].devices[0].busy_ns, 75);
  ASSERT_EQ(r.job_types.size(), 2u);
  EXPECT_EQ(r.job_types[0].total_ns, 40);
  EXPECT_FALSE(r.job_types[1].total_ns.has_value());
  ASSERT_TRUE(r.schedule.has_value());
  EXPECT_EQ(r.schedule->name, "1F1B");
  EXPECT_EQ(r.schedule->micro_batches, 8);
}

// check compares runs by schedule family, P, M and V: a baseline written
// before the schedule table ("ZB-H1", no family field) is comparable with a
// current run of Paddle's ZBH1, and refused against a 1F1B run.
TEST(CompareCheck, ComparesSchedulesByFamilyNotByName) {
  auto summary = [](std::string_view schedule) {
    return fmt::format(
        R"({{"schema":"pipescope.summary/1.2","jobs":4,"first_step":0,"bubble_ratio":0.25,
        "total_window_ns":100,"devices":[{{"device":0,"machine":0,"rank":0,"jobs":4,"steps":1,
        "busy_ns":75,"idle_ns":25,"utilization":0.75}}],"steps":[{{"step":0,"start_ns":0,
        "end_ns":100,"duration_ns":100,"bubble_ratio":0.25,"devices":[{{"device":0,
        "busy_ns":75,"idle_ns":25}}]}}],"job_types":[],
        "schedule":{}}})",
        schedule);
  };
  const RunFigures old_zb = parse_summary_json(
      summary(R"({"name":"ZB-H1","stages":4,"micro_batches":8,"chunks":1,"exact":true})"),
      "old.json");
  const RunFigures new_zb = parse_summary_json(
      summary(R"({"name":"ZBH1","stages":4,"micro_batches":8,"chunks":1,"exact":true,)"
              R"("family":"zero-bubble","frameworks":"PaddlePaddle static ZBH1"})"),
      "new.json");
  const RunFigures one_f_one_b = parse_summary_json(
      summary(R"({"name":"1F1B","stages":4,"micro_batches":8,"chunks":1,"exact":true,)"
              R"("family":"1f1b","frameworks":"PyTorch 1F1B"})"),
      "1f1b.json");
  const RunFigures unknown = parse_summary_json(
      summary(R"({"name":"unknown","stages":4,"micro_batches":8,"chunks":1,"exact":false})"),
      "unknown.json");
  EXPECT_EQ(old_zb.schedule->family, "zero-bubble");
  EXPECT_TRUE(comparability_problems(old_zb, new_zb).empty());
  EXPECT_EQ(comparability_problems(new_zb, one_f_one_b),
            std::vector<std::string>{
                "schedule family differs: baseline zero-bubble (ZBH1), current 1f1b (1F1B)"});
  EXPECT_EQ(comparability_problems(one_f_one_b, old_zb),
            std::vector<std::string>{
                "schedule family differs: baseline 1f1b (1F1B), current zero-bubble (ZB-H1)"});
  // An unknown schedule on either side: nothing to compare.
  EXPECT_TRUE(comparability_problems(unknown, one_f_one_b).empty());
  const CheckReport r = evaluate_check(new_zb, one_f_one_b, CheckThresholds{});
  EXPECT_TRUE(r.refused());
}

std::string error_of(const std::string& json) {
  try {
    parse_summary_json(json, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CompareSummaryReader, RefusesOtherSchemasWithClearMessages) {
  EXPECT_EQ(error_of(R"({"schema":"pipescope.summary/2","jobs":1})"),
            "s.json: summary schema 'pipescope.summary/2' is not supported (this pipescope reads "
            "pipescope.summary/1)");
  EXPECT_NE(error_of(R"({"schema":"pipescope.summary/10"})").find("not supported"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"traceEvents":[]})"),
            "s.json: not a pipescope summary (no \"schema\" field)");
  EXPECT_EQ(error_of("[1,2]"), "s.json: not a pipescope summary (not a JSON object)");
  EXPECT_NE(error_of("{\"schema\":").find("s.json: not valid JSON"), std::string::npos);
  EXPECT_EQ(
      error_of(R"({"schema":"pipescope.summary/1","jobs":1,"first_step":0,"bubble_ratio":0})"),
      "s.json: the summary has no \"total_window_ns\"");
}

TEST(CompareCheck, DefaultSkipAndMedians) {
  // Step 0 is a slow warm-up; it must not count.
  const RunFigures base = make_run("base", {1000, 100, 110, 90}, {900, 80, 88, 72});
  const RunFigures cur = make_run("cur", {1000, 104, 114, 94}, {900, 80, 88, 72});
  CheckThresholds t;
  t.max_step_time_increase = 0.05;
  const CheckReport r = evaluate_check(base, cur, t);
  EXPECT_TRUE(r.skip_defaulted);
  EXPECT_EQ(r.skip_steps, 1);
  EXPECT_EQ(r.current_steps, 3u);
  EXPECT_DOUBLE_EQ(r.step_time_ns.baseline.median, 100);
  EXPECT_DOUBLE_EQ(r.step_time_ns.current.median, 104);
  ASSERT_EQ(r.thresholds.size(), 1u);
  EXPECT_TRUE(r.thresholds[0].passed) << r.thresholds[0].detail;  // +4% <= 5%
  EXPECT_FALSE(r.regression());
  // Within noise: the 4 ns change is smaller than the 10 ns IQR.
  EXPECT_FALSE(r.step_time_ns.beyond_noise);

  t.max_step_time_increase = 0.03;
  const CheckReport fail = evaluate_check(base, cur, t);
  EXPECT_TRUE(fail.regression());
  EXPECT_NE(fail.thresholds[0].detail.find("+4.00% > limit +3.00%"), std::string::npos)
      << fail.thresholds[0].detail;

  // Two steps: nothing skipped by default; an explicit skip is honoured.
  const RunFigures two = make_run("two", {100, 100}, {50, 50});
  EXPECT_EQ(evaluate_check(two, two, t).skip_steps, 0);
  t.skip_steps = 2;
  EXPECT_THROW(evaluate_check(two, two, t), InputError);
}

TEST(CompareCheck, BubbleAndUtilizationThresholds) {
  const RunFigures base = make_run("base", {100, 100, 100}, {90, 90, 90});
  const RunFigures cur = make_run("cur", {100, 100, 100}, {80, 82, 84});
  CheckThresholds t;
  t.skip_steps = 0;
  t.max_bubble_ratio = 0.20;
  t.max_bubble_increase = 0.04;
  t.max_utilization_drop = 0.05;
  const CheckReport r = evaluate_check(base, cur, t);
  ASSERT_EQ(r.thresholds.size(), 3u);
  // Current median bubble: (10 + 18) / 200 = 14%; baseline (10 + 10) / 200 = 10%.
  EXPECT_NEAR(r.bubble_ratio.current.median, 0.14, 1e-12);
  EXPECT_NEAR(r.bubble_ratio.delta, 0.04, 1e-12);
  EXPECT_EQ(r.thresholds[0].name, "max-bubble-ratio");
  EXPECT_TRUE(r.thresholds[0].passed);
  EXPECT_EQ(r.thresholds[1].name, "max-bubble-increase");
  EXPECT_TRUE(r.thresholds[1].passed)
      << r.thresholds[1].detail;  // +4 pp, limit 4 pp (with rounding)
  EXPECT_EQ(r.thresholds[2].name, "max-utilization-drop");
  EXPECT_FALSE(r.thresholds[2].passed);  // device 1: 90% -> 82%
  ASSERT_EQ(r.thresholds[2].failures.size(), 1u);
  EXPECT_NE(r.thresholds[2].failures[0].find("device 1"), std::string::npos);
  ASSERT_EQ(r.devices.size(), 2u);
  EXPECT_NEAR(r.devices[1].utilization.delta, -0.08, 1e-12);
  EXPECT_TRUE(r.devices[1].utilization.beyond_noise);
  // The worst bubble is device 1 in step 0 (20 ns idle).
  ASSERT_FALSE(r.worst_bubbles.empty());
  EXPECT_EQ(r.worst_bubbles[0].device, 1);
  EXPECT_EQ(r.worst_bubbles[0].idle_ns, 20);

  const std::string md = format_check_markdown(r);
  EXPECT_NE(md.find("## pipescope check: ❌ regression"), std::string::npos);
  EXPECT_NE(md.find("| bubble ratio | 10.00% | 14.00% | +4.00 pp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 90.00% | 82.00% | -8.00 pp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `max-utilization-drop` | ❌ fail |"), std::string::npos) << md;
  // The command line names a threshold by its flag.
  OptionWords flags;
  flags.set(CallerOption::threshold, "--{}", "");
  EXPECT_NE(format_check_markdown(r, flags).find("| `--max-utilization-drop` | ❌ fail |"),
            std::string::npos);

  const std::string junit = format_check_junit(r);
  EXPECT_NE(junit.find("<testsuite name=\"pipescope check\" tests=\"3\" failures=\"1\""),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find("<testcase classname=\"pipescope.check\" name=\"max-utilization-drop\""),
            std::string::npos);
  EXPECT_NE(junit.find("<failure message="), std::string::npos);

  const std::string verdict = format_check_verdict(r);
  EXPECT_EQ(verdict.rfind("pipescope check: REGRESSION (1 of 3 thresholds failed)", 0), 0u)
      << verdict;
}

TEST(CompareCheck, DevicesOnOneSideAreReported) {
  RunFigures base = make_run("base", {100, 100}, {90, 90});
  RunFigures cur = make_run("cur", {100, 100}, {90, 90});
  for (StepFigures& s : cur.steps) s.devices[1].device = 7;
  CheckThresholds t;
  t.max_utilization_drop = 0.01;
  const CheckReport r = evaluate_check(base, cur, t);
  EXPECT_EQ(r.devices.size(), 1u);
  EXPECT_EQ(r.only_in_baseline, std::vector<int>{1});
  EXPECT_EQ(r.only_in_current, std::vector<int>{7});
  EXPECT_NE(format_check_verdict(r).find("only in the current run: [7]"), std::string::npos);
}

TEST(CompareConfig, ReadsKeysAndRefusesUnknownOnes) {
  TempDir dir;
  const std::string good =
      dir.write("good.json",
                R"({"max_bubble_ratio": 0.3, "max_step_time_increase": "5%", "skip_steps": 2,
          "max_utilization_drop": "3pp"})");
  const CheckThresholds t = read_check_config(good);
  EXPECT_DOUBLE_EQ(*t.max_bubble_ratio, 0.3);
  EXPECT_DOUBLE_EQ(*t.max_step_time_increase, 0.05);
  EXPECT_DOUBLE_EQ(*t.max_utilization_drop, 0.03);
  EXPECT_EQ(*t.skip_steps, 2);
  EXPECT_FALSE(t.max_bubble_increase.has_value());

  CheckThresholds flags;
  flags.max_bubble_ratio = 0.1;
  flags.fill_from(t);
  EXPECT_DOUBLE_EQ(*flags.max_bubble_ratio, 0.1);  // the flag wins
  EXPECT_DOUBLE_EQ(*flags.max_step_time_increase, 0.05);

  const std::string bad = dir.write("bad.json", R"({"max_bubble_ration": 0.3})");
  try {
    read_check_config(bad);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"max_bubble_ration\" is not a known key"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_check_config(dir.write("neg.json", R"({"skip_steps": -1})")), InputError);
  // The same rules as the flags: a bare 3 would be 300 points.
  try {
    read_check_config(dir.write("three.json", R"({"max_utilization_drop": 3})"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"max_utilization_drop\": '3' is ambiguous"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_check_config(dir.write("arr.json", "[]")), InputError);
  EXPECT_THROW(read_check_config(dir / "missing.json"), InputError);
}

}  // namespace
}  // namespace pipescope
