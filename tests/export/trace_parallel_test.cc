// The trace writers' parallel path: trace.json and trace.pftrace are the same
// bytes with 1 thread and with several (pieces of a device's jobs written in
// order), and each job event is exactly what the JsonWriter and libprotobuf
// wrote for it before the events were formatted by hand, over edge values:
// names to escape (quotes, control bytes, invalid UTF-8 at the end), type ids
// the run does not have, negative and extreme ids, micro-batches and times,
// overlapping jobs on extra lanes, a step selection, flows.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <vector>

#include "analysis/job_kind.h"
#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "export/chrome_trace.h"
#include "export/json_writer.h"
#include "export/perfetto/perfetto_trace.pb.h"
#include "export/perfetto_trace.h"
#include "export/trace_content.h"
#include "export/trace_layout.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace pb = perfetto::protos;
using testing::read_file;
using testing::TempDir;

constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Device 0: 10'000 1F1B-like jobs (three pieces of the writers). Device 1:
// overlapping jobs of every awkward type, with extreme ids. With
// `unknown_types`, device 2: jobs of type ids the run does not have (only the
// writers take those: compute_metrics expects known types).
Run edge_run(std::int64_t t0 = 1697793307213760986, bool unknown_types = false) {
  pipescope::Run run;
  const TypeId forward = run.types.intern("forward");
  const TypeId backward = run.types.intern("backward");
  const std::vector<TypeId> awkward = {
      run.types.intern("opt\"imizer\\"), run.types.intern("cut\xE2\x82"),
      run.types.intern("tab\there\x7F"), run.types.intern("\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80"),
      run.types.intern("lone\x80\xBF"),  run.types.intern("send_forward"),
      run.types.intern("lr_schedule")};
  Device busy;
  busy.index = 0;
  std::int64_t t = t0;
  for (std::int64_t i = 0; i < 10000; ++i) {
    Job job;
    job.start_ns = t;
    job.end_ns = t + (i % 5 == 0 ? 0 : 1'000 * (i % 997) + i % 1000);
    job.job_id = i;
    job.micro_batch = (i / 2) % 16;
    job.type = i % 2 == 0 ? forward : backward;
    job.line = static_cast<std::uint32_t>(3 * i + 1);
    busy.jobs.push_back(job);
    t = job.end_ns + 1 + i % 3;
  }
  Device odd;
  odd.index = 1;
  odd.machine = 1;
  odd.machine_name = "node \"b\"";
  const std::vector<std::int64_t> ids = {kMin, kMax, -1, 0, 1, 1'000'000'000'000};
  const std::vector<std::int64_t> mbs = {-3, 0, 70'000, std::int64_t{1} << 40, kMax, kMin, 5};
  for (std::size_t i = 0; i < 60; ++i) {
    Job job;
    job.start_ns = t0 + 500 * static_cast<std::int64_t>(i);
    job.end_ns = job.start_ns + 1'999 + static_cast<std::int64_t>(i % 4) * 1'000;  // overlapping
    job.job_id = ids[i % ids.size()];
    job.micro_batch = mbs[i % mbs.size()];
    job.type = awkward[i % awkward.size()];
    job.line =
        i % 3 == 0 ? 0 : std::numeric_limits<std::uint32_t>::max() - static_cast<std::uint32_t>(i);
    odd.jobs.push_back(job);
  }
  Device unknown;
  unknown.index = 2;
  for (std::int64_t i = 0; i < 20; ++i) {
    Job job;
    job.start_ns = t0 + 7 * i;
    job.end_ns = job.start_ns + 3;
    job.micro_batch = i % 4;
    job.type = static_cast<TypeId>(99 + i % 2);
    job.line = static_cast<std::uint32_t>(i + 1);
    unknown.jobs.push_back(job);
  }
  run.devices.push_back(std::move(busy));
  run.devices.push_back(std::move(odd));
  if (unknown_types) run.devices.push_back(std::move(unknown));
  run.finalize();
  return run;
}

// The Chrome trace's job colours (chrome_trace.cc).
std::string_view colour(JobKind kind) {
  switch (kind) {
    case JobKind::forward:
      return "thread_state_running";
    case JobKind::backward:
      return "rail_response";
    case JobKind::optimizer:
      return "rail_animation";
    case JobKind::comm:
      return "grey";
    case JobKind::other:
      return "generic_work";
    case JobKind::lr:
      return "rail_load";
  }
  return "generic_work";
}

// Microseconds as the writer formatted them with fmt.
std::string old_us(std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

// Every selected job's event line as the JsonWriter wrote it, in trace order.
std::vector<std::string> old_job_events(const Run& run, const Metrics& metrics,
                                        const TraceOptions& options) {
  const std::int64_t origin =
      options.absolute_time ? 0 : earliest_selected_start(run, metrics, options.steps).value_or(0);
  const TraceLayout layout(run, options.pipeline != nullptr);
  const TraceJobKinds kinds(run);
  std::vector<std::string> events;
  std::string name;
  // Step by step (trace_parts.h), then the jobs of no step; devices in
  // order within each.
  std::vector<std::int32_t> units;
  for (std::size_t k = 0; k < metrics.steps.size(); ++k)
    units.push_back(static_cast<std::int32_t>(k));
  units.push_back(-1);
  for (const std::int32_t unit : units)
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      for (std::size_t i = 0; i < run.devices[d].jobs.size(); ++i) {
        const std::int32_t k = trace_job_step(run, metrics, d, i);
        if (k != unit || !options.steps.contains(k)) continue;
        const Job& job = run.devices[d].jobs[i];
        const TraceThread& lane = layout.thread(layout.job_lane(d, i));
        trace_job_name(run, job, name);
        fmt::memory_buffer out;
        JsonWriter w(out, JsonStyle{0, false});
        w.begin_object(/*one_line=*/true);
        w.field("name", name);
        w.field("cat", job_kind_name(kinds.of(job)));
        w.field("ph", "X");
        w.key("ts");
        w.raw_value(old_us(ns_since(job.start_ns, origin)));
        w.key("dur");
        w.raw_value(old_us(job.duration_ns()));
        w.field("pid", lane.pid);
        w.field("tid", lane.tid);
        w.field("cname", colour(kinds.of(job)));
        w.key("args");
        w.begin_object();
        w.field("job_id", job.job_id);
        w.field("micro_batch", job.micro_batch);
        w.key("step");
        if (k >= 0 && static_cast<std::size_t>(k) < metrics.steps.size()) {
          w.value(metrics.steps[static_cast<std::size_t>(k)].step);
        } else {
          w.null();
        }
        w.field("duration_ns", job.duration_ns());
        w.field("line", job.line);
        w.end_object();
        w.end_object();
        events.push_back(fmt::to_string(out));
      }
    }
  return events;
}

// The job events of a written trace.json: its "X" lines that are neither steps
// nor bubbles, without the separator.
std::vector<std::string> job_events(const std::string& json) {
  std::vector<std::string> events;
  std::size_t start = 0;
  while (start < json.size()) {
    std::size_t end = json.find('\n', start);
    if (end == std::string::npos) end = json.size();
    std::string line = json.substr(start, end - start);
    start = end + 1;
    if (line.find("\"ph\":\"X\"") == std::string::npos ||
        line.find("\"cat\":\"step\"") != std::string::npos ||
        line.find("\"cat\":\"bubble\"") != std::string::npos) {
      continue;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    events.push_back(line);
  }
  return events;
}

std::string write_json(const Run& run, const Metrics& metrics, TraceOptions options,
                       unsigned threads) {
  TempDir dir;
  options.threads = threads;
  write_chrome_trace(run, metrics, options, dir / "trace.json");
  return read_file(dir / "trace.json");
}

std::string write_pftrace(const Run& run, const Metrics& metrics, TraceOptions options,
                          unsigned threads) {
  TempDir dir;
  options.threads = threads;
  write_perfetto_trace(run, metrics, options, dir / "trace.pftrace");
  return read_file(dir / "trace.pftrace");
}

// The option sets each test writes: relative and absolute times, metrics
// that cover no job (no step), a selection of steps.
struct Case {
  std::string label;
  pipescope::Run run;
  Metrics metrics;
  TraceOptions options;
};

std::vector<Case> edge_cases() {
  std::vector<Case> cases;
  {
    Case c{"relative", edge_run(), {}, {}};
    c.metrics = compute_metrics(c.run);
    cases.push_back(std::move(c));
  }
  {
    // Before 1970: negative absolute times.
    Case c{"absolute", edge_run(-5'000'001), {}, {}};
    c.metrics = compute_metrics(c.run);
    c.options.absolute_time = true;
    cases.push_back(std::move(c));
  }
  cases.push_back({"no steps, unknown types", edge_run(1697793307213760986, true), Metrics{}, {}});
  {
    Case c{"selection", edge_run(), {}, {}};
    c.metrics = compute_metrics(c.run);
    EXPECT_GE(c.metrics.steps.size(), 2u);
    c.options.steps = StepSelection::parse("0", c.metrics, "--steps");
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(TraceParallel, ChromeJobEventsAreTheJsonWritersBytes) {
  for (const Case& c : edge_cases()) {
    SCOPED_TRACE(c.label);
    const std::string one = write_json(c.run, c.metrics, c.options, 1);
    const std::vector<std::string> want = old_job_events(c.run, c.metrics, c.options);
    ASSERT_GT(want.size(), 0u);
    const std::vector<std::string> got = job_events(one);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t n = 0; n < want.size(); ++n) ASSERT_EQ(got[n], want[n]) << "event " << n;
    for (const unsigned threads : {2u, 3u, 8u}) {
      EXPECT_EQ(write_json(c.run, c.metrics, c.options, threads), one) << threads << " threads";
    }
  }
}

// Each packet of the file re-serialized by libprotobuf, and each name
// defined once, in iid order, before it is used, since the packet that last
// cleared the sequence's state (the head's first, each step unit's first).
void expect_canonical_packets(const std::string& bytes) {
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(bytes));
  ASSERT_EQ(trace.SerializeAsString(), bytes);
  std::set<std::uint64_t> defined;
  std::uint64_t last_defined = 0;
  for (const pb::TracePacket& packet : trace.packet()) {
    if (packet.sequence_flags() == pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
      defined.clear();
      last_defined = 0;
    }
    for (const pb::EventName& name : packet.interned_data().event_names()) {
      EXPECT_TRUE(defined.insert(name.iid()).second) << "iid " << name.iid() << " twice";
      EXPECT_GT(name.iid(), last_defined);
      last_defined = name.iid();
      if (packet.has_track_event() && packet.interned_data().event_names_size() == 1) {
        EXPECT_EQ(packet.track_event().name_iid(), name.iid()) << name.name();
      }
    }
    if (packet.has_track_event() && packet.track_event().has_name_iid()) {
      EXPECT_TRUE(defined.count(packet.track_event().name_iid())) << "used before defined";
    }
  }
}

TEST(TraceParallel, PerfettoPacketsAreLibprotobufsBytes) {
  for (const Case& c : edge_cases()) {
    SCOPED_TRACE(c.label);
    const std::string one = write_pftrace(c.run, c.metrics, c.options, 1);
    expect_canonical_packets(one);
    for (const unsigned threads : {2u, 3u, 8u}) {
      EXPECT_EQ(write_pftrace(c.run, c.metrics, c.options, threads), one) << threads << " threads";
    }
  }
}

TEST(TraceParallel, PerfettoEdgeJobsKeepTheirValues) {
  const pipescope::Run run = edge_run();
  const Metrics metrics = compute_metrics(run);
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(write_pftrace(run, metrics, {}, 4)));
  std::map<std::uint64_t, std::string> names;
  // In trace order: step by step, devices in Run order, each device's jobs in order.
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> got;
  for (const pb::TracePacket& packet : trace.packet()) {
    for (const pb::EventName& name : packet.interned_data().event_names()) {
      names[name.iid()] = name.name();
    }
    const pb::TrackEvent& event = packet.track_event();
    if (event.type() != pb::TrackEvent::TYPE_SLICE_BEGIN || event.category_iids_size() != 1) {
      continue;
    }
    std::map<std::uint64_t, std::int64_t> args;
    for (const pb::DebugAnnotation& arg : event.debug_annotations()) {
      args[arg.name_iid()] = arg.int_value();
    }
    if (!args.count(4)) continue;  // steps and bubbles have no line
    got.emplace_back(names.at(event.name_iid()), args.at(1), args.at(2), args.at(4));
  }
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>> want;
  std::string name;
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      for (std::size_t i = 0; i < run.devices[d].jobs.size(); ++i) {
        if (metrics.job_step[d][i] != static_cast<std::int32_t>(k)) continue;
        const Job& job = run.devices[d].jobs[i];
        trace_job_name(run, job, name);
        want.emplace_back(name, job.job_id, job.micro_batch, std::int64_t{job.line});
      }
    }
  }
  EXPECT_EQ(got, want);
}

