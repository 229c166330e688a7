// A rank that is missing, unreadable or empty (load/input_rules.h, docs/guide.md
// "Missing, unreadable and empty ranks"): each on its own small run, with the
// exact figures or the exact finding, through load_run and end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "compare/check.h"
#include "compare/check_report.h"
#include "compare/run_loader.h"
#include "load/load_run.h"
#include "model/option_words.h"
#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;

constexpr std::int64_t kBase = 1697793307000;  // ms

/// One job line; times in ms after kBase.
std::string job(int id, const char* type, int mb, int start_ms, int end_ms) {
  return fmt::format(
      "I1020 09:15:07.216000 22317 standalone_executor.cc:217] Profiler Info: Job ({}), type = "
      "{}, micro_batch_id = {}, job_start_time = {}.000000, job_end_time = {}.000000\n",
      id, type, mb, kBase + start_ms, kBase + end_ms);
}

/// Two devices with one step: device 0 busy 20 of [0, 30) ms, device 1 busy
/// 25: bubble ratio (10 + 5) / (2 · 30) = 0.25.
void write_two_devices(const TempDir& dir, const std::string& folder) {
  dir.write(folder + "/workerlog.0", job(0, "forward", 0, 0, 10) + job(1, "backward", 0, 10, 20));
  dir.write(folder + "/workerlog.1", job(0, "forward", 0, 5, 15) + job(1, "backward", 0, 15, 30));
}

std::vector<std::string> codes(const std::vector<Warning>& warnings) {
  std::vector<std::string> out;
  for (const Warning& w : warnings) out.emplace_back(warning_name(w.code));
  return out;
}

TEST(InputRules, EmptyInputIsLeftOutOfDNotCountedAsAnIdleDevice) {
  TempDir dir;
  write_two_devices(dir, "logs");
  dir.write("logs/workerlog.2", "");                         // an empty file
  dir.write("logs/workerlog.3", "I1020 started, no job\n");  // a rank that never ran a job
  const LoadedRun loaded = load_run(find_inputs({dir / "logs"}), {});
  ASSERT_EQ(loaded.run.devices.size(), 2u);
  EXPECT_EQ(loaded.metrics.bubble_ratio, 0.25);  // 15 / 60; with them counted it was 75 / 120
  EXPECT_EQ(loaded.metrics.total_window_ns, 30'000'000);
  ASSERT_EQ(loaded.run.left_out.size(), 2u);
  EXPECT_EQ(loaded.run.left_out[0].device, 2);
  EXPECT_EQ(loaded.run.left_out[0].rank, 2);
  EXPECT_EQ(loaded.run.left_out[0].reason, "empty_input");
  EXPECT_EQ(loaded.run.left_out[1].device, 3);
  EXPECT_EQ(loaded.run.left_out[1].path, dir / "logs/workerlog.3");
  EXPECT_EQ(loaded.run.inputs.size(), 4u);  // inputs keep their stats
  EXPECT_EQ(loaded.run.inputs[3].lines, 1u);
  EXPECT_EQ(codes(loaded.input_warnings), (std::vector<std::string>{"empty_input", "empty_input"}));
  EXPECT_EQ(loaded.input_warnings[0].device, 2);
  EXPECT_NE(loaded.input_warnings[0].message.find(dir / "logs/workerlog.2"), std::string::npos);
  // The analysis's warnings begin with them (summary.json, stderr).
  ASSERT_GE(loaded.pipeline.warnings.size(), 2u);
  EXPECT_EQ(loaded.pipeline.warnings[0].code, WarningCode::empty_input);
}

