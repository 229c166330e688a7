// End-to-end tests of `pipescope watch`: a run written while it is watched
// (pieces that cut lines in half, in real time) prints each complete step
// with analyze's window and bubble ratio; --jsonl, --prometheus, the final
// summary.json equal to analyze's, SIGTERM, and inputs it cannot follow.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/command_runner.h"
#include "support/compress_util.h"
#include "support/temp_dir.h"
#include "support/wild_util.h"

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

struct WatchStepFigures {
  std::int64_t segment, step, start_ns, end_ns;
  double bubble_ratio;
};

/// summary.json's complete steps.
std::vector<WatchStepFigures> summary_steps(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  EXPECT_EQ(parser.load(path).get(summary), simdjson::SUCCESS) << path;
  std::vector<WatchStepFigures> out;
  for (simdjson::dom::element s : simdjson::dom::array(summary["steps"])) {
    if (!bool(s["complete"])) continue;
    out.push_back({int64_t(s["segment"]), int64_t(s["step"]), int64_t(s["start_ns"]),
                   int64_t(s["end_ns"]), double(s["bubble_ratio"])});
  }
  return out;
}

/// The --jsonl file's objects.
std::vector<WatchStepFigures> jsonl_steps(const std::string& path) {
  std::vector<WatchStepFigures> out;
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

void expect_same(const std::vector<WatchStepFigures>& live, const std::vector<WatchStepFigures>& final) {
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
  const std::vector<WatchStepFigures> final = summary_steps(dir / "a/summary.json");
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
  // Steps 0-4: at SIGTERM the watch reads what is whole in the files and
  // reports the last step too, complete by the contract's job-count clause.
  EXPECT_NE(printed.find("step 3  window"), std::string::npos) << printed;
  EXPECT_NE(printed.find("step 4  window"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("step 5  window"), std::string::npos) << printed;
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

TEST(WatchCli, StartedBeforeTheLogsItWaitsForThemThenGivesUp) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 3 --seed 2");
  // The logs appear (moved into place) after the watch started.
  const std::string later = dir / "later";
  const std::string script = shell_quote(kCli) + " watch " + shell_quote(later) +
                             " --interval 0.05 --until-idle 0.3 --no-trace -o " +
                             shell_quote(dir / "out") + " > " + shell_quote(dir / "stdout") +
                             " 2>&1 &\npid=$!\nsleep 0.4\nmv " + shell_quote(from) + " " +
                             shell_quote(later) + "\nwait $pid\necho rc=$?\n";
  const CommandResult r = run_command("bash -c " + shell_quote(script));
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output;
  const std::string printed = read_file(dir / "stdout");
  EXPECT_NE(printed.find("later does not exist (yet): waiting up to 600 s"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("step 2  window"), std::string::npos) << printed;
  // Nothing ever comes: exit 2 after the bound, saying why.
  const CommandResult none =
      run_cli("watch " + shell_quote(dir / "never") + " --interval 0.05 --wait-for-input 0.2 -o " +
              shell_quote(dir / "out2"));
  EXPECT_EQ(none.status, 2) << none.output;
  EXPECT_NE(none.output.find("no input appeared within 0.2 s"), std::string::npos) << none.output;
}

TEST(WatchCli, ANewInputItCannotFollowIsNamedOnce) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 3 --seed 5");
  // Paddle's concatenation of dygraph records, written once a run is over,
  // lands among the worker logs.
  ASSERT_EQ(run_cli("simulate --steps 2 --format paddle-dygraph -o " + shell_quote(dir / "dy") +
                    " --concatenation " + shell_quote(dir / "cat"))
                .status,
            0);
  const std::string script =
      shell_quote(kCli) + " watch " + shell_quote(from) +
      " --interval 0.05 --until-idle 1.5 --no-trace -o " + shell_quote(dir / "out") + " > " +
      shell_quote(dir / "stdout") + " 2>&1 &\n" +
      // The record file must land after watch has found its inputs: wait for
      // its first output (a fixed pause lost the race under a sanitizer).
      "pid=$!\nfor i in $(seq 300); do [ -s " + shell_quote(dir / "stdout") +
      " ] && break; sleep 0.05; done\nsleep 0.1\ncp " +
      shell_quote(dir / "cat/pipeline_profile.json") + " " +
      shell_quote(from + "/pipeline_profile.json") + "\nsleep 0.5\nrm " +
      shell_quote(from + "/pipeline_profile.json") + "\nwait $pid\necho rc=$?\n";
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
  simulate(dir, "--steps 2 --format paddle-dygraph --concatenation " + shell_quote(dir / "cat"));
  const CommandResult r = run_cli("watch " + shell_quote(dir / "cat") + " --until-idle 0.1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("pipeline_profile.json is Paddle's concatenation of the dygraph "
                          "records, written once the run is over: watch the per-rank files"),
            std::string::npos)
      << r.output;
  // A path that never appears: exit 2 once --wait-for-input has passed.
  const CommandResult missing =
      run_cli("watch " + shell_quote(dir / "nothing") + " --wait-for-input 0.2");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("no input appeared within 0.2 s (--wait-for-input)"),
            std::string::npos)
      << missing.output;
  // Said at once that the path does not exist; a Ctrl-C during the wait says
  // what happened, not that the wait ran out.
  EXPECT_NE(missing.output.find("nothing does not exist (yet): waiting up to 0.2 s"),
            std::string::npos)
      << missing.output;
  const CommandResult stopped =
      testing::run_command("timeout --preserve-status -s INT 0.5 " + std::string(PIPESCOPE_CLI) +
                           " watch " + shell_quote(dir / "typo") + " --wait-for-input 600 2>&1");
  EXPECT_EQ(stopped.status, 2) << stopped.output;
  EXPECT_NE(stopped.output.find("stopped by SIGINT (Ctrl-C) after"), std::string::npos)
      << stopped.output;
  EXPECT_NE(stopped.output.find("before any input appeared"), std::string::npos) << stopped.output;
  EXPECT_EQ(stopped.output.find("within 600 s"), std::string::npos) << stopped.output;
  // Nor does it write its outputs into a folder it watches (each look would
  // search them with the logs).
  ASSERT_EQ(run_cli("simulate --steps 2 -o " + shell_quote(dir / "logs")).status, 0);
  const CommandResult inside = run_cli("watch " + shell_quote(dir / "logs") + " -o " +
                                       shell_quote(dir / "logs/out") + " --until-idle 0.1");
  EXPECT_EQ(inside.status, 2) << inside.output;
  EXPECT_NE(inside.output.find("output folder " + (dir / "logs/out") + " is inside input folder " +
                               (dir / "logs") + "; choose another with -o"),
            std::string::npos)
      << inside.output;
}

