#include "export/chrome_trace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_kind.h"
#include "export/atomic_file.h"
#include "export/decimal_text.h"
#include "export/json_writer.h"
#include "export/ordered_writer.h"
#include "export/trace_content.h"
#include "export/trace_layout.h"
#include "export/trace_parts.h"
#include "version.h"

namespace pipescope {

namespace {

// Reserved colour names of the trace viewer (tracing/base/color_scheme.html),
// chosen so the kinds are told apart at a glance.
std::string_view kind_colour(JobKind kind) {
  switch (kind) {
    case JobKind::forward:
      return "thread_state_running";  // green
    case JobKind::backward:
      return "rail_response";  // blue
    case JobKind::optimizer:
      return "rail_animation";  // red
    case JobKind::comm:
      return "grey";
    case JobKind::other:
      return "generic_work";
    case JobKind::lr:
      return "rail_load";
  }
  return "generic_work";
}
constexpr std::string_view kStepColour = "thread_state_iowait";  // orange

// By BubbleKind: fill, interior, drain.
constexpr std::array<std::string_view, 3> kBubbleColours = {"yellow", "bad", "olive"};

// Writes the events of the traceEvents array, one JSON object a line, with
// timestamps relative to the trace's time zero.
class EventWriter {
 public:
  EventWriter(AtomicFile& file, std::int64_t origin_ns)
      : w_(file, JsonStyle{0, false}), origin_ns_(origin_ns) {}
  EventWriter(fmt::memory_buffer& buffer, std::int64_t origin_ns)
      : w_(buffer, JsonStyle{0, false}), origin_ns_(origin_ns) {}

  JsonWriter& json() { return w_; }

  // "ts": `ns` (epoch) relative to the time zero.
  void ts_field(std::int64_t ns) { us_field("ts", ns_since(ns, origin_ns_)); }

  // `key`: a length of time, in microseconds.
  void us_field(std::string_view key, std::int64_t ns) {
    scratch_.clear();
    append_ns_as_us(scratch_, ns);
    w_.key(key);
    w_.raw_value(std::string_view(scratch_.data(), scratch_.size()));
  }

  void process(const TraceProcess& process) {
    metadata("process_name", process.pid, process.first_tid, "name", process.name);
    metadata("process_sort_index", process.pid, process.first_tid, "sort_index",
             process.sort_index);
  }

  void thread(const TraceThread& thread) {
    metadata("thread_name", thread.pid, thread.tid, "name", thread.name);
    metadata("thread_sort_index", thread.pid, thread.tid, "sort_index", thread.sort_index);
  }

  // One complete event; the caller writes its args object's fields.
  void begin_slice(std::string_view name, std::string_view category, std::int64_t start_ns,
                   std::int64_t duration_ns, const TraceThread& thread, std::string_view colour) {
    w_.begin_object(/*one_line=*/true);
    w_.field("name", name);
    w_.field("cat", category);
    w_.field("ph", "X");
    ts_field(start_ns);
    us_field("dur", duration_ns);
    w_.field("pid", thread.pid);
    w_.field("tid", thread.tid);
    w_.field("cname", colour);
    w_.key("args");
    w_.begin_object();
  }

  // One counter event; the caller writes its values.
  void begin_counter(std::string_view name, std::int64_t ns, const TraceThread& thread) {
    w_.begin_object(/*one_line=*/true);
    w_.field("name", name);
    w_.field("ph", "C");
    ts_field(ns);
    w_.field("pid", thread.pid);
    w_.field("tid", thread.tid);
    w_.key("args");
    w_.begin_object();
  }

  // Closes the args object and the event.
  void end_event() {
    w_.end_object();
    w_.end_object();
  }

 private:
  template <typename Value>
  void metadata(std::string_view name, std::int64_t pid, std::int64_t tid, std::string_view key,
                const Value& value) {
    // Metadata events carry no "ts": viewers accept that, and a ts of 0 would
    // stretch an absolute-time trace back to 1970 in some of them.
    w_.begin_object(/*one_line=*/true);
    w_.field("name", name);
    w_.field("ph", "M");
    w_.field("pid", pid);
    w_.field("tid", tid);
    w_.key("args");
    w_.begin_object();
    w_.field(key, value);
    end_event();
  }

