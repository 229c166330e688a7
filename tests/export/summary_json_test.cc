// summary.json: every field of the schema, read back with simdjson, from a
// hand-built Run and Metrics (the exporter never looks at the logs).
#include "export/summary_json.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "support/temp_dir.h"
#include "version.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;

Job summary_job(std::int64_t start, std::int64_t end, TypeId type, std::int64_t mb,
                std::uint32_t line) {
  Job job;
  job.start_ns = start;
  job.end_ns = end;
  job.job_id = line * 10;
  job.micro_batch = mb;
  job.type = type;
  job.line = line;
  return job;
}

// Two machines, three devices; an odd job type with invalid UTF-8 and a
// control character; one unreadable input.
struct SummarySample {
  pipescope::Run run;
  Metrics metrics;
};

SummarySample summary_sample() {
  SummarySample s;
  Run& run = s.run;
  const TypeId forward = run.types.intern("forward");
  const TypeId backward = run.types.intern("backward");
  const TypeId optimizer = run.types.intern("optimizer");
  const TypeId send = run.types.intern("send_v2");
  const TypeId odd = run.types.intern("bad\xFF\x01name");
  run.types.intern("unused");  // interned but without jobs: not listed

  Device d0;
  d0.index = 0;
  d0.machine = 0;
  d0.machine_name = "machine0";
  d0.rank = 0;
  d0.path = "/logs/machine0/workerlog.0";
  d0.jobs = {summary_job(1000, 2000, forward, 0, 1), summary_job(2000, 3500, backward, 0, 2),
             summary_job(3500, 4000, optimizer, 0, 3)};
  Device d1;
  d1.index = 1;
  d1.machine = 0;
  d1.machine_name = "machine0";
  d1.rank = 1;
  d1.path = "/logs/machine0/workerlog.1";
  d1.jobs = {summary_job(1500, 2500, forward, 0, 1), summary_job(2500, 2600, send, 0, 2),
             summary_job(2600, 3800, backward, 0, 3)};
  Device d2;
  d2.index = 2;
  d2.machine = 1;
  d2.machine_name = "machine1";
  d2.rank = 0;
  d2.path = "/logs/machine1/workerlog.0";
  d2.jobs = {summary_job(1200, 1300, odd, 3, 7)};
  run.devices = {d0, d1, d2};

  run.inputs = {
      {"/logs/machine0/workerlog.0", 1000, 20, 3, 1, 0, ""},
      {"/logs/machine0/workerlog.1", 900, 18, 3, 0, 2, ""},
      {"/logs/machine1/workerlog.0", 50, 1, 1, 0, 0, "read failed: Input/output error"},
  };
  run.first_step = 100;
  run.diagnostics = {{"/logs/machine0/workerlog.0", 5, "malformed job line"}};

  Metrics& m = s.metrics;
  StepWindow step;
  step.step = 100;
  step.start_ns = 1000;
  step.end_ns = 4000;
  step.devices = {{2500, 500}, {2300, 700}, {100, 2900}};
  step.bubble_ratio = 4100.0 / 9000.0;
  m.steps = {step};
  m.devices = {{2500, 500, 2500.0 / 3000.0, 1},
               {2300, 700, 2300.0 / 3000.0, 1},
               {100, 2900, 100.0 / 3000.0, 0}};
  m.bubble_ratio = 4100.0 / 9000.0;
  m.total_window_ns = 3000;
  m.job_step = {{0, 0, 0}, {0, 0, 0}, {-1}};
  return s;
}

std::int64_t get_int(simdjson::dom::element e, std::string_view key) {
  std::int64_t v = 0;
  EXPECT_EQ(e[key].get_int64().get(v), simdjson::SUCCESS) << key;
  return v;
}
std::uint64_t get_uint(simdjson::dom::element e, std::string_view key) {
  std::uint64_t v = 0;
  EXPECT_EQ(e[key].get_uint64().get(v), simdjson::SUCCESS) << key;
  return v;
}
double get_double(simdjson::dom::element e, std::string_view key) {
  double v = 0;
  EXPECT_EQ(e[key].get_double().get(v), simdjson::SUCCESS) << key;
  return v;
}
std::string get_string(simdjson::dom::element e, std::string_view key) {
  std::string_view v;
  EXPECT_EQ(e[key].get_string().get(v), simdjson::SUCCESS) << key;
  return std::string(v);
}
simdjson::dom::array get_array(simdjson::dom::element e, std::string_view key) {
  simdjson::dom::array v;
  EXPECT_EQ(e[key].get_array().get(v), simdjson::SUCCESS) << key;
  return v;
}
std::vector<simdjson::dom::element> elements(simdjson::dom::array array) {
  std::vector<simdjson::dom::element> out;
  for (simdjson::dom::element e : array) out.push_back(e);
  return out;
}

