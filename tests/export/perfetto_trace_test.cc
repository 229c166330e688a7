// The native Perfetto trace (trace.pftrace): parsed back with the classes
// generated from engine/export/perfetto/perfetto_trace.proto, and its wire
// tags checked by a hand-written decoder against the upstream field numbers,
// so a wrong number in the .proto cannot pass by agreeing with itself.
#include "export/perfetto_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/metrics.h"
#include "analysis/pipeline.h"
#include "analysis/step_selection.h"
#include "export/perfetto/perfetto_trace.pb.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "support/command_runner.h"
#include "support/log_event_run.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
namespace pb = perfetto::protos;
using testing::read_file;
using testing::TempDir;

// ---- An independent protobuf wire reader (no generated code) ----

struct WireField {
  std::uint32_t number = 0;
  int wire_type = 0;
  std::uint64_t varint = 0;  // wire type 0
  std::string_view bytes;    // wire type 2
};

bool read_varint(std::string_view& in, std::uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto byte = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    value |= std::uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// The top-level fields of one message; fails the test on malformed input.
std::vector<WireField> wire_fields(std::string_view in) {
  std::vector<WireField> fields;
  while (!in.empty()) {
    std::uint64_t tag = 0;
    EXPECT_TRUE(read_varint(in, tag));
    WireField f;
    f.number = static_cast<std::uint32_t>(tag >> 3);
    f.wire_type = static_cast<int>(tag & 7);
    if (f.wire_type == 0) {
      EXPECT_TRUE(read_varint(in, f.varint));
    } else if (f.wire_type == 2) {
      std::uint64_t size = 0;
      EXPECT_TRUE(read_varint(in, size));
      if (size > in.size()) {
        ADD_FAILURE() << "field " << f.number << " runs past the end";
        return fields;
      }
      f.bytes = in.substr(0, size);
      in.remove_prefix(size);
    } else if (f.wire_type == 1) {  // fixed64
      if (in.size() < 8) return fields;
      in.remove_prefix(8);
    } else {
      ADD_FAILURE() << "unexpected wire type " << f.wire_type;
      return fields;
    }
    fields.push_back(f);
  }
  return fields;
}

const WireField* find_field(const std::vector<WireField>& fields, std::uint32_t number) {
  for (const WireField& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

// The field `number`; a test failure (and an empty field) when it is missing.
const WireField& field(const std::vector<WireField>& fields, std::uint32_t number) {
  static const WireField missing;
  const WireField* f = find_field(fields, number);
  if (f == nullptr) ADD_FAILURE() << "field " << number << " missing";
  return f != nullptr ? *f : missing;
}

// ---- Running the exporter ----

struct Exported {
  pipescope::Run run;
  Metrics metrics;
  PipelineAnalysis analysis;
  std::string bytes;
  pb::Trace trace;
};

std::unique_ptr<Exported> export_multi(bool absolute_time = false, bool flows = false,
                                       std::string_view steps = "") {
  auto e = std::make_unique<Exported>();
  e->run =
      ingest_inputs(discover_inputs({std::string(PIPESCOPE_TESTDATA) + "/multi"}), IngestOptions{});
  PipelineOptions pipeline;
  ClockReport clock = correct_run_clocks(e->run, pipeline);
  e->metrics = compute_metrics(e->run);
  e->analysis = analyze_pipeline(e->run, e->metrics, pipeline, std::move(clock));
  TraceOptions options;
  options.absolute_time = absolute_time;
  options.pipeline = &e->analysis;
  options.flows = flows;
  options.steps = StepSelection::parse(steps, e->metrics, "--steps");
  TempDir dir;
  write_perfetto_trace(e->run, e->metrics, options, dir / "trace.pftrace");
  e->bytes = read_file(dir / "trace.pftrace");
  EXPECT_TRUE(e->trace.ParseFromString(e->bytes));
  return e;
}

std::int64_t earliest_start(const pipescope::Run& run) {
  std::int64_t earliest = INT64_MAX;
  for (const Device& d : run.devices) {
    for (const Job& j : d.jobs) earliest = std::min(earliest, j.start_ns);
  }
  return earliest;
}

// A slice reassembled from a BEGIN/END pair on one track.
struct Slice {
  std::string name;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::map<std::string, std::int64_t> args;
  std::vector<std::string> categories;
};

// An instant event (a log event), its names resolved.
struct Instant {
  std::string name;
  std::uint64_t time = 0;
  std::vector<std::string> categories;
  std::map<std::string, std::string> strings;
  std::map<std::string, std::int64_t> ints;
  std::map<std::string, bool> bools;
};

// Resolves the trace the way a reader does: interned names by iid, slices
// by matching BEGIN and END per track (properly nested, as Perfetto needs).
struct Decoded {
  std::map<std::uint64_t, pb::TrackDescriptor> tracks;
  std::map<std::uint64_t, std::vector<Slice>> slices;      // by track uuid
  std::map<std::uint64_t, std::vector<Instant>> instants;  // by track uuid
  std::map<std::uint64_t, std::vector<double>> counters;
  std::size_t begins = 0, ends = 0, flow_starts = 0, flow_ends = 0;
};

Decoded decode(const pb::Trace& trace) {
  Decoded out;
  std::map<std::uint64_t, std::string> names, categories, arg_names;
  std::map<std::uint64_t, std::vector<Slice>> open;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pb::TracePacket& p = trace.packet(i);
    EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    // The first packet clears the sequence's state, and so does the packet
    // that starts each step's unit (trace_parts.h): it carries names only.
    const bool cleared = p.sequence_flags() == pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED;
    if (i == 0) {
      EXPECT_TRUE(cleared);
    } else if (cleared) {
      EXPECT_FALSE(p.has_track_event()) << "packet " << i;
      EXPECT_TRUE(p.has_interned_data()) << "packet " << i;
      names.clear();
      categories.clear();
      arg_names.clear();
    } else {
      EXPECT_EQ(p.sequence_flags(), 2u) << "packet " << i;
    }
    if (p.has_interned_data()) {
      const pb::InternedData& in = p.interned_data();
      // An iid is never redefined while the state lasts.
      for (const auto& n : in.event_names()) EXPECT_TRUE(names.emplace(n.iid(), n.name()).second);
      for (const auto& c : in.event_categories()) {
        EXPECT_TRUE(categories.emplace(c.iid(), c.name()).second);
      }
      for (const auto& a : in.debug_annotation_names()) {
        EXPECT_TRUE(arg_names.emplace(a.iid(), a.name()).second);
      }
    }
    if (p.has_track_descriptor()) {
      EXPECT_FALSE(p.has_timestamp());
      EXPECT_TRUE(out.tracks.emplace(p.track_descriptor().uuid(), p.track_descriptor()).second);
    }
    if (!p.has_track_event()) continue;
    const pb::TrackEvent& e = p.track_event();
    EXPECT_TRUE(out.tracks.count(e.track_uuid())) << "event before its track's descriptor";
    switch (e.type()) {
      case pb::TrackEvent::TYPE_SLICE_BEGIN: {
        ++out.begins;
        Slice s;
        EXPECT_TRUE(names.count(e.name_iid())) << "unresolved name iid " << e.name_iid();
        s.name = names[e.name_iid()];
        s.start = p.timestamp();
        for (const std::uint64_t c : e.category_iids()) {
          EXPECT_TRUE(categories.count(c));
          s.categories.push_back(categories[c]);
        }
        for (const auto& a : e.debug_annotations()) {
          EXPECT_TRUE(arg_names.count(a.name_iid()));
          s.args[arg_names[a.name_iid()]] =
              a.has_int_value() ? a.int_value() : static_cast<std::int64_t>(a.double_value() * 1e6);
        }
        out.flow_starts += static_cast<std::size_t>(e.flow_ids_size());
        out.flow_ends += static_cast<std::size_t>(e.terminating_flow_ids_size());
        open[e.track_uuid()].push_back(s);
        break;
      }
      case pb::TrackEvent::TYPE_SLICE_END: {
        ++out.ends;
        auto& stack = open[e.track_uuid()];
        EXPECT_FALSE(stack.empty());
        if (stack.empty()) break;
        Slice s = stack.back();
        stack.pop_back();
        s.end = p.timestamp();
        EXPECT_LE(s.start, s.end);
        out.slices[e.track_uuid()].push_back(s);
        break;
      }
      case pb::TrackEvent::TYPE_COUNTER:
        out.counters[e.track_uuid()].push_back(e.double_counter_value());
        break;
      case pb::TrackEvent::TYPE_INSTANT: {
        Instant instant;
        EXPECT_TRUE(e.has_name_iid()) << "names are interned";
        EXPECT_TRUE(names.count(e.name_iid())) << "unresolved name iid " << e.name_iid();
        instant.name = names[e.name_iid()];
        instant.time = p.timestamp();
        for (const std::uint64_t c : e.category_iids()) {
          EXPECT_TRUE(categories.count(c));
          instant.categories.push_back(categories[c]);
        }
        for (const auto& a : e.debug_annotations()) {
          EXPECT_TRUE(arg_names.count(a.name_iid()));
          const std::string& name = arg_names[a.name_iid()];
          if (a.has_string_value()) instant.strings[name] = a.string_value();
          if (a.has_int_value()) instant.ints[name] = a.int_value();
          if (a.has_bool_value()) instant.bools[name] = a.bool_value();
        }
        out.instants[e.track_uuid()].push_back(instant);
        break;
      }
      default:
        ADD_FAILURE() << "unexpected event type " << e.type();
    }
  }
  for (const auto& [uuid, stack] : open) EXPECT_TRUE(stack.empty()) << "unclosed slice";
  return out;
}

const pb::TrackDescriptor* track_named(const Decoded& d, const std::string& name) {
  const pb::TrackDescriptor* found = nullptr;
  for (const auto& [uuid, t] : d.tracks) {
    if (t.name() == name) {
      EXPECT_EQ(found, nullptr) << "two tracks named " << name;
      found = &t;
    }
  }
  return found;
}

TEST(PerfettoTrace, MultiSampleMatchesTheModel) {
  const auto e = export_multi();
  const pipescope::Run& run = e->run;
  ASSERT_EQ(run.devices.size(), 4u);
  ASSERT_EQ(run.job_count(), 77u);
  const Decoded d = decode(e->trace);

  // Packets: 2 Steps tracks + 3 counter tracks + 2 machines + 4 device lanes
  // + 4 bubble lanes; 2 per step, 3 per step boundary, 2 per job and bubble,
  // and the packet that starts each step's unit.
  std::size_t bubbles = 0;
  for_each_bubble(run, e->metrics, [&](const Bubble&) { ++bubbles; });
  const std::size_t steps = e->metrics.steps.size();
  EXPECT_EQ(d.tracks.size(), 2u + 3u + 2u + 4u + 4u);
  EXPECT_EQ(
      static_cast<std::size_t>(e->trace.packet_size()),
      d.tracks.size() + 2 * steps + 3 * (steps + 1) + 2 * run.job_count() + 2 * bubbles + steps);
  EXPECT_EQ(d.begins, steps + run.job_count() + bubbles);
  EXPECT_EQ(d.ends, d.begins);

  // Processes per machine, one thread track per device (and its bubbles).
  for (const std::string machine : {"machine0", "machine1"}) {
    const pb::TrackDescriptor* t = track_named(d, machine);
    ASSERT_NE(t, nullptr) << machine;
    ASSERT_TRUE(t->has_process());
    EXPECT_EQ(t->process().process_name(), machine);
    EXPECT_EQ(t->process().pid(), machine == "machine0" ? 2 : 3);
  }
  const std::int64_t origin = earliest_start(run);
  std::set<std::int32_t> tids;
  for (const Device& device : run.devices) {
    const std::string name =
        "GPU " + std::to_string(device.index) + " (machine " + std::to_string(device.machine) + ")";
    const pb::TrackDescriptor* t = track_named(d, name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_TRUE(t->has_thread());
    EXPECT_EQ(t->thread().thread_name(), name);
    EXPECT_EQ(t->thread().pid(), device.machine + 2);
    EXPECT_TRUE(tids.insert(t->thread().tid()).second) << "tids must be unique";
    EXPECT_EQ(track_named(d, name + " \xC2\xB7 overlap 1"), nullptr);
    ASSERT_NE(track_named(d, name + " \xC2\xB7 bubbles"), nullptr);

    // The device's slices are exactly its jobs: name, times, args.
    ASSERT_TRUE(d.slices.count(t->uuid()));
    const std::vector<Slice>& slices = d.slices.at(t->uuid());
    ASSERT_EQ(slices.size(), device.jobs.size());
    std::vector<std::tuple<std::uint64_t, std::uint64_t, std::string, std::int64_t>> want, got;
    for (const Job& job : device.jobs) {
      want.emplace_back(job.start_ns - origin, job.end_ns - origin,
                        run.types.name(job.type) + " mb" + std::to_string(job.micro_batch),
                        job.line);
    }
    for (const Slice& s : slices) {
      got.emplace_back(s.start, s.end, s.name, s.args.at("line"));
      EXPECT_EQ(s.categories.size(), 1u);
      EXPECT_TRUE(s.args.count("job_id") && s.args.count("micro_batch") && s.args.count("step"));
    }
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
  }

  // Step windows on the Steps track.
  const pb::TrackDescriptor* steps_track = nullptr;
  for (const auto& [uuid, t] : d.tracks) {
    if (t.name() == "Steps" && t.has_thread()) steps_track = &t;
  }
  ASSERT_NE(steps_track, nullptr);
  const std::vector<Slice>& step_slices = d.slices.at(steps_track->uuid());
  ASSERT_EQ(step_slices.size(), steps);
  for (std::size_t k = 0; k < steps; ++k) {
    const StepWindow& w = e->metrics.steps[k];
    // The multi sample's last step is cut short: named so.
    EXPECT_EQ(step_slices[k].name,
              "step " + std::to_string(w.step) + (w.complete ? "" : " (incomplete)"));
    EXPECT_EQ(step_slices[k].start, static_cast<std::uint64_t>(w.start_ns - origin));
    EXPECT_EQ(step_slices[k].end, static_cast<std::uint64_t>(w.end_ns - origin));
    EXPECT_EQ(step_slices[k].args.at("origin_ns"), origin);
    EXPECT_EQ(step_slices[k].args.at("duration_ns"), w.window_ns());
  }
  EXPECT_EQ(step_slices.front().name, "step 10");

  // Bubble counters: one value per step boundary on each of 3 tracks.
  EXPECT_EQ(d.counters.size(), 3u);
  for (const auto& [uuid, values] : d.counters) {
    EXPECT_EQ(values.size(), steps + 1);
    EXPECT_EQ(values.back(), 0.0);
  }
}

// Each step's job names are found on several threads, a block of steps at a
// time: over 600 steps (several blocks), every device's slices still carry
// exactly its jobs' names.
TEST(PerfettoTrace, JobNamesOfEveryStepOfALongRun) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 2, 3);
  config.steps = 600;
  const pipescope::Run run = testing::run_from_simulation(config);
  const Metrics metrics = compute_metrics(run);
  ASSERT_GE(metrics.steps.size(), 600u);
  TempDir dir;
  write_perfetto_trace(run, metrics, TraceOptions{}, dir / "trace.pftrace");
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir / "trace.pftrace")));
  const Decoded d = decode(trace);
  for (const Device& device : run.devices) {
    const std::string name =
        "GPU " + std::to_string(device.index) + " (machine " + std::to_string(device.machine) + ")";
    const pb::TrackDescriptor* t = track_named(d, name);
    ASSERT_NE(t, nullptr) << name;
    const std::vector<Slice>& slices = d.slices.at(t->uuid());
    ASSERT_EQ(slices.size(), device.jobs.size());
    std::vector<std::pair<std::uint64_t, std::string>> want, got;
    const std::int64_t origin = earliest_start(run);
    for (const Job& job : device.jobs) {
      want.emplace_back(job.start_ns - origin,
                        run.types.name(job.type) + " mb" + std::to_string(job.micro_batch));
    }
    for (const Slice& s : slices) got.emplace_back(s.start, s.name);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want) << name;
  }
}