  JsonWriter w_;
  std::int64_t origin_ns_;
  fmt::memory_buffer scratch_;
};

// ,"pid":P,"tid":T of each lane of the layout, as the JsonWriter writes them.
std::vector<std::string> lane_texts(const TraceLayout& layout) {
  std::vector<std::string> lanes;
  for (const TraceThread& thread : layout.threads()) {
    lanes.push_back(fmt::format(",\"pid\":{},\"tid\":{}", thread.pid, thread.tid));
  }
  return lanes;
}

template <std::size_t N>
char* put(char* out, const char (&literal)[N]) {
  std::memcpy(out, literal, N - 1);
  return out + N - 1;
}

char* put(char* out, std::string_view text) {
  std::memcpy(out, text.data(), text.size());
  return out + text.size();
}

std::string json_string(std::string_view text) {
  fmt::memory_buffer out;
  append_json_string(out, text);
  return fmt::to_string(out);
}

// The job events, the bulk of a trace, as text: each ",\n{...}" exactly as
// EventWriter::begin_slice and JsonWriter write it in the traceEvents array
// (after its first element), assembled from pieces made once per job type
// and per lane, with the numbers written by decimal_text.h. const: pieces
// are formatted on several threads at once.
class JobEventText {
 public:
  JobEventText(const TraceBody& body, const Metrics& metrics, const TraceLayout& layout,
               const std::vector<std::string>& lanes, std::int64_t origin_ns)
      : body_(body),
        run_(body.part().run),
        metrics_(metrics),
        layout_(layout),
        lanes_(lanes),
        origin_ns_(origin_ns) {
    const Run& run = run_;
    const TraceJobKinds kinds(run);
    std::size_t longest = 0;
    // One more than the run's types: jobs of a type id it does not have.
    for (TypeId type = 0; type <= run.types.size(); ++type) {
      Job job;
      job.type = type;
      const JobKind kind = kinds.of(job);
      std::string name;
      trace_job_name(run, job, name);  // "TYPE mb0"
      // "TYPE mb" quoted, without its closing quote: the micro-batch digits
      // follow. The digits are ASCII, so the type's bytes are escaped the same
      // with or without them (an unfinished UTF-8 sequence ends either way).
      name.pop_back();
      std::string head = json_string(name);
      head.pop_back();
      TypeText text;
      text.head = ",\n{\"name\":" + head;
      text.middle = "\",\"cat\":" + json_string(job_kind_name(kind)) + ",\"ph\":\"X\",\"ts\":";
      text.tail = ",\"cname\":" + json_string(kind_colour(kind)) + ",\"args\":{\"job_id\":";
      longest = std::max(longest, text.head.size() + text.middle.size() + text.tail.size());
      types_.push_back(std::move(text));
    }
    std::size_t longest_lane = 0;
    for (const std::string& lane : lanes_) longest_lane = std::max(longest_lane, lane.size());
    // The pieces above, the literals below (under 128 bytes) and the numbers.
    max_event_bytes_ = longest + longest_lane + 128 + 2 * kMaxNsAsUsChars + 6 * kMaxDecimalChars;
  }

  // Appends the events of the unit's jobs in `piece`.
  void format(const TraceBody::Piece& piece, fmt::memory_buffer& out) const {
    const std::int64_t k = body_.step(piece.unit);
    const std::vector<std::vector<int>>& job_lanes = body_.part().lanes;
    for (std::size_t d = piece.device_begin; d < piece.device_end; ++d) {
      const JobVector& jobs = run_.devices[d].jobs;
      for (std::size_t i = body_.begin(piece, d), end = body_.end(piece, d); i < end; ++i) {
        if (body_.job_step(d, i) != k) continue;
        format_job(jobs[i], k, layout_.device_lane(d) + static_cast<std::size_t>(job_lanes[d][i]),
                   out);
      }
    }
  }

