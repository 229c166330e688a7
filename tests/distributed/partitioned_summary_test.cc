// summary.json of a partitioned run (distributed/partitioned_summary.h) on 1
// to 4 ranks (threads exchanging bytes, as the MPI ranks do) must be the
// single process's file byte for byte: load_run and the writer `analyze`
// uses, against files read per rank, load_partitioned, analyze_partitioned
// and write_partitioned_summary. Files are handed out round robin and all to
// the last rank.
#include "distributed/partitioned_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "export/summary_json.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"
#include "load/event_setup.h"
#include "load/load_run.h"
#include "model/events_off.h"
#include "model/option_words.h"
#include "simulate/log_writer.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"

namespace pipescope::distributed {
namespace {

using testing::files_of;

namespace fs = std::filesystem;

/// A fresh folder for one test's files.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("pipescope_partitioned_summary_" + name + "_" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// What `analyze` writes for the loaded run (analyze_loaded's writer).
std::string single_summary(LoadedRun loaded, const fs::path& dir,
                           const std::vector<TraceFileFigures>& traces,
                           std::vector<Warning>* warnings = nullptr) {
  const fs::path path = dir / "single.json";
  write_summary_json(loaded.run, loaded.metrics, loaded.pipeline, loaded.kernels, path.string(),
                     traces);
  if (warnings != nullptr) *warnings = loaded.pipeline.warnings;
  return bytes_of(path);
}

/// Every rank count and hand-out: the partitioned file against `expected`.
void check_parts(const std::vector<FileResult>& files, const LoadOptions& options,
                 const std::string& expected, const fs::path& dir,
                 const std::vector<TraceFileFigures>& traces, const std::string& what,
                 const std::vector<InputFile>* inputs = nullptr) {
  for (const int ranks : {1, 2, 3, 4}) {
    for (const bool round_robin : {true, false}) {
      if (ranks == 1 && !round_robin) continue;
      const std::string at = what + ", " + std::to_string(ranks) + " ranks" +
                             (round_robin ? "" : ", files on the last rank");
      const fs::path path = dir / ("parts_" + std::to_string(ranks) + ".json");
      fs::remove(path);
      run_local_ranks<int>(ranks, [&](Exchange& exchange) {
        std::vector<FileResult> mine;
        std::vector<std::size_t> index;
        for (std::size_t f = 0; f < files.size(); ++f) {
          const int reader =
              round_robin ? static_cast<int>(f % static_cast<std::size_t>(ranks)) : ranks - 1;
          if (reader != exchange.rank()) continue;
          mine.push_back(files[f]);
          index.push_back(f);
        }
        LocalLoad load = load_partitioned(exchange, std::move(mine), index, files.size(), options);
        // The event kinds, as the CLI adopts them after reading.
        if (inputs != nullptr) adopt_event_library(load.run, *inputs, options.ingest);
        PartitionedAnalysis analysis = analyze_partitioned(exchange, load.run, options.pipeline);
        const SummaryJobFacts facts =
            gather_whole_run_facts(exchange, load, analysis, options.pipeline);
        write_partitioned_summary(exchange, load, analysis, facts, path.string(), traces);
        return 0;
      });
      const std::string got = bytes_of(path);
      EXPECT_EQ(got.size(), expected.size()) << at;
      EXPECT_TRUE(got == expected) << at << "\n--- partitioned ---\n"
                                   << got.substr(0, 4000) << "\n--- single ---\n"
                                   << expected.substr(0, 4000);
    }
  }
}

bool has(const std::vector<Warning>& warnings, WarningCode code) {
  for (const Warning& w : warnings) {
    if (w.code == code) return true;
  }
  return false;
}

TEST(PartitionedSummary, GoldenFolders) {
  const fs::path dir = scratch("golden");
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const std::vector<InputFile> inputs =
        find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder});
    // The CLI's path: read and loaded in one process.
    std::vector<Warning> warnings;
    const std::string expected = single_summary(load_run(inputs, options), dir, {}, &warnings);
    ASSERT_FALSE(expected.empty()) << folder;
    // edge has a short device: its warning comes from every device's counts.
    if (std::string(folder) == "edge") {
      EXPECT_TRUE(has(warnings, WarningCode::short_device));
    }
    check_parts(read_input_files(inputs, options.ingest), options, expected, dir, {}, folder);
  }
  fs::remove_all(dir);
}

pipescope::Run simulated_machines(int machines, int steps, int devices_per_stage = 1) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 6);
  config.steps = steps;
  config.machines = machines;
  config.devices_per_stage = devices_per_stage;
  config.comm_jobs = true;
  if (machines == 2) config.machine_skew_ns = {0, 3'000'000};
  return testing::run_from_simulation(config);
}

/// The single process's file and warnings for `run`'s files, then the parts.
std::vector<Warning> check_run(const pipescope::Run& run, const LoadOptions& options,
                               const std::string& what,
                               const std::vector<TraceFileFigures>& traces = {}) {
  const fs::path dir = scratch("sim");
  const std::vector<FileResult> files = files_of(run);
  std::vector<Warning> warnings;
  const std::string expected =
      single_summary(load_run(merge_file_results(files_of(run)), options), dir, traces, &warnings);
  check_parts(files, options, expected, dir, traces, what);
  fs::remove_all(dir);
  return warnings;
}

