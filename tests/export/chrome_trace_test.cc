// The Chrome trace: processes, threads, lanes for overlapping jobs, step
// slices and exact microsecond timestamps, read back with simdjson.
#include "export/chrome_trace.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/step_selection.h"
#include "support/log_event_run.h"
#include "support/temp_dir.h"
#include "version.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;

std::string us(std::int64_t ns) {
  fmt::memory_buffer out;
  append_ns_as_us(out, ns);
  return fmt::to_string(out);
}

Job make_job(std::int64_t start, std::int64_t end, TypeId type, std::int64_t mb,
             std::uint32_t line) {
  Job job;
  job.start_ns = start;
  job.end_ns = end;
  job.job_id = 100 + line;
  job.micro_batch = mb;
  job.type = type;
  job.line = line;
  return job;
}

Device make_device(int index, int machine, std::string machine_name, const std::vector<Job>& jobs) {
  Device device;
  device.index = index;
  device.machine = machine;
  device.machine_name = std::move(machine_name);
  device.rank = index;
  device.path = "workerlog." + std::to_string(index);
  device.jobs.assign(jobs.begin(), jobs.end());
  return device;
}

// Origin (earliest start) is 10'000 ns. Device 1 has overlapping jobs that
// need three lanes.
struct Sample {
  pipescope::Run run;
  Metrics metrics;
};

Sample make_sample() {
  Sample s;
  Run& run = s.run;
  const TypeId forward = run.types.intern("forward");
  const TypeId backward = run.types.intern("backward");
  const TypeId recv = run.types.intern("recv_v2");
  const TypeId optimizer = run.types.intern("optimizer");
  const TypeId odd = run.types.intern("x\"\xFF\x02");
  run.devices = {
      make_device(
          0, 0, "",
          {make_job(10'000, 10'999, forward, 0, 1), make_job(11'000, 12'000, backward, 0, 2),
           make_job(12'000, 12'001, optimizer, 0, 3)}),
      make_device(1, 0, "",
                  {make_job(10'500, 11'500, forward, 0, 1),   // lane 0
                   make_job(10'600, 10'700, recv, 0, 2),      // lane 1
                   make_job(11'500, 12'500, backward, 0, 3),  // lane 0 (touching)
                   make_job(11'600, 11'700, recv, 1, 4),      // lane 1
                   make_job(11'650, 11'800, recv, 2, 5),      // lane 2
                   make_job(11'900, 11'900, odd, 7, 6)}),     // lane 1, zero length
      make_device(2, 1, "", {make_job(20'000, 21'000, forward, 1, 9)}),
  };
  StepWindow step;
  step.step = 7;
  step.start_ns = 10'000;
  step.end_ns = 12'500;
  step.devices = {{2001, 499}, {2000, 500}, {0, 2500}};
  step.bubble_ratio = 0.5;
  s.metrics.steps = {step};
  s.metrics.job_step = {{0, 0, 0}, {0, 0, 0, 0, 0, 0}, {-1}};
  return s;
}

struct Event {
  std::string name, ph, cat;
  std::string scope;  // "s" of an instant
  std::int64_t pid = 0, tid = 0;
  double ts = 0, dur = 0;
  simdjson::dom::element args;
};

struct Trace {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  std::vector<Event> events;
  std::map<std::int64_t, std::string> process_names;
  std::map<std::int64_t, std::int64_t> process_sort;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> thread_sort;
  std::string text;