TEST(PerfettoTrace, WireTagsUseTheUpstreamFieldNumbers) {
  const auto e = export_multi();
  std::string_view file = e->bytes;
  ASSERT_GT(file.size(), 2u);
  // The file is a Trace: only field 1 (0x0A, length-delimited), to the last byte.
  const std::vector<WireField> packets = wire_fields(file);
  ASSERT_EQ(packets.size(), static_cast<std::size_t>(e->trace.packet_size()));
  for (const WireField& p : packets) {
    ASSERT_EQ(p.number, 1u);
    ASSERT_EQ(p.wire_type, 2);
  }
  EXPECT_EQ(static_cast<unsigned char>(file[0]), 0x0Au);

  // First packet: trusted_packet_sequence_id = 10, interned_data = 12,
  // sequence_flags = 13 (SEQ_INCREMENTAL_STATE_CLEARED = 1), track_descriptor = 60.
  const std::vector<WireField> first = wire_fields(packets[0].bytes);
  std::vector<std::pair<std::uint32_t, int>> tags;
  for (const WireField& f : first) tags.emplace_back(f.number, f.wire_type);
  EXPECT_EQ(tags, (std::vector<std::pair<std::uint32_t, int>>{{10, 0}, {12, 2}, {13, 0}, {60, 2}}));
  // Raw bytes: 0x50 = field 10 varint, 0x62 = field 12 bytes, 0xE2 0x03 = field 60 bytes.
  const std::string_view raw = packets[0].bytes;
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x50u);
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x01u);
  EXPECT_EQ(static_cast<unsigned char>(raw[2]), 0x62u);
  EXPECT_NE(raw.find("\x68\x01\xE2\x03"), std::string_view::npos);
  EXPECT_EQ(field(first, 10).varint, 1u);
  EXPECT_EQ(field(first, 13).varint, 1u);

  // TrackDescriptor: uuid = 1, name = 2, process = 3 {pid = 1, process_name = 6}.
  const std::vector<WireField> track = wire_fields(field(first, 60).bytes);
  ASSERT_NE(find_field(track, 1), nullptr);
  EXPECT_EQ(field(track, 1).varint, 1u);
  ASSERT_NE(find_field(track, 2), nullptr);
  EXPECT_EQ(field(track, 2).bytes, "Steps");
  ASSERT_NE(find_field(track, 3), nullptr);
  const std::vector<WireField> process = wire_fields(field(track, 3).bytes);
  EXPECT_EQ(field(process, 1).varint, 1u);
  EXPECT_EQ(field(process, 6).bytes, "Steps");

  // InternedData: event_categories = 1, event_names = 2,
  // debug_annotation_names = 3, each entry {iid = 1, name = 2}.
  const std::vector<WireField> interned = wire_fields(field(first, 12).bytes);
  std::set<std::string_view> category_names, arg_names, event_names;
  for (const WireField& f : interned) {
    const std::vector<WireField> entry = wire_fields(f.bytes);
    ASSERT_NE(find_field(entry, 1), nullptr);
    ASSERT_NE(find_field(entry, 2), nullptr);
    (f.number == 1   ? category_names
     : f.number == 2 ? event_names
                     : arg_names)
        .insert(field(entry, 2).bytes);
  }
  EXPECT_TRUE(category_names.count("forward") && category_names.count("bubble"));
  EXPECT_TRUE(arg_names.count("micro_batch") && arg_names.count("job_id"));
  EXPECT_TRUE(event_names.count("interior"));

  // Second packet: the Steps thread track: thread = 4 {pid = 1, tid = 2, thread_name = 5}.
  const std::vector<WireField> second = wire_fields(packets[1].bytes);
  EXPECT_EQ(field(second, 13).varint, 2u);  // SEQ_NEEDS_INCREMENTAL_STATE
  const std::vector<WireField> thread =
      wire_fields(field(wire_fields(field(second, 60).bytes), 4).bytes);
  EXPECT_EQ(field(thread, 1).varint, 1u);
  EXPECT_EQ(field(thread, 2).varint, 1u);
  EXPECT_EQ(field(thread, 5).bytes, "Steps");

  // First track event: timestamp = 8, track_event = 11 {type = 9
  // (TYPE_SLICE_BEGIN = 1), name_iid = 10, track_uuid = 11, category_iids = 3,
  // debug_annotations = 4 {name_iid = 1, int_value = 4 | double_value = 5}}.
  std::size_t i = 0;
  while (i < packets.size() && find_field(wire_fields(packets[i].bytes), 11) == nullptr) ++i;
  ASSERT_LT(i, packets.size());
  const std::vector<WireField> packet = wire_fields(packets[i].bytes);
  ASSERT_NE(find_field(packet, 8), nullptr);
  EXPECT_EQ(field(packet, 8).wire_type, 0);
  EXPECT_EQ(field(packet, 8).varint, e->trace.packet(static_cast<int>(i)).timestamp());
  const std::vector<WireField> event = wire_fields(field(packet, 11).bytes);
  EXPECT_EQ(field(event, 9).varint, 1u);
  EXPECT_EQ(field(event, 11).varint,
            e->trace.packet(static_cast<int>(i)).track_event().track_uuid());
  ASSERT_NE(find_field(event, 10), nullptr);
  ASSERT_NE(find_field(event, 3), nullptr);
  ASSERT_NE(find_field(event, 4), nullptr);
  const std::vector<WireField> arg = wire_fields(field(event, 4).bytes);
  ASSERT_NE(find_field(arg, 1), nullptr);
  EXPECT_TRUE(find_field(arg, 4) != nullptr || find_field(arg, 5) != nullptr);
  // The matching end: type 2.
  ASSERT_LT(i + 1, packets.size());
  const std::vector<WireField> end =
      wire_fields(field(wire_fields(packets[i + 1].bytes), 11).bytes);
  EXPECT_EQ(field(end, 9).varint, 2u);
}

