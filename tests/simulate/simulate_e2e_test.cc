// End-to-end: `pipescope simulate` writes ~30 random runs (every schedule of the table,
// machines, noise, shuffling, ANSI, CRLF, comm jobs, ...); `pipescope analyze`
// must report exactly the metrics in each run's expected.json. A small
// checker written here from the contract (parsing the logs and re-detecting
// steps) must agree with expected.json too, which checks the simulator's
// construction independently of the analysis engine.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "support/command_runner.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::run_cli;

// ~30 configurations drawn from a fixed seed, covering every option.
std::vector<std::string> random_configs() {
  std::mt19937_64 random(20231020);
  auto pick = [&](int lo, int hi) {  // inclusive; avoids distribution differences
    return lo + static_cast<int>(random() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const char* schedules[] = {"fthenb",
                             "1f1b",
                             "vpp",
                             "zbh1",
                             "eager1f1b",
                             "dygraph-1f1b",
                             "dygraph-interleave",
                             "torch-gpipe",
                             "torch-1f1b",
                             "torch-interleaved1f1b",
                             "torch-interleavedzerobubble",
                             "torch-zbvzerobubble",
                             "torch-dualpipev"};
  constexpr int kSchedules = sizeof(schedules) / sizeof(schedules[0]);
  std::vector<std::string> configs;
  for (int i = 0; i < 30; ++i) {
    const std::string schedule = schedules[i % kSchedules];
    const int stages = pick(2, 8);
    const int per_stage = pick(0, 4) == 0 ? 2 : 1;
    const int devices = stages * per_stage;
    std::vector<int> machine_choices;
    for (int k = 1; k <= 3; ++k) {
      if (devices % k == 0) machine_choices.push_back(k);
    }
    const int machines = machine_choices[pick(0, static_cast<int>(machine_choices.size()) - 1)];
    std::string args = fmt::format("--schedule {} --stages {} --machines {} --steps {} --seed {}",
                                   schedule, stages, machines, pick(1, 4), i + 1);
    const bool interleaved = schedule == "vpp" || schedule == "dygraph-interleave" ||
                             schedule.starts_with("torch-interleaved");
    if (interleaved) {
      args += fmt::format(" --micro-batches {} --chunks {}", stages * pick(1, 2), pick(2, 3));
      if (pick(0, 1)) args += " --chunk-names paren";
    } else {
      // Each framework's own minimum (the Paddle passes assert theirs).
      int least = 1;
      if (schedule == "1f1b" || schedule == "zbh1") least = stages;
      if (schedule == "eager1f1b") least = 2 * stages - 1;
      if (schedule == "torch-dualpipev") least = 2 * stages;
      args += fmt::format(" --micro-batches {}", std::max(least, pick(1, 12)));
      if (schedule == "torch-zbvzerobubble" || schedule == "torch-dualpipev") {
        args += " --chunks 2";
        if (pick(0, 1)) args += " --chunk-names paren";
      }
    }
    if (per_stage > 1) args += " --devices-per-stage 2";
    if (pick(0, 1)) args += " --shuffle";
    if (pick(0, 1)) args += fmt::format(" --noise-per-job {}", pick(1, 6));
    if (pick(0, 2) == 0) args += " --ansi";
    if (pick(0, 2) == 0) args += " --crlf";
    if (pick(0, 1)) args += " --comm";
    if (i % 3 == 1) args += " --lr";  // not drawn: keeps the other draws as they were
    if (pick(0, 2) == 0) args += fmt::format(" --first-step {}", pick(0, 500));
    const char* ids[] = {"index", "counter", "microbatch"};
    args += fmt::format(" --job-id {}", ids[pick(0, 2)]);
    const int decimals[] = {3, 6, 9};
    args += fmt::format(" --time-decimals {}", decimals[pick(0, 2)]);
    if (pick(0, 1)) args += " --resolution ns";
    if (pick(0, 3) == 0) args += fmt::format(" --slow-stage {}:{}", pick(0, stages - 1), 1.5);
    if (machines > 1 && pick(0, 1)) {
      args += fmt::format(" --skew {}:{}", pick(1, machines - 1), pick(-20'000'000, 20'000'000));
    }
    if (pick(0, 4) == 0) args += fmt::format(" --latency-us 0 --jitter 0");
    configs.push_back(args);
  }
  return configs;
}

// Runs every configuration once for the whole suite.
class SimulateE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    configs_ = random_configs();
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      const CommandResult r = run_cli(fmt::format("simulate -o '{}' {}", run_dir(i), configs_[i]));
      simulate_status_.push_back(r.status);
      simulate_output_.push_back(r.output);
    }
  }
  static void TearDownTestSuite() { dir_.reset(); }

  static std::string run_dir(std::size_t i) { return *dir_ / fmt::format("run{}", i); }
  static std::string out_dir(std::size_t i) { return *dir_ / fmt::format("out{}", i); }

  static std::unique_ptr<testing::TempDir> dir_;
  static std::vector<std::string> configs_;
  static std::vector<int> simulate_status_;
  static std::vector<std::string> simulate_output_;
};