  explicit Trace(const std::string& path) {
    text = read_file(path);
    EXPECT_EQ(parser.parse(text).get(root), simdjson::SUCCESS) << text;
    simdjson::dom::array array;
    EXPECT_EQ(root["traceEvents"].get_array().get(array), simdjson::SUCCESS);
    for (simdjson::dom::element e : array) {
      Event event;
      event.name = std::string(std::string_view(e["name"]));
      event.ph = std::string(std::string_view(e["ph"]));
      event.pid = std::int64_t(e["pid"]);
      event.tid = std::int64_t(e["tid"]);
      event.args = e["args"];
      if (event.ph == "X") {
        event.cat = std::string(std::string_view(e["cat"]));
        event.ts = double(e["ts"]);
        event.dur = double(e["dur"]);
        std::string_view cname;
        EXPECT_EQ(e["cname"].get(cname), simdjson::SUCCESS);
      } else if (event.ph == "i") {
        event.cat = std::string(std::string_view(e["cat"]));
        event.ts = double(e["ts"]);
        event.scope = std::string(std::string_view(e["s"]));
      } else {
        EXPECT_EQ(e["ts"].error(), simdjson::NO_SUCH_FIELD);
        const auto key = std::make_pair(event.pid, event.tid);
        if (event.name == "process_name") {
          process_names[event.pid] = std::string(std::string_view(event.args["name"]));
        } else if (event.name == "process_sort_index") {
          process_sort[event.pid] = std::int64_t(event.args["sort_index"]);
        } else if (event.name == "thread_name") {
          thread_names[key] = std::string(std::string_view(event.args["name"]));
        } else if (event.name == "thread_sort_index") {
          thread_sort[key] = std::int64_t(event.args["sort_index"]);
        }
      }
      events.push_back(event);
    }
  }

  std::vector<Event> instants() const {
    std::vector<Event> out;
    for (const Event& e : events) {
      if (e.ph == "i") out.push_back(e);
    }
    return out;
  }

  const Event& x(std::string_view name) const {
    for (const Event& e : events) {
      if (e.ph == "X" && e.name == name) return e;
    }
    ADD_FAILURE() << "no X event " << name;
    return events.front();
  }
  // The single line holding the event named `name`.
  std::string line_of(std::string_view name) const {
    const std::string needle = "\"name\":\"" + std::string(name) + "\"";
    const std::size_t at = text.find(needle);
    if (at == std::string::npos) return {};
    const std::size_t begin = text.rfind('\n', at) + 1;
    return text.substr(begin, text.find('\n', at) - begin);
  }
  std::string thread_of(const Event& e) const { return thread_names.at({e.pid, e.tid}); }
};

TEST(ExportTrace, MicrosecondsFromIntegerNanoseconds) {
  EXPECT_EQ(us(0), "0.000");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(999), "0.999");
  EXPECT_EQ(us(1000), "1.000");
  EXPECT_EQ(us(1001), "1.001");
  EXPECT_EQ(us(1234567), "1234.567");
  EXPECT_EQ(us(-1), "-0.001");
  EXPECT_EQ(us(-1234567), "-1234.567");
  EXPECT_EQ(us(1697793307213760986), "1697793307213760.986");
  EXPECT_EQ(us(std::numeric_limits<std::int64_t>::max()), "9223372036854775.807");
  EXPECT_EQ(us(std::numeric_limits<std::int64_t>::min()), "-9223372036854775.808");
}

