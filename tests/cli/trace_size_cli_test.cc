// `analyze` on a run whose whole trace would pass the size limit: the traces
// hold the median and the slowest complete step with a step on each side,
// the stderr line and summary.json say so, `--steps all` and any --steps
// list write what they name, and a run under the limit keeps its whole
// trace. The limits are made small with PIPESCOPE_TRACE_LIMIT_BYTES (for
// tests) rather than writing hundreds of megabytes.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "export/perfetto/perfetto_trace.pb.h"
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
namespace pb = perfetto::protos;

// `pipescope analyze RUN -o OUT ARGS` with the limits "JSON,PFTRACE" (none: the defaults).
CommandResult analyze(const fs::path& run, const fs::path& out, const std::string& args,
                      const std::string& limits = "") {
  const std::string env = limits.empty() ? "" : "PIPESCOPE_TRACE_LIMIT_BYTES=" + limits + " ";
  return run_command(env + PIPESCOPE_CLI + std::string(" analyze ") + shell_quote(run.string()) +
                     " -q -o " + shell_quote(out.string()) + " " + args + " 2>&1");
}

// The step numbers of the "step N" slices of trace.json, and of its jobs.
struct JsonSteps {
  std::set<std::int64_t> windows;
  std::set<std::int64_t> jobs;
};

JsonSteps json_steps(const fs::path& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element trace;
  EXPECT_EQ(parser.load(path.string()).get(trace), simdjson::SUCCESS);
  JsonSteps steps;
  for (simdjson::dom::element event : simdjson::dom::array(trace["traceEvents"])) {
    if (std::string_view(event["ph"]) != "X") continue;
    const std::string_view cat = event["cat"];
    if (cat == "step") {
      const std::string_view name = event["name"];  // "step N"
      steps.windows.insert(std::stoll(std::string(name.substr(5))));
    } else if (cat != "bubble") {
      steps.jobs.insert(std::int64_t(event["args"]["step"]));
    }
  }
  return steps;
}

// The step numbers of the "step N" slices of trace.pftrace (interned names).
std::set<std::int64_t> pftrace_steps(const fs::path& path) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(testing::read_file(path)));
  std::set<std::int64_t> steps;
  for (const pb::TracePacket& packet : trace.packet()) {
    for (const pb::EventName& name : packet.interned_data().event_names()) {
      if (name.name().rfind("step ", 0) == 0) steps.insert(std::stoll(name.name().substr(5)));
    }
  }
  return steps;
}

// The median (lower middle, earlier of equal windows) and the slowest
// complete step of a summary, worked out here from its steps.
std::pair<std::int64_t, std::int64_t> median_and_slowest(simdjson::dom::element summary) {
  struct Step {
    std::int64_t number, duration;
  };
  std::vector<Step> complete;
  for (simdjson::dom::element step : simdjson::dom::array(summary["steps"])) {
    if (bool(step["complete"])) {
      complete.push_back({std::int64_t(step["step"]), std::int64_t(step["duration_ns"])});
    }
  }
  EXPECT_GE(complete.size(), 3u);
  std::stable_sort(complete.begin(), complete.end(),
                   [](const Step& a, const Step& b) { return a.duration < b.duration; });
  return {complete[(complete.size() - 1) / 2].number, complete.back().number};
}

class TraceSizeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // 20 steps of 4 stages with log events: about 500 KB of JSON.
    const CommandResult r = run_cli("simulate -o " + shell_quote(*dir_ / "run") +
                                    " --stages 4 --micro-batches 8 --steps 20 --seed 11 --events");
    ASSERT_EQ(r.status, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static fs::path run() { return dir_->path() / "run"; }
  static fs::path out(const char* name) { return dir_->path() / name; }

  static TempDir* dir_;
};
TempDir* TraceSizeCli::dir_ = nullptr;

