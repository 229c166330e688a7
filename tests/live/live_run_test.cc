// The live steps of `pipescope watch` (engine/live/live_run.h): runs appended
// to empty files in pieces that cut lines in half and steps in the middle
// report every complete step with the window and bubble ratio `analyze`
// gives it on the finished folder, to the last digit; a rotation and a
// relaunch appended while following; a rank whose file appears late; memory
// bounded by the open steps.
#include "live/live_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "load/load_run.h"
#include "scan/job_line_parser.h"
#include "scan/job_line_regex.h"
#include "support/command_runner.h"
#include "support/live_feeder.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;
using Feeder = testing::LiveFeeder;
using testing::expect_same_steps;

/// `analyze` on the finished folder: its complete steps.
std::vector<StepWindow> complete_steps(const std::string& folder, Metrics* all = nullptr) {
  LoadedRun loaded = load_run(find_inputs({folder}), LoadOptions{});
  if (all) *all = loaded.metrics;
  return testing::complete_steps(loaded);
}

std::string simulate_logs(const TempDir& dir, const std::string& args) {
  const std::string out = dir / "sim";
  const testing::CommandResult r = run_cli("simulate -o " + shell_quote(out) + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
  fs::remove(fs::path(out) / "expected.json");
  return out;
}

TEST(LiveRun, PiecesThatCutLinesAndStepsGiveAnalyzesFigures) {
  for (const std::string args :
       {"--steps 12 --seed 5", "--steps 10 --comm --lr --noise-per-job 3 --seed 9",
        "--schedule vpp --stages 2 --micro-batches 4 --steps 8 --comm --seed 2"}) {
    SCOPED_TRACE(args);
    TempDir dir;
    const std::string from = simulate_logs(dir, args);
    Feeder feeder(from, dir / "live", 11);
    feeder.append_until(0.5);
    const std::size_t halfway = feeder.steps().size();
    EXPECT_GT(halfway, 0u);  // reported while the run was still being written
    feeder.append_until(1.0);
    feeder.look(true);  // idle: the last step too
    expect_same_steps(feeder.steps(), complete_steps(dir / "live"));
  }
}

TEST(LiveRun, AJobLineRegexReadsAnotherFrameworksLinesAsAnalyzeDoes) {
  // The simulated Paddle job lines rewritten into another framework's form,
  // times in integer ns: `[2023-10-20 09:15:07] rank0 forward mb=3 t0=NS t1=NS`.
  TempDir dir;
  const std::string paddle = simulate_logs(dir, "--steps 10 --noise-per-job 2 --seed 4");
  const std::string other = dir / "other";
  fs::create_directories(other);
  for (const InputFile& input : find_inputs({paddle})) {
    std::string text;
    std::string scratch;
    const std::string content = read_file(input.path);
    std::size_t begin = 0;
    while (begin < content.size()) {
      const std::size_t nl = std::min(content.find('\n', begin), content.size());
      const std::string line = content.substr(begin, nl - begin);
      begin = nl + 1;
      JobLine job;
      if (parse_job_line(line, job, scratch) != LineError::none) {
        text += line + "\n";
        continue;
      }
      text += fmt::format("[2023-10-20 09:15:07] rank{} {} mb={} t0={} t1={}\n", input.rank,
                          job.type, job.micro_batch, job.start_ns, job.end_ns);
    }
    TempDir::write_to((fs::path(other) / fs::path(input.path).filename()).string(), text);
  }
  const JobLineRegex regex(
      R"(rank\d+ (?P<type>\w+) mb=(?P<mb>\d+) t0=(?P<start>\d+) t1=(?P<end>\d+))", TimeUnit::ns);
  LiveOptions live;
  live.job_line = &regex;
  Feeder feeder(other, dir / "live", 7, live);
  feeder.append_until(1.0);
  feeder.look(true);
  LoadOptions load;
  load.ingest.job_line = &regex;
  LoadedRun loaded = load_run(find_inputs({dir / "live"}), load);
  const std::vector<StepWindow> expected = testing::complete_steps(loaded);
  EXPECT_EQ(expected.size(), 10u);
  // The Paddle logs' steps, to the ns.
  const std::vector<StepWindow> from_paddle = complete_steps(paddle);
  ASSERT_EQ(expected.size(), from_paddle.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_EQ(expected[k].step, from_paddle[k].step);
    EXPECT_EQ(expected[k].start_ns, from_paddle[k].start_ns);
    EXPECT_EQ(expected[k].end_ns, from_paddle[k].end_ns);
    EXPECT_EQ(expected[k].bubble_ratio, from_paddle[k].bubble_ratio);
  }
  expect_same_steps(feeder.steps(), expected);
}

TEST(LiveRun, SplitOfEachStepIsAnalyzesSplit) {
  TempDir dir;
  const std::string from = simulate_logs(dir, "--steps 6 --comm --seed 4");
  Feeder feeder(from, dir / "live", 3);
  feeder.append_until(1.0, 4000);
  feeder.look(true);
  LoadedRun loaded = load_run(find_inputs({dir / "live"}), LoadOptions{});
  ASSERT_TRUE(loaded.pipeline.split.known);
  ASSERT_EQ(feeder.steps().size(), loaded.metrics.steps.size());
  for (std::size_t k = 0; k < loaded.metrics.steps.size(); ++k) {
    const StepWindow& w = loaded.metrics.steps[k];
    std::int64_t inherent = 0;
    for (const std::int64_t ns : loaded.pipeline.split.inherent[k]) inherent += ns;
    const double points =
        100.0 * static_cast<double>(inherent) /
        (static_cast<double>(loaded.run.devices.size()) * static_cast<double>(w.window_ns()));
    ASSERT_TRUE(feeder.steps()[k].inherent_points);
    EXPECT_EQ(*feeder.steps()[k].inherent_points, points) << "step " << k;
    EXPECT_EQ(*feeder.steps()[k].excess_points, 100.0 * w.bubble_ratio - points);
    EXPECT_TRUE(feeder.steps()[k].most_waited_stage);
  }
}

TEST(LiveRun, RelaunchAppendedWhileFollowing) {
  TempDir dir;
  const std::string from = std::string(PIPESCOPE_TESTDATA) + "/relaunch";
  Feeder feeder(from, dir / "live", 7);
  feeder.append_until(0.4, 90);
  feeder.append_until(1.0, 90);
  feeder.look(true);
  // analyze: 0:10, 0:11 complete; 0:12 cut short by the crash (left out);
  // 1:12, 1:13 complete.
  expect_same_steps(feeder.steps(), complete_steps(dir / "live"));
  // Labels take the SEG:STEP form once a second launch is seen.
  std::vector<std::string> labels;
  for (const LiveStep& step : feeder.steps()) labels.push_back(step.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"10", "11", "1:12", "1:13"}));
  for (const LiveStep& step : feeder.steps()) {
    EXPECT_EQ(step.bubble_ratio, 30.0 / 95);  // EXPECTED.md: 2 * 30 ms idle / (2 * 95 ms)
  }
}

