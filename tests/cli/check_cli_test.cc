// End-to-end tests of `pipescope check`: exit statuses 0/1/2, the markdown
// and JUnit files (the JUnit XML parsed and checked by Python's XML parser),
// summary and log inputs, the config file.
#include <gtest/gtest.h>

#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::read_file;
using testing::run_cli;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

std::string sample_path(const char* name) { return std::string(PIPESCOPE_TESTDATA) + "/" + name; }

// Two simulated runs of the same shape (P = 4, M = 8): the current one has a
// stage twice as slow, so its pipeline bubbles are larger (a regression of
// the bubble ratio). A third with fewer micro-batches (M = 4) has another
// shape: check refuses to compare it (docs/guide.md, "Comparable runs only").
class CheckCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string common = " --schedule 1f1b --stages 4 --steps 5 --seed 7 ";
    ASSERT_EQ(
        run_cli("simulate -o " + shell_quote(*dir_ / "base") + common + "--micro-batches 8").status,
        0);
    ASSERT_EQ(run_cli("simulate -o " + shell_quote(*dir_ / "cur") + common +
                      "--micro-batches 8 --slow-stage 2:2")
                  .status,
              0);
    ASSERT_EQ(
        run_cli("simulate -o " + shell_quote(*dir_ / "fewer-mb") + common + "--micro-batches 4")
            .status,
        0);
    ASSERT_EQ(run_cli("analyze -q --no-trace " + shell_quote(*dir_ / "base") + " -o " +
                      shell_quote(*dir_ / "base-out"))
                  .status,
              0);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static TempDir* dir_;
};
TempDir* CheckCli::dir_ = nullptr;

TEST_F(CheckCli, SameRunPasses) {
  // Logs against the summary of the same logs: identical figures.
  const CommandResult r =
      run_cli("check " + shell_quote(*dir_ / "base") + " --baseline " +
              shell_quote(*dir_ / "base-out/summary.json") +
              " --max-bubble-increase 0 --max-step-time-increase 0% --max-utilization-drop 0");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("pipescope check: PASS (3 thresholds)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 warm-up step left out of both runs (default"), std::string::npos)
      << r.output;
}

TEST_F(CheckCli, RegressionFailsWithMarkdownAndJunit) {
  TempDir out;
  const CommandResult r = run_cli(
      "check " + shell_quote(*dir_ / "cur") + " --baseline " + shell_quote(*dir_ / "base-out") +
      " --max-bubble-increase 2% --max-bubble-ratio 0.9 --skip-steps 1"
      " --markdown " +
      shell_quote(out / "reports/summary.md") + " --junit " + shell_quote(out / "junit.xml"));
  ASSERT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("REGRESSION (1 of 2 thresholds failed)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("FAIL max-bubble-increase"), std::string::npos) << r.output;
  // An explicit --skip-steps is not called a default.
  EXPECT_EQ(r.output.find("(default"), std::string::npos) << r.output;

  const std::string md = read_file(out / "reports/summary.md");
  EXPECT_NE(md.find("## pipescope check: ❌ regression"), std::string::npos) << md;
  EXPECT_NE(md.find("| bubble ratio |"), std::string::npos) << md;
  EXPECT_NE(md.find("### Utilization per device"), std::string::npos) << md;
  EXPECT_NE(md.find("### Worst bubbles (current run)"), std::string::npos) << md;

  // The JUnit file must be well-formed XML with the structure CI systems read.
  const std::string script =
      "import sys, xml.etree.ElementTree as ET\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "assert root.tag == 'testsuites', root.tag\n"
      "suites = root.findall('testsuite')\n"
      "assert len(suites) == 1\n"
      "s = suites[0]\n"
      "cases = s.findall('testcase')\n"
      "assert int(s.get('tests')) == len(cases) == 2, s.attrib\n"
      "assert int(s.get('failures')) == 1 and s.get('errors') == '0'\n"
      "names = [c.get('name') for c in cases]\n"
      "assert names == ['max-bubble-ratio', 'max-bubble-increase'], names\n"
      "f = cases[1].find('failure')\n"
      "assert f is not None and 'pp' in f.get('message') and f.get('type') == 'regression'\n"
      "assert cases[0].find('failure') is None\n"
      "for c in cases: assert c.get('classname') and c.get('time') is not None\n"
      "print('junit ok')\n";
  TempDir py;
  const std::string script_path = py.write("check_junit.py", script);
  const CommandResult v = run_command("python3 " + shell_quote(script_path) + " " +
                                      shell_quote(out / "junit.xml") + " 2>&1");
  EXPECT_EQ(v.status, 0) << v.output << read_file(out / "junit.xml");
}

TEST_F(CheckCli, AnotherShapeIsRefusedUnlessAllowed) {
  const std::string args = "check " + shell_quote(*dir_ / "fewer-mb") + " -b " +
                           shell_quote(*dir_ / "base-out") + " --max-bubble-ratio 0.9";
  const CommandResult r = run_cli(args);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("pipescope check: REFUSED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not comparable: micro-batch count (M) differs: baseline 8, current 4"),
            std::string::npos)
      << r.output;
  const CommandResult allowed = run_cli(args + " --allow-input-warnings");
  EXPECT_EQ(allowed.status, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("note: compared anyway: micro-batch count (M) differs"),
            std::string::npos)
      << allowed.output;
}

