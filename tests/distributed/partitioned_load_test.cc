// The load prelude by parts (distributed/partitioned_load.h) on 1 to 4 ranks
// (threads exchanging bytes, as the MPI ranks do) must give load_run's run
// before the analysis (LoadLevel::prelude): the same devices in the same
// order, each device's jobs on the one rank that read it, the same type ids,
// segments and left-out devices, the same warnings word for word, and the
// same error for a refused run. Files are handed out round robin and all to
// the last rank. The partitioned analysis on the ranks' runs then gives the
// single process's figures.
#include "distributed/partitioned_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"
#include "load/load_run.h"
#include "model/errors.h"
#include "support/hand_run.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"
#include "support/time_units.h"

namespace pipescope::distributed {
namespace {

using testing::files_of;

/// What load_run gives, or the error it throws.
struct Expected {
  LoadedRun loaded;
  std::string error;
};

Expected load_whole(std::vector<FileResult> files, const LoadOptions& options) {
  Expected out;
  LoadOptions prelude = options;
  prelude.level = LoadLevel::prelude;
  try {
    out.loaded = load_run(merge_file_results(std::move(files)), prelude);
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

/// The ranks' loads, or the error every rank threw.
struct Partitioned {
  std::vector<LocalLoad> ranks;
  std::string error;
};

Partitioned load_parts(const std::vector<FileResult>& files, int ranks, bool round_robin,
                       const LoadOptions& options) {
  Partitioned out;
  // Every rank throws alike: each rank's message, checked equal below.
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  try {
    out.ranks = run_local_ranks<LocalLoad>(ranks, [&](Exchange& exchange) {
      std::vector<FileResult> mine;
      std::vector<std::size_t> index;
      for (std::size_t f = 0; f < files.size(); ++f) {
        const int reader =
            round_robin ? static_cast<int>(f % static_cast<std::size_t>(ranks)) : ranks - 1;
        if (reader != exchange.rank()) continue;
        mine.push_back(files[f]);
        index.push_back(f);
      }
      try {
        return load_partitioned(exchange, std::move(mine), index, files.size(), options);
      } catch (const LocalExchangeAborted&) {
        throw;
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(exchange.rank())] = e.what();
        throw;
      }
    });
  } catch (const std::exception& e) {
    out.error = e.what();
    // A rank woken by another's failure in a collective throws the echo;
    // every rank that decided threw the same.
    for (const std::string& each : errors) {
      if (!each.empty()) {
        EXPECT_EQ(each, out.error) << "every rank throws alike";
      }
    }
  }
  return out;
}

void expect_same_segments(const std::vector<LaunchSegment>& x, const std::vector<LaunchSegment>& y,
                          const std::string& at) {
  ASSERT_EQ(x.size(), y.size()) << at;
  for (std::size_t s = 0; s < x.size(); ++s) {
    EXPECT_EQ(x[s].index, y[s].index) << at;
    EXPECT_EQ(x[s].first_step, y[s].first_step) << at;
    EXPECT_EQ(x[s].numbered_by_line, y[s].numbered_by_line) << at;
    EXPECT_EQ(x[s].found_by, y[s].found_by) << at;
    EXPECT_EQ(x[s].evidence, y[s].evidence) << at;
  }
}

/// The ranks' runs together are the whole run's; the warnings are its.
void expect_same_load(const Partitioned& parts, const LoadedRun& whole, const std::string& at) {
  const Run& w = whole.run;
  std::vector<int> holders(w.devices.size(), 0);
  for (std::size_t r = 0; r < parts.ranks.size(); ++r) {
    const LocalLoad& mine = parts.ranks[r];
    const std::string here = at + ", rank " + std::to_string(r);
    EXPECT_EQ(mine.input_warnings, whole.input_warnings) << here;
    EXPECT_EQ(mine.launch_warnings, whole.launch_warnings) << here;
    EXPECT_EQ(mine.run.clock_steps, whole.run.clock_steps) << here;
    expect_same_segments(mine.all_segments, whole.all_segments, here);
    const Run& run = mine.run;
    expect_same_segments(run.segments, w.segments, here);
    EXPECT_EQ(run.types.names(), w.types.names()) << here;
    EXPECT_EQ(run.first_step, w.first_step) << here;
    EXPECT_EQ(run.inputs.size(), w.inputs.size()) << here;
    ASSERT_EQ(run.left_out.size(), w.left_out.size()) << here;
    for (std::size_t i = 0; i < w.left_out.size(); ++i) {
      EXPECT_EQ(run.left_out[i].device, w.left_out[i].device) << here;
      EXPECT_EQ(run.left_out[i].reason, w.left_out[i].reason) << here;
    }
    ASSERT_EQ(run.devices.size(), w.devices.size()) << here;
    ASSERT_EQ(mine.mine.size(), w.devices.size()) << here;
    for (std::size_t d = 0; d < w.devices.size(); ++d) {
      const Device &x = run.devices[d], &y = w.devices[d];
      EXPECT_EQ(x.index, y.index) << here;
      EXPECT_EQ(x.machine, y.machine) << here;
      EXPECT_EQ(x.rank, y.rank) << here;
      EXPECT_EQ(x.path, y.path) << here;
      EXPECT_EQ(x.cut_ns, y.cut_ns) << here;
      if (!mine.mine[d]) {
        EXPECT_TRUE(x.jobs.empty()) << here << " device " << d;
        continue;
      }
      ++holders[d];
      EXPECT_EQ(x.segment_begin, y.segment_begin) << here << " device " << d;
      ASSERT_EQ(x.jobs.size(), y.jobs.size()) << here << " device " << d;
      for (std::size_t i = 0; i < x.jobs.size(); ++i) {
        const Job &a = x.jobs[i], &b = y.jobs[i];
        EXPECT_TRUE(a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.type == b.type &&
                    a.line == b.line && a.micro_batch == b.micro_batch)
            << here << " device " << d << " job " << i;
      }
    }
  }
  for (std::size_t d = 0; d < holders.size(); ++d)
    EXPECT_EQ(holders[d], 1) << at << " device " << d;
}

/// The partitioned analysis of the ranks' runs gives analyze_run's figures.
void expect_same_analysis(const Partitioned& parts, const LoadedRun& whole, const std::string& at) {
  Run corrected = whole.run;
  const AnalyzedRun single = analyze_run(corrected, PipelineOptions());
  std::vector<Run> locals;
  for (const LocalLoad& l : parts.ranks) locals.push_back(l.run);
  const auto results = run_local_ranks<PartitionedAnalysis>(
      static_cast<int>(locals.size()), [&](Exchange& exchange) {
        return analyze_partitioned(exchange, locals[static_cast<std::size_t>(exchange.rank())],
                                   PipelineOptions());
      });
  for (std::size_t r = 0; r < results.size(); ++r) {
    const Metrics &m = results[r].metrics, &s = single.metrics;
    const std::string here = at + ", analysis on rank " + std::to_string(r);
    ASSERT_EQ(m.steps.size(), s.steps.size()) << here;
    for (std::size_t k = 0; k < m.steps.size(); ++k) {
      EXPECT_EQ(m.steps[k].start_ns, s.steps[k].start_ns) << here << " step " << k;
      EXPECT_EQ(m.steps[k].end_ns, s.steps[k].end_ns) << here << " step " << k;
      EXPECT_EQ(m.steps[k].segment, s.steps[k].segment) << here << " step " << k;
      EXPECT_EQ(m.steps[k].complete, s.steps[k].complete) << here << " step " << k;
    }
    EXPECT_EQ(m.bubble_ratio, s.bubble_ratio) << here;
    EXPECT_EQ(m.total_window_ns, s.total_window_ns) << here;
    EXPECT_EQ(m.incomplete_steps, s.incomplete_steps) << here;
    EXPECT_TRUE(results[r].pipeline.schedule.detection == single.pipeline.schedule.detection)
        << here;
    EXPECT_EQ(results[r].pipeline.clock.applied, single.pipeline.clock.applied) << here;
    EXPECT_EQ(results[r].pipeline.bubbles.total.ns, single.pipeline.bubbles.total.ns) << here;
  }
}

/// Every rank count and hand-out against load_run; the analysis too when
/// `analyse`. Returns the error both gave ("" for none).
std::string check_files(const std::vector<FileResult>& files, const LoadOptions& options,
                        const std::string& what, bool analyse) {
  const Expected whole = load_whole(files, options);
  for (const int ranks : {1, 2, 3, 4}) {
    for (const bool round_robin : {true, false}) {
      if (ranks == 1 && !round_robin) continue;
      const std::string at = what + ", " + std::to_string(ranks) + " ranks" +
                             (round_robin ? "" : ", files on the last rank");
      const Partitioned parts = load_parts(files, ranks, round_robin, options);
      EXPECT_EQ(parts.error, whole.error) << at;
      if (!whole.error.empty() || !parts.error.empty()) continue;
      expect_same_load(parts, whole.loaded, at);
      if (analyse && whole.loaded.run.job_count() > 0) {
        expect_same_analysis(parts, whole.loaded, at);
      }
    }
  }
  return whole.error;
}

TEST(PartitionedLoad, GoldenFolders) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const std::vector<InputFile> inputs =
        find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder});
    const std::vector<FileResult> files = read_input_files(inputs, options.ingest);
    EXPECT_EQ(check_files(files, options, folder, true), "") << folder;
    // The last segment alone, and one the run does not have.
    options.segment = kLastSegment;
    check_files(files, options, std::string(folder) + ", last segment", true);
    options.segment = 7;
    EXPECT_NE(check_files(files, options, std::string(folder) + ", segment 7", false), "");
  }
}

