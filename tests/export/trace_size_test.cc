// A trace's size before it is written (estimate_chrome_trace_bytes,
// estimate_perfetto_trace_bytes), and what `analyze` writes when the whole
// run's trace would pass its limit (plan_trace, trace_plan_notes): the steps
// kept, the summary.json entry and the stderr line.
#include "export/trace_size.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "analysis/clock_skew.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "export/chrome_trace.h"
#include "export/perfetto_trace.h"
#include "support/log_event_run.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// A simulated 1F1B run with its pipeline analysis (bubbles, dependencies).
struct SizeAnalysed {
  pipescope::Run run;
  Metrics metrics;
  PipelineAnalysis pipeline;
};

SizeAnalysed analysed_run(int stages, int micro_batches, int steps) {
  sim::SimConfig config =
      testing::sim_config(sim::ScheduleKind::one_f_one_b, stages, micro_batches);
  config.steps = steps;
  SizeAnalysed a;
  a.run = testing::run_from_simulation(config);
  PipelineOptions options;
  ClockReport clock = correct_run_clocks(a.run, options);
  a.metrics = compute_metrics(a.run);
  a.pipeline = analyze_pipeline(a.run, a.metrics, options, std::move(clock));
  return a;
}

// `count` log events of three kinds spread over the run's time, each
// device's in time order, with a capture on every third.
void add_events(Run& run, std::size_t count) {
  run.event_kinds = {{"nccl_warn", "nccl", "warning", "NCCL printed a warning."},
                     {"checkpoint_save", "checkpoint", "info", "A checkpoint is saved."},
                     {"cuda_error", "cuda", "error", "A CUDA call failed."}};
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    Device& device = run.devices[d];
    const std::int64_t first = device.jobs.front().start_ns;
    const std::int64_t span = device.jobs.back().end_ns - first;
    const std::size_t mine = count / run.devices.size();
    for (std::size_t e = 0; e < mine; ++e) {
      LogEvent event;
      event.kind = static_cast<std::uint32_t>(e % 3);
      event.line = 7 * e + 1;
      event.time_ns = first + span / static_cast<std::int64_t>(mine) * static_cast<std::int64_t>(e);
      if (e % 3 == 0) event.captures = {{"path", "/ckpt/step_" + std::to_string(e)}};
      if (e % 5 == 0) event.time_kind = EventTime::approximate;
      device.events.push_back(std::move(event));
    }
  }
}

std::uint64_t written_bytes(const Run& run, const Metrics& metrics, const TraceOptions& options,
                            TraceFormat format) {
  TempDir dir;
  const std::string path = dir / "trace";
  if (format == TraceFormat::json) {
    write_chrome_trace(run, metrics, options, path);
  } else {
    write_perfetto_trace(run, metrics, options, path);
  }
  return fs::file_size(path);
}

constexpr TraceFormat kFormats[] = {TraceFormat::json, TraceFormat::perfetto};

// Every job, bubble, step, counter, event and flow fits the sample: the
// estimate is the size to the byte, whatever the options.
TEST(TraceSize, EstimateIsExactWhenTheRunFitsTheSample) {
  SizeAnalysed a = analysed_run(4, 8, 12);
  add_events(a.run, 60);
  for (const bool pipeline : {false, true}) {
    for (const bool flows : {false, true}) {
      for (const bool absolute : {false, true}) {
        for (const std::string_view steps : {"", "3-5,9"}) {
          TraceOptions options;
          options.pipeline = pipeline ? &a.pipeline : nullptr;
          options.flows = flows;
          options.absolute_time = absolute;
          options.steps = StepSelection::parse(steps, a.metrics, "--steps");
          for (const TraceFormat format : kFormats) {
            SCOPED_TRACE(fmt::format("pipeline {} flows {} absolute {} steps '{}' {}", pipeline,
                                     flows, absolute, steps, trace_file_name(format)));
            EXPECT_EQ(estimate_trace_bytes(a.run, a.metrics, options, format),
                      written_bytes(a.run, a.metrics, options, format));
          }
        }
      }
    }
  }
}