TEST(PerfettoTrace, AbsoluteTimeIsEpochNanoseconds) {
  const auto e = export_multi(/*absolute_time=*/true);
  const Decoded d = decode(e->trace);
  std::set<std::uint64_t> starts;
  for (const auto& [uuid, slices] : d.slices) {
    for (const Slice& s : slices) starts.insert(s.start);
  }
  for (const Device& device : e->run.devices) {
    for (const Job& job : device.jobs) {
      EXPECT_TRUE(starts.count(static_cast<std::uint64_t>(job.start_ns))) << job.start_ns;
    }
  }
  EXPECT_EQ(*starts.begin(), static_cast<std::uint64_t>(earliest_start(e->run)));
  EXPECT_GT(*starts.begin(), 1'600'000'000'000'000'000u);
}

TEST(PerfettoTrace, FlowsJoinEachDependency) {
  const auto e = export_multi(false, /*flows=*/true);
  const Decoded d = decode(e->trace);
  ASSERT_FALSE(e->analysis.dependencies.empty());
  EXPECT_EQ(d.flow_starts, e->analysis.dependencies.size());
  EXPECT_EQ(d.flow_ends, e->analysis.dependencies.size());
}

TEST(PerfettoTrace, StepSelectionKeepsOnlyThoseSteps) {
  const auto all = export_multi();
  const auto e = export_multi(false, /*flows=*/true, "11");
  const Decoded d = decode(e->trace);
  // Step 11 (index 1): its jobs only, time zero at the earliest of them.
  std::size_t jobs = 0;
  std::int64_t origin = INT64_MAX;
  for (std::size_t dev = 0; dev < e->run.devices.size(); ++dev) {
    for (std::size_t i = 0; i < e->run.devices[dev].jobs.size(); ++i) {
      if (e->metrics.job_step[dev][i] != 1) continue;
      ++jobs;
      origin = std::min(origin, e->run.devices[dev].jobs[i].start_ns);
    }
  }
  ASSERT_GT(jobs, 0u);
  std::size_t bubbles = 0;
  for_each_bubble(e->run, e->metrics, [&](const Bubble& b) { bubbles += b.step == 1 ? 1 : 0; });
  EXPECT_EQ(d.begins, 1 + jobs + bubbles);
  std::uint64_t first = UINT64_MAX;
  for (const auto& [uuid, slices] : d.slices) {
    for (const Slice& s : slices) first = std::min(first, s.start);
  }
  EXPECT_EQ(first, 0u);
  bool step_found = false;
  for (const auto& [uuid, slices] : d.slices) {
    for (const Slice& s : slices) {
      if (s.name.rfind("step ", 0) != 0) continue;
      EXPECT_EQ(s.name, "step 11 (incomplete)");  // the multi sample's last, cut short
      EXPECT_EQ(static_cast<std::int64_t>(s.start) + origin, e->metrics.steps[1].start_ns);
      step_found = true;
    }
  }
  EXPECT_TRUE(step_found);
  EXPECT_LT(e->bytes.size(), all->bytes.size());
  // Same tracks as the full trace: the layout does not depend on the selection.
  EXPECT_EQ(d.tracks.size(), decode(all->trace).tracks.size());
}

