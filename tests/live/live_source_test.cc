// The inputs `pipescope watch` follows besides plain worker logs
// (engine/live/live_source.h): compressed logs, .ivl records, Paddle dygraph
// records and PyTorch traces appended to in pieces that cut lines, blocks and
// steps anywhere give every complete step with the window and bubble ratio
// `analyze` gives it on the finished folder, to the last digit; a live stage
// map that names devices waits for them.
#include "live/live_source.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ingest/dygraph_reader.h"
#include "ingest/ivl_import.h"
#include "load/load_run.h"
#include "support/command_runner.h"
#include "support/compress_util.h"
#include "support/live_feeder.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;
using Feeder = testing::LiveFeeder;
using testing::complete_steps;
using testing::expect_same_steps;

/// `analyze` on the finished folder.
LoadedRun analyze(const std::string& folder, LoadOptions options = {}) {
  return load_run(find_inputs({folder}), options);
}

/// The split of each live step equals analyze's (inherent points of the
/// whole run's bubble split).
void expect_same_split(const std::vector<LiveStep>& live, const LoadedRun& loaded) {
  ASSERT_TRUE(loaded.pipeline.split.known);
  ASSERT_EQ(live.size(), loaded.metrics.steps.size());
  for (std::size_t k = 0; k < live.size(); ++k) {
    const StepWindow& w = loaded.metrics.steps[k];
    std::int64_t inherent = 0;
    for (const std::int64_t ns : loaded.pipeline.split.inherent[k]) inherent += ns;
    const double points =
        100.0 * static_cast<double>(inherent) /
        (static_cast<double>(loaded.run.devices.size()) * static_cast<double>(w.window_ns()));
    ASSERT_TRUE(live[k].inherent_points) << k;
    EXPECT_EQ(*live[k].inherent_points, points) << "step " << k;
  }
}

std::string simulate(const TempDir& dir, const std::string& args, const std::string& name = "sim") {
  const std::string out = dir / name;
  const testing::CommandResult r = run_cli("simulate -o " + shell_quote(out) + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
  fs::remove(fs::path(out) / "expected.json");
  return out;
}

TEST(LiveSources, CompressedLogsGrowingInPiecesGiveAnalyzesFigures) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 10 --comm --seed 5");
  // As writers that flush their compressor every few KiB leave them: gzip
  // members and zstd frames of 3-8 KiB of text; one file gzip in one member.
  const std::string packed = dir / "packed";
  fs::create_directories(packed);
  for (int d = 0; d < 4; ++d) {
    const std::string text = read_file(fs::path(from) / fmt::format("workerlog.{}", d));
    std::string bytes;
    const std::size_t slice = d == 0 ? text.size() : 3000 + 1700 * static_cast<std::size_t>(d);
    for (std::size_t at = 0; at < text.size(); at += slice) {
      bytes +=
          d < 2 ? testing::gzip(text.substr(at, slice)) : testing::zstd(text.substr(at, slice));
    }
    TempDir::write_to(packed + fmt::format("/workerlog.{}{}", d, d < 2 ? ".gz" : ".zst"), bytes);
  }
  Feeder feeder(packed, dir / "live", 3);
  feeder.append_until(0.5, 300);
  EXPECT_GT(feeder.steps().size(), 0u);  // reported while still being written
  feeder.append_until(1.0, 300);
  feeder.look(true);
  const LoadedRun final = analyze(dir / "live");
  ASSERT_EQ(complete_steps(final).size(), 10u);
  expect_same_steps(feeder.steps(), complete_steps(final));
  // And the same as the plain logs.
  expect_same_steps(feeder.steps(), complete_steps(analyze(from)));
}

TEST(LiveSources, IvlRecordsGrowingInPiecesGiveAnalyzesFigures) {
  TempDir dir;
  simulate(dir, "--steps 10 --comm --seed 6 --ivl " + shell_quote(dir / "ivl"));
  Feeder feeder(dir / "ivl", dir / "live", 4);
  feeder.append_until(0.5, 900);  // pieces that cut blocks anywhere
  EXPECT_GT(feeder.steps().size(), 0u);
  feeder.append_until(1.0, 900);
  feeder.look(true);
  const LoadedRun final = analyze(dir / "live");
  ASSERT_EQ(complete_steps(final).size(), 10u);
  expect_same_steps(feeder.steps(), complete_steps(final));
  expect_same_split(feeder.steps(), final);
  EXPECT_TRUE(feeder.notes().empty());  // a block being written is no problem
}