TEST(LiveRun, RotationWhileFollowingKeepsTheSteps) {
  for (const bool replace : {false, true}) {
    SCOPED_TRACE(replace ? "replaced" : "truncated");
    TempDir dir;
    const std::string from = simulate_logs(dir, "--steps 10 --seed 8");
    // The whole run, for the figures; the live folder is rotated halfway.
    const std::vector<StepWindow> final = complete_steps(from);
    Feeder feeder(from, dir / "live", 5);
    feeder.append_until(0.5);
    // Rotate at line ends: finish the current lines first.
    std::vector<std::string> cut;
    for (std::size_t f = 0; f < 4; ++f) {
      const std::string path = (fs::path(dir / "live") / fmt::format("workerlog.{}", f)).string();
      std::string text = read_file(path);
      const std::string all = read_file((fs::path(from) / fmt::format("workerlog.{}", f)).string());
      const std::size_t end = all.find('\n', text.size());
      std::FILE* out = std::fopen(path.c_str(), "ab");
      std::fwrite(all.data() + text.size(), 1, end + 1 - text.size(), out);
      std::fclose(out);
      cut.push_back(all.substr(end + 1));
    }
    feeder.look(false);
    for (std::size_t f = 0; f < 4; ++f) replace ? feeder.replace(f) : feeder.truncate(f);
    feeder.look(false);
    const std::vector<std::string> notes = feeder.live().take_notes();
    ASSERT_EQ(notes.size(), 4u);
    EXPECT_NE(notes[0].find("was truncated or replaced"), std::string::npos) << notes[0];
    for (std::size_t f = 0; f < 4; ++f) {
      const std::string path = (fs::path(dir / "live") / fmt::format("workerlog.{}", f)).string();
      std::FILE* out = std::fopen(path.c_str(), "ab");
      std::fwrite(cut[f].data(), 1, cut[f].size(), out);
      std::fclose(out);
    }
    feeder.look(false);
    feeder.look(true);
    expect_same_steps(feeder.steps(), final);
  }
}