std::unique_ptr<testing::TempDir> SimulateE2E::dir_;
std::vector<std::string> SimulateE2E::configs_;
std::vector<int> SimulateE2E::simulate_status_;
std::vector<std::string> SimulateE2E::simulate_output_;

// --- comparison of summary-shaped JSON documents ---------------------------

bool ratio_equal(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b));
}

class Comparer {
 public:
  void ints(simdjson::dom::element expected, simdjson::dom::element actual, const char* key,
            const std::string& where) {
    std::int64_t e = 0, a = 0;
    if (expected[key].get_int64().get(e) != simdjson::SUCCESS ||
        actual[key].get_int64().get(a) != simdjson::SUCCESS) {
      note(fmt::format("{}{}: missing or not an integer", where, key));
    } else if (e != a) {
      note(fmt::format("{}{}: expected {}, got {}", where, key, e, a));
    }
  }
  /// ints() when both sides have the key (comm_ns: the simulator's expected
  /// figures and summary.json have it, the test's own oracle below does not).
  void ints_if_expected(simdjson::dom::element expected, simdjson::dom::element actual,
                        const char* key, const std::string& where) {
    if (expected[key].error() == simdjson::SUCCESS && actual[key].error() == simdjson::SUCCESS) {
      ints(expected, actual, key, where);
    }
  }
  void ratio(simdjson::dom::element expected, simdjson::dom::element actual, const char* key,
             const std::string& where) {
    double e = 0, a = 0;
    if (expected[key].get_double().get(e) != simdjson::SUCCESS ||
        actual[key].get_double().get(a) != simdjson::SUCCESS) {
      note(fmt::format("{}{}: missing or not a number", where, key));
    } else if (!ratio_equal(e, a)) {
      note(fmt::format("{}{}: expected {}, got {}", where, key, e, a));
    }
  }
  void compare(simdjson::dom::element expected, simdjson::dom::element actual) {
    for (const char* key : {"jobs", "first_step", "total_window_ns"})
      ints(expected, actual, key, "");
    ints_if_expected(expected, actual, "comm_ns", "");
    ratio(expected, actual, "bubble_ratio", "");
    simdjson::dom::array e_devices, a_devices, e_steps, a_steps;
    if (expected["devices"].get_array().get(e_devices) ||
        actual["devices"].get_array().get(a_devices) ||
        expected["steps"].get_array().get(e_steps) || actual["steps"].get_array().get(a_steps)) {
      note("devices or steps missing");
      return;
    }
    if (e_devices.size() != a_devices.size() || e_steps.size() != a_steps.size()) {
      note(fmt::format("expected {} devices and {} steps, got {} and {}", e_devices.size(),
                       e_steps.size(), a_devices.size(), a_steps.size()));
      return;
    }
    for (std::size_t d = 0; d < e_devices.size(); ++d) {
      const std::string where = fmt::format("devices[{}].", d);
      for (const char* key : {"device", "machine", "rank", "jobs", "steps", "busy_ns", "idle_ns"}) {
        ints(e_devices.at(d), a_devices.at(d), key, where);
      }
      ints_if_expected(e_devices.at(d), a_devices.at(d), "comm_ns", where);
      ratio(e_devices.at(d), a_devices.at(d), "utilization", where);
    }
    for (std::size_t k = 0; k < e_steps.size(); ++k) {
      const std::string where = fmt::format("steps[{}].", k);
      for (const char* key : {"step", "start_ns", "end_ns", "duration_ns"}) {
        ints(e_steps.at(k), a_steps.at(k), key, where);
      }
      ratio(e_steps.at(k), a_steps.at(k), "bubble_ratio", where);
      simdjson::dom::array e_dev = e_steps.at(k)["devices"], a_dev = a_steps.at(k)["devices"];
      if (e_dev.size() != a_dev.size()) {
        note(where + "devices: sizes differ");
        continue;
      }
      for (std::size_t d = 0; d < e_dev.size(); ++d) {
        for (const char* key : {"device", "busy_ns", "idle_ns"}) {
          ints(e_dev.at(d), a_dev.at(d), key, fmt::format("{}devices[{}].", where, d));
        }
        ints_if_expected(e_dev.at(d), a_dev.at(d), "comm_ns",
                         fmt::format("{}devices[{}].", where, d));
      }
    }
  }
  const std::string& differences() const { return text_; }
  bool equal() const { return count_ == 0; }

