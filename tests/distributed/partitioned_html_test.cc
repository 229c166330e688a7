// The HTML report of a partitioned run (distributed/partitioned_html.h) on 1
// to 4 ranks (threads exchanging bytes, as the MPI ranks do) must be the
// single process's report embedding the drawn steps only
// (HtmlOptions::embed_drawn_only), byte for byte; and rank 0 must receive
// the drawn steps' jobs (with the few around them the report's walks read),
// not the run's. Files are handed out round robin and all to the last rank.
#include "distributed/partitioned_html.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "distributed/local_exchange.h"
#include "distributed/partitioned_analysis.h"
#include "distributed/partitioned_load.h"
#include "distributed/partitioned_summary.h"
#include "export/html_report.h"
#include "export/html_report_data.h"
#include "ingest/ingest.h"
#include "ingest/run_merge.h"
#include "load/event_setup.h"
#include "load/load_run.h"
#include "model/events_off.h"
#include "simulate/log_writer.h"
#include "support/partitioned_ranks.h"
#include "support/pipeline_sim_run.h"

namespace pipescope::distributed {
namespace {

using testing::files_of;

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("pipescope_partitioned_html_" + name + "_" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// The steps `spec` names ("" the default choice; "all" every step, as
/// --html-steps would list them).
std::vector<std::size_t> drawn_steps(const Metrics& metrics, const std::string& spec) {
  if (spec != "all") return choose_html_steps(metrics, spec);
  std::string list;
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    list += (k == 0 ? "" : ",") + step_label(metrics, k);
  }
  return choose_html_steps(metrics, list);
}

/// What `analyze --html` writes for the loaded run, the interactive
/// timeline embedding the drawn steps only.
std::string single_html(const LoadedRun& loaded, const std::string& spec) {
  // The partitioned analysis folds the peers of the run's longest bubbles
  // (BubbleSummary::longest), not of the wider list of candidates one
  // process folds (longest_folded): where stages have several devices its
  // longest bubbles' table (the text report's too) lists fewer rows.
  PipelineAnalysis pipeline = loaded.pipeline;
  pipeline.bubbles.longest_folded.clear();
  HtmlOptions options;
  options.title = "partitioned";
  options.steps = drawn_steps(loaded.metrics, spec);
  options.pipeline = &pipeline;
  options.embed_drawn_only = true;
  return render_html_report(loaded.run, loaded.metrics, options);
}

/// Every rank's part of `files`: rank r reads file f when f % ranks == r
/// (round robin), or the last rank reads them all.
std::pair<std::vector<FileResult>, std::vector<std::size_t>> files_of_rank(
    const std::vector<FileResult>& files, int rank, int ranks, bool round_robin) {
  std::pair<std::vector<FileResult>, std::vector<std::size_t>> mine;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const int reader =
        round_robin ? static_cast<int>(f % static_cast<std::size_t>(ranks)) : ranks - 1;
    if (reader != rank) continue;
    mine.first.push_back(files[f]);
    mine.second.push_back(f);
  }
  return mine;
}

/// The ranks' analysis, then `body` on every rank.
template <typename Result, typename Body>
std::vector<Result> on_ranks(const std::vector<FileResult>& files, const LoadOptions& options,
                             int ranks, bool round_robin, const std::vector<InputFile>* inputs,
                             Body body) {
  return run_local_ranks<Result>(ranks, [&](Exchange& exchange) {
    auto [mine, index] = files_of_rank(files, exchange.rank(), ranks, round_robin);
    LocalLoad load = load_partitioned(exchange, std::move(mine), index, files.size(), options);
    if (inputs != nullptr) adopt_event_library(load.run, *inputs, options.ingest);
    PartitionedAnalysis analysis = analyze_partitioned(exchange, load.run, options.pipeline);
    const SummaryJobFacts facts =
        gather_whole_run_facts(exchange, load, analysis, options.pipeline);
    return body(exchange, load, analysis, facts);
  });
}

/// Every rank count and hand-out: the partitioned report against the
/// single process's, for each step choice.
void check_reports(const std::vector<FileResult>& files, const LoadOptions& options,
                   const LoadedRun& loaded, const std::string& what,
                   const std::vector<InputFile>* inputs = nullptr) {
  const fs::path dir = scratch("reports");
  for (const std::string spec : {"", "all", "first-last"}) {
    std::string steps = spec;
    if (spec == "first-last" && !loaded.metrics.steps.empty()) {
      steps = step_label(loaded.metrics, 0) + "," +
              step_label(loaded.metrics, loaded.metrics.steps.size() - 1);
    }
    const std::string expected = single_html(loaded, steps);
    for (const int ranks : {1, 2, 3, 4}) {
      for (const bool round_robin : {true, false}) {
        if (ranks == 1 && !round_robin) continue;
        const std::string at = what + ", steps '" + spec + "', " + std::to_string(ranks) +
                               " ranks" + (round_robin ? "" : ", files on the last rank");
        const fs::path path = dir / ("report_" + std::to_string(ranks) + ".html");
        fs::remove(path);
        on_ranks<int>(files, options, ranks, round_robin, inputs,
                      [&](Exchange& exchange, const LocalLoad& load,
                          const PartitionedAnalysis& analysis, const SummaryJobFacts& facts) {
                        HtmlOptions html;
                        html.title = "partitioned";
                        html.steps = drawn_steps(analysis.metrics, steps);
                        html.pipeline = &analysis.pipeline;
                        write_partitioned_html(exchange, load, analysis, facts, html,
                                               path.string());
                        return 0;
                      });
        const std::string got = bytes_of(path);
        EXPECT_EQ(got.size(), expected.size()) << at;
        if (got != expected) {
          std::size_t first = 0;
          while (first < got.size() && first < expected.size() && got[first] == expected[first]) {
            ++first;
          }
          const std::size_t from = first > 300 ? first - 300 : 0;
          ADD_FAILURE() << at << ": first difference at byte " << first << "\n--- partitioned ---\n"
                        << got.substr(from, 900) << "\n--- single ---\n"
                        << expected.substr(from, 900);
        }
      }
    }
  }
  fs::remove_all(dir);
}

bool has_events(const Run& run) {
  for (const Device& device : run.devices) {
    if (!device.events.empty()) return true;
  }
  return false;
}

TEST(PartitionedHtml, GoldenFolders) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch", "late"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const std::vector<InputFile> inputs =
        find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder});
    const LoadedRun loaded = load_run(inputs, options);
    check_reports(read_input_files(inputs, options.ingest), options, loaded, folder);
  }
}