TEST(ExportSummary, WritesEveryField) {
  TempDir dir;
  const SummarySample s = summary_sample();
  const std::string path = dir / "summary.json";
  write_summary_json(s.run, s.metrics, path);

  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.load(path).get(root), simdjson::SUCCESS) << read_file(path);

  EXPECT_EQ(get_string(root, "schema"), "pipescope.summary/1");
  EXPECT_EQ(get_string(root["tool"], "name"), "pipescope");
  EXPECT_EQ(get_string(root["tool"], "version"), pipescope::kVersion);
  EXPECT_EQ(get_int(root, "jobs"), 7);
  EXPECT_EQ(get_int(root, "first_step"), 100);
  EXPECT_EQ(get_double(root, "bubble_ratio"), 4100.0 / 9000.0);
  EXPECT_EQ(get_int(root, "total_window_ns"), 3000);

  const auto devices = elements(get_array(root, "devices"));
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(get_int(devices[1], "device"), 1);
  EXPECT_EQ(get_int(devices[1], "machine"), 0);
  EXPECT_EQ(get_string(devices[1], "machine_name"), "machine0");
  EXPECT_EQ(get_int(devices[1], "rank"), 1);
  EXPECT_EQ(get_string(devices[1], "path"), "/logs/machine0/workerlog.1");
  EXPECT_EQ(get_int(devices[1], "jobs"), 3);
  EXPECT_EQ(get_int(devices[1], "steps"), 1);
  EXPECT_EQ(get_int(devices[1], "busy_ns"), 2300);
  EXPECT_EQ(get_int(devices[1], "idle_ns"), 700);
  EXPECT_EQ(get_double(devices[1], "utilization"), 2300.0 / 3000.0);
  EXPECT_EQ(get_int(devices[2], "machine"), 1);
  EXPECT_EQ(get_int(devices[2], "steps"), 0);

  const auto steps = elements(get_array(root, "steps"));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(get_int(steps[0], "step"), 100);
  EXPECT_EQ(get_int(steps[0], "start_ns"), 1000);
  EXPECT_EQ(get_int(steps[0], "end_ns"), 4000);
  EXPECT_EQ(get_int(steps[0], "duration_ns"), 3000);
  EXPECT_EQ(get_double(steps[0], "bubble_ratio"), 4100.0 / 9000.0);
  const auto step_devices = elements(get_array(steps[0], "devices"));
  ASSERT_EQ(step_devices.size(), 3u);
  EXPECT_EQ(get_int(step_devices[2], "device"), 2);
  EXPECT_EQ(get_int(step_devices[2], "busy_ns"), 100);
  EXPECT_EQ(get_int(step_devices[2], "idle_ns"), 2900);

  // Sorted by type name; the invalid byte became U+FFFD, the control escaped.
  const auto types = elements(get_array(root, "job_types"));
  ASSERT_EQ(types.size(), 5u);
  const std::pair<std::string, std::string> expected_types[] = {
      {"backward", "backward"},
      {"bad\xEF\xBF\xBD\x01name", "other"},
      {"forward", "forward"},
      {"optimizer", "optimizer"},
      {"send_v2", "comm"}};
  const std::int64_t expected_counts[] = {2, 1, 2, 1, 1};
  const std::int64_t expected_totals[] = {1500 + 1200, 100, 1000 + 1000, 500, 100};
  for (std::size_t i = 0; i < types.size(); ++i) {
    EXPECT_EQ(get_string(types[i], "type"), expected_types[i].first);
    EXPECT_EQ(get_string(types[i], "kind"), expected_types[i].second);
    EXPECT_EQ(get_int(types[i], "jobs"), expected_counts[i]);
    EXPECT_EQ(get_int(types[i], "total_ns"), expected_totals[i]);
  }

  const auto inputs = elements(get_array(root, "inputs"));
  ASSERT_EQ(inputs.size(), 3u);
  EXPECT_EQ(get_string(inputs[0], "path"), "/logs/machine0/workerlog.0");
  EXPECT_EQ(get_uint(inputs[0], "bytes"), 1000u);
  EXPECT_EQ(get_uint(inputs[0], "lines"), 20u);
  EXPECT_EQ(get_uint(inputs[0], "matched"), 3u);
  EXPECT_EQ(get_uint(inputs[0], "malformed"), 1u);
  EXPECT_EQ(get_uint(inputs[1], "oversized"), 2u);
  EXPECT_EQ(inputs[0]["error"].error(), simdjson::NO_SUCH_FIELD);
  EXPECT_EQ(get_string(inputs[2], "error"), "read failed: Input/output error");

  const auto diagnostics = elements(get_array(root, "diagnostics"));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(get_string(diagnostics[0], "path"), "/logs/machine0/workerlog.0");
  EXPECT_EQ(get_uint(diagnostics[0], "line"), 5u);
  EXPECT_EQ(get_string(diagnostics[0], "message"), "malformed job line");
}