TEST(InputRules, UnreadableInputIsAnInputErrorNamingTheFile) {
  TempDir dir;
  write_two_devices(dir, "logs");
  fs::create_symlink("gone/file", dir / "logs/workerlog.2");  // listed, cannot be opened
  const std::vector<InputFile> inputs = find_inputs({dir / "logs"});
  ASSERT_EQ(inputs.size(), 3u);
  try {
    LoadOptions options;
    auto words = std::make_shared<OptionWords>();
    words->set_advice(CallerOption::allow_missing, "say how");
    options.inputs.words = words;
    (void)load_run(inputs, options);
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find("cannot read an input file\n  " + dir / "logs/workerlog.2" + ": cannot open"),
        std::string::npos)
        << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
    EXPECT_NE(what.find("; say how"), std::string::npos) << what;
  }
  // Allowed: a loud warning, and the device is left out of D.
  LoadOptions allow;
  allow.inputs.allow_unreadable = true;
  const LoadedRun loaded = load_run(inputs, allow);
  EXPECT_EQ(loaded.run.devices.size(), 2u);
  EXPECT_EQ(loaded.metrics.bubble_ratio, 0.25);
  ASSERT_EQ(loaded.run.left_out.size(), 1u);
  EXPECT_EQ(loaded.run.left_out[0].reason, "unreadable_input");
  EXPECT_EQ(codes(loaded.input_warnings), std::vector<std::string>{"unreadable_input"});
  EXPECT_NE(loaded.input_warnings[0].message.find("LEFT OUT"), std::string::npos);
  EXPECT_NE(loaded.input_warnings[0].message.find("cover 2 of 3 devices"), std::string::npos)
      << loaded.input_warnings[0].message;
  EXPECT_TRUE(loaded.run.inputs[2].unreadable);
}

TEST(InputRules, DamagedCompressedDataIsNotUnreadable) {
  // A gzip stream cut short keeps what was decoded (and says where it broke):
  // damaged content, not an I/O error.
  TempDir dir;
  write_two_devices(dir, "logs");
  dir.write("logs/workerlog.2.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8));
  const LoadedRun loaded = load_run(find_inputs({dir / "logs"}), {});
  EXPECT_FALSE(loaded.run.inputs[2].unreadable);
  EXPECT_FALSE(loaded.run.inputs[2].error.empty());
  ASSERT_EQ(loaded.run.left_out.size(), 1u);
  EXPECT_EQ(loaded.run.left_out[0].reason, "empty_input");
}

TEST(InputRules, RankGapAndUnevenMachinesAreNamed) {
  TempDir dir;
  // Each machine's files differ (the same bytes on two machines are a copy).
  const auto one = [](int machine) {
    return job(0, "forward", 0, machine, 10 + machine) +
           job(1, "backward", 0, 10 + machine, 20 + machine);
  };
  for (int rank : {0, 1, 3}) dir.write(fmt::format("logs/machine0/workerlog.{}", rank), one(0));
  for (int rank : {0, 1, 2, 3}) dir.write(fmt::format("logs/machine1/workerlog.{}", rank), one(1));
  for (int rank : {0, 1, 2, 3}) dir.write(fmt::format("logs/machine2/workerlog.{}", rank), one(2));
  const LoadedRun loaded = load_run(find_inputs({dir / "logs"}), {});
  ASSERT_EQ(codes(loaded.input_warnings), (std::vector<std::string>{"rank_gap", "uneven_ranks"}));
  const Warning& gap = loaded.input_warnings[0];
  EXPECT_EQ(gap.message,
            fmt::format("machine0 ({}): no input for rank 2 (ranks found: 0, 1, 3); a log not "
                        "copied, or a rank that never started?",
                        dir / "logs/machine0"));
  EXPECT_EQ(gap.count, 1u);
  const Warning& uneven = loaded.input_warnings[1];
  EXPECT_EQ(uneven.message,
            fmt::format("machine0 ({}) has 3 ranks, 2 of the run's 3 machines have 4",
                        dir / "logs/machine0"));
  EXPECT_EQ(uneven.count, 1u);
  EXPECT_EQ(loaded.run.devices.size(), 11u);  // warnings only: every device is analysed

  // A --devices selection leaves gaps on purpose: not checked.
  LoadOptions selected;
  selected.inputs.check_layout = false;
  EXPECT_TRUE(load_run(find_inputs({dir / "logs"}, "0,2"), selected).input_warnings.empty());
}

TEST(InputRules, CopiedMachineFolderIsRefusedNamingBoth) {
  TempDir dir;
  const std::string jobs = job(0, "forward", 0, 0, 10) + job(1, "backward", 0, 10, 20);
  const std::string other = job(0, "forward", 0, 1, 11) + job(1, "backward", 0, 11, 21);
  dir.write("logs/machine0/workerlog.0", jobs);
  dir.write("logs/machine1/workerlog.0", other);
  // Identical jobs in files that differ (another thread id): not a copy.
  dir.write("logs/machine2/workerlog.0", "I1020 09:15:07.000000 999 x.cc:1] noise\n" + jobs);
  EXPECT_NO_THROW(load_run(find_inputs({dir / "logs"}), {}));
  // The same bytes on another machine: a backup copy, refused naming both.
  dir.write("logs/machine0.bak/workerlog.0", jobs);
  try {
    load_run(find_inputs({dir / "logs"}), {});
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir / "logs/machine0/workerlog.0"), std::string::npos) << what;
    EXPECT_NE(what.find(dir / "logs/machine0.bak/workerlog.0"), std::string::npos) << what;
    EXPECT_NE(what.find("are the same file"), std::string::npos) << what;
  }
}