TEST(PerfettoTrace, OverlappingJobsGetLanesAndNothingNestsWrongly) {
  pipescope::Run run;
  const TypeId forward = run.types.intern("forward");
  Device device;
  device.index = 5;
  device.machine = 1;
  for (const auto& [start, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1000, 2000}, {1500, 1600}, {1550, 1700}, {2000, 2000}, {2000, 2500}}) {
    Job job;
    job.start_ns = start;
    job.end_ns = end;
    job.type = forward;
    device.jobs.push_back(job);
  }
  run.devices.push_back(device);
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  TempDir dir;
  write_perfetto_trace(run, metrics, TraceOptions{}, dir / "t.pftrace");
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir / "t.pftrace")));
  const Decoded d = decode(trace);
  EXPECT_EQ(d.tracks.size(), 2u + 1u + 3u);  // Steps x2, machine, 3 lanes
  const pb::TrackDescriptor* lane2 = track_named(d, "GPU 5 (machine 1) \xC2\xB7 overlap 2");
  ASSERT_NE(lane2, nullptr);
  EXPECT_EQ(track_named(d, "Machine 1")->process().pid(), 3);
  // No two slices of one track overlap (touching is fine).
  for (const auto& [uuid, slices] : d.slices) {
    std::vector<Slice> sorted = slices;
    std::sort(sorted.begin(), sorted.end(),
              [](const Slice& a, const Slice& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < sorted.size(); ++i) EXPECT_LE(sorted[i - 1].end, sorted[i].start);
  }
  EXPECT_EQ(d.slices.at(lane2->uuid()).size(), 1u);
}