TEST(LiveSources, DygraphRecordsGrowingInPiecesGiveAnalyzesFigures) {
  for (const std::string args : {"--format paddle-dygraph --steps 8 --seed 2",
                                 "--format paddle-dygraph --schedule vpp --chunks 2 --stages 2 "
                                 "--micro-batches 4 --steps 6 --seed 3"}) {
    SCOPED_TRACE(args);
    TempDir dir;
    const std::string from = simulate(dir, args);
    Feeder feeder(from, dir / "live", 9);
    feeder.append_until(0.5, 200);
    EXPECT_GT(feeder.steps().size(), 0u);
    feeder.append_until(1.0, 200);
    feeder.look(true);
    const LoadedRun final = analyze(dir / "live");
    ASSERT_GE(complete_steps(final).size(), 6u);
    expect_same_steps(feeder.steps(), complete_steps(final));
    EXPECT_TRUE(feeder.notes().empty());
  }
}

TEST(LiveSources, DygraphRecordsOfSeveralPipelinesFollowTheChosenOne) {
  TempDir dir;
  const std::string from =
      simulate(dir, "--format paddle-dygraph --devices-per-stage 2 --steps 6 --seed 8");
  for (const int pipeline : {0, 1}) {
    SCOPED_TRACE(pipeline);
    LiveSourceOptions sources;
    sources.ingest.pipeline = pipeline;
    const std::string live = dir / fmt::format("live{}", pipeline);
    Feeder feeder(from, live, 10 + static_cast<std::uint32_t>(pipeline), {}, sources);
    feeder.append_until(1.0, 400);
    feeder.look(true);
    LoadOptions load;
    load.ingest.pipeline = pipeline;
    const LoadedRun final = analyze(live, load);
    ASSERT_EQ(final.run.devices.size(), 4u);
    ASSERT_EQ(complete_steps(final).size(), 6u);
    expect_same_steps(feeder.steps(), complete_steps(final));
    // The other pipeline's four files are named once each.
    ASSERT_EQ(feeder.notes().size(), 4u);
    EXPECT_NE(feeder.notes()[0].find("(several pipelines): the live lines follow "),
              std::string::npos)
        << feeder.notes()[0];
  }
}

TEST(LiveSources, TraceIsReadOnceCompleteAndStable) {
  TempDir dir;
  const std::string from = simulate(dir, "--format torch --steps 6 --seed 4");
  Feeder feeder(from, dir / "live", 5);
  feeder.append_until(0.9, 20000);
  feeder.look(false);
  feeder.look(false);
  EXPECT_TRUE(feeder.steps().empty());  // no trace is a whole document yet
  EXPECT_EQ(feeder.live().jobs_seen(), 0u);
  feeder.append_until(1.0, 20000);
  feeder.look(false);  // unchanged over two looks, complete: read
  feeder.look(true);
  const LoadedRun final = analyze(dir / "live");
  EXPECT_EQ(feeder.live().jobs_seen(), final.run.job_count());
  ASSERT_GE(complete_steps(final).size(), 5u);
  expect_same_steps(feeder.steps(), complete_steps(final));

  // A whole trace that has just landed is read at the next look, once it
  // stayed the same.
  TempDir other;
  other.write("t/rank0.pt.trace.json", read_file(fs::path(from) / "rank0.pt.trace.json"));
  LiveRun live;
  LiveSources sources;
  sources.set_inputs(find_inputs({other / "t"}), live);
  EXPECT_FALSE(sources.look(live).got_any);
  EXPECT_EQ(live.jobs_seen(), 0u);
  EXPECT_TRUE(sources.look(live).got_any);
  EXPECT_EQ(live.jobs_seen(), final.run.devices[0].jobs.size());
  EXPECT_FALSE(sources.look(live).got_any);  // once
}

TEST(LiveSources, StageMapNamingDevicesWaitsForThemThenMatchesAnalyze) {
  TempDir dir;
  const std::string from =
      simulate(dir, "--stages 2 --devices-per-stage 2 --steps 8 --comm --seed 7");
  LiveOptions options;
  options.pipeline.stages = parse_stage_spec("tp=2", "--stages");
  LoadOptions load;
  load.pipeline.stages = parse_stage_spec("tp=2", "--stages");
  const LoadedRun final = analyze(from, load);

  // Device 3's file stays empty for a while: no line until it logs.
  const std::string live_dir = dir / "live";
  fs::create_directories(live_dir);
  for (int d = 0; d < 4; ++d) TempDir::write_to(live_dir + fmt::format("/workerlog.{}", d), "");
  LiveRun live(options);
  LiveSources sources;
  sources.set_inputs(find_inputs({live_dir}), live);
  for (int d = 0; d < 3; ++d) {
    TempDir::write_to(live_dir + fmt::format("/workerlog.{}", d),
                      read_file(fs::path(from) / fmt::format("workerlog.{}", d)));
  }
  while (sources.look(live).more) {
  }
  EXPECT_TRUE(live.take_completed(false).empty());  // 7 complete steps < hold_steps (10)
  TempDir::write_to(live_dir + "/workerlog.3", read_file(fs::path(from) / "workerlog.3"));
  while (sources.look(live).more) {
  }
  std::vector<LiveStep> steps = live.take_completed(false);
  for (LiveStep& step : live.take_completed(true)) steps.push_back(step);
  expect_same_steps(steps, complete_steps(final));
  expect_same_split(steps, final);

  // A device the map names that never logs: after hold_steps complete steps
  // the lines come, provisional, without the split the map would give.
  options.hold_steps = 3;
  TempDir other;
  for (int d = 0; d < 4; ++d) {
    other.write(fmt::format("logs/workerlog.{}", d),
                d == 3 ? "" : read_file(fs::path(from) / fmt::format("workerlog.{}", d)));
  }
  LiveRun waiting(options);
  LiveSources waiting_sources;
  waiting_sources.set_inputs(find_inputs({other / "logs"}), waiting);
  while (waiting_sources.look(waiting).more) {
  }
  steps = waiting.take_completed(false);
  ASSERT_EQ(steps.size(), 7u);
  for (const LiveStep& step : steps) {
    EXPECT_TRUE(step.provisional);
    EXPECT_EQ(step.devices, 3u);
    EXPECT_FALSE(step.inherent_points);
    EXPECT_FALSE(step.most_waited_stage);
  }
}