/// Writes `files` (name -> content) into empty files of `live` in pieces of
/// 1-`max_piece` bytes, 20 ms apart, while `watch ARGS` follows the folder;
/// returns the watcher's output. The watch ends --until-idle 1.5 s after the
/// last piece.
std::string watch_while_written(const TempDir& dir, const std::string& live,
                                const std::vector<std::pair<std::string, std::string>>& files,
                                const std::string& args, std::size_t max_piece,
                                std::size_t first_bytes = 0) {
  fs::create_directories(live);
  std::string script = "set -e\n";
  std::vector<std::size_t> done(files.size(), 0);
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::string whole = dir.write("whole/" + files[f].first, files[f].second);
    done[f] = std::min(first_bytes, files[f].second.size());
    script += "head -c " + std::to_string(done[f]) + " " + shell_quote(whole) + " > " +
              shell_quote(live + "/" + files[f].first) + "\n";
  }
  script += shell_quote(kCli) + " watch " + shell_quote(live) +
            " --interval 0.05 --until-idle 1.5 --no-trace -o " + shell_quote(dir / "out") +
            " --jsonl " + shell_quote(dir / "steps.jsonl") + " " + args + " > " +
            shell_quote(dir / "stdout") + " 2>&1 &\n";
  script += "watcher=$!\nsleep 0.2\n";
  std::mt19937 rng(6);
  for (bool more = true; more;) {
    more = false;
    for (std::size_t f = 0; f < files.size(); ++f) {
      const std::size_t size = files[f].second.size();
      if (done[f] == size) continue;
      const std::size_t n = std::min<std::size_t>(1 + rng() % max_piece, size - done[f]);
      script += "dd if=" + shell_quote(dir / ("whole/" + files[f].first)) +
                " iflag=skip_bytes,count_bytes skip=" + std::to_string(done[f]) +
                " count=" + std::to_string(n) + " status=none >> " +
                shell_quote(live + "/" + files[f].first) + "\n";
      done[f] += n;
      more = true;
    }
    script += "sleep 0.02\n";
  }
  script += "wait $watcher\necho rc=$?\n";
  const CommandResult r = run_command("bash " + shell_quote(dir.write("writer.sh", script)));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("rc=0"), std::string::npos) << r.output << read_file(dir / "stdout");
  return read_file(dir / "stdout");
}