// An lr job's slice has category "lr", interned after the step and bubble
// categories (whose iids stay those of a trace without lr jobs).
TEST(PerfettoTrace, LrJobsHaveTheirOwnCategory) {
  pipescope::Run run;
  Device device;
  const std::pair<const char*, std::int64_t> jobs[] = {
      {"lr", 0}, {"forward", 10}, {"backward", 20}, {"optimizer", 30}};
  for (const auto& [type, start] : jobs) {
    Job job;
    job.start_ns = start;
    job.end_ns = start + 5;
    job.type = run.types.intern(type);
    device.jobs.push_back(job);
  }
  run.devices.push_back(device);
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  TempDir dir;
  write_perfetto_trace(run, metrics, TraceOptions{}, dir / "t.pftrace");
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir / "t.pftrace")));
  std::map<std::string, std::uint64_t> iids;
  for (const auto& c : trace.packet(0).interned_data().event_categories()) iids[c.name()] = c.iid();
  EXPECT_EQ(iids.at("step"), 6u);
  EXPECT_EQ(iids.at("bubble"), 7u);
  EXPECT_EQ(iids.at("lr"), 8u);
  const Decoded d = decode(trace);
  std::map<std::string, std::string> category_of;
  for (const auto& [uuid, slices] : d.slices) {
    for (const Slice& slice : slices) {
      if (!slice.categories.empty()) category_of[slice.name] = slice.categories.front();
    }
  }
  EXPECT_EQ(category_of.at("lr mb0"), "lr");
  EXPECT_EQ(category_of.at("forward mb0"), "forward");

  // Without lr jobs there is no lr category.
  pipescope::Run plain;
  Device one;
  Job job;
  job.end_ns = 5;
  job.type = plain.types.intern("forward");
  one.jobs.push_back(job);
  plain.devices.push_back(one);
  plain.finalize();
  write_perfetto_trace(plain, compute_metrics(plain), TraceOptions{}, dir / "plain.pftrace");
  pb::Trace plain_trace;
  ASSERT_TRUE(plain_trace.ParseFromString(read_file(dir / "plain.pftrace")));
  for (const auto& c : plain_trace.packet(0).interned_data().event_categories()) {
    EXPECT_NE(c.name(), "lr");
  }
}

