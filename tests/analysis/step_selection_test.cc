// `--steps`: the step list parser shared by the trace and HTML options, the
// Chrome trace restricted to the selected steps, the CLI flag, and the
// advice given when a JSON trace is too big for the viewers.
#include "analysis/step_selection.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <set>
#include <string>

#include "analysis/pipeline.h"
#include "export/chrome_trace.h"
#include "export/trace_size.h"
#include "support/command_runner.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;

Metrics steps_numbered(std::int64_t first, std::size_t count) {
  Metrics m;
  for (std::size_t k = 0; k < count; ++k) {
    StepWindow w;
    w.step = first + static_cast<std::int64_t>(k);
    w.start_ns = 1000 * static_cast<std::int64_t>(k);
    w.end_ns = w.start_ns + 900;
    m.steps.push_back(w);
  }
  return m;
}

TEST(StepSelection, ParsesNumbersRangesAndListsIntoStepIndices) {
  const Metrics m = steps_numbered(10, 6);  // steps 10..15
  EXPECT_EQ(parse_step_list("12", m, "--steps"), (std::vector<std::size_t>{2}));
  EXPECT_EQ(parse_step_list("10-12", m, "--steps"), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(parse_step_list(" 15 , 11-12,11", m, "--steps"), (std::vector<std::size_t>{1, 2, 5}));
  const StepSelection s = StepSelection::parse("11,13-14", m, "--steps");
  EXPECT_FALSE(s.everything());
  EXPECT_FALSE(s.contains(0));
  EXPECT_TRUE(s.contains(1));
  EXPECT_FALSE(s.contains(2));
  EXPECT_TRUE(s.contains(3));
  EXPECT_TRUE(s.contains(4));
  EXPECT_FALSE(s.contains(-1));  // jobs outside any step
  EXPECT_FALSE(s.contains(99));
  EXPECT_EQ(s.start_ns(), 1000);
  EXPECT_EQ(s.end_ns(), 4900);
  const StepSelection all = StepSelection::parse("  ", m, "--steps");
  EXPECT_TRUE(all.everything());
  EXPECT_TRUE(all.contains(-1));
}

TEST(StepSelection, AllSelectsEverythingAndIndicesListTheSteps) {
  const Metrics m = steps_numbered(10, 6);
  const StepSelection all = StepSelection::parse(" all ", m, "--steps");
  EXPECT_TRUE(all.everything());
  EXPECT_TRUE(all.contains(-1));
  EXPECT_TRUE(all.indices().empty());
  // "all" is a word of --steps alone: a list item must be a step.
  EXPECT_THROW(StepSelection::parse("all,12", m, "--steps"), std::invalid_argument);
  EXPECT_EQ(StepSelection::parse("15,11-12", m, "--steps").indices(),
            (std::vector<std::size_t>{1, 2, 5}));
  const StepSelection some = StepSelection::of({1, 4}, m);
  EXPECT_FALSE(some.everything());
  EXPECT_TRUE(some.contains(4));
  EXPECT_FALSE(some.contains(2));
  EXPECT_EQ(some.start_ns(), 1000);
  EXPECT_EQ(some.end_ns(), 4900);
}

// Windows of these lengths, steps numbered from 100.
Metrics steps_lasting(const std::vector<std::int64_t>& lengths) {
  Metrics m;
  std::int64_t t = 0;
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    StepWindow w;
    w.step = 100 + static_cast<std::int64_t>(k);
    w.start_ns = t;
    w.end_ns = t + lengths[k];
    t = w.end_ns;
    m.steps.push_back(w);
  }
  return m;
}

TEST(StepSelection, MedianAndSlowestAreAmongTheCompleteSteps) {
  Metrics m = steps_lasting({50, 10, 30, 20, 40, 90, 35});
  // Sorted: 10 20 30 35 40 50 90: the median 35 (index 6), the slowest 90 (index 5).
  EXPECT_EQ(median_and_slowest_steps(m), (std::vector<std::size_t>{5, 6}));
  // An incomplete step is never chosen, and an even count takes the lower middle.
  m.steps[0].complete = false;
  m.steps[5].complete = false;
  m.steps[6].complete = false;
  // Complete: 10 30 20 40 -> sorted 10 20 30 40: median 20 (index 3), slowest 40 (index 4).
  EXPECT_EQ(median_and_slowest_steps(m), (std::vector<std::size_t>{3, 4}));
  // One step is both.
  EXPECT_EQ(median_and_slowest_steps(steps_lasting({7})), (std::vector<std::size_t>{0}));
  // None complete: among all of them.
  Metrics none = steps_lasting({5, 9, 7});
  for (StepWindow& w : none.steps) w.complete = false;
  EXPECT_EQ(median_and_slowest_steps(none), (std::vector<std::size_t>{1, 2}));
  EXPECT_TRUE(median_and_slowest_steps(Metrics{}).empty());
}