/// Every step printed live equals analyze's on the finished folder, and the
/// final summary is analyze's.
void expect_live_equals_analyze(const TempDir& dir, const std::string& live,
                                const std::string& printed, std::size_t steps,
                                const std::string& args = "") {
  EXPECT_EQ(printed.find("provisional"), std::string::npos) << printed;
  const CommandResult a = run_cli("analyze " + shell_quote(live) + " --no-trace -q -o " +
                                  shell_quote(dir / "a") + " " + args);
  ASSERT_EQ(a.status, 0) << a.output;
  const std::vector<WatchStepFigures> final = summary_steps(dir / "a/summary.json");
  ASSERT_EQ(final.size(), steps);
  expect_same(jsonl_steps(dir / "steps.jsonl"), final);
  EXPECT_EQ(read_file(dir / "out/summary.json"), read_file(dir / "a/summary.json"));
}

std::vector<std::pair<std::string, std::string>> folder_files(const std::string& folder) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    files.push_back({entry.path().filename().string(), read_file(entry.path().string())});
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(WatchCli, CompressedLogsWrittenWhileWatchedMatchAnalyze) {
  TempDir dir;
  const std::string from = simulate(dir, "--steps 6 --comm --seed 21");
  std::vector<std::pair<std::string, std::string>> files;
  for (int d = 0; d < 4; ++d) {
    const std::string text = read_file(fs::path(from) / fmt::format("workerlog.{}", d));
    if (d % 2 == 0) {
      files.push_back({fmt::format("workerlog.{}.gz", d), testing::gzip(text)});
    } else {
      files.push_back({fmt::format("workerlog.{}.zst", d), testing::zstd(text)});
    }
  }
  const std::string live = dir / "live";
  const std::string printed = watch_while_written(dir, live, files, "", 700);
  EXPECT_NE(printed.find("step 5  window "), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 6);
}

TEST(WatchCli, IvlRecordsWrittenWhileWatchedMatchAnalyze) {
  TempDir dir;
  simulate(dir, "--steps 6 --comm --seed 22 --ivl " + shell_quote(dir / "ivl"));
  const std::string live = dir / "live";
  // The header first (the timer writes it when it opens the file), then
  // pieces that cut blocks anywhere.
  const std::string printed =
      watch_while_written(dir, live, folder_files(dir / "ivl"), "", 3000, 4096);
  EXPECT_NE(printed.find("step 5  window "), std::string::npos) << printed;
  EXPECT_EQ(printed.find("torn"), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 6);
}

TEST(WatchCli, DygraphRecordsWrittenWhileWatchedMatchAnalyze) {
  TempDir dir;
  const std::string from = simulate(dir, "--format paddle-dygraph --steps 6 --seed 23");
  const std::string live = dir / "live";
  const std::string printed = watch_while_written(dir, live, folder_files(from), "", 600);
  EXPECT_NE(printed.find("step 5  window "), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 6);
}

TEST(WatchCli, TracesAreReadOnceWrittenAndMatchAnalyze) {
  TempDir dir;
  const std::string from = simulate(dir, "--format torch --steps 5 --seed 24");
  const std::string live = dir / "live";
  const std::string printed = watch_while_written(dir, live, folder_files(from), "", 40000);
  EXPECT_NE(printed.find("step 4  window "), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 5);
}

TEST(WatchCli, NsysExportsAreReadOnceStableAndMatchAnalyze) {
  TempDir dir;
  const std::string from = simulate(dir, "--format nsys --steps 5 --seed 26");
  const std::string live = dir / "live";
  // Written in pieces as `nsys export` writes them: each is read once its
  // size stays the same at two looks, whole.
  const std::string printed = watch_while_written(dir, live, folder_files(from), "", 60000);
  EXPECT_NE(printed.find("step 4  window "), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 5);
}

TEST(WatchCli, StageMapAndDevicesApplyLiveAndInTheFinalPass) {
  TempDir dir;
  const std::string from =
      simulate(dir, "--stages 2 --devices-per-stage 2 --steps 5 --comm --seed 25");
  const std::string live = dir / "live";
  const std::string printed =
      watch_while_written(dir, live, folder_files(from), "--stages tp=2 --devices 0-3", 2000);
  EXPECT_NE(printed.find("step 4  window "), std::string::npos) << printed;
  expect_live_equals_analyze(dir, live, printed, 5, "--stages tp=2 --devices 0-3");
  // A bad map is refused before anything is followed, as analyze refuses it.
  const CommandResult bad =
      run_cli("watch " + shell_quote(from) + " --stages 0-1,1-2 --until-idle 0.1 -o " +
              shell_quote(dir / "bad"));
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("--stages"), std::string::npos) << bad.output;
}