pipescope::Run simulated(sim::ScheduleKind kind, int machines, int steps, int devices_per_stage,
                         int chunks = 1, std::int64_t skew_ns = 3'000'000) {
  sim::SimConfig config = testing::sim_config(kind, 4, 8, chunks);
  config.steps = steps;
  config.machines = machines;
  config.devices_per_stage = devices_per_stage;
  config.comm_jobs = true;
  config.lr_jobs = true;
  if (machines == 2) config.machine_skew_ns = {0, skew_ns};
  return testing::run_from_simulation(config);
}

/// Steps that overlap: each stage starts the next step once its own
/// optimizer is done, and the second machine's clock reads 27 ms ahead,
/// uncorrected. Recvs of step k + 1 then wait inside step k's window for
/// producers several jobs past what the drawn steps' ranges hold: rank 0
/// asks for them (partitioned_html.h, step 3).
pipescope::Run overlapping_steps() {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::zbh1, 4, 8);
  config.steps = 5;
  config.machines = 2;
  config.comm_jobs = true;
  config.lr_jobs = true;
  config.machine_skew_ns = {0, 27'000'000};
  config.optimizer_ns = 500'000;
  config.step_gap_ns = 0;
  return testing::run_from_simulation(config);
}

void check_run(const pipescope::Run& run, const std::string& what, bool fix_clocks = true) {
  LoadOptions options;
  options.pipeline.clock.fix = fix_clocks;
  const LoadedRun loaded = load_run(merge_file_results(files_of(run)), options);
  check_reports(files_of(run), options, loaded, what);
}

// Comm jobs (their wait and transfer read the dependencies and the jobs
// around them), lr jobs, tensor-parallel peers drawn as one row, two
// machines whose clocks are corrected, chunks and split backwards.
TEST(PartitionedHtml, SimulatedRuns) {
  check_run(simulated(sim::ScheduleKind::one_f_one_b, 1, 6, 1), "1f1b");
  check_run(simulated(sim::ScheduleKind::one_f_one_b, 2, 6, 2), "two machines, peers");
  check_run(simulated(sim::ScheduleKind::interleaved, 1, 5, 1, 2), "interleaved");
  check_run(simulated(sim::ScheduleKind::zbh1, 1, 5, 1), "zero bubble");
  check_run(overlapping_steps(), "steps overlapping", false);
}