 private:
  void format_job(const Job& job, std::int64_t k, std::size_t lane, fmt::memory_buffer& out) const {
    const std::size_t unknown = run_.types.size();
    const TypeText& type = types_[job.type < unknown ? job.type : unknown];
    const std::size_t old = out.size();
    out.resize(old + max_event_bytes_);
    char* p = out.data() + old;
    p = put(p, type.head);
    p = write_decimal(p, job.micro_batch);
    p = put(p, type.middle);
    p = write_ns_as_us(p, ns_since(job.start_ns, origin_ns_));
    p = put(p, ",\"dur\":");
    p = write_ns_as_us(p, job.duration_ns());
    p = put(p, lanes_[lane]);
    p = put(p, type.tail);
    p = write_decimal(p, job.job_id);
    p = put(p, ",\"micro_batch\":");
    p = write_decimal(p, job.micro_batch);
    p = put(p, ",\"step\":");
    if (k >= 0 && static_cast<std::size_t>(k) < metrics_.steps.size()) {
      p = write_decimal(p, metrics_.steps[static_cast<std::size_t>(k)].step);
    } else {
      p = put(p, "null");
    }
    p = put(p, ",\"duration_ns\":");
    p = write_decimal(p, job.duration_ns());
    p = put(p, ",\"line\":");
    p = write_decimal(p, job.line);
    p = put(p, "}}");
    out.resize(static_cast<std::size_t>(p - out.data()));
  }

  struct TypeText {
    std::string head;    // ,\n{"name":"TYPE mb
    std::string middle;  // ","cat":"KIND","ph":"X","ts":
    std::string tail;    // ,"cname":"COLOUR","args":{"job_id":
  };

  const TraceBody& body_;
  const Run& run_;
  const Metrics& metrics_;
  const TraceLayout& layout_;
  const std::vector<std::string>& lanes_;
  const std::int64_t origin_ns_;
  std::vector<TypeText> types_;  // by type id, then unknown types
  std::size_t max_event_bytes_ = 0;
};

// The bubble events, by hand like the jobs: each ",\n{...}" as the
// JsonWriter would write it.
class BubbleEventText {
 public:
  BubbleEventText(const Metrics& metrics, const TraceLayout& layout,
                  const std::vector<std::string>& lanes, std::int64_t origin_ns)
      : metrics_(metrics), layout_(layout), lanes_(lanes), origin_ns_(origin_ns) {
    std::size_t longest = 0;
    for (const BubbleKind kind : {BubbleKind::fill, BubbleKind::interior, BubbleKind::drain}) {
      const auto k = static_cast<std::size_t>(kind);
      heads_[k] = ",\n{\"name\":" + json_string(bubble_kind_name(kind)) +
                  ",\"cat\":\"bubble\",\"ph\":\"X\",\"ts\":";
      tails_[k] = ",\"cname\":" + json_string(kBubbleColours[k]) + ",\"args\":{\"step\":";
      longest = std::max(longest, heads_[k].size() + tails_[k].size());
    }
    std::size_t longest_lane = 0;
    for (const std::string& lane : lanes_) longest_lane = std::max(longest_lane, lane.size());
    // The pieces, the literals below (under 64 bytes) and the numbers.
    max_bytes_ = longest + longest_lane + 64 + 2 * kMaxNsAsUsChars + 2 * kMaxDecimalChars;
  }

  void format(const Bubble& bubble, fmt::memory_buffer& out) const {
    const auto k = static_cast<std::size_t>(bubble.kind);
    const std::size_t old = out.size();
    out.resize(old + max_bytes_);
    char* p = out.data() + old;
    p = put(p, heads_[k]);
    p = write_ns_as_us(p, ns_since(bubble.start_ns, origin_ns_));
    p = put(p, ",\"dur\":");
    p = write_ns_as_us(p, bubble.length_ns());
    p = put(p, lanes_[layout_.bubble_lane(bubble.device)]);
    p = put(p, tails_[k]);
    p = write_decimal(p, metrics_.steps[bubble.step].step);
    p = put(p, ",\"length_ns\":");
    p = write_decimal(p, bubble.length_ns());
    p = put(p, "}}");
    out.resize(static_cast<std::size_t>(p - out.data()));
  }