TEST(PartitionedSummary, SimulatedRuns) {
  check_run(simulated_machines(1, 5), LoadOptions(), "one machine");
  // Two machines, one 3 ms ahead: the clocks are corrected.
  TraceFileFigures held;
  held.file = "trace.json";
  held.reason = "steps_option";
  held.steps = "1-2";
  const std::vector<Warning> two =
      check_run(simulated_machines(2, 6), LoadOptions(), "two machines", {held});
  EXPECT_FALSE(has(two, WarningCode::dependency_violations));
}

TEST(PartitionedSummary, StepListsInPiecesOfAStep) {
  ::setenv("PIPESCOPE_MPI_MESSAGE_BYTES", "200", 1);
  check_run(simulated_machines(1, 7), LoadOptions(), "one machine, pieces of a step");
  ::unsetenv("PIPESCOPE_MPI_MESSAGE_BYTES");
}

// A machine's clock stepped back mid-run: undone by the ranks that read
// its devices (partitioned_load.h), then analysed; the summary names it.
TEST(PartitionedSummary, AClockStepUndone) {
  pipescope::Run run = simulated_machines(2, 10);
  std::int64_t at = 0;
  for (const Device& device : run.devices) {
    if (device.machine == 1) at = device.jobs[device.jobs.size() / 2].start_ns;
  }
  for (Device& device : run.devices) {
    if (device.machine != 1) continue;
    for (Job& job : device.jobs) {
      if (job.start_ns < at) continue;
      job.start_ns -= 150'000'000;
      job.end_ns -= 150'000'000;
    }
  }
  run.finalize();
  EXPECT_TRUE(has(check_run(run, LoadOptions(), "a clock step back"), WarningCode::clock_step));
}

// `--stages auto` guesses from every job, as the single process does: two
// peers alike in the run's head but apart after it are two stages.
TEST(PartitionedSummary, StagesAutoReadsEveryJob) {
  const pipescope::Run plain = simulated_machines(1, 24, 2);
  pipescope::Run apart = plain;
  pipescope::Job& late = apart.devices[1].jobs[apart.devices[1].jobs.size() - 3];
  late.micro_batch += 1000;
  // The guess tells them apart only from the late job.
  ASSERT_NE(guess_stage_map(apart).stage_count(), guess_stage_map(plain).stage_count());
  LoadOptions options;
  options.pipeline.stages = parse_stage_spec("auto", "--stages");
  check_run(apart, options, "stages auto, peers apart after the head");
  check_run(plain, options, "stages auto, peers");
  ::setenv("PIPESCOPE_MPI_MESSAGE_BYTES", "200", 1);
  check_run(apart, options, "stages auto, in passes of a few jobs");
  ::unsetenv("PIPESCOPE_MPI_MESSAGE_BYTES");
}

TEST(PartitionedSummary, StageMapWarnings) {
  // Tensor-parallel peers analysed one stage per device: the guess groups them.
  LoadOptions device;
  device.pipeline.stages = parse_stage_spec("device", "--stages");
  EXPECT_TRUE(has(check_run(simulated_machines(1, 4, 2), device, "peers, one stage per device"),
                  WarningCode::stage_map));
  // Stages given as pairs of devices that are not peers: contradicted.
  LoadOptions pairs;
  pairs.pipeline.stages = parse_stage_spec("tp=2", "--stages");
  EXPECT_TRUE(has(check_run(simulated_machines(1, 4), pairs, "tp=2 of stages"),
                  WarningCode::stage_map_contradicted));
  // The comparisons in many passes of a few jobs each, merged in order (and
  // the step lists in pieces of a step each).
  ::setenv("PIPESCOPE_MPI_MESSAGE_BYTES", "200", 1);
  EXPECT_TRUE(has(check_run(simulated_machines(1, 4, 2), device, "peers, in passes of a few jobs"),
                  WarningCode::stage_map));
  EXPECT_TRUE(has(check_run(simulated_machines(1, 4), pairs, "tp=2, in passes of a few jobs"),
                  WarningCode::stage_map_contradicted));
  ::unsetenv("PIPESCOPE_MPI_MESSAGE_BYTES");
}

// Log events, found by the shipped library in a simulated folder's logs:
// rank 0 places and writes them whole (every rank holds every device's
// events from the files' headers), the rest by ranges.
TEST(PartitionedSummary, LogEventsFromTheLibrary) {
  const EventSetup events = make_event_setup(true, {});
  if (!events.matcher) {
    GTEST_SKIP() << "built without the event library: "
                 << events_off_reason(events.off, *OptionWords::engine());
  }
  const fs::path dir = fs::temp_directory_path() / "pipescope_partitioned_summary_events";
  fs::remove_all(dir);
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 6;
  sim::LogWriterOptions writer;
  writer.dir = dir / "logs";
  writer.events = true;
  sim::write_simulated_logs(config, writer);
  LoadOptions options;
  options.inputs.allow_unreadable = true;
  options.events = events;
  options.ingest.events = events.matcher.get();
  const std::vector<InputFile> inputs = find_inputs({(dir / "logs").string()});
  LoadedRun loaded = load_run(inputs, options);
  ASSERT_FALSE(loaded.run.event_kinds.empty());
  std::size_t found = 0;
  for (const Device& device : loaded.run.devices) found += device.events.size();
  ASSERT_GT(found, 0u) << "the simulated logs hold events";
  const std::string expected = single_summary(std::move(loaded), dir, {});
  check_parts(read_input_files(inputs, options.ingest), options, expected, dir, {}, "log events",
              &inputs);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace pipescope::distributed