TEST(PerfettoTrace, CliWritesItBesideTheOtherOutputs) {
  const std::string multi = std::string(PIPESCOPE_TESTDATA) + "/multi";
  TempDir dir;
  auto result = testing::run_cli("analyze " + testing::shell_quote(multi) + " -q --perfetto -o " +
                                 testing::shell_quote(dir / "both"));
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_TRUE(fs::exists(dir / "both/trace.json"));
  EXPECT_TRUE(fs::exists(dir / "both/summary.json"));
  const std::string both = read_file(dir / "both/trace.pftrace");
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(both));
  // Job slices (the BEGIN events with 4 args: job_id, micro_batch, step, line).
  std::size_t job_slices = 0;
  for (const pb::TracePacket& p : trace.packet()) {
    if (p.has_track_event() && p.track_event().type() == pb::TrackEvent::TYPE_SLICE_BEGIN &&
        p.track_event().debug_annotations_size() == 4) {
      ++job_slices;
    }
  }
  EXPECT_EQ(job_slices, 77u);

  // --no-trace leaves trace.json out but --perfetto still writes trace.pftrace.
  result = testing::run_cli("analyze " + testing::shell_quote(multi) +
                            " --no-trace --perfetto -o " + testing::shell_quote(dir / "only"));
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_FALSE(fs::exists(dir / "only/trace.json"));
  EXPECT_EQ(read_file(dir / "only/trace.pftrace"), both) << "deterministic";
  EXPECT_NE(result.output.find("trace.pftrace"), std::string::npos) << result.output;

  // Without the flag there is none.
  result = testing::run_cli("analyze " + testing::shell_quote(multi) + " -q -o " +
                            testing::shell_quote(dir / "none"));
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_FALSE(fs::exists(dir / "none/trace.pftrace"));
  // And no temporary file is left behind.
  for (const auto& entry : fs::directory_iterator(dir / "only")) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos);
  }
}

