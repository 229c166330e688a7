// End-to-end tests of the `pipescope analyze` command line: exit statuses,
// files written, JSON that parses, counts that match the bundled samples.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;
using testing::shell_quote;
using testing::TempDir;
namespace fs = std::filesystem;

std::string sample(const char* name) { return std::string(PIPESCOPE_TESTDATA) + "/" + name; }

TEST(Cli, AnalyzeWritesSummaryAndTrace) {
  TempDir out;
  const CommandResult r = run_cli("analyze " + sample("multi") + " -o " + shell_quote(out / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Bubble ratio"), std::string::npos) << r.output;

  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out / "o/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(summary["schema"]), "pipescope.summary/1");
  EXPECT_EQ(int64_t(summary["jobs"]), 77);
  EXPECT_EQ(simdjson::dom::array(summary["devices"]).size(), 4u);
  EXPECT_EQ(simdjson::dom::array(summary["steps"]).size(), 2u);
  EXPECT_EQ(simdjson::dom::array(summary["inputs"]).size(), 4u);

  simdjson::dom::parser trace_parser;
  simdjson::dom::element trace;
  ASSERT_EQ(trace_parser.load(out / "o/trace.json").get(trace), simdjson::SUCCESS);
  std::size_t jobs = 0, steps = 0;
  for (simdjson::dom::element event : simdjson::dom::array(trace["traceEvents"])) {
    if (std::string_view(event["ph"]) != "X") continue;
    if (std::string_view(event["cat"]) == "step") {
      ++steps;
    } else if (std::string_view(event["cat"]) != "bubble") {  // bubble lanes (pipeline analysis)
      ++jobs;
    }
  }
  EXPECT_EQ(jobs, 77u);
  EXPECT_EQ(steps, 2u);
  // No temp files left beside the outputs.
  for (const auto& entry : fs::directory_iterator(out.path() / "o")) {
    EXPECT_TRUE(entry.path().filename() == "summary.json" ||
                entry.path().filename() == "trace.json")
        << entry.path();
  }
}

// The text report's "Log events" line: counts by category, or why none was
// looked for; --patterns adds an entry that finds a line the library does not.
TEST(Cli, TheReportSaysWhatLogEventsWereFound) {
  TempDir out;
  CommandResult r =
      run_cli("analyze " + sample("multi") + " --no-trace -o " + shell_quote(out / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  if (r.output.find("Log events: off") != std::string::npos)
    GTEST_SKIP() << "built without Hyperscan";
  EXPECT_NE(r.output.find("Log events: 4 (distributed 4)"), std::string::npos) << r.output;
  r = run_cli("analyze " + sample("multi") + " --no-trace --no-events -o " +
              shell_quote(out / "b"));
  EXPECT_NE(r.output.find("Log events: off (--no-events)"), std::string::npos) << r.output;
  out.write("mine.patterns",
            "[distributed_strategy]\ncategory = distributed\nseverity = info\n"
            "regex = distributed strategy initialized\n");
  r = run_cli("analyze " + sample("multi") + " --no-trace --patterns " +
              shell_quote(out / "mine.patterns") + " -o " + shell_quote(out / "c"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("Log events: 8 (distributed 8)"), std::string::npos) << r.output;
  out.write("bad.patterns", "[bad]\ncategory = x\nseverity = info\nregex = (a)\\1\n");
  r = run_cli("analyze " + sample("multi") + " --no-trace --patterns " +
              shell_quote(out / "bad.patterns") + " -o " + shell_quote(out / "d"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("[bad]"), std::string::npos) << r.output;
}

// An entry whose regex requires no literal (nothing a literal search could
// look for) turns the literal first pass off: every line is read, and the
// entry finds the lines the literal one above finds.
TEST(Cli, APatternWithoutALiteralIsFoundByReadingEveryLine) {
  TempDir out;
  out.write("bare.patterns",
            "[distributed_strategy]\ncategory = distributed\nseverity = info\n"
            "regex = - [a-z]{11} [a-z]{8} [a-z]{11}$\n");
  const CommandResult r =
      run_cli("analyze " + sample("multi") + " --no-trace --patterns " +
              shell_quote(out / "bare.patterns") + " -o " + shell_quote(out / "a"));
  ASSERT_EQ(r.status, 0) << r.output;
  if (r.output.find("Log events: off") != std::string::npos)
    GTEST_SKIP() << "built without Hyperscan";
  EXPECT_NE(r.output.find("Log events: 8 (distributed 8)"), std::string::npos) << r.output;
}

TEST(Cli, StrictTurnsSkippedLinesIntoStatusOne) {
  TempDir out;
  EXPECT_EQ(run_cli("analyze " + sample("single") + " -q -o " + shell_quote(out / "a")).status, 0);
  const CommandResult strict =
      run_cli("analyze " + sample("single") + " -q --strict -o " + shell_quote(out / "b"));
  EXPECT_EQ(strict.status, 1) << strict.output;
  EXPECT_NE(strict.output.find("--strict"), std::string::npos) << strict.output;
  // Malformed lines are reported as file:line: reason.
  const CommandResult report =
      run_cli("analyze " + sample("edge") + " -o " + shell_quote(out / "c"));
  EXPECT_NE(report.output.find("edge/workerlog.0:4: job_start_time is not a millisecond timestamp"),
            std::string::npos)
      << report.output;
}

TEST(Cli, UsageAndInputErrorsAreStatusTwo) {
  TempDir dir;
  dir.write("plain/notes.txt", "no logs here\n");
  dir.write("nojobs/workerlog.0", "I1020 09:15:07.265326 1 x.cc:1] hello\n");
  // A profiler trace without a job label or a GPU activity: what was looked
  // for in traces is said (the input's format, not its name, tells).
  dir.write(
      "cpuonly/trace_of_rank0.json",
      R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm",)"
      R"( "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}], "baseTimeNanoseconds": 1000})");
  const std::pair<std::string, std::string> cases[] = {
      {"", "subcommand"},
      {"analyze", "paths"},
      {"analyze --bogus-flag " + sample("multi"), "bogus"},
      {"analyze " + shell_quote(dir / "missing"), "No such file"},
      {"analyze " + shell_quote(dir / "plain"), "workerlog.N"},
      {"analyze " + shell_quote(dir / "nojobs") + " -o " + shell_quote(dir / "o"),
       "nothing to analyse"},
      {"analyze " + shell_quote(dir / "cpuonly/trace_of_rank0.json") + " -o " +
           shell_quote(dir / "o"),
       "in profiler traces, for user annotations named 'PP:<action>'"},
      {"analyze " + sample("multi") + " --devices 9 -o " + shell_quote(dir / "o"), "no device 9"},
      {"analyze " + sample("multi") + " --devices x -o " + shell_quote(dir / "o"),
       "bad device list"},
      {"analyze " + sample("multi") + " -o " + sample("multi/out"), "inside input folder"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(sample("multi/out")));
  EXPECT_FALSE(fs::exists(dir / "o/summary.json"));
}

TEST(Cli, AHundredMegabyteLineWithoutNewlineIsSkippedNotFatal) {
  TempDir dir;
  const std::string job =
      "Profiler Info: Job (0), type = forward, micro_batch_id = 0, job_start_time = "
      "1697793307213.5, job_end_time = 1697793307214.5\n";
  std::string log = job;
  log.append(std::size_t{100} << 20, 'x');  // 100 MB, no newline: the file's last line
  dir.write("logs/workerlog.0", log);
  // A 3 MB job line (garbage after the literal) fits in one read chunk: it is
  // still refused by the line limit, not parsed.
  dir.write("logs/workerlog.1",
            job + "Profiler Info: Job" + std::string(std::size_t{3} << 20, '\xff') + "\n" + job);
  const CommandResult r =
      run_cli("analyze " + shell_quote(dir / "logs") + " -o " + shell_quote(dir / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("workerlog.0:2: line of 104857600 bytes at byte offset " +
                          std::to_string(job.size())),
            std::string::npos)
      << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(dir / "o/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(summary["jobs"]), 3);
  EXPECT_EQ(int64_t(summary["inputs"].at(0)["oversized"]), 1);
  EXPECT_EQ(int64_t(summary["inputs"].at(1)["oversized"]), 1);
  EXPECT_EQ(int64_t(summary["inputs"].at(1)["lines"]), 3);
  EXPECT_EQ(int64_t(summary["inputs"].at(0)["bytes"]), int64_t(log.size()));
}

TEST(Cli, HelpAndVersionAreStatusZero) {
  const CommandResult help = run_cli("analyze --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--devices"), std::string::npos);
  EXPECT_EQ(run_cli("--version").status, 0);
}

TEST(Cli, DeviceSelectionKeepsGlobalIndices) {
  TempDir out;
  const CommandResult r = run_cli("analyze " + sample("multi") +
                                  " --devices 1-2 --no-trace -q -o " + shell_quote(out / "o"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(fs::exists(out / "o/trace.json"));
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out / "o/summary.json").get(summary), simdjson::SUCCESS);
  simdjson::dom::array devices = summary["devices"];
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(int64_t(devices.at(0)["device"]), 1);
  EXPECT_EQ(int64_t(devices.at(1)["device"]), 2);
  EXPECT_EQ(int64_t(devices.at(1)["machine"]), 1);
  simdjson::dom::array step_devices = summary["steps"].at(0)["devices"];
  EXPECT_EQ(int64_t(step_devices.at(0)["device"]), 1);
  EXPECT_EQ(int64_t(step_devices.at(1)["device"]), 2);
}

TEST(Cli, DeviceSelectionAgreesWithTheReference) {
  TempDir out;
  ASSERT_EQ(
      run_cli("analyze " + sample("multi") + " --devices 0,2-3 -q -o " + shell_quote(out / "o"))
          .status,
      0);
  const std::string reference = std::string(PIPESCOPE_SOURCE_DIR) + "/tests/reference/";
  const std::string command =
      "python3 " + reference + "pipescope_reference.py " + sample("multi") + " --devices 0,2-3 > " +
      shell_quote(out / "ref.json") + " && python3 " + reference + "compare_summary.py " +
      shell_quote(out / "o/summary.json") + " " + shell_quote(out / "ref.json");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

TEST(Cli, RewritingOutputsReplacesThemWhole) {
  TempDir out;
  ASSERT_EQ(run_cli("analyze " + sample("single") + " -q -o " + shell_quote(out / "o")).status, 0);
  const auto first = fs::file_size(out / "o/summary.json");
  ASSERT_EQ(run_cli("analyze " + sample("multi") + " -q -o " + shell_quote(out / "o")).status, 0);
  EXPECT_NE(fs::file_size(out / "o/summary.json"), first);
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load(out / "o/summary.json").get(summary), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(summary["jobs"]), 77);
}

// Command-line manners: the British spelling, "did you mean", options
// without effect, and the HTML report kept out of the inputs.
TEST(Cli, CommandLineManners) {
  TempDir out;
  const std::string multi = shell_quote(sample("multi"));
  CommandResult r = run_cli("analyse " + multi + " -q -o " + shell_quote(out / "a"));
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cli("analyze " + multi + " --steeps 10 -o " + shell_quote(out / "b"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("pipescope: --steeps: did you mean --steps?"), std::string::npos)
      << r.output;
  r = run_cli("analize " + multi);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("did you mean `pipescope analyze`?"), std::string::npos) << r.output;
  r = run_cli("analyze " + multi + " -q --html-steps 10 -o " + shell_quote(out / "c"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--html-steps chooses the steps drawn in the HTML report: give --html "
                          "FILE too"),
            std::string::npos)
      << r.output;
  r = run_cli("analyze " + multi + " -q --no-trace --steps 10 -o " + shell_quote(out / "d"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--no-trace without --perfetto writes neither"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out / "d"));
  // The report may not land in an input folder (a copy: nothing is written
  // into the bundled sample even if the check failed).
  fs::copy(sample("multi"), out / "logs", fs::copy_options::recursive);
  r = run_cli("analyze " + shell_quote(out / "logs") + " -q --html " +
              shell_quote(out / "logs/report.html") + " -o " + shell_quote(out / "e"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("is inside input folder"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "logs/report.html"));
  r = run_cli("analyze " + shell_quote(out / "logs") + " -q --allow-output-in-input --html " +
              shell_quote(out / "logs/report.html") + " -o " + shell_quote(out / "e"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(out / "logs/report.html"));
}

}  // namespace
}  // namespace pipescope