TEST(InputRules, TwoRunsAtDifferentTimesAreRefusedNamingBoth) {
  TempDir dir;
  // Times in ms since the epoch: the older run ends an hour before the other.
  const auto run = [](int t) {
    return job(0, "forward", 0, t, t + 10) + job(1, "backward", 0, t + 10, t + 20);
  };
  dir.write("logs/machine0/workerlog.0", run(3'600'000));
  dir.write("logs/machine1/workerlog.0", run(3'600'005));
  dir.write("logs/previous/workerlog.0", run(0));
  try {
    load_run(find_inputs({dir / "logs"}), {});
    ADD_FAILURE() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("two runs"), std::string::npos) << what;
    EXPECT_NE(what.find(dir / "logs/previous"), std::string::npos) << what;
    EXPECT_NE(what.find(dir / "logs/machine1"), std::string::npos) << what;
  }
  // A gap under a minute is one run (a device that started late would overlap).
  dir.write("logs/previous/workerlog.0", run(3'550'000));
  EXPECT_NO_THROW(load_run(find_inputs({dir / "logs"}), {}));
}

TEST(InputRules, ShortDeviceIsNamed) {
  // Four devices, two steps each: F0 F1 B0 B1 optimizer per step (5 compute
  // jobs), device 2 only F0 and optimizer (2 per step < 5 / 2).
  TempDir dir;
  for (int d = 0; d < 4; ++d) {
    std::string log;
    for (int step = 0; step < 2; ++step) {
      const int t = step * 100 + d;
      log += job(0, "forward", 0, t, t + 10);
      if (d != 2) {
        log += job(1, "forward", 1, t + 10, t + 20) + job(2, "backward", 0, t + 20, t + 30) +
               job(3, "backward", 1, t + 30, t + 40);
      }
      log += job(4, "optimizer", 0, t + 40, t + 45);
    }
    dir.write(fmt::format("logs/workerlog.{}", d), log);
  }
  const LoadedRun loaded = load_run(find_inputs({dir / "logs"}), {});
  ASSERT_EQ(codes(loaded.input_warnings), std::vector<std::string>{"short_device"});
  const Warning& w = loaded.input_warnings[0];
  EXPECT_EQ(w.device, 2);
  EXPECT_EQ(w.count, 4u);
  EXPECT_EQ(w.message,
            fmt::format("device 2 ({}): 2.0 forward/backward/optimizer jobs per step, its peers "
                        "(the other devices) 5.0 (a log that lost lines, or a rank that logs only "
                        "part of its jobs?)",
                        dir / "logs/workerlog.2"));
}

TEST(InputRules, CheckRefusesRunsWithInputWarningsOrAnotherShape) {
  RunFigures base;
  base.source = "base";
  base.devices.resize(4);
  base.schedule = ScheduleFigures{"1F1B", true, 4, 8, 1, 2, 2, 0, 0, 0, 0, 0, 0, "1f1b", ""};
  RunFigures cur = base;
  cur.source = "cur";
  EXPECT_TRUE(comparability_problems(base, cur).empty());
  cur.devices.resize(3);
  cur.schedule->stages = 3;
  cur.schedule->micro_batches = 6;
  cur.warnings =
      std::vector<WarningFigures>{{"empty_input", "logs/workerlog.3 holds no job", 3, -1, 0},
                                  {"overlap", "not an input warning", 0, -1, 1}};
  EXPECT_EQ(comparability_problems(base, cur),
            (std::vector<std::string>{
                "current cur: input warning empty_input: logs/workerlog.3 holds no job",
                "device count differs: baseline 4, current 3",
                "stage count (P) differs: baseline 4, current 3",
                "micro-batch count (M) differs: baseline 8, current 6"}));
}

