// Both traces written by step range (export/trace_parts.h), as the ranks of
// a partitioned analysis would write them: the head, each part's units from
// what its owner holds (step_partition.h: cut_part), and the tail,
// concatenated, are the single process's trace byte for byte, at 1, 2, 3, 4
// and more parts than steps, with and without flows and a step selection,
// on the golden folders and simulated runs of each schedule. The joined
// trace.pftrace decodes with every selected job once and every interned
// name defined in its unit; the joined trace.json parses.
#include "export/trace_parts.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/clock_skew.h"
#include "analysis/dependencies.h"
#include "analysis/pipeline.h"
#include "analysis/schedule_table.h"
#include "analysis/step_partition.h"
#include "analysis/step_rule.h"
#include "analysis/step_selection.h"
#include "export/atomic_file.h"
#include "export/chrome_trace.h"
#include "export/perfetto/perfetto_trace.pb.h"
#include "export/perfetto_trace.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace pb = perfetto::protos;
using testing::read_file;
using testing::TempDir;

// A run with its metrics and pipeline analysis, as `analyze` has them.
struct TraceAnalysed {
  pipescope::Run run;
  Metrics metrics;
  PipelineAnalysis pipeline;
};

TraceAnalysed analysed(pipescope::Run run) {
  TraceAnalysed a;
  a.run = std::move(run);
  PipelineOptions options;
  ClockReport clock = correct_run_clocks(a.run, options);
  a.metrics = compute_metrics(a.run);
  a.pipeline = analyze_pipeline(a.run, a.metrics, options, std::move(clock));
  return a;
}

// The stage placement the dependencies were found with (pipeline.cc).
StagePlacement placement_of(const ScheduleReport& schedule) {
  const ScheduleDetection& d = schedule.detection;
  if (!d.id || d.chunks != 2) return StagePlacement::looped;
  return schedule_entry(*d.id).placement;
}

enum class Format { json, perfetto };

std::string whole_trace(const TraceAnalysed& a, const TraceOptions& options, Format format) {
  TempDir dir;
  const std::string path = dir / "trace";
  if (format == Format::json) {
    write_chrome_trace(a.run, a.metrics, options, path);
  } else {
    write_perfetto_trace(a.run, a.metrics, options, path);
  }
  return read_file(path);
}

// What one rank holds to write its part.
struct Held {
  PartRun jobs;
  std::vector<std::vector<int>> lanes;
  Dependencies dependencies;
};