TEST_F(CheckCli, ConfigFileThresholds) {
  TempDir cfg;
  const std::string config = cfg.write("pipescope.json", R"({"max_bubble_increase": "2%"})");
  EXPECT_EQ(run_cli("check " + shell_quote(*dir_ / "cur") + " -b " + shell_quote(*dir_ / "base") +
                    " --config " + shell_quote(config))
                .status,
            1);
  // A flag overrides the config file's value.
  EXPECT_EQ(
      run_cli("check -q " + shell_quote(*dir_ / "cur") + " -b " + shell_quote(*dir_ / "base") +
              " --config " + shell_quote(config) + " --max-bubble-increase 0.99")
          .status,
      0);
  const std::string bad = cfg.write("bad.json", R"({"max_bubble": 1})");
  const CommandResult r = run_cli("check " + shell_quote(*dir_ / "cur") + " -b " +
                                  shell_quote(*dir_ / "base") + " --config " + shell_quote(bad));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("is not a known key"), std::string::npos) << r.output;
}

TEST_F(CheckCli, UsageAndInputErrorsExitTwo) {
  const std::string base = " -b " + shell_quote(*dir_ / "base-out/summary.json");
  CommandResult r = run_cli("check " + shell_quote(*dir_ / "cur") + base);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("no threshold given"), std::string::npos) << r.output;
  // --max-figure: a limit on a figure the run does not have, or no KEY=LIMIT.
  r = run_cli("check " + shell_quote(*dir_ / "cur") + base + " --max-figure no_such_figure=3");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("no_such_figure"), std::string::npos) << r.output;
  r = run_cli("check " + shell_quote(*dir_ / "cur") + base + " --max-figure jobs");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("is not KEY=LIMIT"), std::string::npos) << r.output;

  TempDir tmp;
  std::string v2 = read_file(*dir_ / "base-out/summary.json");
  v2.replace(v2.find("pipescope.summary/1"), 19, "pipescope.summary/2");
  const std::string v2_path = tmp.write("v2.json", v2);
  r = run_cli("check " + shell_quote(*dir_ / "cur") + " -b " + shell_quote(v2_path) +
              " --max-bubble-ratio 100%");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("summary schema 'pipescope.summary/2' is not supported"),
            std::string::npos)
      << r.output;

  r = run_cli("check " + shell_quote(*dir_ / "cur") + base +
              " --max-bubble-ratio 100% --skip-steps 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("none left after skipping 5 warm-up steps"), std::string::npos)
      << r.output;

  EXPECT_EQ(
      run_cli("check " + shell_quote(*dir_ / "cur") + base + " --max-bubble-ratio lots").status, 2);
  EXPECT_EQ(
      run_cli("check " + shell_quote(tmp / "nowhere") + base + " --max-bubble-ratio 100%").status,
      2);
  EXPECT_EQ(run_cli("check " + shell_quote(*dir_ / "cur") + " --max-bubble-ratio 100%").status,
            2);  // no baseline
}