TEST_F(TraceSizeCli, OverTheLimitBothTracesHoldTheMedianAndSlowestStepsAndSaySo) {
  const CommandResult r = analyze(run(), out("cut"), "--perfetto", "20000,5000");
  ASSERT_EQ(r.status, 0) << r.output;

  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load((out("cut") / "summary.json").string()).get(summary), simdjson::SUCCESS);
  const auto [median, slowest] = median_and_slowest(summary);
  ASSERT_NE(median, slowest);
  std::set<std::int64_t> every;
  for (simdjson::dom::element step : simdjson::dom::array(summary["steps"])) {
    every.insert(std::int64_t(step["step"]));
  }
  std::set<std::int64_t> kept;  // each with the steps before and after it that exist
  for (const std::int64_t s : {median, slowest}) {
    for (const std::int64_t n : {s - 1, s, s + 1}) {
      if (every.count(n) > 0) kept.insert(n);
    }
  }
  ASSERT_LT(kept.size(), every.size());

  // The traces hold those steps, and those steps' jobs only.
  const JsonSteps json = json_steps(out("cut") / "trace.json");
  EXPECT_EQ(json.windows, kept);
  EXPECT_EQ(json.jobs, kept);
  EXPECT_EQ(pftrace_steps(out("cut") / "trace.pftrace"), kept);

  // summary.json: an entry per trace, the same steps as --steps writes them.
  simdjson::dom::object traces;
  ASSERT_EQ(summary["traces"].get(traces), simdjson::SUCCESS) << "no traces in summary.json";
  EXPECT_EQ(traces.size(), 2u);
  std::string steps_text;
  for (const char* file : {"trace.json", "trace.pftrace"}) {
    SCOPED_TRACE(file);
    simdjson::dom::element entry = traces[file];
    EXPECT_EQ(std::string_view(entry["reason"]), "size_limit");
    EXPECT_EQ(std::string_view(entry["median_step"]), std::to_string(median));
    EXPECT_EQ(std::string_view(entry["slowest_step"]), std::to_string(slowest));
    EXPECT_EQ(int64_t(entry["limit_bytes"]), std::string_view(file) == "trace.json" ? 20000 : 5000);
    EXPECT_GT(int64_t(entry["estimated_full_bytes"]), int64_t(entry["limit_bytes"]));
    steps_text = std::string(std::string_view(entry["steps"]));
  }

  // One line on stderr: what, why, and how to get everything.
  const std::string line = "pipescope: trace.json and trace.pftrace hold steps " + steps_text +
                           " only (the median step " + std::to_string(median) +
                           " and the slowest " + std::to_string(slowest) +
                           ", each with a step on each side): the whole run's would be about ";
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; --steps all writes every step\n"), std::string::npos) << r.output;

  // --steps with that list writes the same traces, now recorded as chosen.
  const CommandResult same = analyze(run(), out("same"), "--perfetto --steps " + steps_text);
  ASSERT_EQ(same.status, 0) << same.output;
  EXPECT_EQ(testing::read_file(out("same") / "trace.json"),
            testing::read_file(out("cut") / "trace.json"));
  EXPECT_EQ(testing::read_file(out("same") / "trace.pftrace"),
            testing::read_file(out("cut") / "trace.pftrace"));
  EXPECT_EQ(same.output.find("hold steps"), std::string::npos) << same.output;
}