// ---- Log events ----

pb::Trace write_events_trace(const testing::LogEventRun& r, std::string_view steps = "",
                             std::string* bytes = nullptr) {
  TraceOptions options;
  options.steps = StepSelection::parse(steps, r.metrics, "--steps");
  TempDir dir;
  write_perfetto_trace(r.run, r.metrics, options, dir / "t.pftrace");
  const std::string written = read_file(dir / "t.pftrace");
  if (bytes != nullptr) *bytes = written;
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(written));
  return trace;
}

// The instants of the track named `name`.
const std::vector<Instant>& instants_on(const Decoded& d, const std::string& name) {
  static const std::vector<Instant> none;
  const pb::TrackDescriptor* track = track_named(d, name);
  if (track == nullptr) {
    ADD_FAILURE() << "no track " << name;
    return none;
  }
  const auto found = d.instants.find(track->uuid());
  return found != d.instants.end() ? found->second : none;
}

TEST(PerfettoTrace, LogEventsAreInstantsOnTheirDevicesTrack) {
  const auto r = testing::log_event_run();
  std::string bytes;
  const pb::Trace trace = write_events_trace(r, "", &bytes);
  const Decoded d = decode(trace);
  // Time zero: device 1's event 5 ms before every job; jobs count from it too.
  const std::int64_t origin = testing::event_run_time(-5);
  const auto at = [&](std::int64_t ms) {
    return static_cast<std::uint64_t>(testing::event_run_time(ms) - origin);
  };

  // Each device's instants are on the thread track of its jobs; none for the
  // unplaced event.
  std::size_t total = 0;
  for (const auto& [uuid, list] : d.instants) total += list.size();
  EXPECT_EQ(total, 7u);
  const pb::TrackDescriptor* gpu0 = track_named(d, "GPU 0 (machine 0)");
  ASSERT_NE(gpu0, nullptr);
  ASSERT_EQ(d.slices.at(gpu0->uuid()).size(), r.run.devices[0].jobs.size());
  EXPECT_EQ(d.slices.at(gpu0->uuid()).front().start,
            static_cast<std::uint64_t>(r.run.devices[0].jobs[0].start_ns - origin));

  const std::vector<Instant>& first = instants_on(d, "GPU 0 (machine 0)");
  ASSERT_EQ(first.size(), 4u);
  std::vector<std::pair<std::string, std::uint64_t>> got;
  for (const Instant& i : first) got.emplace_back(i.name, i.time);
  EXPECT_EQ(got,
            (std::vector<std::pair<std::string, std::uint64_t>>{{"checkpoint_save", at(60)},
                                                                {"nccl_warn", at(150)},
                                                                {"cuda_error", at(230)},
                                                                {"checkpoint_save", at(900)}}));
  const Instant& save = first[0];
  EXPECT_EQ(save.categories, (std::vector<std::string>{"event", "checkpoint"}));
  EXPECT_EQ(save.strings, (std::map<std::string, std::string>{{"severity", "info"},
                                                              {"category", "checkpoint"},
                                                              {"path", "workerlog.0"},
                                                              {"captures.path", "/ckpt/step_10"}}));
  EXPECT_EQ(save.ints, (std::map<std::string, std::int64_t>{{"line", 7}}));
  EXPECT_TRUE(save.bools.empty());
  const Instant& warn = first[1];
  EXPECT_EQ(warn.categories, (std::vector<std::string>{"event", "nccl"}));
  EXPECT_EQ(warn.bools, (std::map<std::string, bool>{{"approximate", true}}));
  EXPECT_EQ(warn.strings.at("captures.message"), "Call to ibv_reg_mr failed");
  EXPECT_EQ(warn.strings.at("severity"), "warning");
  EXPECT_EQ(first[2].strings.at("severity"), "error");

  const std::vector<Instant>& second = instants_on(d, "GPU 1 (machine 0)");
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[0].time, 0u);
  EXPECT_EQ(second[0].strings.at("path"), "workerlog.1");
  EXPECT_EQ(second[2].time, at(650));

  // Each name is interned once (decode checks an iid is never redefined).
  std::map<std::string, int> defined;
  for (const pb::TracePacket& p : trace.packet()) {
    for (const auto& n : p.interned_data().event_names()) ++defined[n.name()];
    for (const auto& n : p.interned_data().debug_annotation_names()) ++defined[n.name()];
  }
  for (const std::string name : {"checkpoint_save", "nccl_warn", "severity", "captures.path"}) {
    EXPECT_EQ(defined[name], 1) << name;
  }

  // Wire tags, independently of the generated code: the approximate
  // warning's track event has type = 9 (TYPE_INSTANT = 3), name_iid = 10,
  // category_iids = 3 twice, and debug annotations = 4 with string_value = 6,
  // int_value = 4 and bool_value = 2.
  bool seen = false;
  for (const WireField& packet : wire_fields(bytes)) {
    const std::vector<WireField> packet_fields =
        wire_fields(packet.bytes);  // kept: find_field points into it
    const WireField* event_field = find_field(packet_fields, 11);
    if (event_field == nullptr) continue;
    const std::vector<WireField> event = wire_fields(event_field->bytes);
    if (field(event, 9).varint != 3) continue;
    std::set<std::uint32_t> values;
    std::size_t categories = 0;
    for (const WireField& f : event) {
      categories += f.number == 3 ? 1 : 0;
      if (f.number != 4) continue;
      const std::vector<WireField> arg = wire_fields(f.bytes);
      EXPECT_NE(find_field(arg, 1), nullptr);
      for (const WireField& a : arg) values.insert(a.number);
    }
    EXPECT_NE(find_field(event, 10), nullptr);
    EXPECT_EQ(categories, 2u);
    if (values.count(2) == 0) continue;  // not the approximate one
    EXPECT_EQ(values, (std::set<std::uint32_t>{1, 2, 4, 6}));
    seen = true;
  }
  EXPECT_TRUE(seen);
}