TEST(WatchCli, ACompletedStepIsReportedWithinTwoIntervalsOfItsLastLine) {
  // One device, steps of F0 B0 appended one at a time, 2 s apart: step k
  // is complete once step k + 1's first job lands. With --interval 0.2 it
  // must be printed within two intervals; the bound checked is 1 s (five
  // intervals, for a loaded machine), which still fails if the report
  // waited for a later step (2 s).
  TempDir dir;
  const std::string log = dir.write("logs/workerlog.0", "");
  std::string script = shell_quote(kCli) + " watch " + shell_quote(dir / "logs") +
                       " --interval 0.2 --until-idle 3 --no-trace -o " + shell_quote(dir / "out") +
                       " | while IFS= read -r line; do echo \"$(date +%s.%N) $line\"; done > " +
                       shell_quote(dir / "stamped") + " &\nsleep 0.5\n";
  for (int k = 0; k < 5; ++k) {
    const std::int64_t t = 1'000'000 + 100 * k;
    const std::string lines = testing::wild_job_line(2 * k, 0, t, t + 4, "forward") +
                              testing::wild_job_line(2 * k + 1, 0, t + 5, t + 9, "backward");
    // The time is taken just before the append: taken after it, the watcher
    // can print the step before `date` has run.
    script += "echo $(date +%s.%N) >> " + shell_quote(dir / "landed") + "\nprintf '%s' " +
              shell_quote(lines) + " >> " + shell_quote(log) + "\nsleep 2\n";
  }
  script += "wait\n";
  const CommandResult r = run_command("bash -c " + shell_quote(script));
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<double> landed;
  std::istringstream landed_lines(read_file(dir / "landed"));
  for (double t; landed_lines >> t;) landed.push_back(t);
  ASSERT_EQ(landed.size(), 5u);
  std::map<int, double> reported;
  std::istringstream stamped(read_file(dir / "stamped"));
  for (std::string line; std::getline(stamped, line);) {
    const std::size_t at = line.find(" step ");
    if (at == std::string::npos) continue;
    reported[std::stoi(line.substr(at + 6))] = std::stod(line.substr(0, at));
  }
  // Steps 0-3 are completed by the next append; step 4 at --until-idle.
  for (int k = 0; k < 4; ++k) {
    ASSERT_EQ(reported.count(k), 1u) << read_file(dir / "stamped");
    const double latency = reported[k] - landed[k + 1];
    EXPECT_GE(latency, 0.0) << "step " << k;
    EXPECT_LT(latency, 1.0) << "step " << k << " reported " << latency << " s after its last line";
  }
  EXPECT_EQ(reported.count(4), 1u) << read_file(dir / "stamped");
}

// Log events reported live: each step's --jsonl object lists the events
// analyze places in that step's window or in the gap before it (the same
// devices, ids and offsets), on a run with events at known times.
TEST(WatchCli, StepsCarryTheirLogEventsAsAnalyzePlacesThem) {
  if (run_cli("analyze --help").output.find("--no-events") == std::string::npos) GTEST_SKIP();
  TempDir dir;
  const std::string run = simulate(dir, "--steps 12 --events --stall 6:3:300 --utc-offset -07:00");
  ASSERT_EQ(
      run_cli("analyze -q --no-trace " + shell_quote(run) + " -o " + shell_quote(dir / "analyzed"))
          .status,
      0);
  const CommandResult r =
      run_cli("watch " + shell_quote(run) + " --interval 0.05 --until-idle 0.2 --no-trace -o " +
              shell_quote(dir / "out") + " --jsonl " + shell_quote(dir / "steps.jsonl"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("paddlenlp_saving_checkpoint at +"), std::string::npos) << r.output;
  // (step, device, id, offset) as analyze lists them, and as watch did.
  using Key = std::tuple<std::int64_t, std::int64_t, std::string, std::int64_t>;
  std::vector<Key> want, got;
  simdjson::dom::parser parser;
  const simdjson::dom::element summary = parser.load(dir / "analyzed/summary.json");
  for (const auto step : summary["events"]["steps"].get_array()) {
    for (const char* list : {"before", "events"}) {
      simdjson::dom::array events;
      if (step[list].get(events) != simdjson::SUCCESS) continue;
      for (const auto e : events) {
        want.emplace_back(step["step"].get_int64().value(), e["device"].get_int64().value(),
                          std::string(e["id"].get_string().value()),
                          e["offset_ns"].get_int64().value());
      }
    }
  }
  std::istringstream lines(read_file(dir / "steps.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    simdjson::dom::parser line_parser;
    const simdjson::dom::element step = line_parser.parse(line);
    for (const auto e : step["events"].get_array()) {
      got.emplace_back(step["step"].get_int64().value(), e["device"].get_int64().value(),
                       std::string(e["id"].get_string().value()),
                       e["offset_ns"].get_int64().value());
    }
  }
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_GE(want.size(), 15u);
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace pipescope