// The gate cannot be misread: a bare number above 1 is refused with the
// accepted forms, and on exit 2 the reports asked for still say why.
TEST_F(CheckCli, AmbiguousThresholdsAndErrorReports) {
  const std::string base = " -b " + shell_quote(*dir_ / "base-out/summary.json");
  TempDir tmp;
  CommandResult r = run_cli("check " + shell_quote(*dir_ / "cur") + base +
                            " --max-step-time-increase 5 --markdown " + shell_quote(tmp / "r.md") +
                            " --junit " + shell_quote(tmp / "r.xml"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--max-step-time-increase: '5' is ambiguous: as a fraction it means "
                          "500%, but it may mean 5%; write 5% or 0.05"),
            std::string::npos)
      << r.output;
  EXPECT_NE(read_file(tmp / "r.md").find("error, nothing was compared"), std::string::npos);
  EXPECT_NE(read_file(tmp / "r.xml").find("errors=\"1\""), std::string::npos);
  EXPECT_NE(read_file(tmp / "r.xml").find("is ambiguous: as a fraction it means 500%"),
            std::string::npos);

  r = run_cli("check " + shell_quote(*dir_ / "cur") + " -b " + shell_quote(tmp / "missing") +
              " --max-bubble-increase 2pp --markdown " + shell_quote(tmp / "m.md"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("no such file or folder: " + (tmp / "missing")), std::string::npos)
      << r.output;
  EXPECT_NE(read_file(tmp / "m.md").find("no such file or folder"), std::string::npos);

  // The reports say points or relative for each threshold.
  r = run_cli("check " + shell_quote(*dir_ / "cur") + base +
              " --max-bubble-increase 50pp --max-step-time-increase 150%");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("limit +50.00 pp (points;"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(relative;"), std::string::npos) << r.output;
}

TEST_F(CheckCli, BundledSampleAgainstItsExpectedSummary) {
  // testdata/single has 2 steps, so nothing is skipped by default; its
  // workerlog.3 ends inside a job line (cut), which makes it a damaged
  // input: refused unless allowed.
  const std::string args = "check " + sample_path("single") + " -b " +
                           sample_path("single/expected.json") +
                           " --max-bubble-ratio 0.43 --max-bubble-increase 0";
  const CommandResult refused = run_cli(args);
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("damaged input " + sample_path("single") +
                                "/workerlog.3: it ends inside a line (166 bytes after the last "
                                "newline"),
            std::string::npos)
      << refused.output;
  const CommandResult r = run_cli(args + " --allow-input-warnings");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("0 warm-up steps left out"), std::string::npos) << r.output;
}

// A log cut inside its compressed stream (a copy interrupted, a crash while
// writing): its figures are those of the part before the cut, so the gate
// refuses to compare them, naming the file and the damage, in every report.
TEST_F(CheckCli, ADamagedInputIsRefusedNamingTheFile) {
  TempDir tmp;
  const std::string cut = tmp / "cut";
  ASSERT_EQ(run_command("cp -r " + shell_quote(*dir_ / "base") + " " + shell_quote(cut)).status, 0);
  const std::string log = cut + "/workerlog.1";
  ASSERT_EQ(
      run_command("gzip " + shell_quote(log) + " && truncate -s -200 " + shell_quote(log + ".gz"))
          .status,
      0);
  const std::string args = "check " + shell_quote(cut) + " -b " +
                           shell_quote(*dir_ / "base-out/summary.json") +
                           " --max-bubble-increase 5pp --markdown " + shell_quote(tmp / "r.md") +
                           " --junit " + shell_quote(tmp / "r.xml");
  const CommandResult refused = run_cli(args);
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("damaged input " + log + ".gz: "), std::string::npos)
      << refused.output;
  EXPECT_NE(read_file(tmp / "r.md").find("damaged input"), std::string::npos);
  EXPECT_NE(read_file(tmp / "r.xml").find("damaged input"), std::string::npos);
  const CommandResult allowed = run_cli(args + " --allow-input-warnings");
  EXPECT_NE(allowed.status, 2) << allowed.output;
  EXPECT_NE(allowed.output.find("damaged input"), std::string::npos) << allowed.output;
}