// head + the parts' units + tail, each written into a file of its own as a
// rank would, then joined. `with_halo`: the mutation that makes each part
// write the jobs it holds for their overlap too (they must not be written).
std::string parted_trace(const TraceAnalysed& a, const TraceOptions& options, Format format,
                         std::size_t parts, bool with_halo = false) {
  const TypeKinds kinds(a.run.types);
  std::vector<std::uint64_t> jobs_per_step(a.metrics.steps.size(), 0);
  for (const auto& steps : a.metrics.job_step) {
    for (const std::int32_t k : steps) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  const StepPartition plan = partition_steps(jobs_per_step, a.metrics.steps, parts);
  // Decided once, before the exchange: each device's lanes, read whole.
  const TraceLanes lanes = trace_lanes(a.run);
  std::deque<Held> held;  // stable addresses for the parts' references
  for (std::size_t p = 0; p < parts; ++p) {
    Held& h = held.emplace_back();
    h.jobs = cut_part(a.run, kinds, a.metrics.job_step, plan, p);
    h.lanes = part_lanes(lanes, h.jobs.job_index);
    h.dependencies = find_dependencies(h.jobs.run, h.jobs.job_step, a.pipeline.stages,
                                       a.pipeline.roles, placement_of(a.pipeline.schedule));
    if (with_halo) {
      // Every held job counted as one of the part's steps: the halo jobs of
      // other steps are written again.
      for (std::size_t d = 0; d < h.jobs.job_step.size(); ++d) {
        for (std::int32_t& k : h.jobs.job_step[d]) {
          k = std::clamp<std::int32_t>(k, static_cast<std::int32_t>(plan.bounds[p]),
                                       static_cast<std::int32_t>(plan.bounds[p + 1]) - 1);
        }
      }
    }
  }
  std::vector<TracePart> views;
  std::optional<std::int64_t> earliest;
  for (std::size_t p = 0; p < parts; ++p) {
    views.push_back(TracePart{held[p].jobs.run, held[p].jobs.job_step, &held[p].jobs.job_index,
                              held[p].lanes, plan.bounds[p], plan.bounds[p + 1],
                              &held[p].dependencies});
    const std::optional<std::int64_t> mine = part_earliest_start(views.back(), options.steps);
    if (mine) earliest = std::min(earliest.value_or(*mine), *mine);
  }
  const TraceFrame frame(a.run, a.metrics, options, lanes.count, earliest);
  TempDir dir;
  std::string joined;
  const auto piece = [&](const std::string& name, const auto& write) {
    AtomicFile file(dir / name);
    write(file);
    file.commit();
    joined += read_file(dir / name);
  };
  const bool json = format == Format::json;
  piece("head", [&](AtomicFile& f) {
    json ? write_chrome_trace_head(frame, f) : write_perfetto_trace_head(frame, f);
  });
  for (std::size_t p = 0; p < parts; ++p) {
    piece("part" + std::to_string(p), [&](AtomicFile& f) {
      json ? write_chrome_trace_part(frame, views[p], f)
           : write_perfetto_trace_part(frame, views[p], f);
    });
  }
  // Every job of a partitioned run has a step: no jobs of no step.
  piece("tail", [&](AtomicFile& f) {
    json ? write_chrome_trace_tail(frame, nullptr, f)
         : write_perfetto_trace_tail(frame, nullptr, f);
  });
  return joined;
}

std::uint64_t selected_jobs(const TraceAnalysed& a, const StepSelection& steps) {
  std::uint64_t n = 0;
  for (const auto& device : a.metrics.job_step) {
    for (const std::int32_t k : device) n += steps.contains(k) ? 1 : 0;
  }
  return n;
}

// Decodes a joined trace.pftrace: every name a job slice uses is defined
// since the last packet that cleared the sequence's state, and each job
// (track, job id, line, start) is drawn once. Returns the jobs drawn.
std::uint64_t check_perfetto(const std::string& bytes, const std::string& what) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes)) << what;
  std::set<std::uint64_t> names;
  std::set<std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::uint64_t>> jobs;
  std::uint64_t drawn = 0;
  for (const pb::TracePacket& packet : trace.packet()) {
    if (packet.sequence_flags() & pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) names.clear();
    for (const pb::EventName& name : packet.interned_data().event_names()) names.insert(name.iid());
    if (!packet.has_track_event()) continue;
    const pb::TrackEvent& event = packet.track_event();
    if (event.type() != pb::TrackEvent::TYPE_SLICE_BEGIN) continue;
    EXPECT_TRUE(names.count(event.name_iid())) << what << ": undefined name " << event.name_iid();
    std::optional<std::int64_t> job_id;
    std::int64_t line = -1;
    for (const pb::DebugAnnotation& arg : event.debug_annotations()) {
      if (arg.name_iid() == 1) job_id = arg.int_value();  // job_id
      if (arg.name_iid() == 4) line = arg.int_value();    // line
    }
    if (!job_id) continue;  // a step or bubble slice
    ++drawn;
    EXPECT_TRUE(jobs.insert({event.track_uuid(), *job_id, line, packet.timestamp()}).second)
        << what << ": job " << *job_id << " line " << line << " drawn twice";
  }
  return drawn;
}

// Parses a joined trace.json and counts its job slices.
std::uint64_t check_json(const std::string& bytes, const std::string& what) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(bytes);
  EXPECT_EQ(parser.parse(padded).get(root), simdjson::SUCCESS) << what;
  std::uint64_t jobs = 0;
  simdjson::dom::array events;
  if (root["traceEvents"].get_array().get(events) != simdjson::SUCCESS) return 0;
  for (const simdjson::dom::element event : events) {
    simdjson::dom::element id;
    if (event["args"]["job_id"].get(id) == simdjson::SUCCESS) ++jobs;
  }
  return jobs;
}

// Every cut, format and option: the joined trace is the single process's.
void check_every_cut(const TraceAnalysed& a, const std::string& what) {
  ASSERT_FALSE(a.metrics.steps.empty()) << what;
  const std::size_t steps = a.metrics.steps.size();
  std::vector<StepSelection> selections{StepSelection{}};
  if (steps >= 4) {
    selections.push_back(StepSelection::of({1, 3}, a.metrics));
    selections.push_back(StepSelection::of({steps - 1}, a.metrics));
  }
  for (const bool flows : {false, true}) {
    for (std::size_t s = 0; s < selections.size(); ++s) {
      TraceOptions options;
      options.pipeline = &a.pipeline;
      options.flows = flows;
      options.steps = selections[s];
      options.threads = 2;
      for (const Format format : {Format::json, Format::perfetto}) {
        const std::string whole = whole_trace(a, options, format);
        const std::string label = fmt::format("{} flows {} selection {} {}", what, flows, s,
                                              format == Format::json ? "json" : "pftrace");
        const std::uint64_t expected = selected_jobs(a, options.steps);
        EXPECT_EQ(format == Format::json ? check_json(whole, label) : check_perfetto(whole, label),
                  expected)
            << label;
        for (const std::size_t parts :
             {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, steps + 2}) {
          const std::string joined = parted_trace(a, options, format, parts);
          EXPECT_TRUE(joined == whole) << label << ", " << parts << " parts: " << joined.size()
                                       << " bytes against " << whole.size();
        }
      }
    }
  }
}