 private:
  const Metrics& metrics_;
  const TraceLayout& layout_;
  const std::vector<std::string>& lanes_;
  const std::int64_t origin_ns_;
  std::array<std::string, 3> heads_;  // ,\n{"name":"KIND","cat":"bubble","ph":"X","ts":
  std::array<std::string, 3> tails_;  // ,"cname":"COLOUR","args":{"step":
  std::size_t max_bytes_ = 0;
};

// The trace in its three parts (trace_parts.h): the head (the array's
// opening, metadata, steps, bubble-ratio counters, log events), the units of
// a part's steps (jobs, bubbles, flows), the tail (the jobs of no step, the
// array's end and the trailer). Every event after the head's first starts
// with ",\n", so parts written apart join by concatenation.
class ChromeWriter {
 public:
  ChromeWriter(const TraceFrame& frame, AtomicFile& file)
      : ChromeWriter(frame, &file, file.buffer()) {}
  // Writes nothing: measure_frame() and measure_part() format into
  // `scratch`, `sample` of the head's items.
  ChromeWriter(const TraceFrame& frame, fmt::memory_buffer& scratch, TraceSampleSize sample)
      : ChromeWriter(frame, nullptr, scratch) {
    sample_ = sample;
  }

  void head() {
    JsonWriter& w = out_.json();
    w.begin_object();
    w.key("traceEvents");
    w.begin_array();
    write_metadata();
    write_steps();
    if (frame_.bubbles()) write_bubble_counters();
    write_log_events();
  }

  // The units of `part`'s selected steps, or (`stepless`) of its jobs of no step.
  void body(const TracePart& part, bool stepless) {
    const TraceBody body(part, options_.steps, stepless, kTraceJobsPerPiece);
    const JobEventText text(body, metrics_, layout_, lanes_, origin_ns_);
    const BubbleEventText bubble_text(metrics_, layout_, lanes_, origin_ns_);
    const TypeKinds kinds(part.run.types);
    std::vector<WindowBubbles> walks;
    if (frame_.bubbles()) {
      for (std::size_t d = 0; d < part.run.devices.size(); ++d) {
        walks.emplace_back(part.run.devices[d], d,
                           part.job_index != nullptr ? &(*part.job_index)[d] : nullptr, kinds);
      }
    }
    const std::vector<TraceBody::Piece>& pieces = body.pieces();
    write_in_order(
        *file_, pieces.size(), options_.threads,
        [&](std::size_t k, fmt::memory_buffer& out) { text.format(pieces[k], out); },
        [&](std::size_t k) {
          if (!pieces[k].last_of_unit) return;
          // The unit's bubbles and flows, in sequence after its jobs.
          const std::int64_t step = body.step(pieces[k].unit);
          if (step >= 0 && !walks.empty()) {
            const auto index = static_cast<std::size_t>(step);
            for (WindowBubbles& walk : walks) {
              walk.window(metrics_.steps[index], index, [&](const Bubble& bubble) {
                bubble_text.format(bubble, file_->buffer());
                file_->flush_if_full();
              });
            }
          }
          if (frame_.flows()) {
            body.for_each_flow(pieces[k].unit, options_.steps,
                               [&](const Dependency& dep) { write_flow(part, dep); });
          }
        });
  }

  void tail(const TracePart* stepless) {
    if (stepless != nullptr) body(*stepless, /*stepless=*/true);
    // The JsonWriter of the head is gone: the array and object close by hand,
    // as it would close them (style {0, false}).
    fmt::memory_buffer& out = *scratch_;
    out.append(std::string_view("\n],\n"));
    JsonWriter w(out, JsonStyle{0, false});
    w.field("displayTimeUnit", "ms");
    out.append(std::string_view(",\n"));
    w.key("otherData");
    w.begin_object(/*one_line=*/true);
    w.field("origin_ns", origin_ns_);
    w.field("time_unit", "us");
    w.field("generator", fmt::format("pipescope {}", kVersion));
    w.end_object();
    out.append(std::string_view("\n}\n"));
  }

  // The bytes head and tail write (trace_parts.h, "A trace's size by
  // parts"): the array's opening, the metadata and the trailer whole, the
  // steps, bubble counters and log events from a sample of them.
  std::uint64_t measure_frame() {
    JsonWriter& w = out_.json();
    w.begin_object();
    w.key("traceEvents");
    w.begin_array();
    write_metadata();
    // Every later event starts with ",\n" after the metadata: a sample is
    // formatted at the end of the scratch buffer, measured and cut off.
    std::uint64_t bulk = measure_steps();
    if (frame_.bubbles()) bulk += measure_bubble_counters();
    bulk += measure_log_events();
    tail(nullptr);
    return scratch_->size() + bulk;
  }

