// End-to-end tests of `pipescope watch`: a run written while it is watched
// (pieces that cut lines in half, in real time) prints each complete step
// with analyze's window and bubble ratio; --jsonl, --prometheus, the final
// summary.json equal to analyze's, SIGTERM, and inputs it cannot follow.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::read_file;
using testing::run_cli;
using testing::run_command;
using testing::shell_quote;
using testing::TempDir;

const std::string kCli = PIPESCOPE_CLI;

std::string simulate(const TempDir& dir, const std::string& args) {
  const std::string out = dir / "sim";
  const CommandResult r = run_cli("simulate -o " + shell_quote(out) + " " + args);
  EXPECT_EQ(r.status, 0) << r.output;
  fs::remove(fs::path(out) / "expected.json");
  return out;
}

struct StepFigures {
  std::int64_t segment, step, start_ns, end_ns;
  double bubble_ratio;
};

/// summary.json's complete steps.
std::vector<StepFigures> summary_steps(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  EXPECT_EQ(parser.load(path).get(summary), simdjson::SUCCESS) << path;
  std::vector<StepFigures> out;
  for (simdjson::dom::element s : simdjson::dom::array(summary["steps"])) {
    if (!bool(s["complete"])) continue;
    out.push_back({int64_t(s["segment"]), int64_t(s["step"]), int64_t(s["start_ns"]),
                   int64_t(s["end_ns"]), double(s["bubble_ratio"])});
  }
  return out;
}

/// The --jsonl file's objects.
std::vector<StepFigures> jsonl_steps(const std::string& path) {
  std::vector<StepFigures> out;
  std::istringstream lines(read_file(path));
  simdjson::dom::parser parser;
  for (std::string line; std::getline(lines, line);) {
    simdjson::dom::element o;
    EXPECT_EQ(parser.parse(line).get(o), simdjson::SUCCESS) << line;
    EXPECT_EQ(int64_t(o["window_ns"]), int64_t(o["end_ns"]) - int64_t(o["start_ns"]));
    EXPECT_FALSE(bool(o["provisional"]));
    out.push_back({int64_t(o["segment"]), int64_t(o["step"]), int64_t(o["start_ns"]),
                   int64_t(o["end_ns"]), double(o["bubble_ratio"])});
  }
  return out;
}

void expect_same(const std::vector<StepFigures>& live, const std::vector<StepFigures>& final) {
  ASSERT_EQ(live.size(), final.size());
  for (std::size_t i = 0; i < live.size(); ++i) {
    EXPECT_EQ(live[i].segment, final[i].segment) << i;
    EXPECT_EQ(live[i].step, final[i].step) << i;
    EXPECT_EQ(live[i].start_ns, final[i].start_ns) << i;
    EXPECT_EQ(live[i].end_ns, final[i].end_ns) << i;
    EXPECT_EQ(live[i].bubble_ratio, final[i].bubble_ratio) << i;  // to the last digit
  }
}

TEST(WatchCli, RunWrittenWhileWatchedMatchesAnalyze) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 8 --comm --seed 12");
  const std::string live = dir / "live";
  fs::create_directories(live);
  // The writer: empty files first, then pieces of 1-6000 bytes, every file in
  // turn, 20 ms apart, with dd; the watcher runs beside it.
  std::string script = "set -e\n";
  std::vector<std::pair<std::string, std::size_t>> files;
  for (int d = 0; d < 4; ++d) {
    const std::string name = "workerlog." + std::to_string(d);
    script += ": > " + shell_quote(live + "/" + name) + "\n";
    files.push_back({name, fs::file_size(fs::path(from) / name)});
  }
  script += shell_quote(kCli) + " watch " + shell_quote(live) +
            " --interval 0.05 --until-idle 1.5 --no-trace -o " + shell_quote(dir / "out") +
            " --jsonl " + shell_quote(dir / "steps.jsonl") + " --prometheus " +
            shell_quote(dir / "run.prom") + " > " + shell_quote(dir / "stdout") + " 2>&1 &\n";
  script += "watcher=$!\nsleep 0.2\n";
  std::mt19937 rng(4);
  std::vector<std::size_t> done(4, 0);
  for (bool more = true; more;) {
    more = false;
    for (int d = 0; d < 4; ++d) {
      if (done[d] == files[d].second) continue;
      const std::size_t n = std::min<std::size_t>(1 + rng() % 6000, files[d].second - done[d]);
      script += "dd if=" + shell_quote(from + "/" + files[d].first) +
                " iflag=skip_bytes,count_bytes skip=" + std::to_string(done[d]) +
                " count=" + std::to_string(n) + " status=none >> " +
                shell_quote(live + "/" + files[d].first) + "\n";
      done[d] += n;
      more = true;
    }
    script += "sleep 0.02\n";
  }
  script += "wait $watcher\necho rc=$?\n";
  const CommandResult r = run_command("bash " + shell_quote(dir.write("writer.sh", script)));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output << read_file(dir / "stdout");
  const std::string printed = read_file(dir / "stdout");
  EXPECT_NE(printed.find("step 0  window "), std::string::npos) << printed;
  EXPECT_NE(printed.find("step 7  window "), std::string::npos) << printed;
  EXPECT_EQ(printed.find("provisional"), std::string::npos) << printed;

  // analyze on the finished folder.
  const CommandResult a =
      run_cli("analyze " + shell_quote(live) + " --no-trace -q -o " + shell_quote(dir / "a"));
  ASSERT_EQ(a.status, 0) << a.output;
  const std::vector<StepFigures> final = summary_steps(dir / "a/summary.json");
  ASSERT_EQ(final.size(), 8u);
  expect_same(jsonl_steps(dir / "steps.jsonl"), final);
  // The final pass is analyze's.
  EXPECT_EQ(read_file(dir / "out/summary.json"), read_file(dir / "a/summary.json"));
  EXPECT_FALSE(fs::exists(dir / "out/trace.json"));
  const std::string prom = read_file(dir / "run.prom");
  EXPECT_NE(prom.find("pipescope_steps_total{run=\"live\"} 8\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("pipescope_step{run=\"live\"} 7\n"), std::string::npos) << prom;
  EXPECT_EQ(prom.find("# TYPE pipescope_steps_total counter\n") != std::string::npos, true);
}

