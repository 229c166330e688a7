// `analyze --job-line`: another framework's job lines, end to end. A
// simulated 2-stage 1F1B run's Paddle job lines are rewritten into another
// framework's format by a small script (times in seconds with 6 decimals:
// the simulator's times are whole microseconds, so the rewrite is exact);
// analysing them with --job-line gives the very figures of the Paddle logs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::CommandResult;
using testing::run_cli;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;
namespace fs = std::filesystem;

/// Rewrites SRC's worker logs into DST in the other framework's format:
///   [2023-10-20 09:15:07] rank0 fwd mb=3 t0=1697793307.213000 t1=1697793307.225168
/// (UNIT s: seconds with 6 decimals; us: whole microseconds). Other lines are
/// kept; with --extras, each file also gets a Paddle job line (not read
/// under --job-line) and a malformed line of the other format.
constexpr const char* kRewrite = R"(import pathlib, re, sys
src, dst, unit = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
extras = "--extras" in sys.argv
job = re.compile(r"Profiler Info: Job \((\d+)\), type = (\w+), micro_batch_id = (\d+), "
                 r"job_start_time = (\d+)\.(\d{6}), job_end_time = (\d+)\.(\d{6})$")
short = {"forward": "fwd", "backward": "bwd", "optimizer": "opt"}
def text(whole, frac):
    assert frac.endswith("000"), frac  # whole microseconds
    if unit == "s":
        return whole[:-3] + "." + whole[-3:] + frac[:3]
    return whole + frac[:3]
dst.mkdir(parents=True, exist_ok=True)
for log in sorted(src.glob("workerlog.*")):
    rank = log.name.split(".")[1]
    out = []
    for line in log.read_text().splitlines():
        m = job.search(line)
        if not m:
            out.append(line)
            continue
        _, kind, mb, s0, f0, s1, f1 = m.groups()
        out.append(f"[2023-10-20 09:15:07] rank{rank} {short[kind]} mb={mb} "
                   f"t0={text(s0, f0)} t1={text(s1, f1)}")
    if extras:
        out.insert(3, "I1020 09:15:07.300000 1 x.cc:1] Profiler Info: Job (9), type = forward, "
                      "micro_batch_id = 0, job_start_time = 1697793307213.000000, "
                      "job_end_time = 1697793307214.000000")
        out.insert(5, f"[2023-10-20 09:15:07] rank{rank} fwd mb=1 t0=1697793307.5O t1=2")
    (dst / log.name).write_text("\n".join(out) + "\n")
)";

constexpr const char* kJobLine =
    R"('rank\d+ (?P<type>\w+) mb=(?P<mb>\d+) t0=(?P<start>\S+) t1=(?P<end>\S+)')";
constexpr const char* kKinds = " --job-kinds fwd=forward,bwd=backward,opt=optimizer";

class JobLineCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli("simulate -o " + shell_quote(dir_ / "paddle") +
                      " --schedule 1f1b --stages 2 --micro-batches 4 --steps 4 --noise-per-job 1")
                  .status,
              0);
    std::ofstream(dir_ / "rewrite.py") << kRewrite;
  }

  /// The Paddle logs rewritten into folder `name` (unit s or us).
  std::string rewrite(const std::string& name, const std::string& unit, bool extras = false) {
    const CommandResult r = run_command(
        "python3 " + shell_quote(dir_ / "rewrite.py") + " " + shell_quote(dir_ / "paddle") + " " +
        shell_quote(dir_ / name) + " " + unit + (extras ? " --extras" : "") + " 2>&1");
    EXPECT_EQ(r.status, 0) << r.output;
    return dir_ / name;
  }

  TempDir dir_;
};

void expect_same_figures(const fs::path& a_path, const fs::path& b_path) {
  simdjson::dom::parser pa, pb;
  simdjson::dom::element a, b;
  ASSERT_EQ(pa.load(a_path).get(a), simdjson::SUCCESS);
  ASSERT_EQ(pb.load(b_path).get(b), simdjson::SUCCESS);
  EXPECT_EQ(double(a["bubble_ratio"]), double(b["bubble_ratio"]));
  EXPECT_EQ(int64_t(a["total_window_ns"]), int64_t(b["total_window_ns"]));
  EXPECT_EQ(int64_t(a["jobs"]), int64_t(b["jobs"]));
  EXPECT_EQ(std::string_view(a["schedule"]["name"]), std::string_view(b["schedule"]["name"]));
  EXPECT_EQ(simdjson::to_string(a["steps"]), simdjson::to_string(b["steps"]));
  EXPECT_EQ(simdjson::to_string(a["bubbles"]), simdjson::to_string(b["bubbles"]));
  const simdjson::dom::array da = a["devices"], db = b["devices"];
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t i = 0; i < da.size(); ++i) {
    for (const char* key : {"device", "jobs", "steps", "busy_ns", "idle_ns"}) {
      EXPECT_EQ(int64_t(da.at(i)[key]), int64_t(db.at(i)[key])) << key;
    }
    EXPECT_EQ(double(da.at(i)["utilization"]), double(db.at(i)["utilization"]));
  }
}