  // What the units of `part`'s selected steps (or, `stepless`, of its jobs
  // of no step) add: their jobs, bubbles and flows, sampled as `sampling`
  // says; `first_piece` is the whole-run position of the part's first piece.
  TraceBulkBytes measure_part(const TracePart& part, bool stepless, const TraceSampling& sampling,
                              std::uint64_t first_piece) {
    const TraceBody body(part, options_.steps, stepless, kTraceJobsPerPiece);
    TraceBulkBytes bytes;
    bytes.jobs = measure_jobs(body, sampling.piece_stride, first_piece);
    // The jobs of no step have no window, hence no bubble.
    if (frame_.bubbles() && !stepless)
      bytes.bubbles = measure_bubbles(part, sampling.bubble_stride);
    if (frame_.flows()) bytes.flows = measure_flows(body, sampling.flow_stride);
    return bytes;
  }

 private:
  ChromeWriter(const TraceFrame& frame, AtomicFile* file, fmt::memory_buffer& scratch)
      : frame_(frame),
        run_(frame.run()),
        metrics_(frame.metrics()),
        options_(frame.options()),
        origin_ns_(options_.absolute_time ? 0 : frame.first_ns()),
        layout_(frame.layout()),
        lanes_(lane_texts(layout_)),
        file_(file),
        scratch_(&scratch),
        out_(file != nullptr ? EventWriter(*file, origin_ns_) : EventWriter(scratch, origin_ns_)) {}

  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }

  void write_metadata() {
    out_.process(TraceLayout::steps_process());
    out_.thread(TraceLayout::steps_thread());
    for (const TraceProcess& machine : layout_.machines()) out_.process(machine);
    for (const TraceThread& thread : layout_.threads()) out_.thread(thread);
  }

  void write_steps() {
    for (std::size_t k = 0; k < metrics_.steps.size(); ++k) {
      if (selected(static_cast<std::int64_t>(k))) write_step(k);
    }
  }

  std::uint64_t measure_steps() {
    std::vector<std::size_t> steps;
    for (std::size_t k = 0; k < metrics_.steps.size(); ++k) {
      if (selected(static_cast<std::int64_t>(k))) steps.push_back(k);
    }
    return measure_items(steps.size(), [&](std::size_t i) { write_step(steps[i]); });
  }

  void write_step(std::size_t k) {
    JsonWriter& w = out_.json();
    const StepWindow& step = metrics_.steps[k];
    out_.begin_slice(trace_step_name(metrics_, k), "step", step.start_ns, step.window_ns(),
                     TraceLayout::steps_thread(), kStepColour);
    w.field("bubble_ratio", step.bubble_ratio);
    w.field("duration_ns", step.window_ns());
    w.field("segment", step.segment);
    w.field("complete", step.complete);
    out_.end_event();
  }

  // A stacked counter of each step's idle share by bubble kind; it drops to
  // 0 where a run of selected windows ends.
  void write_bubble_counters() {
    for (const BubbleRatioSample& sample :
         bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps)) {
      write_bubble_counter(sample);
    }
  }