TEST(TraceSize, EstimateIsExactForEventsUnplacedEventsAndRunsWithoutSteps) {
  const testing::LogEventRun events = testing::log_event_run();
  for (const std::string_view steps : {"", "11"}) {
    TraceOptions options;
    options.steps = StepSelection::parse(steps, events.metrics, "--steps");
    for (const TraceFormat format : kFormats) {
      SCOPED_TRACE(fmt::format("steps '{}' {}", steps, trace_file_name(format)));
      EXPECT_EQ(estimate_trace_bytes(events.run, events.metrics, options, format),
                written_bytes(events.run, events.metrics, options, format));
    }
  }
  // No steps at all (metrics of no step), and an empty run.
  const SizeAnalysed a = analysed_run(2, 4, 2);
  for (const TraceFormat format : kFormats) {
    EXPECT_EQ(estimate_trace_bytes(a.run, Metrics{}, TraceOptions{}, format),
              written_bytes(a.run, Metrics{}, TraceOptions{}, format));
    EXPECT_EQ(estimate_trace_bytes(pipescope::Run{}, Metrics{}, TraceOptions{}, format),
              written_bytes(pipescope::Run{}, Metrics{}, TraceOptions{}, format));
  }
}

// Past the sample the estimate scales it: a small sample (4 pieces of 4096
// jobs, 256 of each other item) on 8 devices of 6400 jobs (16 pieces), 400
// steps, thousands of bubbles and dependencies and 8,000 events stays
// within 0.5% of what is written.
TEST(TraceSize, EstimateOfARunPastTheSampleIsWithinHalfAPercent) {
  SizeAnalysed a = analysed_run(8, 8, 400);
  add_events(a.run, 8000);
  const TraceSampleSize small{4, 256};
  for (const bool flows : {false, true}) {
    for (const std::string_view steps : {"", "50-299"}) {
      TraceOptions options;
      options.pipeline = &a.pipeline;
      options.flows = flows;
      options.steps = StepSelection::parse(steps, a.metrics, "--steps");
      for (const TraceFormat format : kFormats) {
        SCOPED_TRACE(fmt::format("flows {} steps '{}' {}", flows, steps, trace_file_name(format)));
        const std::uint64_t whole =
            estimate_trace_bytes(a.run, a.metrics, options, format, {1 << 20, 1 << 30});
        const auto estimate =
            static_cast<double>(estimate_trace_bytes(a.run, a.metrics, options, format, small));
        const auto written = static_cast<double>(written_bytes(a.run, a.metrics, options, format));
        // A sample of everything is the size.
        EXPECT_EQ(static_cast<double>(whole), written);
        EXPECT_NE(estimate, written);  // a sample, not the whole
        EXPECT_NEAR(estimate / written, 1.0, 0.005) << estimate << " against " << written;
      }
    }
  }
}

// ---- plan_trace: what a trace holds ----

TEST(TracePlan, UnderTheLimitTheWholeRunWithoutAnEntry) {
  const SizeAnalysed a = analysed_run(4, 8, 12);
  TraceOptions options;
  options.pipeline = &a.pipeline;
  for (const TraceFormat format : kFormats) {
    const std::uint64_t bytes = written_bytes(a.run, a.metrics, options, format);
    const TracePlan plan = plan_trace(a.run, a.metrics, options, false, format, bytes);
    EXPECT_TRUE(plan.steps.everything());
    EXPECT_FALSE(plan.figures.has_value());
    EXPECT_FALSE(plan.whole_over_limit);
    EXPECT_EQ(plan.estimated_full_bytes, bytes);
    EXPECT_TRUE(trace_plan_notes(a.metrics, {plan}).empty());
  }
}

