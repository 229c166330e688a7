// The trace size estimate and plan of a partitioned run
// (distributed/partitioned_traces.h: estimate_partitioned_trace_bytes,
// plan_partitioned_trace) at 1 to N ranks (threads exchanging bytes, as the
// MPI ranks do) must be the single process's estimate_trace_bytes and
// plan_trace exactly: with and without the pipeline analysis and flows, on
// the whole run and on step selections, both formats, with the default
// sample and with samples far smaller than the run (so that every section
// is scaled), whoever read which device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_traces.h"
#include "export/trace_size.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"

namespace pipescope::distributed {
namespace {

struct SizeCase {
  TraceOptions options;
  TraceFormat format = TraceFormat::json;
  TraceSampleSize sample;
  std::string label;
};

/// No pipeline; the pipeline with and without flows, with absolute times,
/// each on the whole run and a step selection; both formats; the default
/// sample, one of a piece and a few items, and one of two pieces and 16.
std::vector<SizeCase> size_cases_of(const AnalyzedRun& single) {
  const Metrics& m = single.metrics;
  std::vector<StepSelection> selections{StepSelection{}};
  if (m.steps.size() >= 4) selections.push_back(StepSelection::of({1, 2, m.steps.size() - 1}, m));
  std::vector<SizeCase> cases;
  for (const TraceFormat format : {TraceFormat::json, TraceFormat::perfetto}) {
    for (const TraceSampleSize sample :
         {TraceSampleSize{}, TraceSampleSize{1, 3}, TraceSampleSize{2, 16}}) {
      for (std::size_t s = 0; s < selections.size(); ++s) {
        for (int drawn = 0; drawn < 4; ++drawn) {  // none, bubbles, flows, flows absolute
          SizeCase c;
          c.format = format;
          c.sample = sample;
          c.options.threads = 2;
          c.options.steps = selections[s];
          c.options.pipeline = drawn > 0 ? &single.pipeline : nullptr;
          c.options.flows = drawn >= 2;
          c.options.absolute_time = drawn == 3;
          c.label = fmt::format("{} sample {}/{} selection {} drawn {}", trace_file_name(format),
                                sample.job_pieces, sample.items, s, drawn);
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

/// What a plan says, to compare.
std::string plan_text(const TracePlan& plan) {
  std::string text = fmt::format("format {} estimated {} limit {} whole_over {} steps ",
                                 trace_file_name(plan.format), plan.estimated_full_bytes,
                                 plan.limit_bytes, plan.whole_over_limit);
  if (plan.steps.everything()) {
    text += "all";
  } else {
    for (const std::size_t k : plan.steps.indices()) text += std::to_string(k) + ",";
  }
  if (plan.figures) {
    const TraceFileFigures& f = *plan.figures;
    text += fmt::format(" figures {} {} {} {} {} {} {}", f.file, f.reason, f.steps, f.median_step,
                        f.slowest_step, f.estimated_full_bytes, f.limit_bytes);
  }
  return text;
}

/// The limits a plan is tried with: the whole estimate (written whole), one
/// byte less (held to the limit), and 1.
std::vector<std::uint64_t> limits_of(std::uint64_t whole) {
  return {whole, whole > 0 ? whole - 1 : 0, 1};
}

void check_trace_ranks(const Run& run, int ranks, bool round_robin, const std::string& what) {
  SCOPED_TRACE(
      fmt::format("{}, {} ranks{}", what, ranks, round_robin ? "" : ", devices on the last rank"));
  const PipelineOptions options;
  Run corrected = run;
  const AnalyzedRun single = analyze_run(corrected, options);
  const std::vector<SizeCase> cases = size_cases_of(single);
  std::vector<std::uint64_t> expected;
  std::vector<std::string> expected_plans;
  for (const SizeCase& c : cases) {
    expected.push_back(
        estimate_trace_bytes(corrected, single.metrics, c.options, c.format, c.sample));
  }
  // The plans (the default sample): past the limit, at it, and --steps given.
  const std::vector<SizeCase> planned(cases.begin(), cases.begin() + 8);
  for (const SizeCase& c : planned) {
    TraceOptions whole = c.options;
    whole.steps = StepSelection();
    for (const std::uint64_t limit :
         limits_of(estimate_trace_bytes(corrected, single.metrics, whole, c.format))) {
      expected_plans.push_back(
          plan_text(plan_trace(corrected, single.metrics, c.options, false, c.format, limit)));
    }
    expected_plans.push_back(
        plan_text(plan_trace(corrected, single.metrics, c.options, true, c.format, 1)));
  }
  struct Got {
    std::vector<std::uint64_t> estimates;
    std::vector<std::string> plans;
  };
  const std::vector<Got> got = run_local_ranks<Got>(ranks, [&](Exchange& exchange) {
    Run local = testing::local_view(run, exchange.rank(), exchange.size(), round_robin);
    const PartitionedAnalysis mine = analyze_partitioned(exchange, local, options);
    Got out;
    for (const SizeCase& c : cases) {
      out.estimates.push_back(
          estimate_partitioned_trace_bytes(exchange, local, mine, c.options, c.format, c.sample));
    }
    for (const SizeCase& c : planned) {
      TraceOptions whole = c.options;
      whole.steps = StepSelection();
      // Every rank tries the limits the single process's estimate gives:
      // the same on every rank.
      const std::uint64_t bytes =
          estimate_partitioned_trace_bytes(exchange, local, mine, whole, c.format);
      for (const std::uint64_t limit : limits_of(bytes)) {
        out.plans.push_back(plan_text(
            plan_partitioned_trace(exchange, local, mine, c.options, false, c.format, limit)));
      }
      out.plans.push_back(
          plan_text(plan_partitioned_trace(exchange, local, mine, c.options, true, c.format, 1)));
    }
    return out;
  });
  for (int r = 0; r < ranks; ++r) {
    const Got& mine = got[static_cast<std::size_t>(r)];
    ASSERT_EQ(mine.estimates.size(), cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(mine.estimates[i], expected[i]) << cases[i].label << ", rank " << r;
    }
    EXPECT_EQ(mine.plans, expected_plans) << "rank " << r;
  }
}

void check_sizes_at_every_rank_count(const Run& run, const std::string& what) {
  const std::size_t steps = compute_metrics(run).steps.size();
  for (const int ranks : {1, 2, 3, 4, static_cast<int>(steps) + 2}) {
    check_trace_ranks(run, ranks, true, what);
    if (ranks == 3) check_trace_ranks(run, ranks, false, what);
  }
}

TEST(PartitionedTraceSize, GoldenFoldersAreTheSingleProcessEstimate) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_sizes_at_every_rank_count(loaded.run, folder);
  }
}

/// A simulated run of `steps` steps whose devices overlap at the steps'
/// edges, with log events on some devices (one before the first job, one in
/// each window, one approximate with captures, one unplaced).
Run simulated(sim::ScheduleKind kind, int stages, int micro_batches, int chunks, bool comm,
              int steps) {
  sim::SimConfig config = testing::sim_config(kind, stages, micro_batches, chunks);
  config.steps = steps;
  config.comm_jobs = comm;
  config.step_gap_ns = 0;
  Run run = testing::run_from_simulation(config);
  run.event_kinds = {{"nccl_warn", "nccl", "warning", "NCCL warned"},
                     {"oom", "memory", "error", "out of memory"}};
  const Metrics m = compute_metrics(run);
  for (std::size_t d = 1; d < run.devices.size(); d += 2) {
    std::vector<LogEvent>& events = run.devices[d].events;
    events.push_back({0, EventTime::stamped, 1, m.steps.front().start_ns - 5'000, {}});
    for (std::size_t k = 0; k < m.steps.size(); ++k) {
      events.push_back({1, EventTime::stamped, 10 + k, m.steps[k].start_ns + 1'000, {}});
    }
    events.push_back({0,
                      EventTime::approximate,
                      100,
                      m.steps[2].start_ns + 2'000,
                      {{"rank", std::to_string(d)}, {"op", "all\"reduce"}}});
    events.push_back({1, EventTime::unplaced, 200, 0, {}});
    std::sort(events.begin(), events.end(),
              [](const LogEvent& a, const LogEvent& b) { return a.line < b.line; });
  }
  return run;
}

TEST(PartitionedTraceSize, SimulatedSchedulesAreTheSingleProcessEstimate) {
  using sim::ScheduleKind;
  struct Sim {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm;
  };
  for (const Sim& s :
       {Sim{ScheduleKind::one_f_one_b, 4, 8, 1, true},
        Sim{ScheduleKind::interleaved, 4, 8, 2, true}, Sim{ScheduleKind::zbh1, 4, 8, 1, false}}) {
    check_sizes_at_every_rank_count(
        simulated(s.kind, s.stages, s.micro_batches, s.chunks, s.comm, 6),
        "simulated " + std::to_string(static_cast<int>(s.kind)));
  }
}

// 40 steps of 8 stages × 8 micro-batches: the small samples of size_cases_of
// scale every section (they are a sample, not the whole), whatever the cut.
TEST(PartitionedTraceSize, ALongerRunPastTheSmallSamples) {
  const pipescope::Run run = simulated(sim::ScheduleKind::one_f_one_b, 8, 8, 1, true, 40);
  pipescope::Run corrected = run;
  const AnalyzedRun single = analyze_run(corrected, PipelineOptions());
  TraceOptions options;
  options.pipeline = &single.pipeline;
  options.flows = true;
  for (const TraceFormat format : {TraceFormat::json, TraceFormat::perfetto}) {
    const std::uint64_t whole =
        estimate_trace_bytes(corrected, single.metrics, options, format, {1 << 20, 1 << 30});
    for (const TraceSampleSize small : {TraceSampleSize{1, 3}, TraceSampleSize{2, 16}}) {
      EXPECT_NE(estimate_trace_bytes(corrected, single.metrics, options, format, small), whole);
    }
  }
  for (const int ranks : {2, 5}) check_trace_ranks(run, ranks, true, "40 steps");
}

// Device 1 starts each step while device 0 still runs the previous one, and
// a comm job spans two windows: the parts hold jobs of other steps, which
// they read for bubbles but do not count.
TEST(PartitionedTraceSize, OverlappingStepsAndLanes) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    const std::int64_t t = k * 100;
    testing::add_job(run, 0, "forward", 0, t, t + 40);
    testing::add_job(run, 0, "backward", 0, t + 40, t + 90);
    testing::add_job(run, 0, "optimizer", 0, t + 90, t + 120);
    testing::add_job(run, 1, "recv_forward", 0, t + 5, t + 30);
    testing::add_job(run, 1, "forward", 0, t + 30, t + 60);
    testing::add_job(run, 1, "send_backward", 0, t + 60, t + 160);
    testing::add_job(run, 1, "backward", 0, t + 65, t + 80);
    testing::add_job(run, 1, "optimizer", 0, t + 80, t + 95);
  }
  run.finalize();
  for (const int ranks : {1, 2, 3, 4, 7}) check_trace_ranks(run, ranks, true, "overlapping steps");
}

// Two machines, the second's clock ahead: the analysis corrects the clocks.
TEST(PartitionedTraceSize, CorrectedClocks) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 7;
  config.machines = 2;
  config.devices_per_stage = 2;
  config.machine_skew_ns = {0, 3'000'000};
  config.step_gap_ns = 0;
  const pipescope::Run run = testing::run_from_simulation(config);
  for (const int ranks : {1, 3, 4}) check_trace_ranks(run, ranks, true, "corrected clocks");
}

}  // namespace
}  // namespace pipescope::distributed
