// The traces of a partitioned run (distributed/partitioned_traces.h), written
// by 1 to N ranks (threads exchanging bytes, as the MPI ranks do), must be
// the single process's trace.json and trace.pftrace byte for byte: with and
// without the pipeline analysis, with and without flows, with and without a
// step selection, whoever read which device, with parts sent whole and in
// many small chunks. Nothing is left behind, and a rank 0 that cannot write
// makes every rank throw.
#include "distributed/partitioned_traces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "export/chrome_trace.h"
#include "export/perfetto_trace.h"
#include "export/trace_size.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope::distributed {
namespace {

using pipescope::testing::read_file;
using pipescope::testing::TempDir;

struct Case {
  TraceOptions options;
  TraceFormat format = TraceFormat::json;
  std::string label;
};

/// Every option the traces have: no pipeline; the pipeline with and without
/// flows, each on the whole run and on step selections; both formats.
std::vector<Case> cases_of(const AnalyzedRun& single) {
  const Metrics& m = single.metrics;
  std::vector<StepSelection> selections{StepSelection{}};
  if (m.steps.size() >= 4) {
    selections.push_back(StepSelection::of({1, 3}, m));
    selections.push_back(StepSelection::of({m.steps.size() - 1}, m));
  }
  std::vector<Case> cases;
  for (const TraceFormat format : {TraceFormat::json, TraceFormat::perfetto}) {
    Case plain;
    plain.format = format;
    plain.options.threads = 2;
    plain.label = std::string(trace_file_name(format)) + " without pipeline";
    cases.push_back(plain);
    for (const bool flows : {false, true}) {
      for (std::size_t s = 0; s < selections.size(); ++s) {
        Case c = plain;
        c.options.pipeline = &single.pipeline;
        c.options.flows = flows;
        c.options.steps = selections[s];
        c.label = std::string(trace_file_name(format)) + (flows ? " flows" : " bubbles") +
                  " selection " + std::to_string(s);
        cases.push_back(c);
      }
    }
  }
  return cases;
}

std::string whole_trace(const Run& corrected, const AnalyzedRun& single, const Case& c,
                        const std::string& path) {
  if (c.format == TraceFormat::json) {
    write_chrome_trace(corrected, single.metrics, c.options, path);
  } else {
    write_perfetto_trace(corrected, single.metrics, c.options, path);
  }
  return read_file(path);
}

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

void check_ranks(const Run& run, int ranks, bool round_robin, bool own_events,
                 std::size_t chunk_bytes, const std::string& what) {
  const std::string label = what + ", " + std::to_string(ranks) + " ranks" +
                            (round_robin ? "" : ", devices on the last rank") +
                            (own_events ? ", own events" : "") + ", chunks of " +
                            std::to_string(chunk_bytes);
  SCOPED_TRACE(label);
  const PipelineOptions options;
  Run corrected = run;
  const AnalyzedRun single = analyze_run(corrected, options);
  const std::vector<Case> cases = cases_of(single);
  TempDir dir;
  std::vector<std::string> expected;
  for (const Case& c : cases) expected.push_back(whole_trace(corrected, single, c, dir / "whole"));
  const std::string out = dir / "out";
  const std::string scratch = dir / "scratch";
  std::filesystem::create_directories(out);
  std::filesystem::create_directories(scratch);
  TraceStreaming streaming;
  streaming.chunk_bytes = chunk_bytes;
  streaming.scratch_dir = scratch;
  run_local_ranks<int>(ranks, [&](Exchange& exchange) {
    Run local = testing::local_view(
        run, exchange.rank(), exchange.size(), round_robin,
        own_events ? testing::RankEvents::own_but_root : testing::RankEvents::all);
    const PartitionedAnalysis mine = analyze_partitioned(exchange, local, options);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      write_partitioned_trace(exchange, local, mine, cases[i].options, cases[i].format,
                              out + "/trace" + std::to_string(i), streaming);
    }
    return 0;
  });
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string got = read_file(out + "/trace" + std::to_string(i));
    EXPECT_TRUE(got == expected[i])
        << cases[i].label << ": " << got.size() << " bytes against " << expected[i].size();
  }
  // No temporary file left in the output folder, no scratch file anywhere.
  EXPECT_EQ(files_in(out), cases.size());
  EXPECT_EQ(files_in(scratch), 0u);
}

void check_traces_at_every_rank_count(const Run& run, const std::string& what) {
  const std::size_t steps = compute_metrics(run).steps.size();
  for (const int ranks : {1, 2, 3, 4, static_cast<int>(steps) + 2}) {
    // Parts whole, and in chunks far smaller than a part (many rounds).
    check_ranks(run, ranks, true, false, TraceStreaming().chunk_bytes, what);
    if (ranks == 2 || ranks == 3) check_ranks(run, ranks, false, true, 997, what);
  }
}