// A simulated 1F1B run with pipeline analysis: bubbles, counters and flows
// (several on one job) around pieces of 4096 jobs.
TEST(TraceParallel, PipelineTracesWithFlowsAreTheSameOnAnyThreadCount) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 16);
  config.steps = 140;  // 4480 jobs a device
  pipescope::Run run = testing::run_from_simulation(config);
  PipelineOptions pipeline_options;
  ClockReport clock = correct_run_clocks(run, pipeline_options);
  const Metrics metrics = compute_metrics(run);
  const PipelineAnalysis pipeline =
      analyze_pipeline(run, metrics, pipeline_options, std::move(clock));
  ASSERT_GT(pipeline.dependencies.size(), 4096u);
  TraceOptions options;
  options.pipeline = &pipeline;
  options.flows = true;
  for (const std::string_view steps : {"", "3-70,100"}) {
    SCOPED_TRACE(steps);
    options.steps = StepSelection::parse(steps, metrics, "--steps");
    const std::string json = write_json(run, metrics, options, 1);
    const std::vector<std::string> want = old_job_events(run, metrics, options);
    EXPECT_EQ(job_events(json), want);
    const std::string pftrace = write_pftrace(run, metrics, options, 1);
    expect_canonical_packets(pftrace);
    for (const unsigned threads : {2u, 5u}) {
      EXPECT_EQ(write_json(run, metrics, options, threads), json) << threads << " threads";
      EXPECT_EQ(write_pftrace(run, metrics, options, threads), pftrace) << threads << " threads";
    }
  }
}