  std::uint64_t measure_bubble_counters() {
    const std::vector<BubbleRatioSample> samples =
        bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps);
    return measure_items(samples.size(), [&](std::size_t i) { write_bubble_counter(samples[i]); });
  }

  void write_bubble_counter(const BubbleRatioSample& sample) {
    JsonWriter& w = out_.json();
    out_.begin_counter(TraceLayout::kBubbleRatioName, sample.time_ns, TraceLayout::steps_thread());
    for (const BubbleKind kind : {BubbleKind::fill, BubbleKind::interior, BubbleKind::drain}) {
      w.field(bubble_kind_name(kind), sample.share[static_cast<std::size_t>(kind)]);
    }
    out_.end_event();
  }

  // The jobs of the body's sampled pieces.
  SampledBytes measure_jobs(const TraceBody& body, std::uint64_t stride,
                            std::uint64_t first_piece) const {
    SampledBytes jobs;
    for (const TraceBody::Piece& piece : body.pieces()) jobs.count += piece.jobs;
    const JobEventText text(body, metrics_, layout_, lanes_, origin_ns_);
    fmt::memory_buffer out;
    for_each_sampled_piece(body, first_piece, stride, [&](const TraceBody::Piece& piece) {
      out.clear();
      text.format(piece, out);
      jobs.bytes += out.size();
      jobs.sampled += piece.jobs;
    });
    return jobs;
  }

  // The bytes `write_one(k)` adds to the scratch buffer over a sample of
  // `count` items, scaled to all of them; the buffer is left as it was.
  template <typename WriteOne>
  std::uint64_t measure_items(std::uint64_t count, WriteOne write_one) {
    return measure_sampled(*scratch_, count, sample_.items, write_one);
  }

  // Each drawn log event as an instant on its device's first lane (the
  // track of the device's jobs): "s":"t" scopes it to that thread. The
  // captures go in an object of their own: patterns capture names such as
  // "path" and "line".
  void write_log_events() {
    for (const EventRef& ref : frame_.events()) write_log_event(ref);
  }

  std::uint64_t measure_log_events() {
    const std::vector<EventRef>& events = frame_.events();
    return measure_items(events.size(), [&](std::size_t k) { write_log_event(events[k]); });
  }

  void write_log_event(const EventRef& ref) {
    JsonWriter& w = out_.json();
    const Device& device = run_.devices[ref.device];
    const LogEvent& event = device.events[ref.event];
    const TraceThread& lane = layout_.thread(layout_.device_lane(ref.device));
    static const EventKind kUnknown{"?", "?", "?", ""};
    const EventKind& kind =
        event.kind < run_.event_kinds.size() ? run_.event_kinds[event.kind] : kUnknown;
    w.begin_object(/*one_line=*/true);
    w.field("name", kind.id);
    w.field("cat", "event," + kind.category);
    w.field("ph", "i");
    out_.ts_field(event.time_ns);
    w.field("pid", lane.pid);
    w.field("tid", lane.tid);
    w.field("s", "t");
    w.key("args");
    w.begin_object();
    w.field("severity", kind.severity);
    w.field("category", kind.category);
    w.field("line", event.line);
    w.field("path", device.path);
    if (event.time_kind == EventTime::approximate) w.field("approximate", true);
    if (!event.captures.empty()) {
      w.key("captures");
      w.begin_object();
      for (const auto& [name, value] : event.captures) w.field(name, value);
      w.end_object();
    }
    out_.end_event();
  }

  SampledBytes measure_bubbles(const TracePart& part, std::uint64_t stride) const {
    const BubbleEventText text(metrics_, layout_, lanes_, origin_ns_);
    const TraceBubbleSample sample = sample_part_bubbles(part, metrics_, options_.steps, stride);
    fmt::memory_buffer out;
    for (const Bubble& bubble : sample.bubbles) text.format(bubble, out);
    return {out.size(), sample.bubbles.size(), sample.count};
  }

  // The arrows the body's units draw, each sampled by its id (unique in the
  // whole run); formatted at the end of the scratch buffer and cut off.
  SampledBytes measure_flows(const TraceBody& body, std::uint64_t stride) {
    SampledBytes flows;
    const std::size_t before = scratch_->size();
    for (std::size_t u = 0; u < body.units(); ++u) {
      body.for_each_flow(u, options_.steps, [&](const Dependency& dep) {
        ++flows.count;
        if (!trace_key_sampled(trace_flow_id(body.part(), dep.consumer), stride)) return;
        ++flows.sampled;
        write_flow(body.part(), dep);
      });
    }
    flows.bytes = scratch_->size() - before;
    scratch_->resize(before);
    return flows;
  }

  // The arrow of dependency `dep` (jobs of `part`), into the current buffer:
  // a top-level JsonWriter after ",\n" writes it as the head's would in the
  // array.
  void write_flow(const TracePart& part, const Dependency& dep) {
    // Dependencies on a critical path get their own category, to filter on.
    const JobRef consumer{
        dep.consumer.device,
        part.job_index == nullptr
            ? dep.consumer.job
            : static_cast<std::uint32_t>((*part.job_index)[dep.consumer.device][dep.consumer.job])};
    const std::vector<JobRef>& critical = options_.pipeline->critical_dependency_hops;
    const bool on_path = std::binary_search(
        critical.begin(), critical.end(), consumer, [](const JobRef& a, const JobRef& b) {
          return std::tie(a.device, a.job) < std::tie(b.device, b.job);
        });
    const std::uint64_t id = trace_flow_id(part, dep.consumer);
    flow_end(part, dep.producer, id, on_path, /*start=*/true);
    flow_end(part, dep.consumer, id, on_path, /*start=*/false);
  }

  void flow_end(const TracePart& part, const JobRef& ref, std::uint64_t id, bool on_critical_path,
                bool start) {
    const Job& job = part.run.devices[ref.device].jobs[ref.job];
    const TraceThread& lane =
        layout_.thread(layout_.device_lane(ref.device) +
                       static_cast<std::size_t>(part.lanes[ref.device][ref.job]));
    fmt::memory_buffer& out = *scratch_;
    out.append(std::string_view(",\n"));
    EventWriter event(out, origin_ns_);
    JsonWriter& w = event.json();
    w.begin_object(/*one_line=*/true);
    w.field("name", "dependency");
    w.field("cat", on_critical_path ? "critical_path" : "dependency");
    w.field("ph", start ? "s" : "f");
    if (!start) w.field("bp", "e");
    w.field("id", id);
    // Inside the slice it belongs to, so viewers bind the arrow to it.
    event.ts_field(job.start_ns);
    w.field("pid", lane.pid);
    w.field("tid", lane.tid);
    w.end_object();
    if (file_ != nullptr) file_->flush_if_full();
  }

  const TraceFrame& frame_;
  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  const std::int64_t origin_ns_;
  const TraceLayout& layout_;
  const std::vector<std::string> lanes_;  // lane_texts(layout_)
  AtomicFile* file_;                      // null when measuring
  fmt::memory_buffer* scratch_;           // the file's buffer, or measure()'s
  TraceSampleSize sample_;                // what measure_frame() formats of the head
  EventWriter out_;
};

}  // namespace