 private:
  void note(const std::string& line) {
    if (++count_ <= 8) text_ += "  " + line + "\n";
  }
  int count_ = 0;
  std::string text_;
};

// --- an independent checker: the contract applied to the logs --------------

struct LoggedJob {
  std::int64_t start = 0, end = 0;
  std::int64_t micro_batch = 0;
  std::uint64_t line = 0;
  char kind = 'o';  // f, b, p (optimizer), r (recv), c (other comm), l (lr), o (other)
};

struct LoggedDevice {
  int machine = 0, rank = 0;
  std::vector<LoggedJob> jobs;
};

std::vector<std::pair<std::uint64_t, fs::path>> numbered(const fs::path& dir,
                                                         std::string_view prefix, bool dirs) {
  std::vector<std::pair<std::uint64_t, fs::path>> found;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() != dirs || !name.starts_with(prefix) || name.size() == prefix.size()) {
      continue;
    }
    const std::string digits = name.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    found.emplace_back(std::stoull(digits), entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<std::int64_t> ms_to_ns(std::string_view text) {
  const auto dot = text.find('.');
  std::int64_t ms = 0;
  const auto int_part = text.substr(0, dot);
  if (std::from_chars(int_part.data(), int_part.data() + int_part.size(), ms).ec != std::errc()) {
    return std::nullopt;
  }
  std::int64_t ns = ms * 1'000'000;
  if (dot != std::string_view::npos) {
    std::string frac(text.substr(dot + 1));
    frac.resize(9, '0');
    ns += std::stoll(frac.substr(0, 6)) + (frac[6] >= '5' ? 1 : 0);
  }
  return ns;
}

// Pulls "key = value" out of the job-line text (the simulator's exact format).
std::string_view field(std::string_view line, std::string_view key) {
  const auto at = line.find(key);
  if (at == std::string_view::npos) return {};
  auto value = line.substr(at + key.size());
  return value.substr(0, value.find(','));
}

bool parse_line(std::string line, LoggedJob& job, std::optional<std::int64_t>& first_step) {
  // Strip ANSI CSI sequences and a trailing CR, as the grammar says.
  std::string clean;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7E)) ++i;
      continue;
    }
    clean.push_back(line[i]);
  }
  if (!clean.empty() && clean.back() == '\r') clean.pop_back();
  constexpr std::string_view kStep = "Schedule Profiler start at step ";
  if (const auto at = clean.find(kStep); at != std::string::npos && !first_step) {
    first_step = std::stoll(clean.substr(at + kStep.size()));
  }
  const auto at = clean.find("Profiler Info: Job (");
  if (at == std::string::npos) return false;
  const std::string_view rest = std::string_view(clean).substr(at);
  const std::string_view type = field(rest, "type = ");
  const auto start = ms_to_ns(field(rest, "job_start_time = "));
  const auto end = ms_to_ns(field(rest, "job_end_time = "));
  if (type.empty() || !start || !end) return false;
  job.start = *start;
  job.end = *end;
  job.micro_batch = std::stoll(std::string(field(rest, "micro_batch_id = ")));
  job.kind = type.starts_with("forward")     ? 'f'
             : type.starts_with("backward")  ? 'b'
             : type.starts_with("optimizer") ? 'p'
             : type.starts_with("recv")      ? 'r'
             : type.starts_with("send")      ? 'c'
             : type.starts_with("lr")        ? 'l'
                                             : 'o';
  return true;
}