TEST(InputRules, CheckEndToEndRefusesWithTheReasonInEveryReport) {
  TempDir dir;
  write_two_devices(dir, "base");
  write_two_devices(dir, "cur");
  dir.write("cur/workerlog.2", "");
  const std::string common = " --max-bubble-ratio 0.5 --markdown " + shell_quote(dir / "r.md") +
                             " --junit " + shell_quote(dir / "j.xml");
  const auto refused =
      run_cli("check " + shell_quote(dir / "cur") + " -b " + shell_quote(dir / "base") + common);
  EXPECT_EQ(refused.status, 2) << refused.output;
  const std::string reason =
      "input warning empty_input: " + dir / "cur/workerlog.2" + " holds no job";
  EXPECT_NE(refused.output.find("pipescope check: REFUSED"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("not comparable: current " + dir / "cur" + ": " + reason),
            std::string::npos)
      << refused.output;
  EXPECT_NE(testing::read_file(dir / "r.md").find("⛔ refused"), std::string::npos);
  EXPECT_NE(testing::read_file(dir / "r.md").find(reason), std::string::npos);
  const std::string junit = testing::read_file(dir / "j.xml");
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\" errors=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("name=\"comparable-inputs\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("type=\"refused\""), std::string::npos) << junit;

  const auto allowed = run_cli("check " + shell_quote(dir / "cur") + " -b " +
                               shell_quote(dir / "base") + common + " --allow-input-warnings");
  EXPECT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("note: compared anyway: current"), std::string::npos)
      << allowed.output;
  EXPECT_NE(testing::read_file(dir / "j.xml").find("errors=\"0\""), std::string::npos);
}

TEST(InputRules, AnalyzeEndToEnd) {
  TempDir dir;
  write_two_devices(dir, "logs");
  dir.write("logs/workerlog.2", "");
  fs::create_symlink("gone/file", dir / "logs/workerlog.3");
  const std::string out = dir / "out";
  // Unreadable: exit 2 naming the file, nothing written.
  const auto refused =
      run_cli("analyze " + shell_quote(dir / "logs") + " -q -o " + shell_quote(out));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find(dir / "logs/workerlog.3"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--allow-missing"), std::string::npos) << refused.output;
  EXPECT_FALSE(fs::exists(out));
  // convert follows the same rule.
  const auto convert =
      run_cli("convert " + shell_quote(dir / "logs") + " -o " + shell_quote(dir / "ivl"));
  EXPECT_EQ(convert.status, 2) << convert.output;
  EXPECT_FALSE(fs::exists(dir / "ivl"));

  const auto allowed = run_cli("analyze " + shell_quote(dir / "logs") + " -q --allow-missing -o " +
                               shell_quote(out));
  ASSERT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("pipescope: warning: could not read " + dir / "logs/workerlog.3"),
            std::string::npos)
      << allowed.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out + "/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(double(summary["bubble_ratio"]), 0.25);
  EXPECT_EQ(simdjson::dom::array(summary["devices"]).size(), 2u);
  EXPECT_EQ(simdjson::dom::array(summary["inputs"]).size(), 4u);
  simdjson::dom::array left_out = summary["left_out"];
  ASSERT_EQ(left_out.size(), 2u);
  EXPECT_EQ(int64_t(left_out.at(0)["device"]), 2);
  EXPECT_EQ(std::string_view(left_out.at(0)["reason"]), "empty_input");
  EXPECT_EQ(int64_t(left_out.at(1)["device"]), 3);
  EXPECT_EQ(std::string_view(left_out.at(1)["reason"]), "unreadable_input");
  simdjson::dom::array warnings = summary["warnings"];
  ASSERT_GE(warnings.size(), 2u);
  EXPECT_EQ(std::string_view(warnings.at(0)["code"]), "empty_input");
  EXPECT_EQ(std::string_view(warnings.at(1)["code"]), "unreadable_input");
  // check refuses the summary as it refuses the logs.
  const auto check =
      run_cli("check " + shell_quote(out) + " -b " + shell_quote(out) + " --max-bubble-ratio 100%");
  EXPECT_EQ(check.status, 2) << check.output;
  EXPECT_NE(check.output.find("input warning unreadable_input"), std::string::npos) << check.output;
}

}  // namespace
}  // namespace pipescope