void append_ns_as_us(fmt::memory_buffer& out, std::int64_t ns) {
  char text[kMaxNsAsUsChars];
  out.append(text, write_ns_as_us(text, ns));
}

std::uint64_t measure_chrome_trace_frame(const TraceFrame& frame, TraceSampleSize sample) {
  fmt::memory_buffer scratch;
  return ChromeWriter(frame, scratch, sample).measure_frame();
}

TraceBulkBytes measure_chrome_trace_part(const TraceFrame& frame, const TracePart& part,
                                         bool stepless, const TraceSampling& sampling,
                                         std::uint64_t first_piece) {
  fmt::memory_buffer scratch;
  return ChromeWriter(frame, scratch, {}).measure_part(part, stepless, sampling, first_piece);
}

std::uint64_t estimate_chrome_trace_bytes(const Run& run, const Metrics& metrics,
                                          const TraceOptions& options, TraceSampleSize sample) {
  return estimate_whole_trace(run, metrics, options, sample,
                              {measure_chrome_trace_frame, measure_chrome_trace_part});
}

void write_chrome_trace_head(const TraceFrame& frame, AtomicFile& file) {
  ChromeWriter(frame, file).head();
}

void write_chrome_trace_part(const TraceFrame& frame, const TracePart& part, AtomicFile& file) {
  ChromeWriter(frame, file).body(part, /*stepless=*/false);
}

void write_chrome_trace_tail(const TraceFrame& frame, const TracePart* stepless, AtomicFile& file) {
  ChromeWriter(frame, file).tail(stepless);
  file.flush_if_full();
}

void write_chrome_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                        const std::string& path) {
  const TraceLanes lanes = trace_lanes(run);
  const TraceFrame frame(run, metrics, options, lanes.count,
                         earliest_selected_start(run, metrics, options.steps));
  const TracePart whole = whole_trace_part(run, metrics, options, lanes);
  AtomicFile file(path);
  write_chrome_trace_head(frame, file);
  write_chrome_trace_part(frame, whole, file);
  write_chrome_trace_tail(frame, &whole, file);
  file.commit();
}

}  // namespace pipescope