TEST(LiveRun, RankWhoseFileAppearsLate) {
  TempDir dir;
  const std::string from = simulate_logs(dir, "--steps 10 --seed 6");
  fs::rename(fs::path(from) / "workerlog.3", dir / "held");
  // Devices 0-2 only: steps complete without device 3.
  const std::string live_dir = dir / "live";
  LiveRun live;
  fs::create_directories(live_dir);
  for (int d = 0; d < 3; ++d) {
    fs::copy_file(fs::path(from) / fmt::format("workerlog.{}", d),
                  fs::path(live_dir) / fmt::format("workerlog.{}", d));
  }
  live.set_inputs(find_inputs({live_dir}));
  for (int d = 0; d < 3; ++d) {
    const std::string path = (fs::path(live_dir) / fmt::format("workerlog.{}", d)).string();
    live.add_lines(path, read_file(path));
  }
  const std::vector<LiveStep> before = live.take_completed(false);
  ASSERT_EQ(before.size(), 9u);  // steps 0-8; 9 is the last, still open
  EXPECT_EQ(before[0].devices, 3u);
  // Device 3's file appears, with every job of the run.
  fs::copy_file(dir / "held", fs::path(live_dir) / "workerlog.3");
  live.set_inputs(find_inputs({live_dir}));
  live.add_lines((fs::path(live_dir) / "workerlog.3").string(), read_file(dir / "held"));
  const std::vector<std::string> notes = live.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("device 3"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("after 9 steps had been reported"), std::string::npos) << notes[0];
  const std::vector<LiveStep> after = live.take_completed(true);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].step, 9);
  EXPECT_EQ(after[0].devices, 4u);
  const std::vector<StepWindow> final = complete_steps(live_dir);
  ASSERT_EQ(final.size(), 10u);
  EXPECT_EQ(after[0].start_ns, final[9].start_ns);
  EXPECT_EQ(after[0].end_ns, final[9].end_ns);
  EXPECT_EQ(after[0].bubble_ratio, final[9].bubble_ratio);
}

TEST(LiveRun, ProvisionalWhileAnInputHasNoJobOrMachinesAreSeveral) {
  TempDir dir;
  // Two devices on two machines: the final pass may correct their clocks.
  const std::string from = simulate_logs(dir, "--steps 4 --stages 2 --machines 2 --seed 1");
  Feeder feeder(from, dir / "live", 2);
  feeder.append_until(1.0, 5000);
  feeder.look(true);
  ASSERT_EQ(feeder.steps().size(), 4u);
  for (const LiveStep& step : feeder.steps()) EXPECT_TRUE(step.provisional);

  // One machine, one input still empty: D may grow.
  TempDir one;
  const std::string a = one.write("logs/workerlog.0", testing::wild_log(40));
  one.write("logs/workerlog.1", "");
  LiveRun live;
  live.set_inputs(find_inputs({one / "logs"}));
  live.add_lines(a, read_file(a));
  const std::vector<LiveStep> steps = live.take_completed(false);
  ASSERT_FALSE(steps.empty());
  EXPECT_TRUE(steps[0].provisional);
}

/// One device's log of `steps` steps of F0 F1 B0 B1 (2 ms each), lines in
/// time order; device 1 runs 1 ms after device 0, so each step's window is
/// 9 ms with 1 ms idle per device: ratio 2/18.
std::string two_by_two_log(int device, int first, int steps) {
  std::string log;
  for (int k = first; k < first + steps; ++k) {
    const std::int64_t t = 1'000'000 + 100 * k + device;
    log += testing::wild_job_line(0, 0, t, t + 2, "forward");
    log += testing::wild_job_line(1, 1, t + 2, t + 4, "forward");
    log += testing::wild_job_line(2, 0, t + 4, t + 6, "backward");
    log += testing::wild_job_line(3, 1, t + 6, t + 8, "backward");
  }
  return log;
}