// check takes analyze's input options and applies them to both runs: a
// device selection, and the job pattern a profiler trace needs.
TEST_F(CheckCli, TakesTheInputOptionsOfAnalyze) {
  TempDir tmp;
  ASSERT_EQ(run_cli("analyze -q --no-trace " + shell_quote(*dir_ / "base") + " --devices 1-2 -o " +
                    shell_quote(tmp / "two"))
                .status,
            0);
  const std::string thresholds = " --max-step-time-increase 0% --max-utilization-drop 0";
  // The logs cut to the summary's two devices: the same figures.
  CommandResult r = run_cli("check " + shell_quote(*dir_ / "base") + " --devices 1-2 -b " +
                            shell_quote(tmp / "two/summary.json") + thresholds);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("PASS (2 thresholds)"), std::string::npos) << r.output;
  // All four devices against two: not comparable.
  r = run_cli("check " + shell_quote(*dir_ / "base") + " -b " +
              shell_quote(tmp / "two/summary.json") + thresholds);
  EXPECT_EQ(r.status, 2) << r.output;

  // A real PyTorch profiler trace whose jobs only a --job-pattern finds.
  const std::string resnet =
      shell_quote(sample_path("kineto/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  r = run_cli("check " + resnet + " -b " + resnet + thresholds +
              " --job-pattern '## (?P<op>forward|backward) ##'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("PASS (2 thresholds)"), std::string::npos) << r.output;
  // Without the pattern: no jobs, so compared by the kernel view (its 5 steps).
  r = run_cli("check " + resnet + " -b " + resnet + thresholds);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("comparing 4 baseline and 4 current steps"), std::string::npos)
      << r.output;
  // A bad value is a usage error naming the option, as for analyze.
  r = run_cli("check " + resnet + " -b " + resnet + thresholds + " --job-pattern x");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--job-pattern: it has no named group 'op'"), std::string::npos)
      << r.output;
}

// --max-events on a run with log events at known places (simulate --events:
// a NCCL warning in steps 2, 6 and 10 on the last device, an evaluation on
// every device before every fifth step, a checkpoint in the stall), from its
// logs and from its summary; the config file's max_events; an id the library
// does not know is a usage error; events off cannot be counted (exit 2).
TEST(CheckCliEvents, MaxEventsGatesOnEventIdsAndCategories) {
  if (run_cli("analyze --help").output.find("--no-events") == std::string::npos) GTEST_SKIP();
  TempDir dir;
  const std::string run = shell_quote(dir / "run");
  const std::string base = shell_quote(dir / "base");
  ASSERT_EQ(run_cli("simulate -o " + run + " --steps 12 --events --stall 6:3:300").status, 0);
  ASSERT_EQ(run_cli("simulate -o " + base + " --steps 12").status, 0);
  ASSERT_EQ(run_cli("analyze -q --no-trace " + run + " -o " + shell_quote(dir / "out")).status, 0);
  const std::string summary = shell_quote(dir / "out/summary.json");
  for (const std::string& current : {run, summary}) {
    CommandResult r = run_cli("check " + current + " -b " + base +
                              " --max-events nccl=0 --max-events paddlenlp_saving_checkpoint=1");
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("FAIL max-events: category nccl: 3 events > limit 0"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("step 6: device 3 nccl_warn"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("ok   max-events: event paddlenlp_saving_checkpoint: 1 event <= "
                            "limit 1"),
              std::string::npos)
        << r.output;
    r = run_cli("check -q " + current + " -b " + base + " --max-events nccl_warn=3");
    EXPECT_EQ(r.status, 0) << r.output;
  }
  dir.write("gate.json", R"({"max_events": {"evaluation": 2, "nccl": 9}})");
  CommandResult r =
      run_cli("check " + run + " -b " + base + " --config " + shell_quote(dir / "gate.json"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("category evaluation: 8 events > limit 2"), std::string::npos)
      << r.output;
  // The flag wins over the file for the same id.
  r = run_cli("check -q " + run + " -b " + base + " --config " + shell_quote(dir / "gate.json") +
              " --max-events evaluation=8");
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cli("check " + run + " -b " + base + " --max-events ncc=1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("'ncc' is no event id or category"), std::string::npos) << r.output;
  r = run_cli("check " + run + " -b " + base + " --max-events nccl");
  EXPECT_EQ(r.status, 2) << r.output;
  r = run_cli("check " + run + " -b " + base + " --max-events nccl=1 --no-events");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no log events to count"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace pipescope