TEST(PerfettoTrace, LogEventsFollowTheStepSelection) {
  const auto r = testing::log_event_run();
  // Step 11: the warning in the gap before it is time zero, then its
  // window's events on both devices.
  const Decoded d = decode(write_events_trace(r, "11"));
  const auto names = [](const std::vector<Instant>& list) {
    std::vector<std::pair<std::string, std::uint64_t>> out;
    for (const Instant& i : list) out.emplace_back(i.name, i.time);
    return out;
  };
  using List = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(names(instants_on(d, "GPU 0 (machine 0)")),
            (List{{"nccl_warn", 0}, {"cuda_error", 80 * testing::kEventRunMs}}));
  EXPECT_EQ(names(instants_on(d, "GPU 1 (machine 0)")),
            (List{{"nccl_warn", 130 * testing::kEventRunMs}}));
  // Step 12: the event after the last window is in no step.
  const Decoded last = decode(write_events_trace(r, "12"));
  EXPECT_TRUE(instants_on(last, "GPU 0 (machine 0)").empty());
  EXPECT_EQ(names(instants_on(last, "GPU 1 (machine 0)")),
            (List{{"cuda_error", 250 * testing::kEventRunMs}}));
}

TEST(PerfettoTrace, LogEventsAddTheirPacketsAndChangeNoOther) {
  auto r = testing::log_event_run();
  // Events that do not move time zero.
  r.run.devices[1].events.erase(r.run.devices[1].events.begin());
  std::string with_bytes, without_bytes;
  const pb::Trace with = write_events_trace(r, "", &with_bytes);
  for (Device& device : r.run.devices) device.events.clear();
  write_events_trace(r, "", &without_bytes);
  pb::Trace kept;
  int instants = 0;
  for (const pb::TracePacket& p : with.packet()) {
    if (p.has_track_event() && p.track_event().type() == pb::TrackEvent::TYPE_INSTANT) {
      ++instants;
    } else {
      *kept.add_packet() = p;
    }
  }
  EXPECT_EQ(instants, 6);
  EXPECT_EQ(kept.SerializeAsString(), without_bytes);
  EXPECT_GT(with_bytes.size(), without_bytes.size());
}

// A NCCL warning appended to a simulated worker log (no timestamp: placed at
// the job line before it) is one instant in the pftrace `analyze` writes.
TEST(PerfettoTrace, CliWritesTheLogEventsOfWorkerLogs) {
  TempDir dir;
  auto result = testing::run_cli("simulate -o " + testing::shell_quote(dir / "logs") +
                                 " --stages 2 --micro-batches 4 --steps 3");
  ASSERT_EQ(result.status, 0) << result.output;
  {
    std::ofstream log(dir / "logs/workerlog.1", std::ios::app);
    log << "gpu1:1:2 [1] NCCL WARN Call to ibv_reg_mr failed\n";
  }
  result = testing::run_cli("analyze -q --perfetto " + testing::shell_quote(dir / "logs") + " -o " +
                            testing::shell_quote(dir / "out"));
  ASSERT_EQ(result.status, 0) << result.output;
  pb::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(read_file(dir / "out/trace.pftrace")));
  const Decoded d = decode(trace);
  const std::vector<Instant>& instants = instants_on(d, "GPU 1 (machine 0)");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].name, "nccl_warn");
  EXPECT_EQ(instants[0].bools.at("approximate"), true);
  EXPECT_EQ(instants[0].strings.at("captures.message"), "Call to ibv_reg_mr failed");
  EXPECT_EQ(instants[0].strings.at("path"), dir / "logs/workerlog.1");
  EXPECT_TRUE(instants_on(d, "GPU 0 (machine 0)").empty());
}

}  // namespace
}  // namespace pipescope