std::string independent_metrics_json(const fs::path& dir) {
  std::vector<LoggedDevice> devices;
  std::optional<std::int64_t> first_step;
  auto read_machine = [&](const fs::path& folder, int machine) {
    for (const auto& [rank, path] : numbered(folder, "workerlog.", false)) {
      LoggedDevice device{machine, static_cast<int>(rank), {}};
      std::ifstream in(path, std::ios::binary);
      std::string line;
      std::uint64_t number = 0;
      std::optional<std::int64_t> file_first;
      while (std::getline(in, line)) {
        LoggedJob job;
        job.line = ++number;
        if (parse_line(line, job, file_first)) device.jobs.push_back(job);
      }
      if (file_first) first_step = std::min(first_step.value_or(*file_first), *file_first);
      devices.push_back(std::move(device));
    }
  };
  const auto machines = numbered(dir, "machine", true);
  if (machines.empty()) read_machine(dir, 0);
  for (std::size_t k = 0; k < machines.size(); ++k)
    read_machine(machines[k].second, static_cast<int>(k));

  // Steps per device, by the contract's rule.
  const std::size_t count = devices.size();
  std::vector<std::vector<int>> step_of(count);
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>
      span;  // [k][d] first start, last end
  std::vector<std::vector<bool>> has;
  std::int64_t total_jobs = 0;
  for (std::size_t d = 0; d < count; ++d) {
    auto& jobs = devices[d].jobs;
    total_jobs += static_cast<std::int64_t>(jobs.size());
    std::sort(jobs.begin(), jobs.end(), [](const LoggedJob& a, const LoggedJob& b) {
      return std::tie(a.start, a.end, a.line) < std::tie(b.start, b.end, b.line);
    });
    // Openers, and the prologue: lr and recv jobs seen since the last
    // forward/backward/optimizer job join the step of the next opener.
    int step = -1;
    char previous = 0;  // the last f, b, p or l
    std::vector<std::size_t> prologue;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const LoggedJob& job = jobs[i];
      const bool opens =
          i == 0 || (job.kind == 'l' && previous != 0) ||
          (job.kind == 'f' && job.micro_batch == 0 && (previous == 'b' || previous == 'p'));
      if (opens) ++step;
      step_of[d].push_back(step);
      if (opens) {
        for (const std::size_t j : prologue) step_of[d][j] = step;
        prologue.clear();
      }
      if (job.kind == 'l' || job.kind == 'r') {
        prologue.push_back(i);
      } else if (job.kind == 'f' || job.kind == 'b' || job.kind == 'p') {
        prologue.clear();
      }
      if (job.kind == 'f' || job.kind == 'b' || job.kind == 'p' || job.kind == 'l') {
        previous = job.kind;
      }
    }
    if (static_cast<std::size_t>(step + 1) > span.size()) {
      span.resize(step + 1, std::vector<std::pair<std::int64_t, std::int64_t>>(count));
      has.resize(step + 1, std::vector<bool>(count, false));
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const auto k = static_cast<std::size_t>(step_of[d][i]);
      auto& s = span[k][d];
      s = has[k][d] ? std::pair{std::min(s.first, jobs[i].start), std::max(s.second, jobs[i].end)}
                    : std::pair{jobs[i].start, jobs[i].end};
      has[k][d] = true;
    }
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> windows;
  for (std::size_t k = 0; k < span.size(); ++k) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (std::size_t d = 0; d < count; ++d) {
      if (!has[k][d]) continue;
      lo = std::min(lo, span[k][d].first);
      hi = std::max(hi, span[k][d].second);
    }
    if (k > 0) lo = std::max(lo, windows.back().second);
    windows.emplace_back(lo, std::max(hi, lo));
  }
  // busy(d, k): sweep over the time-sorted jobs but comm jobs (r, c),
  // counting overlaps once.
  std::vector<std::vector<std::int64_t>> busy(count, std::vector<std::int64_t>(windows.size(), 0));
  for (std::size_t d = 0; d < count; ++d) {
    std::int64_t covered_to = INT64_MIN;
    for (const auto& job : devices[d].jobs) {
      if (job.kind == 'r' || job.kind == 'c') continue;
      const std::int64_t from = std::max(job.start, covered_to);
      if (job.end <= from) continue;
      for (std::size_t k = 0; k < windows.size(); ++k) {
        const std::int64_t a = std::max(from, windows[k].first);
        const std::int64_t b = std::min(job.end, windows[k].second);
        if (b > a) busy[d][k] += b - a;
      }
      covered_to = job.end;
    }
  }
  std::int64_t total_window = 0, total_idle = 0;
  for (const auto& w : windows) total_window += w.second - w.first;
  std::string json = fmt::format("{{\"jobs\": {}, \"first_step\": {}, \"total_window_ns\": {}, ",
                                 total_jobs, first_step.value_or(0), total_window);
  std::string device_json, step_json;
  for (std::size_t d = 0; d < count; ++d) {
    std::int64_t b = 0;
    for (auto x : busy[d]) b += x;
    total_idle += total_window - b;
    std::int64_t steps = 0;
    for (std::size_t k = 0; k < has.size(); ++k) steps += has[k][d] ? 1 : 0;
    device_json += fmt::format(
        "{}{{\"device\": {}, \"machine\": {}, \"rank\": {}, \"jobs\": {}, \"steps\": {}, "
        "\"busy_ns\": {}, \"idle_ns\": {}, \"utilization\": {}}}",
        d ? ", " : "", d, devices[d].machine, devices[d].rank, devices[d].jobs.size(), steps, b,
        total_window - b,
        total_window ? static_cast<double>(b) / static_cast<double>(total_window) : 0.0);
  }
  for (std::size_t k = 0; k < windows.size(); ++k) {
    const std::int64_t w = windows[k].second - windows[k].first;
    std::int64_t idle = 0;
    std::string per_device;
    for (std::size_t d = 0; d < count; ++d) {
      idle += w - busy[d][k];
      per_device += fmt::format("{}{{\"device\": {}, \"busy_ns\": {}, \"idle_ns\": {}}}",
                                d ? ", " : "", d, busy[d][k], w - busy[d][k]);
    }
    const double ratio =
        w ? static_cast<double>(idle) / static_cast<double>(w * static_cast<std::int64_t>(count))
          : 0.0;
    step_json += fmt::format(
        "{}{{\"step\": {}, \"start_ns\": {}, \"end_ns\": {}, \"duration_ns\": {}, "
        "\"bubble_ratio\": {}, \"devices\": [{}]}}",
        k ? ", " : "", first_step.value_or(0) + static_cast<std::int64_t>(k), windows[k].first,
        windows[k].second, w, ratio, per_device);
  }
  const double overall =
      total_window ? static_cast<double>(total_idle) /
                         static_cast<double>(total_window * static_cast<std::int64_t>(count))
                   : 0.0;
  json += fmt::format("\"bubble_ratio\": {}, \"devices\": [{}], \"steps\": [{}]}}", overall,
                      device_json, step_json);
  return json;
}