TEST(LiveRun, MemoryFollowsTheOpenStepsNotTheRun) {
  TempDir dir;
  const std::string a = dir.write("logs/workerlog.0", "");
  const std::string b = dir.write("logs/workerlog.1", "");
  LiveRun live;
  live.set_inputs(find_inputs({dir / "logs"}));
  std::size_t most = 0;
  for (int k = 0; k < 10'000; k += 50) {
    live.add_lines(a, two_by_two_log(0, k, 50));
    live.add_lines(b, two_by_two_log(1, k, 50));
    const std::vector<LiveStep> steps = live.take_completed(false);
    ASSERT_EQ(steps.size(), k == 0 ? 49u : 50u);  // the last step waits for the next
    EXPECT_EQ(steps.back().step, k + 48);
    EXPECT_EQ(steps.back().bubble_ratio, 2.0 / 18);
    most = std::max(most, live.jobs_kept());
  }
  // The context step and the open one, after each look: 2 devices x 2 x 4 jobs.
  EXPECT_EQ(live.jobs_kept(), 16u);
  EXPECT_LE(most, 16u);
  EXPECT_EQ(live.jobs_seen(), 80'000u);
  EXPECT_EQ(live.steps_reported(), 9'999u);
}

TEST(LiveRun, HoldsStepsWhileAnInputHasNoJobYet) {
  TempDir dir;
  const std::string a = dir.write("logs/workerlog.0", "");
  const std::string b = dir.write("logs/workerlog.1", "");
  LiveOptions options;
  options.hold_steps = 10;
  LiveRun live(options);
  live.set_inputs(find_inputs({dir / "logs"}));
  // 9 steps, all complete by the contract (the last holds as many jobs of
  // each kind as the one before): fewer than hold_steps, held.
  live.add_lines(a, two_by_two_log(0, 0, 9));
  EXPECT_TRUE(live.take_completed(false).empty());
  live.add_lines(b, two_by_two_log(1, 0, 3));  // device 1's first lines land
  std::vector<LiveStep> steps = live.take_completed(false);
  ASSERT_EQ(steps.size(), 2u);  // steps 0 and 1, with both devices
  EXPECT_EQ(steps[1].devices, 2u);
  EXPECT_EQ(steps[1].bubble_ratio, 2.0 / 18);
  EXPECT_FALSE(steps[1].provisional);

  // A rank that never logs: after hold_steps complete steps, reported
  // without it, provisional.
  TempDir other;
  const std::string c = other.write("logs/workerlog.0", "");
  other.write("logs/workerlog.1", "");
  LiveRun alone(options);
  alone.set_inputs(find_inputs({other / "logs"}));
  alone.add_lines(c, two_by_two_log(0, 0, 11));
  steps = alone.take_completed(false);
  ASSERT_EQ(steps.size(), 10u);
  EXPECT_EQ(steps[0].devices, 1u);
  EXPECT_TRUE(steps[0].provisional);
}

TEST(LiveRun, ARankWhoseLogFillsLateIsNeverCountedIdle) {
  // Device 1's file exists, empty; it fills late, from its first line on,
  // and stays behind the others until the end: a step it has not logged is
  // reported without it, provisional and never beyond the spread; the steps
  // it has logged are final, with both devices.
  TempDir dir;
  const std::string a = dir.write("logs/workerlog.0", "");
  const std::string b = dir.write("logs/workerlog.1", "");
  LiveOptions options;
  options.hold_steps = 10;
  options.spread_min_steps = 3;
  LiveRun live(options);
  live.set_inputs(find_inputs({dir / "logs"}));
  // Device 0 alone: held for 10 complete steps, then reported without 1.
  live.add_lines(a, two_by_two_log(0, 0, 12));
  std::vector<LiveStep> steps = live.take_completed(false);
  ASSERT_EQ(steps.size(), 11u);
  for (const LiveStep& step : steps) {
    EXPECT_TRUE(step.provisional) << step.step;
    EXPECT_EQ(step.unwritten, std::vector<int>{1}) << step.step;
    EXPECT_FALSE(step.beyond_spread) << step.step;
    EXPECT_EQ(step.devices, 1u);
    EXPECT_EQ(step.bubble_ratio, 0.0);  // device 0's 8 ms fill its own 8 ms window
  }
  // Device 1's first 6 steps land (all of steps already reported), device 0
  // goes on: 1 is still behind, counted nowhere rather than idle.
  live.add_lines(b, two_by_two_log(1, 0, 6));
  live.add_lines(a, two_by_two_log(0, 12, 4));
  EXPECT_EQ(live.take_notes().size(), 1u);  // it logged its first job after steps were reported
  steps = live.take_completed(false);
  ASSERT_EQ(steps.size(), 4u);
  for (const LiveStep& step : steps) {
    EXPECT_EQ(step.unwritten, std::vector<int>{1}) << step.step;
    EXPECT_TRUE(step.provisional) << step.step;
    EXPECT_FALSE(step.beyond_spread) << step.step;
    EXPECT_EQ(step.bubble_ratio, 0.0) << step.step;  // not 50%: device 1 is not idle
  }
  EXPECT_EQ(steps.back().step, 14);
  // Device 1 catches up with the others (its steps 6-15 land): from the step
  // both have logged on, final figures, with both devices.
  live.add_lines(b, two_by_two_log(1, 6, 10));
  const std::vector<std::string> notes = live.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("device 1 (" + b + ") lags behind the others"), std::string::npos)
      << notes[0];
  live.add_lines(a, two_by_two_log(0, 16, 3));
  live.add_lines(b, two_by_two_log(1, 16, 3));
  steps = live.take_completed(true);
  ASSERT_EQ(steps.size(), 4u);  // 15-18, the last one at the end
  for (const LiveStep& step : steps) {
    EXPECT_FALSE(step.provisional) << step.step;
    EXPECT_TRUE(step.unwritten.empty()) << step.step;
    EXPECT_EQ(step.devices, 2u);
    EXPECT_EQ(step.bubble_ratio, 2.0 / 18) << step.step;
    EXPECT_FALSE(step.beyond_spread) << step.step;
  }
  EXPECT_EQ(steps.back().step, 18);
}

TEST(LiveRun, SaysSoWhenAJobLineLandsAfterItsStepWasReported) {
  TempDir dir;
  const std::string a = dir.write("logs/workerlog.0", "");
  const std::string b = dir.write("logs/workerlog.1", "");
  LiveRun live;
  live.set_inputs(find_inputs({dir / "logs"}));
  live.add_lines(a, two_by_two_log(0, 0, 5));
  live.add_lines(b, two_by_two_log(1, 0, 5));
  ASSERT_EQ(live.take_completed(false).size(), 4u);
  EXPECT_TRUE(live.take_notes().empty());
  // A send of step 1 (starting at 1'000'100 ms + 5) logged only now.
  live.add_lines(a, testing::wild_job_line(9, 0, 1'000'105, 1'000'106, "send_forward"));
  const std::vector<std::string> notes = live.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], a + ": 1 job line arrived after its step was reported; the live figures of "
                          "that step differ from the final summary's");
}

TEST(LiveRun, BeyondTheRecentSpread) {
  LiveOptions options;
  options.spread_min_steps = 3;
  LiveRun live(options);
  TempDir dir;
  const std::string a = dir.write("logs/workerlog.0", "");
  live.set_inputs(find_inputs({dir / "logs"}));
  // Steps of one device: F0 B0 with a gap before B0 of 1 ms, except step 5: 10 ms.
  std::string log;
  for (int k = 0; k < 8; ++k) {
    const std::int64_t t = 1'000'000 + 100 * k;
    const std::int64_t gap = k == 5 ? 10 : 1;
    log += testing::wild_job_line(0, 0, t, t + 4, "forward");
    log += testing::wild_job_line(1, 0, t + 4 + gap, t + 8 + gap, "backward");
  }
  live.add_lines(a, log);
  const std::vector<LiveStep> steps = live.take_completed(false);
  ASSERT_EQ(steps.size(), 7u);
  for (const LiveStep& step : steps) {
    EXPECT_EQ(step.beyond_spread, step.step == 5) << step.step;
    EXPECT_EQ(step.bubble_ratio, step.step == 5 ? 10.0 / 18 : 1.0 / 9) << step.step;
  }
}

}  // namespace
}  // namespace pipescope