TEST(TraceParts, GoldenFoldersJoinIntoTheSingleProcessTraces) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_every_cut(analysed(std::move(loaded.run)), folder);
  }
}

TEST(TraceParts, SimulatedSchedulesJoinIntoTheSingleProcessTraces) {
  using sim::ScheduleKind;
  struct Case {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm, lr;
  };
  for (const Case& c : {Case{ScheduleKind::fthenb, 4, 8, 1, false, false},
                        Case{ScheduleKind::one_f_one_b, 4, 8, 1, true, true},
                        Case{ScheduleKind::interleaved, 4, 8, 2, true, false},
                        Case{ScheduleKind::zbh1, 4, 8, 1, true, false}}) {
    sim::SimConfig config = testing::sim_config(c.kind, c.stages, c.micro_batches, c.chunks);
    config.steps = 6;
    config.comm_jobs = c.comm;
    config.lr_jobs = c.lr;
    config.step_gap_ns = 0;  // steps meet: devices overlap at the edges, parts hold halo jobs
    check_every_cut(analysed(testing::run_from_simulation(config)),
                    "simulated " + std::to_string(static_cast<int>(c.kind)));
  }
}

// Device 1 starts each step while device 0 still runs the previous one, and
// a comm job spans two windows (it gets a lane of its own): the parts hold
// jobs of other steps, which they must read for bubbles but not write.
TEST(TraceParts, HaloJobsAreReadNotWritten) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    const std::int64_t t = k * 100;
    testing::add_job(run, 0, "forward", 0, t, t + 40);
    testing::add_job(run, 0, "backward", 0, t + 40, t + 90);
    testing::add_job(run, 0, "optimizer", 0, t + 90, t + 120);  // into the next window
    testing::add_job(run, 1, "recv_forward", 0, t + 5, t + 30);
    testing::add_job(run, 1, "forward", 0, t + 30, t + 60);
    testing::add_job(run, 1, "send_backward", 0, t + 60, t + 160);  // over two windows
    testing::add_job(run, 1, "backward", 0, t + 65, t + 80);
    testing::add_job(run, 1, "optimizer", 0, t + 80, t + 95);
  }
  run.finalize();
  const TraceAnalysed a = analysed(std::move(run));
  check_every_cut(a, "overlapping steps");
  // The mutation the comparison guards against: parts writing their halo.
  TraceOptions options;
  options.pipeline = &a.pipeline;
  for (const Format format : {Format::json, Format::perfetto}) {
    const std::string whole = whole_trace(a, options, format);
    EXPECT_NE(parted_trace(a, options, format, 3, /*with_halo=*/true), whole);
  }
}

// Steps a selection leaves out are empty units: a part that owns none of
// the selected steps writes nothing.
TEST(TraceParts, UnselectedStepsWriteNothing) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 8;
  const TraceAnalysed a = analysed(testing::run_from_simulation(config));
  TraceOptions options;
  options.pipeline = &a.pipeline;
  options.steps = StepSelection::of({0}, a.metrics);
  const TypeKinds kinds(a.run.types);
  std::vector<std::uint64_t> jobs_per_step(a.metrics.steps.size(), 0);
  for (const auto& steps : a.metrics.job_step) {
    for (const std::int32_t k : steps) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  const StepPartition plan = partition_steps(jobs_per_step, a.metrics.steps, 4);
  const TraceLanes lanes = trace_lanes(a.run);
  const PartRun last = cut_part(a.run, kinds, a.metrics.job_step, plan, 3);
  ASSERT_GT(plan.bounds[3], 0u);
  const std::vector<std::vector<int>> last_lanes = part_lanes(lanes, last.job_index);
  const TracePart part{last.run,   last.job_step,  &last.job_index,
                       last_lanes, plan.bounds[3], plan.bounds[4]};
  EXPECT_EQ(part_earliest_start(part, options.steps), std::nullopt);
  const TraceFrame frame(a.run, a.metrics, options, lanes.count, std::nullopt);
  TempDir dir;
  for (const Format format : {Format::json, Format::perfetto}) {
    AtomicFile file(dir / "part");
    format == Format::json ? write_chrome_trace_part(frame, part, file)
                           : write_perfetto_trace_part(frame, part, file);
    file.commit();
    EXPECT_EQ(read_file(dir / "part"), "");
  }
}

}  // namespace
}  // namespace pipescope