TEST_F(SimulateE2E, SimulateSucceeds) {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    EXPECT_EQ(simulate_status_[i], 0) << configs_[i] << "\n" << simulate_output_[i];
    EXPECT_TRUE(fs::exists(fs::path(run_dir(i)) / "expected.json")) << configs_[i];
  }
}

TEST_F(SimulateE2E, LogsAgreeWithExpectedByIndependentCheck) {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    if (simulate_status_[i] != 0) continue;  // reported by SimulateSucceeds
    simdjson::dom::parser expected_parser, actual_parser;
    simdjson::dom::element expected, actual;
    ASSERT_EQ(expected_parser.load(fs::path(run_dir(i)) / "expected.json").get(expected),
              simdjson::SUCCESS);
    const std::string json = independent_metrics_json(run_dir(i));
    ASSERT_EQ(actual_parser.parse(json).get(actual), simdjson::SUCCESS) << json;
    Comparer comparer;
    comparer.compare(expected, actual);
    EXPECT_TRUE(comparer.equal()) << "config: " << configs_[i] << "\n" << comparer.differences();
  }
}

TEST_F(SimulateE2E, AnalyzeReportsTheExpectedMetrics) {
  for (std::size_t i = 0; i < configs_.size(); ++i) {
    if (simulate_status_[i] != 0) continue;
    const CommandResult r =
        // --no-clock-fix: the expected figures are those of the skewed clocks as written.
        run_cli(fmt::format("analyze '{}' -o '{}' --quiet --no-clock-fix", run_dir(i), out_dir(i)));
    ASSERT_EQ(r.status, 0) << configs_[i] << "\n" << r.output;
    simdjson::dom::parser expected_parser, actual_parser;
    simdjson::dom::element expected, actual;
    ASSERT_EQ(expected_parser.load(fs::path(run_dir(i)) / "expected.json").get(expected),
              simdjson::SUCCESS);
    ASSERT_EQ(actual_parser.load(fs::path(out_dir(i)) / "summary.json").get(actual),
              simdjson::SUCCESS);
    Comparer comparer;
    comparer.compare(expected, actual);
    EXPECT_TRUE(comparer.equal()) << "config: " << configs_[i] << "\n" << comparer.differences();
  }
}

TEST_F(SimulateE2E, RefusesANonEmptyFolderWithoutForce) {
  const CommandResult again = run_cli(fmt::format("simulate -o '{}'", run_dir(0)));
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
  const CommandResult bad = run_cli(
      fmt::format("simulate -o '{}' --schedule vpp --stages 4 --micro-batches 6", *dir_ / "bad"));
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("multiple"), std::string::npos) << bad.output;
  const CommandResult help = run_cli("simulate --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--target-bytes"), std::string::npos) << help.output;
}

}  // namespace
}  // namespace pipescope