TEST(ExportTrace, ProcessesThreadsAndLanes) {
  TempDir dir;
  const Sample s = make_sample();
  const std::string path = dir / "trace.json";
  write_chrome_trace(s.run, s.metrics, TraceOptions{}, path);
  const Trace trace(path);

  std::map<std::string, int> per_phase;
  for (const Event& e : trace.events) ++per_phase[e.ph];
  // Metadata: Steps (name + sort, process and thread), 2 machines x 2,
  // threads: device 0: 1 lane, device 1: 3 lanes, device 2: 1 lane, x 2.
  EXPECT_EQ(per_phase["M"], 4 + 4 + 10);
  EXPECT_EQ(per_phase["X"], 1 + 10);
  EXPECT_EQ(per_phase.size(), 2u);

  // pid 0 is never used (the kernel's swapper in trace viewers).
  EXPECT_EQ(trace.process_names.count(0), 0u);
  ASSERT_EQ(trace.process_names.size(), 3u);
  const Event& step = trace.x("step 7");
  EXPECT_EQ(trace.process_names.at(step.pid), "Steps");
  EXPECT_EQ(trace.process_sort.at(step.pid), 0);
  EXPECT_EQ(trace.thread_of(step), "Steps");

  const Event& f0 = trace.x("forward mb0");  // device 0, first in file
  EXPECT_EQ(trace.process_names.at(f0.pid), "Machine 0");
  EXPECT_EQ(trace.process_sort.at(f0.pid), 1);
  EXPECT_EQ(trace.thread_of(f0), "GPU 0 (machine 0)");
  const Event& last = trace.x("forward mb1");  // device 2 on machine 1
  EXPECT_EQ(trace.process_names.at(last.pid), "Machine 1");
  EXPECT_EQ(trace.process_sort.at(last.pid), 2);
  EXPECT_EQ(trace.thread_of(last), "GPU 2 (machine 1)");
  EXPECT_NE(last.pid, f0.pid);

  // Lanes of device 1.
  const std::map<std::string, std::string> lanes = {
      {"recv_v2 mb1", "GPU 1 (machine 0) \xC2\xB7 overlap 1"},
      {"recv_v2 mb2", "GPU 1 (machine 0) \xC2\xB7 overlap 2"},
      {"backward mb0", "GPU 0 (machine 0)"}};  // first backward is device 0's
  for (const auto& [name, thread] : lanes) EXPECT_EQ(trace.thread_of(trace.x(name)), thread);
  std::vector<std::string> device1_threads;
  for (const Event& e : trace.events) {
    if (e.ph != "X" || e.cat == "step") continue;
    const std::string thread = trace.thread_of(e);
    if (thread.rfind("GPU 1 ", 0) == 0) device1_threads.push_back(thread);
  }
  const std::string lane0 = "GPU 1 (machine 0)";
  const std::string lane1 = lane0 + " \xC2\xB7 overlap 1";
  const std::string lane2 = lane0 + " \xC2\xB7 overlap 2";
  EXPECT_EQ(device1_threads, (std::vector<std::string>{lane0, lane1, lane0, lane1, lane2, lane1}));

  // Sort indices: device * 16 + lane; overlap lanes right after their device.
  std::map<std::string, std::int64_t> sort_of;
  for (const auto& [key, name] : trace.thread_names) sort_of[name] = trace.thread_sort.at(key);
  EXPECT_EQ(sort_of.at("GPU 0 (machine 0)"), 0);
  EXPECT_EQ(sort_of.at(lane0), 16);
  EXPECT_EQ(sort_of.at(lane1), 17);
  EXPECT_EQ(sort_of.at(lane2), 18);
  EXPECT_EQ(sort_of.at("GPU 2 (machine 1)"), 32);

  // Thread ids are unique across processes.
  std::map<std::int64_t, int> tids;
  for (const auto& [key, name] : trace.thread_names) ++tids[key.second];
  for (const auto& [tid, n] : tids) EXPECT_EQ(n, 1) << tid;

  // No two slices of one thread overlap without nesting.
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::pair<double, double>>> slices;
  for (const Event& e : trace.events) {
    if (e.ph == "X") slices[{e.pid, e.tid}].push_back({e.ts, e.ts + e.dur});
  }
  for (auto& [key, list] : slices) {
    std::sort(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].second, list[i].first) << key.first << "/" << key.second;
    }
  }
}