TEST(WatchCli, SigtermWritesTheSummaryAndExitsZero) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 5 --seed 3");
  const std::string script = shell_quote(kCli) + " watch " + shell_quote(from) +
                             " --interval 0.05 -o " + shell_quote(dir / "out") + " > " +
                             shell_quote(dir / "stdout") + " 2>&1 &\n" +
                             "pid=$!\nsleep 0.5\nkill -TERM $pid\nwait $pid\necho rc=$?\n";
  const CommandResult r = run_command("bash -c " + shell_quote(script));
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output;
  const std::string printed = read_file(dir / "stdout");
  // Steps 0-3; step 4, the last, waits for a next step or --until-idle.
  EXPECT_NE(printed.find("step 3  window"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("step 4  window"), std::string::npos) << printed;
  EXPECT_TRUE(fs::exists(dir / "out/summary.json"));
  EXPECT_TRUE(fs::exists(dir / "out/trace.json"));
  const CommandResult a =
      run_cli("analyze " + shell_quote(from) + " --no-trace -q -o " + shell_quote(dir / "a"));
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_EQ(read_file(dir / "out/summary.json"), read_file(dir / "a/summary.json"));
}

TEST(WatchCli, UntilIdleReportsTheLastStep) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 3 --seed 2");
  const CommandResult r =
      run_cli("watch " + shell_quote(from) + " --interval 0.05 --until-idle 0.2 --no-trace -o " +
              shell_quote(dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("step 2  window"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wrote " + (dir / "out") + "/summary.json\n"), std::string::npos)
      << r.output;
}

TEST(WatchCli, ANewInputItCannotFollowIsNamedOnce) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 3 --seed 5 --ivl " + shell_quote(dir / "ivl"));
  const std::string script =
      shell_quote(kCli) + " watch " + shell_quote(from) +
      " --interval 0.05 --until-idle 1.5 --no-trace -o " + shell_quote(dir / "out") + " > " +
      shell_quote(dir / "stdout") + " 2>&1 &\n" + "pid=$!\nsleep 0.3\ncp " +
      shell_quote(dir / "ivl/workerlog.0.ivl") + " " + shell_quote(from + "/late.ivl") +
      "\nsleep 0.5\nrm " + shell_quote(from + "/late.ivl") + "\nwait $pid\necho rc=$?\n";
  const CommandResult r = run_command("bash -c " + shell_quote(script));
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output;
  const std::string printed = read_file(dir / "stdout");
  const std::string note = "; following the inputs found before\n";
  const std::size_t at = printed.find(note);
  ASSERT_NE(at, std::string::npos) << printed;
  EXPECT_EQ(printed.find(note, at + 1), std::string::npos) << printed;  // once
  EXPECT_NE(printed.find("step 2  window"), std::string::npos) << printed;
}

TEST(WatchCli, RefusesInputsItCannotFollow) {
  TempDir dir;
  simulate(dir, "--steps 2 --ivl " + shell_quote(dir / "ivl"));
  const CommandResult r = run_cli("watch " + shell_quote(dir / "ivl") + " --until-idle 0.1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("is .ivl records: watch follows text worker logs only"),
            std::string::npos)
      << r.output;
  const CommandResult missing = run_cli("watch " + shell_quote(dir / "nothing"));
  EXPECT_EQ(missing.status, 2) << missing.output;
  // Nor does it write its outputs into a folder it watches (each look would
  // search them with the logs).
  ASSERT_EQ(run_cli("simulate --steps 2 -o " + shell_quote(dir / "logs")).status, 0);
  const CommandResult inside = run_cli("watch " + shell_quote(dir / "logs") + " -o " +
                                       shell_quote(dir / "logs/out") + " --until-idle 0.1");
  EXPECT_EQ(inside.status, 2) << inside.output;
  EXPECT_NE(inside.output.find("output folder " + (dir / "logs/out") +
                               " is inside input folder " + (dir / "logs") +
                               "; choose another with -o"),
            std::string::npos)
      << inside.output;
}

}  // namespace
}  // namespace pipescope