TEST(TracePlan, PastTheLimitTheMedianAndSlowestStepsWithTheirNeighbours) {
  SizeAnalysed a = analysed_run(4, 8, 20);
  // Make step 14 the slowest (windows of about 0.4 s, within 10 ms of each
  // other): every job after its first moves 100 ms later.
  const std::int64_t slow_from = a.metrics.steps[14].start_ns + 1;
  for (Device& device : a.run.devices) {
    for (Job& job : device.jobs) {
      if (job.start_ns >= slow_from) {
        job.start_ns += 100'000'000;
        job.end_ns += 100'000'000;
      }
    }
  }
  a.metrics = compute_metrics(a.run);
  const std::vector<std::size_t> chosen = median_and_slowest_steps(a.metrics);
  ASSERT_EQ(chosen.size(), 2u);
  EXPECT_EQ(chosen.back(), 14u);
  TraceOptions options;
  for (const TraceFormat format : kFormats) {
    SCOPED_TRACE(trace_file_name(format));
    const std::uint64_t whole = written_bytes(a.run, a.metrics, options, format);
    const TracePlan plan = plan_trace(a.run, a.metrics, options, false, format, whole - 1);
    std::vector<std::size_t> kept;  // each with the steps before and after it that exist
    for (const std::size_t k : chosen) {
      if (k > 0) kept.push_back(k - 1);
      kept.push_back(k);
      if (k + 1 < a.metrics.steps.size()) kept.push_back(k + 1);
    }
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    EXPECT_EQ(plan.steps.indices(), kept);
    ASSERT_TRUE(plan.figures.has_value());
    const TraceFileFigures& f = *plan.figures;
    EXPECT_EQ(f.file, trace_file_name(format));
    EXPECT_EQ(f.reason, "size_limit");
    EXPECT_EQ(f.steps, step_list_text(a.metrics, kept));
    EXPECT_EQ(parse_step_list(f.steps, a.metrics, "--steps"), kept);
    EXPECT_EQ(f.median_step, std::to_string(a.metrics.steps[chosen.front()].step));
    EXPECT_EQ(f.slowest_step, std::to_string(a.metrics.steps[14].step));
    EXPECT_EQ(f.estimated_full_bytes, static_cast<std::int64_t>(whole));
    EXPECT_EQ(f.limit_bytes, static_cast<std::int64_t>(whole - 1));
    // What is written is then far smaller.
    TraceOptions planned = options;
    planned.steps = plan.steps;
    EXPECT_LT(written_bytes(a.run, a.metrics, planned, format), whole / 2);
  }
}

TEST(TracePlan, StepsGivenAreWrittenWhateverTheSize) {
  const SizeAnalysed a = analysed_run(4, 8, 12);
  TraceOptions options;
  options.steps = StepSelection::parse("2-4,7", a.metrics, "--steps");
  const TracePlan some = plan_trace(a.run, a.metrics, options, true, TraceFormat::json, 1);
  EXPECT_EQ(some.steps.indices(), (std::vector<std::size_t>{2, 3, 4, 7}));
  ASSERT_TRUE(some.figures.has_value());
  EXPECT_EQ(some.figures->reason, "steps_option");
  EXPECT_EQ(some.figures->steps, "2-4,7");
  EXPECT_EQ(some.figures->estimated_full_bytes, 0);
  EXPECT_EQ(some.estimated_full_bytes, 0u);  // nothing estimated
  // --steps all: everything, however big, and nothing to record.
  options.steps = StepSelection::parse("all", a.metrics, "--steps");
  const TracePlan all = plan_trace(a.run, a.metrics, options, true, TraceFormat::perfetto, 1);
  EXPECT_TRUE(all.steps.everything());
  EXPECT_FALSE(all.figures.has_value());
  EXPECT_FALSE(all.whole_over_limit);
  EXPECT_TRUE(trace_plan_notes(a.metrics, {some, all}).empty());
}