TEST(IvlFollowImport, BlocksAppendedInPiecesAreTheWholeFilesJobs) {
  TempDir dir;
  simulate(dir, "--steps 4 --seed 1 --ivl " + shell_quote(dir / "ivl"));
  const std::string whole_path = dir / "ivl/workerlog.1.ivl";
  const std::string bytes = read_file(whole_path);
  InputFile input;
  input.path = dir / "growing.ivl";
  input.format = InputFormat::ivl;
  TempDir::write_to(input.path, "");
  IvlFollowImport follow(input);
  std::vector<Job> jobs;
  std::vector<StepStartLine> starts;
  std::size_t written = 0;
  for (std::size_t piece = 5; written < bytes.size(); piece = piece * 7 % 1013 + 1) {
    const std::size_t n = std::min(piece, bytes.size() - written);
    std::FILE* out = std::fopen(input.path.c_str(), "ab");
    std::fwrite(bytes.data() + written, 1, n, out);
    std::fclose(out);
    written += n;
    const FileResult got = follow.read_more();
    EXPECT_TRUE(got.diagnostics.empty()) << got.diagnostics.front().message;
    for (const Job& job : got.device.jobs) jobs.push_back(job);
    for (const StepStartLine& s : got.device.step_starts) starts.push_back(s);
  }
  InputFile whole = input;
  whole.path = whole_path;
  const FileResult all = import_ivl_file(whole);
  ASSERT_EQ(jobs.size(), all.device.jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].start_ns, all.device.jobs[i].start_ns) << i;
    EXPECT_EQ(jobs[i].end_ns, all.device.jobs[i].end_ns) << i;
    EXPECT_EQ(jobs[i].line, all.device.jobs[i].line) << i;
    EXPECT_EQ(jobs[i].job_id, all.device.jobs[i].job_id) << i;
  }
  EXPECT_EQ(starts, all.device.step_starts);
  EXPECT_EQ(follow.offset(), bytes.size());
}

TEST(DygraphFollowReader, AJobWaitsForItsEndRecord) {
  InputFile input;
  input.path = "profile_record_tmp_file_for_rank_1";
  input.format = InputFormat::paddle_dygraph;
  DygraphFollowReader reader(input);
  EXPECT_EQ(reader.stage(), -1);
  const std::string b =
      R"({"name": "F0", "cat": "pipeline timeline", "ph": "B", "pid": 0, "tid": 2, "ts": 1000})"
      "\n";
  const std::string e =
      R"({"name": "F0", "cat": "pipeline timeline", "ph": "E", "pid": 0, "tid": 2, "ts": 1003})"
      "\n";
  FileResult got = reader.lines(b);
  EXPECT_TRUE(got.device.jobs.empty());
  EXPECT_EQ(reader.stage(), 1);
  got = reader.lines(e + "not json\n");
  ASSERT_EQ(got.device.jobs.size(), 1u);
  EXPECT_EQ(got.device.jobs[0].start_ns, 1000 * kDygraphResolutionNs);
  EXPECT_EQ(got.device.jobs[0].end_ns, 1003 * kDygraphResolutionNs);
  EXPECT_EQ(got.device.jobs[0].line, 1u);
  EXPECT_EQ(got.types.name(got.device.jobs[0].type), "forward");
  ASSERT_EQ(got.diagnostics.size(), 1u);
  EXPECT_EQ(got.diagnostics[0].line, 3u);
  EXPECT_EQ(got.diagnostics[0].message,
            fmt::format("byte offset {}: not a JSON object; skipped", b.size() + e.size()));
}

}  // namespace
}  // namespace pipescope