TEST(StepSelection, NeighboursMergeAndStayInTheirSegment) {
  Metrics m = steps_lasting({1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(with_neighbours(m, {2, 7}), (std::vector<std::size_t>{1, 2, 3, 6, 7, 8}));
  // Overlapping and touching ranges merge; the ends have one neighbour.
  EXPECT_EQ(with_neighbours(m, {3, 5}), (std::vector<std::size_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(with_neighbours(m, {0, 9}), (std::vector<std::size_t>{0, 1, 8, 9}));
  // A relaunch: steps 5.. are segment 1, and step 4's neighbour there is not taken.
  for (std::size_t k = 5; k < m.steps.size(); ++k) m.steps[k].segment = 1;
  EXPECT_EQ(with_neighbours(m, {4}), (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(with_neighbours(m, {5}), (std::vector<std::size_t>{5, 6}));
}

TEST(StepSelection, StepListTextIsWhatTheParserReadsBack) {
  const Metrics m = steps_numbered(10, 8);
  const std::vector<std::size_t> some{0, 1, 2, 4, 6, 7};
  EXPECT_EQ(step_list_text(m, some), "10-12,14,16-17");
  EXPECT_EQ(parse_step_list(step_list_text(m, some), m, "--steps"), some);
  EXPECT_EQ(step_list_text(m, {}), "");

  // Two launch segments whose numbers overlap: each range names its segment.
  Metrics relaunch = steps_numbered(10, 6);
  for (std::size_t k = 3; k < 6; ++k) {
    relaunch.steps[k].segment = 1;
    relaunch.steps[k].step = 11 + static_cast<std::int64_t>(k - 3);  // 11, 12, 13
  }
  relaunch.segments = {{0, 10, 0, 3, 3, 0, 0, {}, {}, {}}, {1, 11, 3, 3, 3, 0, 0, {}, {}, {}}};
  const std::vector<std::size_t> across{1, 2, 3, 4};
  EXPECT_EQ(step_list_text(relaunch, across), "0:11-12,1:11-12");
  EXPECT_EQ(parse_step_list(step_list_text(relaunch, across), relaunch, "--steps"), across);
}

TEST(StepSelection, RejectsWhatTheRunDoesNotHaveNamingTheFlag) {
  const Metrics m = steps_numbered(10, 6);
  const auto message = [&](std::string_view spec) {
    try {
      parse_step_list(spec, m, "--steps");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("9"), "--steps: the run has no step 9 (steps 10-15)");
  EXPECT_EQ(message("14-16"), "--steps: the run has no step 16 (steps 10-15)");
  EXPECT_EQ(message("12-11"), "--steps: '12-11' is an empty range");
  EXPECT_EQ(message("a"), "--steps: 'a' is not a step number");
  EXPECT_EQ(message("11,"), "--steps: '' is not a step number");
  EXPECT_EQ(message("-3"), "--steps: '' is not a step number");
  EXPECT_EQ(message("99999999999999999999"),
            "--steps: '99999999999999999999' is not a step number");
  EXPECT_THROW(parse_step_list("1", Metrics{}, "--steps"), std::invalid_argument);
}

struct TraceEvents {
  std::set<std::int64_t> job_steps;  // args.step of the job slices
  std::size_t jobs = 0;
  std::set<std::string> step_slices;
  std::size_t bubbles = 0;
  std::size_t flow_ends = 0;
  double earliest_job_ts = 1e300;
};

TraceEvents read_trace(const std::string& path) {
  TraceEvents out;
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.load(path);
  for (const simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"].get_string().value();
    if (ph == "f") ++out.flow_ends;
    if (ph != "X") continue;
    const std::string_view cat = e["cat"].get_string().value();
    if (cat == "step") {
      out.step_slices.emplace(e["name"].get_string().value());
    } else if (cat == "bubble") {
      ++out.bubbles;
    } else {
      ++out.jobs;
      out.job_steps.insert(e["args"]["step"].get_int64().value());
      out.earliest_job_ts = std::min(out.earliest_job_ts, e["ts"].get_double().value());
    }
  }
  return out;
}

TEST(StepSelection, TheChromeTraceHoldsOnlyTheSelectedSteps) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8, 1);
  config.steps = 5;
  pipescope::Run run = testing::run_from_simulation(config);
  const AnalyzedRun analyzed = analyze_run(run, PipelineOptions{});
  const Metrics& metrics = analyzed.metrics;
  ASSERT_EQ(metrics.steps.size(), 5u);
  const std::int64_t first = metrics.steps[0].step;

  TempDir dir;
  TraceOptions options;
  options.pipeline = &analyzed.pipeline;
  options.flows = true;
  write_chrome_trace(run, metrics, options, dir / "all.json");
  const std::string spec = fmt::format("{}-{}", first + 1, first + 2);
  options.steps = StepSelection::parse(spec, metrics, "--steps");
  write_chrome_trace(run, metrics, options, dir / "some.json");

  const TraceEvents all = read_trace(dir / "all.json");
  const TraceEvents some = read_trace(dir / "some.json");
  std::size_t expected_jobs = 0;
  std::size_t total_jobs = 0;
  for (const auto& steps : metrics.job_step) {
    for (const std::int32_t k : steps) {
      ++total_jobs;
      expected_jobs += (k == 1 || k == 2);
    }
  }
  EXPECT_EQ(all.jobs, total_jobs);
  EXPECT_EQ(some.jobs, expected_jobs);
  EXPECT_EQ(some.job_steps, (std::set<std::int64_t>{first + 1, first + 2}));
  EXPECT_EQ(some.step_slices, (std::set<std::string>{fmt::format("step {}", first + 1),
                                                     fmt::format("step {}", first + 2)}));
  EXPECT_GT(some.bubbles, 0u);
  EXPECT_LT(some.bubbles, all.bubbles);
  EXPECT_GT(some.flow_ends, 0u);
  EXPECT_LT(some.flow_ends, all.flow_ends);
  // Time zero is the earliest selected job.
  EXPECT_EQ(some.earliest_job_ts, 0.0);
}

TEST(StepSelection, CliStepsFlagSelectsAndRejectsBeforeWritingAnything) {
  TempDir dir;
  const std::string data = std::string(PIPESCOPE_TESTDATA) + "/multi";
  const auto ok =
      run_cli("analyze " + shell_quote(data) + " -q --steps 11 -o " + shell_quote(dir / "out"));
  ASSERT_EQ(ok.status, 0) << ok.output;
  const TraceEvents trace = read_trace(dir / "out/trace.json");
  EXPECT_EQ(trace.job_steps, (std::set<std::int64_t>{11}));
  // The multi sample stops a few jobs into step 11: named so in the trace.
  EXPECT_EQ(trace.step_slices, (std::set<std::string>{"step 11 (incomplete)"}));

  const auto bad =
      run_cli("analyze " + shell_quote(data) + " -q --steps 12 -o " + shell_quote(dir / "bad"));
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--steps: the run has no step 12 (steps 10-11)"), std::string::npos)
      << bad.output;
  EXPECT_FALSE(fs::exists(dir / "bad"));
}

TEST(TraceSize, AdvisesOnlyAboveWhatViewersOpen) {
  EXPECT_EQ(chrome_trace_size_advice("t.json", 200'000'000, false), "");
  EXPECT_EQ(chrome_trace_size_advice("t.json", kChromeTracingLimitBytes, false), "");
  const std::string big = chrome_trace_size_advice("out/trace.json", 300'000'000, false);
  EXPECT_NE(big.find("out/trace.json is 300 MB"), std::string::npos) << big;
  EXPECT_NE(big.find("chrome://tracing"), std::string::npos) << big;
  // The options that make it smaller, in the engine's words (no flag)...
  EXPECT_NE(big.find("with step list A-B (and device selection), or write the compact "
                     "trace.pftrace with the Perfetto output"),
            std::string::npos)
      << big;
  EXPECT_EQ(big.find("--"), std::string::npos) << big;
  EXPECT_EQ(big.find("Perfetto UI"), std::string::npos) << big;
  // ... or in the caller's.
  OptionWords flags;
  flags.set(CallerOption::steps, "--steps", "");
  flags.set(CallerOption::devices, "--devices", "");
  flags.set(CallerOption::perfetto, "--perfetto", "");
  EXPECT_NE(chrome_trace_size_advice("t.json", 300'000'000, false, flags)
                .find("with --steps A-B (and --devices), or write the compact trace.pftrace "
                      "with --perfetto"),
            std::string::npos);
  const std::string huge = chrome_trace_size_advice("t.json", 2'000'000'000, true);
  EXPECT_NE(huge.find("Perfetto UI struggles"), std::string::npos) << huge;
  EXPECT_NE(huge.find("open trace.pftrace"), std::string::npos) << huge;
  EXPECT_EQ(huge.find("--perfetto"), std::string::npos) << huge;
}

}  // namespace
}  // namespace pipescope