TEST(ExportTrace, SlicesFieldsAndRelativeTimes) {
  TempDir dir;
  const Sample s = make_sample();
  const std::string path = dir / "trace.json";
  write_chrome_trace(s.run, s.metrics, TraceOptions{}, path);
  const Trace trace(path);

  // Exact text of ts/dur: origin 10'000 ns.
  EXPECT_NE(trace.line_of("forward mb0").find("\"ts\":0.000,\"dur\":0.999,"), std::string::npos)
      << trace.line_of("forward mb0");
  EXPECT_NE(trace.line_of("optimizer mb0").find("\"ts\":2.000,\"dur\":0.001,"), std::string::npos)
      << trace.line_of("optimizer mb0");
  EXPECT_NE(trace.line_of("forward mb1").find("\"ts\":10.000,\"dur\":1.000,"), std::string::npos);
  EXPECT_NE(trace.line_of("step 7").find("\"ts\":0.000,\"dur\":2.500,"), std::string::npos);

  const Event& f0 = trace.x("forward mb0");
  EXPECT_EQ(f0.cat, "forward");
  EXPECT_EQ(std::int64_t(f0.args["job_id"]), 101);
  EXPECT_EQ(std::int64_t(f0.args["micro_batch"]), 0);
  EXPECT_EQ(std::int64_t(f0.args["step"]), 7);
  EXPECT_EQ(std::int64_t(f0.args["duration_ns"]), 999);
  EXPECT_EQ(std::int64_t(f0.args["line"]), 1);
  EXPECT_EQ(trace.x("recv_v2 mb1").cat, "comm");
  EXPECT_EQ(trace.x("optimizer mb0").cat, "optimizer");

  const Event& last = trace.x("forward mb1");
  EXPECT_TRUE(last.args["step"].is_null());

  // The odd type name is still valid JSON with U+FFFD.
  const Event& odd = trace.x("x\"\xEF\xBF\xBD\x02 mb7");
  EXPECT_EQ(odd.cat, "other");
  EXPECT_EQ(odd.dur, 0.0);

  const Event& step = trace.x("step 7");
  EXPECT_EQ(step.cat, "step");
  EXPECT_EQ(double(step.args["bubble_ratio"]), 0.5);
  EXPECT_EQ(std::int64_t(step.args["duration_ns"]), 2500);

  EXPECT_EQ(std::string_view(trace.root["displayTimeUnit"]), "ms");
  simdjson::dom::element other = trace.root["otherData"];
  EXPECT_EQ(std::int64_t(other["origin_ns"]), 10'000);
  EXPECT_EQ(std::string_view(other["time_unit"]), "us");
  EXPECT_EQ(std::string_view(other["generator"]), "pipescope " + std::string(pipescope::kVersion));
}

TEST(ExportTrace, AbsoluteTimes) {
  TempDir dir;
  pipescope::Run run;
  const TypeId forward = run.types.intern("forward");
  run.devices = {make_device(0, 0, "machine0",
                             {make_job(1697793307213760986, 1697793307213761986, forward, 0, 1)})};
  Metrics metrics;
  metrics.job_step = {{-1}};

  const std::string absolute = dir / "absolute.json";
  write_chrome_trace(run, metrics, TraceOptions{.absolute_time = true}, absolute);
  const Trace a(absolute);
  EXPECT_NE(a.line_of("forward mb0").find("\"ts\":1697793307213760.986,\"dur\":1.000,"),
            std::string::npos)
      << a.line_of("forward mb0");
  EXPECT_EQ(std::int64_t(a.root["otherData"]["origin_ns"]), 0);
  EXPECT_EQ(a.process_names.at(a.x("forward mb0").pid), "machine0");

  const std::string relative = dir / "relative.json";
  write_chrome_trace(run, metrics, TraceOptions{}, relative);
  const Trace r(relative);
  EXPECT_NE(r.line_of("forward mb0").find("\"ts\":0.000,\"dur\":1.000,"), std::string::npos);
  EXPECT_EQ(std::int64_t(r.root["otherData"]["origin_ns"]), 1697793307213760986);
}

TEST(ExportTrace, DeterministicAndEmpty) {
  TempDir dir;
  const Sample s = make_sample();
  write_chrome_trace(s.run, s.metrics, TraceOptions{}, dir / "a.json");
  write_chrome_trace(s.run, s.metrics, TraceOptions{}, dir / "b.json");
  EXPECT_EQ(read_file(dir / "a.json"), read_file(dir / "b.json"));

  // Metrics that do not match the run (none computed) still give a trace.
  write_chrome_trace(s.run, Metrics{}, TraceOptions{}, dir / "c.json");
  const Trace c(dir / "c.json");
  EXPECT_TRUE(c.x("forward mb0").args["step"].is_null());

  write_chrome_trace(pipescope::Run{}, Metrics{}, TraceOptions{}, dir / "empty.json");
  const Trace empty(dir / "empty.json");
  EXPECT_EQ(empty.events.size(), 4u);  // the Steps process and thread only
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

using testing::event_run_time;
using testing::kEventRunMs;
using testing::log_event_run;

// The lines of a trace's text holding an instant event, in file order.
std::vector<std::string> instant_lines(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    if (line.find("\"ph\":\"i\"") != std::string::npos) lines.push_back(line);
    at = end + 1;
  }
  return lines;
}

// `pid`/`tid` of a device's first lane, as its jobs have them.
std::pair<std::int64_t, std::int64_t> job_track(const Trace& trace, int device) {
  const std::string lane = "GPU " + std::to_string(device) + " (machine 0)";
  for (const auto& [key, name] : trace.thread_names) {
    if (name == lane) return key;
  }
  ADD_FAILURE() << "no thread " << lane;
  return {};
}

TEST(ExportTraceEvents, PlacedEventsAreInstantsOnTheirDevicesTrack) {
  TempDir dir;
  const auto r = log_event_run();
  write_chrome_trace(r.run, r.metrics, TraceOptions{}, dir / "trace.json");
  const Trace trace(dir / "trace.json");

  // Time zero is device 1's event 5 ms before every job.
  const std::int64_t origin = event_run_time(-5);
  EXPECT_EQ(std::int64_t(trace.root["otherData"]["origin_ns"]), origin);
  EXPECT_NE(trace.line_of("step 10").find("\"ts\":5000.000,\"dur\":100000.000,"), std::string::npos)
      << trace.line_of("step 10");

  // Every placed event, device by device, each in time order; none for the
  // unplaced one.
  const std::vector<std::string> lines = instant_lines(trace.text);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(
      lines[0],
      "{\"name\":\"checkpoint_save\",\"cat\":\"event,checkpoint\",\"ph\":\"i\",\"ts\":65000.000,"
      "\"pid\":2,\"tid\":2,\"s\":\"t\",\"args\":{\"severity\":\"info\",\"category\":"
      "\"checkpoint\",\"line\":7,\"path\":\"workerlog.0\",\"captures\":{\"path\":"
      "\"/ckpt/step_10\"}}},");
  EXPECT_EQ(lines[1],
            "{\"name\":\"nccl_warn\",\"cat\":\"event,nccl\",\"ph\":\"i\",\"ts\":155000.000,"
            "\"pid\":2,\"tid\":2,\"s\":\"t\",\"args\":{\"severity\":\"warning\",\"category\":"
            "\"nccl\",\"line\":12,\"path\":\"workerlog.0\",\"approximate\":true,\"captures\":{"
            "\"message\":\"Call to ibv_reg_mr failed\"}}},");
  const std::vector<Event> instants = trace.instants();
  ASSERT_EQ(instants.size(), 7u);
  const std::vector<std::pair<std::string, double>> want = {
      {"checkpoint_save", 65'000},  {"nccl_warn", 155'000}, {"cuda_error", 235'000},
      {"checkpoint_save", 905'000}, {"nccl_warn", 0},       {"nccl_warn", 285'000},
      {"cuda_error", 655'000}};
  for (std::size_t i = 0; i < instants.size(); ++i) {
    const Event& e = instants[i];
    EXPECT_EQ(e.name, want[i].first) << i;
    EXPECT_EQ(e.ts, want[i].second) << i;
    EXPECT_EQ(e.scope, "t");
    // The device's own track: where its first job is.
    const int device = i < 4 ? 0 : 1;
    EXPECT_EQ(std::make_pair(e.pid, e.tid), job_track(trace, device)) << i;
    EXPECT_EQ(trace.thread_of(e), "GPU " + std::to_string(device) + " (machine 0)");
    EXPECT_EQ(std::string_view(e.args["path"]), "workerlog." + std::to_string(device));
    EXPECT_EQ(e.args["approximate"].error() == simdjson::SUCCESS, i == 1) << i;
  }
  EXPECT_EQ(instants[2].cat, "event,cuda");
  EXPECT_EQ(std::string_view(instants[2].args["severity"]), "error");
  EXPECT_EQ(std::int64_t(instants[2].args["line"]), 15);
  EXPECT_EQ(instants[2].args["captures"].error(), simdjson::NO_SUCH_FIELD);
  // The jobs' ts count from the same time zero.
  const Job& first = r.run.devices[0].jobs[0];
  EXPECT_EQ(trace.x("forward mb0").ts * 1000, static_cast<double>(first.start_ns - origin));
  const Event& forward = trace.x("forward mb0");
  EXPECT_EQ(std::make_pair(forward.pid, forward.tid), job_track(trace, 0));

  // Epoch microseconds with absolute times.
  write_chrome_trace(r.run, r.metrics, TraceOptions{.absolute_time = true}, dir / "abs.json");
  const std::vector<std::string> absolute = instant_lines(read_file(dir / "abs.json"));
  ASSERT_EQ(absolute.size(), 7u);
  EXPECT_NE(absolute[0].find("\"ts\":1697793307060000.000,"), std::string::npos) << absolute[0];
}

TEST(ExportTraceEvents, StepSelectionKeepsTheEventsOfItsWindowsAndTheGapsBefore) {
  TempDir dir;
  const auto r = log_event_run();
  const auto names_and_ts = [&](std::string_view steps) {
    TraceOptions options;
    options.steps = StepSelection::parse(steps, r.metrics, "--steps");
    write_chrome_trace(r.run, r.metrics, options, dir / "t.json");
    const Trace trace(dir / "t.json");
    std::vector<std::pair<std::string, double>> out;
    for (const Event& e : trace.instants()) out.emplace_back(e.name, e.ts);
    out.emplace_back(
        "origin",
        double(std::int64_t(trace.root["otherData"]["origin_ns"]) - testing::kEventRunT0) / 1000);
    return out;
  };
  using List = std::vector<std::pair<std::string, double>>;
  // Step 11: the warning in the gap before it (150 ms) is time zero; its
  // window's events at 230 ms and 280 ms.
  EXPECT_EQ(
      names_and_ts("11"),
      (List{
          {"nccl_warn", 0}, {"cuda_error", 80'000}, {"nccl_warn", 130'000}, {"origin", 150'000}}));
  // Step 10: the event before it (and before every job) and the one in it.
  EXPECT_EQ(names_and_ts("10"),
            (List{{"checkpoint_save", 65'000}, {"nccl_warn", 0}, {"origin", -5'000}}));
  // Step 12: the events after the last window are in no step.
  EXPECT_EQ(names_and_ts("12"), (List{{"cuda_error", 250'000}, {"origin", 400'000}}));
  EXPECT_EQ(names_and_ts("10-12").size(), 6u + 1u);
}

TEST(ExportTraceEvents, TraceWithoutEventsKeepsItsBytes) {
  TempDir dir;
  auto r = log_event_run();
  // Events that do not move time zero add their lines and change nothing else.
  r.run.devices[1].events.erase(r.run.devices[1].events.begin());
  TraceOptions options;
  write_chrome_trace(r.run, r.metrics, options, dir / "with.json");
  for (Device& device : r.run.devices) device.events.clear();
  write_chrome_trace(r.run, r.metrics, options, dir / "without.json");
  const std::string without = read_file(dir / "without.json");
  EXPECT_TRUE(instant_lines(without).empty());
  std::string with = read_file(dir / "with.json");
  EXPECT_EQ(instant_lines(with).size(), 6u);
  std::string kept;
  for (std::size_t at = 0; at < with.size();) {
    std::size_t end = with.find('\n', at);
    if (end == std::string::npos) end = with.size() - 1;
    const std::string line = with.substr(at, end + 1 - at);
    if (line.find("\"ph\":\"i\"") == std::string::npos) kept += line;
    at = end + 1;
  }
  // The last instant ended the array: the job before it loses its comma.
  const std::size_t close = kept.find(",\n]");
  if (close != std::string::npos) kept.erase(close, 1);
  EXPECT_EQ(kept, without);

  // Event kinds without events, or a run read with events off, change nothing.
  r.run.event_kinds.clear();
  write_chrome_trace(r.run, r.metrics, options, dir / "no_kinds.json");
  EXPECT_EQ(read_file(dir / "no_kinds.json"), without);
}

}  // namespace
}  // namespace pipescope