TEST(ExportSummary, KeysInSchemaOrder) {
  TempDir dir;
  const SummarySample s = summary_sample();
  const std::string path = dir / "summary.json";
  write_summary_json(s.run, s.metrics, path);
  const std::string text = read_file(path);
  std::size_t last = 0;
  for (const char* key : {"\"schema\"", "\"tool\"", "\"jobs\"", "\"first_step\"",
                          "\"bubble_ratio\"", "\"total_window_ns\"", "\"devices\"", "\"steps\"",
                          "\"job_types\"", "\"inputs\"", "\"diagnostics\""}) {
    const std::size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    EXPECT_GE(at, last) << key;
    last = at;
  }
  EXPECT_EQ(text.back(), '\n');
  // Device entries stay one line each.
  EXPECT_NE(text.find("{\"device\": 2, \"busy_ns\": 100, \"idle_ns\": 2900, \"comm_ns\": 0}"),
            std::string::npos)
      << text;
}

TEST(ExportSummary, DeterministicBytes) {
  TempDir dir;
  const SummarySample s = summary_sample();
  write_summary_json(s.run, s.metrics, dir / "a.json");
  write_summary_json(s.run, s.metrics, dir / "b.json");
  EXPECT_EQ(read_file(dir / "a.json"), read_file(dir / "b.json"));

  // Interning order does not change the job_types list.
  SummarySample t = summary_sample();
  pipescope::Run reordered;
  const TypeId send = reordered.types.intern("send_v2");
  const TypeId optimizer = reordered.types.intern("optimizer");
  const TypeId backward = reordered.types.intern("backward");
  const TypeId forward = reordered.types.intern("forward");
  const TypeId odd = reordered.types.intern("bad\xFF\x01name");
  const TypeId remap[] = {forward, backward, optimizer, send, odd};
  for (Device& device : t.run.devices) {
    for (Job& job : device.jobs) job.type = remap[job.type];
  }
  t.run.types = reordered.types;
  write_summary_json(t.run, t.metrics, dir / "c.json");
  EXPECT_EQ(read_file(dir / "a.json"), read_file(dir / "c.json"));
}

TEST(ExportSummary, EmptyRun) {
  TempDir dir;
  const std::string path = dir / "summary.json";
  write_summary_json(pipescope::Run{}, Metrics{}, path);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.load(path).get(root), simdjson::SUCCESS);
  EXPECT_EQ(get_int(root, "jobs"), 0);
  EXPECT_EQ(get_int(root, "first_step"), 0);
  EXPECT_EQ(get_double(root, "bubble_ratio"), 0.0);
  EXPECT_EQ(get_array(root, "devices").size(), 0u);
  EXPECT_EQ(get_array(root, "steps").size(), 0u);
  EXPECT_EQ(get_array(root, "job_types").size(), 0u);
  EXPECT_NE(read_file(path).find("\"bubble_ratio\": 0.0,"), std::string::npos);
}

TEST(ExportSummary, UnwritableFolderThrows) {
  TempDir dir;
  const std::string path = dir / "missing/summary.json";
  const SummarySample s = summary_sample();
  EXPECT_THROW(write_summary_json(s.run, s.metrics, path), std::system_error);
}

}  // namespace
}  // namespace pipescope