TEST_F(JobLineCli, AnotherFrameworksLinesGiveThePaddleLogsFigures) {
  const CommandResult paddle = run_cli("analyze -q --no-trace " + shell_quote(dir_ / "paddle") +
                                       " -o " + shell_quote(dir_ / "out-paddle"));
  ASSERT_EQ(paddle.status, 0) << paddle.output;
  for (const std::string unit : {"s", "us"}) {
    SCOPED_TRACE(unit);
    const std::string other = rewrite("other-" + unit, unit);
    const fs::path out = dir_ / ("out-" + unit);
    const CommandResult r =
        run_cli("analyze -q --no-trace " + shell_quote(other) + " -o " + shell_quote(out) +
                " --job-line " + kJobLine + " --job-line-unit " + unit + kKinds);
    ASSERT_EQ(r.status, 0) << r.output;
    expect_same_figures(dir_ / "out-paddle/summary.json", out / "summary.json");
  }
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir_ / "out-s/summary.json").get(s), simdjson::SUCCESS);
  EXPECT_EQ(std::string_view(s["schedule"]["name"]), "1F1B");
  EXPECT_EQ(simdjson::dom::array(s["steps"]).size(), 4u);
  EXPECT_EQ(simdjson::dom::array(s["devices"]).size(), 2u);
}

TEST_F(JobLineCli, PaddlesLinesAreNotReadAndMalformedLinesAreSaid) {
  const std::string other = rewrite("extras", "s", true);
  const CommandResult r =
      run_cli("analyze --no-trace " + shell_quote(other) + " -o " + shell_quote(dir_ / "out") +
              " --job-line " + kJobLine + " --job-line-unit s" + kKinds);
  ASSERT_EQ(r.status, 0) << r.output;
  // The rewritten line 5 of each file (1-based 6): `t0=1697793307.5O`.
  EXPECT_NE(r.output.find("extras/workerlog.0:6: the job-line regex's 'start' capture is not a "
                          "plain decimal number"),
            std::string::npos)
      << r.output;
  simdjson::dom::parser parser;
  simdjson::dom::element s;
  ASSERT_EQ(parser.load(dir_ / "out/summary.json").get(s), simdjson::SUCCESS);
  const simdjson::dom::array inputs = s["inputs"];
  ASSERT_EQ(inputs.size(), 2u);
  for (simdjson::dom::element input : inputs) {
    EXPECT_EQ(int64_t(input["malformed"]), 1);
    EXPECT_EQ(int64_t(input["matched"]), int64_t(s["jobs"]) / 2);  // the Paddle line is no job
  }
  const CommandResult strict = run_cli("analyze -q --no-trace --strict " + shell_quote(other) +
                                       " -o " + shell_quote(dir_ / "out2") + " --job-line " +
                                       kJobLine + " --job-line-unit s" + kKinds);
  EXPECT_EQ(strict.status, 1) << strict.output;
  // Without --job-line the same files hold one Paddle job line each.
  const CommandResult paddle =
      run_cli("analyze -q --no-trace " + shell_quote(other) + " -o " + shell_quote(dir_ / "out3"));
  EXPECT_EQ(paddle.status, 0) << paddle.output;
}

TEST_F(JobLineCli, UsageErrorsAreStatusTwoAndSayWhy) {
  const std::string other = rewrite("other", "s");
  const std::string base =
      "analyze -q --no-trace " + shell_quote(other) + " -o " + shell_quote(dir_ / "out");
  const std::pair<std::string, std::string> cases[] = {
      {" --job-line 'rank (?P<type>\\w+) mb=(?P<mb>\\d+) t0=(?P<start>\\S+)'",
       "--job-line: it has no named capture 'end' ((?P<end>...))"},
      {" --job-line '(?P<type>\\w+) (?P<start>\\S+) (?P<end>\\S+)'",
       "--job-line: it has no named capture 'mb'"},
      {" --job-line '(?P<type>\\w+ (?P<mb>\\d+) (?P<start>\\S+) (?P<end>\\S+)'",
       "--job-line: missing )"},
      {std::string(" --job-line ") + kJobLine + " --job-line-unit sec",
       "--job-line-unit sec: the unit is one of s, ms, us and ns"},
      {" --job-line-unit s", "--job-line-unit needs --job-line"},
      {std::string(" --job-line ") + kJobLine + " --job-kinds fwd",
       "--job-kinds: job kind 'fwd' is not OP=TYPE"},
      // A regex that matches no line: no job, said as what was looked for.
      {" --job-line 'step (?P<type>\\w+) (?P<mb>\\d+) (?P<start>\\S+) (?P<end>\\S+)'",
       "no job lines found in 2 input files (looked for lines matching --job-line)"},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = run_cli(base + args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
  }
}

TEST_F(JobLineCli, TheHelpSaysPaddlesJobLinesAreThenNotRead) {
  const CommandResult r = run_cli("analyze --help");
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("--job-line-unit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PaddlePaddle's own job lines are then not read"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace pipescope