TEST_F(TraceSizeCli, StepsAllWritesEverythingTheEstimateForesaw) {
  const CommandResult cut = analyze(run(), out("est"), "--perfetto", "1,1");
  ASSERT_EQ(cut.status, 0) << cut.output;
  const CommandResult all = analyze(run(), out("all"), "--perfetto --steps all", "1,1");
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_EQ(all.output.find("hold steps"), std::string::npos) << all.output;

  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load((out("all") / "summary.json").string()).get(summary), simdjson::SUCCESS);
  EXPECT_EQ(summary["traces"].error(), simdjson::NO_SUCH_FIELD);  // the whole run: no entry
  std::set<std::int64_t> every;
  for (simdjson::dom::element step : simdjson::dom::array(summary["steps"])) {
    every.insert(std::int64_t(step["step"]));
  }
  EXPECT_EQ(json_steps(out("all") / "trace.json").windows, every);
  EXPECT_EQ(pftrace_steps(out("all") / "trace.pftrace"), every);

  // The estimate recorded by the held run is the whole trace's size, to the
  // byte on a run this small.
  simdjson::dom::parser est_parser;
  simdjson::dom::element est;
  ASSERT_EQ(est_parser.load((out("est") / "summary.json").string()).get(est), simdjson::SUCCESS);
  EXPECT_EQ(std::uint64_t(int64_t(est["traces"]["trace.json"]["estimated_full_bytes"])),
            fs::file_size(out("all") / "trace.json"));
  EXPECT_EQ(std::uint64_t(int64_t(est["traces"]["trace.pftrace"]["estimated_full_bytes"])),
            fs::file_size(out("all") / "trace.pftrace"));
}

TEST_F(TraceSizeCli, UnderTheLimitTheWholeTraceAsBefore) {
  // The default limits: this run is far under them.
  const CommandResult r = analyze(run(), out("default"), "--perfetto");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("hold steps"), std::string::npos) << r.output;
  const CommandResult all = analyze(run(), out("default-all"), "--perfetto --steps all");
  ASSERT_EQ(all.status, 0) << all.output;
  EXPECT_EQ(testing::read_file(out("default") / "trace.json"),
            testing::read_file(out("default-all") / "trace.json"));
  EXPECT_EQ(testing::read_file(out("default") / "trace.pftrace"),
            testing::read_file(out("default-all") / "trace.pftrace"));
  EXPECT_EQ(testing::read_file(out("default") / "summary.json"),
            testing::read_file(out("default-all") / "summary.json"));
  EXPECT_EQ(testing::read_file(out("default") / "summary.json").find("\"traces\""),
            std::string::npos);

  // Only the JSON trace over its limit: trace.pftrace stays whole, and only
  // trace.json is named.
  const CommandResult json_only = analyze(run(), out("json-only"), "--perfetto", "1,1000000000");
  ASSERT_EQ(json_only.status, 0) << json_only.output;
  EXPECT_NE(json_only.output.find("pipescope: trace.json holds steps "), std::string::npos)
      << json_only.output;
  EXPECT_EQ(testing::read_file(out("json-only") / "trace.pftrace"),
            testing::read_file(out("default") / "trace.pftrace"));
}

TEST_F(TraceSizeCli, AStepListIsRecordedAsChosen) {
  const CommandResult r = analyze(run(), out("list"), "--steps 3-4,9", "1,1");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("hold steps"), std::string::npos) << r.output;
  EXPECT_EQ(json_steps(out("list") / "trace.json").windows, (std::set<std::int64_t>{3, 4, 9}));
  simdjson::dom::parser parser;
  simdjson::dom::element summary;
  ASSERT_EQ(parser.load((out("list") / "summary.json").string()).get(summary), simdjson::SUCCESS);
  simdjson::dom::element entry = summary["traces"]["trace.json"];
  EXPECT_EQ(std::string_view(entry["reason"]), "steps_option");
  EXPECT_EQ(std::string_view(entry["steps"]), "3-4,9");
  EXPECT_EQ(entry["median_step"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(summary["traces"]["trace.pftrace"].error(), simdjson::NO_SUCH_FIELD);  // not written
}

TEST_F(TraceSizeCli, AMalformedTestLimitIsAUsageError) {
  const CommandResult r = analyze(run(), out("bad"), "", "lots");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("PIPESCOPE_TRACE_LIMIT_BYTES='lots'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out("bad") / "summary.json"));
}

}  // namespace
}  // namespace pipescope
