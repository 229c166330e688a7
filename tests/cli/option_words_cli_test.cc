// The engine's messages that say how to change what it did name the command
// line's options (cli/option_words.h): one case per row of the table, each
// message as the command prints it (or writes it to summary.json).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::read_file;
using testing::run_cli;
using testing::shell_quote;

/// `pipescope simulate -o DIR ARGS`, which must succeed.
void simulate(const std::string& dir, const std::string& args) {
  const CommandResult r = run_cli("simulate -o " + shell_quote(dir) + " " + args);
  ASSERT_EQ(r.status, 0) << r.output;
}

/// `pipescope analyze RUN -o OUT --no-trace -q ARGS`.
CommandResult analyze(const std::string& run, const std::string& out, const std::string& args) {
  return run_cli("analyze " + shell_quote(run) + " -o " + shell_quote(out) + " --no-trace -q " +
                 args);
}

TEST(OptionWordsCli, StageMapMessagesNameStages) {
  testing::TempDir dir;
  simulate(dir / "tp",
           "--schedule 1f1b --stages 4 --micro-batches 8 --steps 2 --devices-per-stage 2");
  // One stage per device where devices pair up: the stage_map warning's advice.
  const CommandResult device = analyze(dir / "tp", dir / "o1", "--stages device");
  EXPECT_NE(device.output.find("they look like one stage each (tensor-parallel peers); pass "
                               "--stages auto or --stages MAP\n"),
            std::string::npos)
      << device.output;
  // A map whose stages do not run together: named, and the same advice.
  const CommandResult wrong = analyze(dir / "tp", dir / "o2", "--stages 0+2,1+3,4-5,6-7");
  EXPECT_NE(wrong.output.find("warning: --stages: stage 0 (devices 0+2) does not look like one "
                              "stage: "),
            std::string::npos)
      << wrong.output;
  EXPECT_NE(wrong.output.find("run the same jobs at the same times; pass --stages auto or "
                              "--stages MAP\n"),
            std::string::npos)
      << wrong.output;
  // The layout given is named by its flag.
  const CommandResult layout = analyze(dir / "tp", dir / "o3", "--layout pp=3");
  EXPECT_EQ(layout.status, 2);
  EXPECT_NE(layout.output.find("error: --layout pp=3 × dp=1 × tp=1: the mesh holds ranks 0-2, "
                               "but the run has device 3 (rank 3)"),
            std::string::npos)
      << layout.output;
}

TEST(OptionWordsCli, ClockMessagesNameTheClockOptions) {
  testing::TempDir dir;
  simulate(dir / "skew",
           "--schedule 1f1b --stages 4 --micro-batches 8 --steps 2 --machines 2 --skew 1:3000000");
  const CommandResult off = analyze(dir / "skew", dir / "o1", "--no-clock-fix");
  EXPECT_NE(off.output.find("dependencies between machines still start before their input "
                            "ended (--no-clock-fix) (clock skew"),
            std::string::npos)
      << off.output;
  const CommandResult imposed = analyze(dir / "skew", dir / "o2", "--clock-offset machine7=1ms");
  EXPECT_EQ(imposed.status, 2);
  EXPECT_NE(imposed.output.find("error: --clock-offset: no machine 'machine7' (the run has 2 "
                                "machines: machine0..machine1)"),
            std::string::npos)
      << imposed.output;
}

TEST(OptionWordsCli, LineLimitAdviceStatesTheLimit) {
  testing::TempDir dir;
  simulate(dir / "run", "--schedule 1f1b --stages 2 --micro-batches 4 --steps 2");
  // A progress bar's carriage returns before the first job line: one line
  // longer than 2 KiB that holds it.
  std::string log = read_file(dir / "run/workerlog.0");
  const std::size_t job = log.find("Profiler Info: Job");
  ASSERT_NE(job, std::string::npos);
  const std::size_t line = log.rfind('\n', job) + 1;
  log.insert(line, std::string(3000, '\r'));
  dir.write("long/workerlog.0", log);
  const CommandResult r = analyze(dir / "long", dir / "out", "--max-line-kib 2");
  EXPECT_NE(read_file(dir / "out/summary.json")
                .find("skipped, and its job is lost: raise --max-line-kib (now 2 KiB) above the "
                      "line's size to read it"),
            std::string::npos)
      << r.output;
}