TEST(PartitionedTraces, GoldenFoldersAreTheSingleProcessTraces) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_traces_at_every_rank_count(loaded.run, folder);
  }
}

/// A simulated run whose devices overlap at the steps' edges (parts hold
/// halo jobs, comm jobs get lanes of their own), with log events on some
/// devices: one before the first job (time zero), one in each window, one
/// approximate with captures, one unplaced.
Run simulated(sim::ScheduleKind kind, int stages, int micro_batches, int chunks, bool comm) {
  sim::SimConfig config = testing::sim_config(kind, stages, micro_batches, chunks);
  config.steps = 6;
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

TEST(PartitionedTraces, SimulatedSchedulesAreTheSingleProcessTraces) {
  using sim::ScheduleKind;
  struct Sim {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm;
  };
  for (const Sim& s :
       {Sim{ScheduleKind::one_f_one_b, 4, 8, 1, true},
        Sim{ScheduleKind::interleaved, 4, 8, 2, true}, Sim{ScheduleKind::zbh1, 4, 8, 1, false}}) {
    check_traces_at_every_rank_count(simulated(s.kind, s.stages, s.micro_batches, s.chunks, s.comm),
                                     "simulated " + std::to_string(static_cast<int>(s.kind)));
  }
}

// Device 1 starts each step while device 0 still runs the previous one, and
// a comm job spans two windows (it gets a lane of its own): the parts hold
// jobs of other steps, which they read for bubbles but do not write, and
// the lanes of jobs read by another rank.
TEST(PartitionedTraces, OverlappingStepsAndLanes) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    const std::int64_t t = k * 100;
    testing::add_job(run, 0, "forward", 0, t, t + 40);
    testing::add_job(run, 0, "backward", 0, t + 40, t + 90);
    testing::add_job(run, 0, "optimizer", 0, t + 90, t + 120);  // into the next window
    testing::add_job(run, 1, "recv_forward", 0, t + 5, t + 30);
    testing::add_job(run, 1, "forward", 0, t + 30, t + 60);
    testing::add_job(run, 1, "send_backward", 0, t + 60, t + 160);  // over two windows
    testing::add_job(run, 1, "backward", 0, t + 65, t + 80);
    testing::add_job(run, 1, "optimizer", 0, t + 80, t + 95);
  }
  run.finalize();
  for (const int ranks : {1, 2, 3, 4, 7}) {
    check_ranks(run, ranks, true, false, TraceStreaming().chunk_bytes, "overlapping steps");
    if (ranks > 1) check_ranks(run, ranks, false, false, 64, "overlapping steps");
  }
}

// Two machines, the second's clock ahead: the analysis corrects the clocks
// and the jobs travel again; the lanes must follow them there.
TEST(PartitionedTraces, CorrectedClocks) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 7;
  config.machines = 2;
  config.devices_per_stage = 2;
  config.machine_skew_ns = {0, 3'000'000};
  config.step_gap_ns = 0;
  const pipescope::Run run = testing::run_from_simulation(config);
  pipescope::Run copy = run;
  ASSERT_TRUE(analyze_run(copy, PipelineOptions()).pipeline.clock.applied);
  for (const int ranks : {1, 3, 4}) {
    check_ranks(run, ranks, true, false, TraceStreaming().chunk_bytes, "corrected clocks");
  }
}

// Rank 0 cannot write: every rank throws (none waits forever), and no rank
// leaves its scratch file.
TEST(PartitionedTraces, AFailedWriteThrowsOnEveryRank) {
  const pipescope::Run run = simulated(sim::ScheduleKind::one_f_one_b, 4, 8, 1, false);
  TempDir dir;
  const std::string scratch = dir / "scratch";
  std::filesystem::create_directories(scratch);
  TraceStreaming streaming;
  streaming.scratch_dir = scratch;
  const PipelineOptions options;
  EXPECT_THROW(run_local_ranks<int>(
                   3,
                   [&](Exchange& exchange) {
                     pipescope::Run local = testing::local_view(run, exchange.rank(), 3, true);
                     const PartitionedAnalysis mine = analyze_partitioned(exchange, local, options);
                     write_partitioned_trace(exchange, local, mine, TraceOptions(),
                                             TraceFormat::json, dir / "missing/trace.json",
                                             streaming);
                     return 0;
                   }),
               std::system_error);
  EXPECT_EQ(files_in(scratch), 0u);
}

}  // namespace
}  // namespace pipescope::distributed