TEST(PartitionedLoad, GoldenFoldersRefusedWhenUnreadableIsNotAllowed) {
  // edge holds inputs that cannot be read: refused on every rank alike.
  const std::vector<FileResult> files =
      read_input_files(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/edge"}), IngestOptions());
  check_files(files, LoadOptions(), "edge, unreadable refused", false);
}

Run simulated(int machines, int steps) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 6);
  config.steps = steps;
  config.machines = machines;
  config.comm_jobs = true;
  return testing::run_from_simulation(config);
}

TEST(PartitionedLoad, SimulatedRuns) {
  check_files(files_of(simulated(1, 5)), LoadOptions(), "one machine", true);
  check_files(files_of(simulated(2, 5)), LoadOptions(), "two machines", true);
}

/// Every device's jobs again `gap_ns` later, after a `Schedule Profiler
/// start at step 100` line: a relaunch appended to the same logs.
Run relaunched(Run run, std::int64_t gap_ns) {
  for (Device& device : run.devices) {
    const std::size_t n = device.jobs.size();
    const std::int64_t last = device.jobs.back().end_ns;
    const auto lines = static_cast<std::uint32_t>(device.jobs.back().line);
    device.step_starts.push_back({lines + 1, 100, false});
    for (std::size_t i = 0; i < n; ++i) {
      Job job = device.jobs[i];
      job.start_ns += last + gap_ns;
      job.end_ns += last + gap_ns;
      job.line += lines + 1;
      device.jobs.push_back(job);
    }
  }
  run.finalize();
  return run;
}