// The jobs travel in rounds of a job or two: the rounds and the requests
// for what the walks read beyond the ranges end together on every rank.
TEST(PartitionedHtml, InRoundsOfAFewJobs) {
  ::setenv("PIPESCOPE_MPI_MESSAGE_BYTES", "200", 1);
  check_run(simulated(sim::ScheduleKind::one_f_one_b, 2, 5, 2), "rounds of a few jobs");
  check_run(overlapping_steps(), "steps overlapping, rounds of a few jobs", false);
  ::unsetenv("PIPESCOPE_MPI_MESSAGE_BYTES");
}

// Rank 0 receives every job the drawn steps' timelines draw, and not many
// more: the run's other steps stay where they are.
TEST(PartitionedHtml, RankZeroReceivesTheDrawnStepsJobs) {
  const pipescope::Run run = simulated(sim::ScheduleKind::one_f_one_b, 1, 24, 2);
  const LoadOptions options;
  const LoadedRun loaded = load_run(merge_file_results(files_of(run)), options);
  const std::vector<std::size_t> drawn = choose_html_steps(loaded.metrics, "");
  ASSERT_EQ(drawn.size(), 2u);
  // What the single process's timelines of those steps draw, device by device.
  std::uint64_t drawn_jobs = 0;
  std::vector<std::vector<bool>> needed(loaded.run.devices.size());
  for (std::size_t d = 0; d < loaded.run.devices.size(); ++d) {
    const JobVector& jobs = loaded.run.devices[d].jobs;
    needed[d].assign(jobs.size(), false);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      for (const std::size_t k : drawn) {
        if (loaded.metrics.job_step[d][i] == static_cast<std::int32_t>(k) ||
            html_draws_in_window(loaded.metrics.steps[k], jobs[i])) {
          needed[d][i] = true;
        }
      }
      drawn_jobs += needed[d][i] ? 1 : 0;
    }
  }
  for (const int ranks : {1, 3}) {
    const std::vector<JobIndices> views =
        on_ranks<JobIndices>(files_of(run), options, ranks, true, nullptr,
                             [&](Exchange& exchange, const LocalLoad& load,
                                 const PartitionedAnalysis& analysis, const SummaryJobFacts&) {
                               return gather_html_view(exchange, load, analysis, drawn).job_index;
                             });
    const JobIndices& view = views.front();
    ASSERT_EQ(view.size(), loaded.run.devices.size());
    std::uint64_t received = 0;
    for (std::size_t d = 0; d < view.size(); ++d) {
      received += view[d].size();
      std::vector<bool> got(needed[d].size(), false);
      for (const std::uint32_t i : view[d]) got[i] = true;
      for (std::size_t i = 0; i < needed[d].size(); ++i) {
        EXPECT_TRUE(got[i] || !needed[d][i]) << "device " << d << " job " << i;
      }
    }
    // The jobs around the drawn ones: a few a device and step at most.
    EXPECT_GE(received, drawn_jobs);
    EXPECT_LE(received, drawn_jobs + 8 * loaded.run.devices.size() * drawn.size());
    EXPECT_LT(received, loaded.run.job_count() / 4) << ranks << " ranks";
    for (std::size_t r = 1; r < views.size(); ++r) {
      for (const std::vector<std::uint32_t>& device : views[r]) EXPECT_TRUE(device.empty());
    }
  }
}

// Log events, found by the shipped library in a simulated folder's logs:
// placed on the windows as summary.json places them, marked on the drawn
// steps' timelines.
TEST(PartitionedHtml, LogEventsFromTheLibrary) {
  const EventSetup events = make_event_setup(true, {});
  if (!events.matcher) {
    GTEST_SKIP() << "built without the event library: "
                 << events_off_reason(events.off, *OptionWords::engine());
  }
  const fs::path dir = scratch("events");
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 6;
  config.comm_jobs = true;
  sim::LogWriterOptions writer;
  writer.dir = dir / "logs";
  writer.events = true;
  sim::write_simulated_logs(config, writer);
  LoadOptions options;
  options.inputs.allow_unreadable = true;
  options.events = events;
  options.ingest.events = events.matcher.get();
  const std::vector<InputFile> inputs = find_inputs({(dir / "logs").string()});
  const LoadedRun loaded = load_run(inputs, options);
  ASSERT_TRUE(has_events(loaded.run)) << "the simulated logs hold events";
  check_reports(read_input_files(inputs, options.ingest), options, loaded, "log events", &inputs);
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace pipescope::distributed