// A write that fails while pieces are in flight (past RLIMIT_FSIZE: EFBIG,
// even as root) reaches the caller as the one-thread writer's error, and the
// old file stays where it was with no temporary file beside it.
TEST(TraceParallel, WriteErrorReachesTheCallerAndKeepsTheOldFile) {
  const pipescope::Run run = edge_run();
  const Metrics metrics = compute_metrics(run);
  for (const unsigned threads : {1u, 4u}) {
    for (const bool perfetto : {false, true}) {
      SCOPED_TRACE(fmt::format("{} threads, {}", threads, perfetto ? "pftrace" : "json"));
      TempDir dir;
      const std::string path = dir / (perfetto ? "trace.pftrace" : "trace.json");
      TempDir::write_to(path, "old");
      struct sigaction ignore {};
      struct sigaction previous {};
      ignore.sa_handler = SIG_IGN;
      ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &previous), 0);
      rlimit saved{};
      ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
      rlimit small = saved;
      small.rlim_cur = 200 << 10;  // the traces are about 2 MB and 1 MB
      ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
      std::string message;
      try {
        TraceOptions options;
        options.threads = threads;
        if (perfetto) {
          write_perfetto_trace(run, metrics, options, path);
        } else {
          write_chrome_trace(run, metrics, options, path);
        }
      } catch (const std::system_error& e) {
        message = e.what();
      }
      ::setrlimit(RLIMIT_FSIZE, &saved);
      ::sigaction(SIGXFSZ, &previous, nullptr);
      EXPECT_EQ(message, "cannot write " + path + ": File too large");
      EXPECT_EQ(read_file(path), "old");
      std::size_t entries = 0;
      for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) {
        ++entries;
      }
      EXPECT_EQ(entries, 1u);
    }
  }
}

}  // namespace
}  // namespace pipescope