TEST(PartitionedLoad, RelaunchesAndBadTimestamps) {
  const pipescope::Run twice = relaunched(simulated(2, 4), 120'000'000'000);
  ASSERT_EQ(load_whole(files_of(twice), LoadOptions()).loaded.all_segments.size(), 2u);
  check_files(files_of(twice), LoadOptions(), "relaunch", true);
  LoadOptions first;
  first.segment = 0;
  check_files(files_of(twice), first, "relaunch, segment 0", true);
  // One job of device 2 stamped ten hours off.
  pipescope::Run bad = simulated(1, 4);
  Job& job = bad.devices[2].jobs[bad.devices[2].jobs.size() / 2];
  job.start_ns += 36'000'000'000'000;
  job.end_ns += 36'000'000'000'000;
  bad.finalize();
  const Expected whole = load_whole(files_of(bad), LoadOptions());
  ASSERT_TRUE(std::any_of(whole.loaded.input_warnings.begin(), whole.loaded.input_warnings.end(),
                          [](const Warning& w) { return w.code == WarningCode::bad_timestamp; }));
  check_files(files_of(bad), LoadOptions(), "bad timestamp", true);
  // An empty input is left out, by its job count.
  pipescope::Run empty = simulated(1, 3);
  Device idle = empty.devices.back();
  idle.jobs.clear();
  idle.index = 4;
  idle.rank = 4;
  idle.path = "machine0/workerlog.4";
  empty.devices.push_back(idle);
  check_files(files_of(empty), LoadOptions(), "empty input", true);
}

TEST(PartitionedLoad, TwoRunsRefusedAlike) {
  pipescope::Run run = simulated(2, 3);
  for (Device& device : run.devices) {
    if (device.machine != 1) continue;
    for (Job& job : device.jobs) {
      job.start_ns += 600'000'000'000;
      job.end_ns += 600'000'000'000;
    }
  }
  EXPECT_NE(check_files(files_of(run), LoadOptions(), "two runs", false), "");
}

using testing::kMs;

/// As tests/analysis/clock_steps_test.cc: device d runs `steps` steps of F0
/// F1 B0 B1, 10 ms each job, step k at k * 50 ms; from each (at, jump) on
/// its clock reads `jump` later.
void add_stepped_device(pipescope::Run& run, std::size_t d, int machine, int steps,
                        std::vector<std::pair<std::int64_t, std::int64_t>> jumps) {
  Device& device = testing::device_at(run, d);
  device.machine = machine;
  device.rank = static_cast<int>(d % 2);
  device.path = "machine" + std::to_string(machine) + "/workerlog." + std::to_string(d % 2);
  const auto clock = [&](std::int64_t t) {
    std::int64_t read = t;
    for (const auto& [at, jump] : jumps) read += t >= at ? jump : 0;
    return read;
  };
  const char* types[] = {"forward", "forward", "backward", "backward"};
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < 4; ++i) {
      const std::int64_t start = k * 50 * kMs + i * 10 * kMs + static_cast<std::int64_t>(d) * kMs;
      const std::int64_t s = clock(start), e = clock(start + 10 * kMs);
      if (e >= s) testing::add_job(run, d, types[i], i % 2, s, e);
    }
  }
}