TEST(TracePlan, NothingToLeaveOutWritesTheWholeRunAndWarns) {
  const SizeAnalysed a = analysed_run(4, 8, 2);  // two steps: both are kept anyway
  const TracePlan few = plan_trace(a.run, a.metrics, TraceOptions{}, false, TraceFormat::json, 1);
  EXPECT_TRUE(few.steps.everything());
  EXPECT_FALSE(few.figures.has_value());
  EXPECT_TRUE(few.whole_over_limit);
  const std::vector<std::string> notes = trace_plan_notes(a.metrics, {few});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].find(fmt::format("warning: trace.json will be about {} bytes, past the limit "
                                      "of 1 bytes",
                                      few.estimated_full_bytes)),
            0u)
      << notes[0];
  EXPECT_NE(notes[0].find("are all of its 2 steps"), std::string::npos) << notes[0];

  const Metrics none;  // a run without steps
  const TracePlan stepless =
      plan_trace(a.run, none, TraceOptions{}, false, TraceFormat::perfetto, 1);
  EXPECT_TRUE(stepless.steps.everything());
  EXPECT_TRUE(stepless.whole_over_limit);
  const std::vector<std::string> said = trace_plan_notes(none, {stepless});
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("trace.pftrace will be about"), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("the run has no steps to choose from"), std::string::npos) << said[0];
  // How to draw less: the advice of the device selection, in either words.
  EXPECT_NE(said[0].find("; a device selection draws fewer devices"), std::string::npos) << said[0];
  OptionWords flags;
  flags.set(CallerOption::devices, "--devices", "--devices draws fewer devices");
  EXPECT_NE(trace_plan_notes(none, {stepless}, flags)[0].find("; --devices draws fewer devices"),
            std::string::npos);
}

TEST(TracePlan, OneLineForBothTracesHeldToTheirLimits) {
  const SizeAnalysed a = analysed_run(4, 8, 20);
  std::vector<TracePlan> plans;
  for (const TraceFormat format : kFormats) {
    plans.push_back(plan_trace(a.run, a.metrics, TraceOptions{}, false, format,
                               format == TraceFormat::json ? 1 : 3ull << 20));
  }
  // The protobuf trace of this small run fits 3 MiB; the JSON one not 1 byte.
  EXPECT_TRUE(plans[0].figures.has_value());
  EXPECT_FALSE(plans[1].figures.has_value());
  std::vector<std::string> notes = trace_plan_notes(a.metrics, plans);
  ASSERT_EQ(notes.size(), 1u);
  const std::string& only_json = notes[0];
  EXPECT_EQ(only_json.find("trace.json holds steps " + plans[0].figures->steps +
                           " only (the median step " + plans[0].figures->median_step +
                           " and the slowest " + plans[0].figures->slowest_step +
                           ", each with a step on each side)"),
            0u)
      << only_json;
  EXPECT_NE(only_json.find("past the limit of 1 bytes"), std::string::npos) << only_json;
  // The way to write everything, in the engine's words, or the caller's.
  EXPECT_NE(only_json.find("; a step list of all writes every step"), std::string::npos)
      << only_json;
  EXPECT_EQ(only_json.find("--"), std::string::npos) << only_json;
  OptionWords flags;
  flags.set(CallerOption::steps, "--steps", "--steps all writes every step");
  EXPECT_NE(trace_plan_notes(a.metrics, plans, flags)[0].find("; --steps all writes every step"),
            std::string::npos);
  EXPECT_EQ(only_json.find("pftrace"), std::string::npos) << only_json;

  plans[1] = plan_trace(a.run, a.metrics, TraceOptions{}, false, TraceFormat::perfetto, 1);
  notes = trace_plan_notes(a.metrics, plans);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].find("trace.json and trace.pftrace hold steps " + plans[0].figures->steps), 0u)
      << notes[0];
  EXPECT_NE(notes[0].find("past their limits of 1 bytes and 1 bytes"), std::string::npos)
      << notes[0];
}

TEST(TraceLimits, DefaultsOrTheTestVariable) {
  ::unsetenv(kTraceLimitVariable);
  TraceLimits limits = trace_limits_from_environment();
  EXPECT_EQ(limits.json, 256ull << 20);
  EXPECT_EQ(limits.perfetto, 512ull << 20);
  ::setenv(kTraceLimitVariable, "1000,20", 1);
  limits = trace_limits_from_environment();
  EXPECT_EQ(limits.of(TraceFormat::json), 1000u);
  EXPECT_EQ(limits.of(TraceFormat::perfetto), 20u);
  for (const char* bad : {"1000", "1000,", ",5", "1e3,5", "5,-1", ""}) {
    ::setenv(kTraceLimitVariable, bad, 1);
    EXPECT_THROW(trace_limits_from_environment(), std::invalid_argument) << bad;
  }
  ::unsetenv(kTraceLimitVariable);
}

}  // namespace
}  // namespace pipescope