TEST(OptionWordsCli, UnreadableInputAdviceIsTheCommands) {
  testing::TempDir dir;
  simulate(dir / "run", "--schedule 1f1b --stages 2 --micro-batches 4 --steps 2");
  std::filesystem::create_symlink("gone", dir / "run/workerlog.2");
  const CommandResult a = analyze(dir / "run", dir / "o1", "");
  EXPECT_EQ(a.status, 2);
  EXPECT_NE(a.output.find("an input that cannot be read is not analysed as a device idle all "
                          "run; pass --allow-missing to leave it out of the figures (with a "
                          "warning)\n"),
            std::string::npos)
      << a.output;
  const CommandResult c =
      run_cli("convert " + shell_quote(dir / "run") + " -o " + shell_quote(dir / "o2"));
  EXPECT_EQ(c.status, 2);
  EXPECT_NE(c.output.find("an input that cannot be read is not analysed as a device idle all "
                          "run; pass --allow-missing to convert the other inputs\n"),
            std::string::npos)
      << c.output;
}

TEST(OptionWordsCli, OtherPipelinesNoteNamesPipeline) {
  testing::TempDir dir;
  simulate(dir / "dygraph",
           "--schedule 1f1b --stages 2 --micro-batches 4 --steps 2 --devices-per-stage 2 "
           "--format paddle-dygraph");
  const CommandResult r = analyze(dir / "dygraph", dir / "out", "");
  EXPECT_NE(r.output.find("is analysed and the others are left out; pipeline 1: ranks "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("; pass --pipeline K to analyse pipeline K instead"), std::string::npos)
      << r.output;
}

/// Whether `r` printed `text`; says what it printed when not.
::testing::AssertionResult printed(const CommandResult& r, const std::string& text) {
  if (r.output.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no \"" << text << "\" in:\n" << r.output;
}

TEST(OptionWordsCli, SelectionsNameTheirFlags) {
  testing::TempDir dir;
  simulate(dir / "run", "--schedule 1f1b --stages 2 --micro-batches 4 --steps 25");
  EXPECT_TRUE(printed(run_cli("analyze " + shell_quote(dir / "run") + " -o " +
                              shell_quote(dir / "o1") + " -q --steps 999"),
                      "error: --steps: the run has no step 999"));
  EXPECT_TRUE(printed(analyze(dir / "run", dir / "o2",
                              "--html " + shell_quote(dir / "r.html") + " --html-steps 999"),
                      "error: --html-steps: the run has no step 999"));
  EXPECT_TRUE(printed(analyze(dir / "run", dir / "o3", "--devices 7"),
                      "error: --devices: there is no device 7 (found 2 devices: 0-1)"));
  EXPECT_TRUE(printed(analyze(dir / "run", dir / "o4", "--machine-order nowhere"),
                      "error: --machine-order: the run has no machine 'nowhere'"));
  // 25 steps: the steps table is folded, and says how to list them all.
  const CommandResult table = run_cli("analyze " + shell_quote(dir / "run") + " -o " +
                                      shell_quote(dir / "o5") + " --no-trace");
  EXPECT_TRUE(printed(table, "of 25 listed; --all-rows lists every one) ..."));
}

TEST(OptionWordsCli, CheckNamesItsFlags) {
  testing::TempDir dir;
  simulate(dir / "run", "--schedule 1f1b --stages 2 --micro-batches 4 --steps 4");
  const std::string run = shell_quote(dir / "run");
  const CommandResult skipped =
      run_cli("check " + run + " -b " + run + " --max-bubble-ratio 100% --skip-steps 9");
  EXPECT_TRUE(printed(skipped, "none left after skipping 9 warm-up steps (lower --skip-steps)"));
  const CommandResult off =
      run_cli("check " + run + " -b " + run + " --no-events --max-events nccl=0");
  EXPECT_TRUE(printed(off, "error: --max-events: the current run has no log events to count"));
  const CommandResult md =
      run_cli("check " + run + " -b " + run + " --max-bubble-ratio 100% --markdown " +
              shell_quote(dir / "r.md"));
  EXPECT_EQ(md.status, 0) << md.output;
  EXPECT_TRUE(printed(md, "change with --skip-steps)"));
  EXPECT_NE(read_file(dir / "r.md").find("| `--max-bubble-ratio` | ✅ pass |"), std::string::npos)
      << read_file(dir / "r.md");
}

TEST(OptionWordsCli, SimulateNamesItsFlags) {
  testing::TempDir dir;
  simulate(dir / "run", "--schedule 1f1b --stages 2 --micro-batches 4 --steps 2");
  const CommandResult again = run_cli("simulate -o " + shell_quote(dir / "run") +
                                      " --schedule 1f1b --stages 2 --micro-batches 4 --steps 2");
  EXPECT_TRUE(printed(again, "is not empty; use --force to replace the worker logs in it"));
  const CommandResult chunks =
      run_cli("simulate -o " + shell_quote(dir / "c") +
              " --schedule 1f1b --stages 2 --micro-batches 4 --steps 2 --chunks 2");
  EXPECT_TRUE(printed(chunks, "; --chunks 2 needs an interleaved schedule"));
}

}  // namespace
}  // namespace pipescope