void add_stepped_device(pipescope::Run& run, std::size_t d, int machine, int steps,
                        std::int64_t step_at, std::int64_t jump) {
  add_stepped_device(run, d, machine, steps, {{step_at, jump}});
}

pipescope::Run stepped(std::int64_t jump) {
  pipescope::Run run;
  add_stepped_device(run, 0, 0, 8, 0, 0);
  add_stepped_device(run, 1, 0, 8, 0, 0);
  add_stepped_device(run, 2, 1, 8, 125 * kMs, jump);
  add_stepped_device(run, 3, 1, 8, 125 * kMs, jump);
  run.finalize();
  return run;
}

TEST(PartitionedLoad, ClockStepsAreUndoneAsInOneProcess) {
  // Machine 1's clock stepped back, or forward: undone by the ranks that
  // read its devices, the machine-wide decisions from gathered parts.
  for (const std::int64_t jump : {-150 * kMs, 200 * kMs}) {
    const pipescope::Run run = stepped(jump);
    ASSERT_EQ(load_whole(files_of(run), LoadOptions()).loaded.run.clock_steps.size(), 1u) << jump;
    EXPECT_EQ(check_files(files_of(run), LoadOptions(), "one clock step", true), "") << jump;
    // Not looked for without clock correction.
    LoadOptions unfixed;
    unfixed.pipeline.clock.fix = false;
    check_files(files_of(run), unfixed, "clock step, not corrected", false);
  }
  // Four machines: machine 1 stepped back twice, machine 2 back once,
  // machine 3 forward; every step of every machine, in rounds.
  pipescope::Run run;
  add_stepped_device(run, 0, 0, 12, 0, 0);
  add_stepped_device(run, 1, 0, 12, 0, 0);
  for (std::size_t d : {2, 3}) {
    add_stepped_device(run, d, 1, 12, {{125 * kMs, -150 * kMs}, {325 * kMs, -80 * kMs}});
  }
  for (std::size_t d : {4, 5}) add_stepped_device(run, d, 2, 12, 175 * kMs, -120 * kMs);
  for (std::size_t d : {6, 7}) add_stepped_device(run, d, 3, 12, 225 * kMs, 200 * kMs);
  run.finalize();
  const Expected whole = load_whole(files_of(run), LoadOptions());
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(whole.loaded.run.clock_steps.size(), 4u);
  EXPECT_EQ(check_files(files_of(run), LoadOptions(), "four clock steps", true), "");
}

TEST(PartitionedLoad, PausesAreNoClockSteps) {
  // Both machines paused alike: every device jumps forward, no machine
  // moves against the other: no step.
  pipescope::Run run;
  for (std::size_t d = 0; d < 4; ++d)
    add_stepped_device(run, d, static_cast<int>(d / 2), 8, 125 * kMs, 200 * kMs);
  run.finalize();
  ASSERT_TRUE(load_whole(files_of(run), LoadOptions()).loaded.run.clock_steps.empty());
  check_files(files_of(run), LoadOptions(), "both machines paused", false);
  // The whole run paused 300 ms mid-run: every device jumps forward, no
  // machine moves against the others: no step.
  pipescope::Run paused = simulated(2, 6);
  const std::int64_t at = paused.devices[0].jobs[paused.devices[0].jobs.size() / 2].start_ns;
  for (Device& device : paused.devices) {
    for (Job& job : device.jobs) {
      if (job.start_ns < at) continue;
      job.start_ns += 300'000'000;
      job.end_ns += 300'000'000;
    }
  }
  paused.finalize();
  ASSERT_TRUE(load_whole(files_of(paused), LoadOptions()).loaded.run.clock_steps.empty());
  check_files(files_of(paused), LoadOptions(), "paused", true);
}

TEST(PartitionedLoad, GpuActivitiesAreRefused) {
  std::vector<FileResult> files = files_of(simulated(1, 3));
  files[1].kernels.emplace_back();
  const Partitioned parts = load_parts(files, 2, true, LoadOptions());
  EXPECT_NE(parts.error.find("GPU activities"), std::string::npos) << parts.error;
}

}  // namespace
}  // namespace pipescope::distributed
