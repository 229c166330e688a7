#include "export/chrome_trace.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/bubbles.h"
#include "analysis/job_kind.h"
#include "export/atomic_file.h"
#include "export/json_writer.h"
#include "export/trace_content.h"
#include "export/trace_layout.h"
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

// The trace section by section: metadata (processes and threads), steps,
// bubble-ratio counters, jobs, bubbles, flows; then the trailer.
class ChromeWriter {
 public:
  ChromeWriter(const Run& run, const Metrics& metrics, const TraceOptions& options,
               AtomicFile& file)
      : run_(run),
        metrics_(metrics),
        options_(options),
        origin_ns_(options.absolute_time
                       ? 0
                       : earliest_selected_start(run, metrics, options.steps).value_or(0)),
        layout_(run, options.pipeline != nullptr),
        out_(file, origin_ns_),
        w_(out_.json()) {}

  void write() {
    w_.begin_object();
    w_.key("traceEvents");
    w_.begin_array();
    write_metadata();
    write_steps();
    if (options_.pipeline != nullptr) write_bubble_counters();
    write_jobs();
    if (options_.pipeline != nullptr) write_bubbles();
    if (options_.pipeline != nullptr && options_.flows) write_flows();
    w_.end_array();
    write_trailer();
    w_.end_object();
  }

 private:
  bool selected(std::int64_t step_index) const { return options_.steps.contains(step_index); }

  void write_metadata() {
    out_.process(TraceLayout::steps_process());
    out_.thread(TraceLayout::steps_thread());
    for (const TraceProcess& machine : layout_.machines()) out_.process(machine);
    for (const TraceThread& thread : layout_.threads()) out_.thread(thread);
  }

  void write_steps() {
    const TraceThread steps = TraceLayout::steps_thread();
    for (std::size_t k = 0; k < metrics_.steps.size(); ++k) {
      if (!selected(static_cast<std::int64_t>(k))) continue;
      const StepWindow& step = metrics_.steps[k];
      out_.begin_slice(trace_step_name(metrics_, k), "step", step.start_ns, step.window_ns(), steps,
                       kStepColour);
      w_.field("bubble_ratio", step.bubble_ratio);
      w_.field("duration_ns", step.window_ns());
      w_.field("segment", step.segment);
      w_.field("complete", step.complete);
      out_.end_event();
    }
  }

  // A stacked counter of each step's idle share by bubble kind; it drops to
  // 0 where a run of selected windows ends.
  void write_bubble_counters() {
    const TraceThread steps = TraceLayout::steps_thread();
    for (const BubbleRatioSample& sample :
         bubble_ratio_samples(run_, metrics_, options_.pipeline->bubbles, options_.steps)) {
      out_.begin_counter(TraceLayout::kBubbleRatioName, sample.time_ns, steps);
      for (const BubbleKind kind : {BubbleKind::fill, BubbleKind::interior, BubbleKind::drain}) {
        w_.field(bubble_kind_name(kind), sample.share[static_cast<std::size_t>(kind)]);
      }
      out_.end_event();
    }
  }

  void write_jobs() {
    const TraceJobKinds kinds(run_);
    std::string name;
    for (std::size_t d = 0; d < run_.devices.size(); ++d) {
      const Device& device = run_.devices[d];
      for (std::size_t i = 0; i < device.jobs.size(); ++i) {
        const std::int32_t k = trace_job_step(run_, metrics_, d, i);
        if (!selected(k)) continue;
        const Job& job = device.jobs[i];
        const JobKind kind = kinds.of(job);
        trace_job_name(run_, job, name);
        out_.begin_slice(name, job_kind_name(kind), job.start_ns, job.duration_ns(),
                         layout_.thread(layout_.job_lane(d, i)), kind_colour(kind));
        w_.field("job_id", job.job_id);
        w_.field("micro_batch", job.micro_batch);
        w_.key("step");
        if (k >= 0 && static_cast<std::size_t>(k) < metrics_.steps.size()) {
          w_.value(metrics_.steps[static_cast<std::size_t>(k)].step);
        } else {
          w_.null();
        }
        w_.field("duration_ns", job.duration_ns());
        w_.field("line", job.line);
        out_.end_event();
      }
    }
  }

  void write_bubbles() {
    for_each_bubble(run_, metrics_, [&](const Bubble& bubble) {
      if (!selected(static_cast<std::int64_t>(bubble.step))) return;
      out_.begin_slice(bubble_kind_name(bubble.kind), "bubble", bubble.start_ns, bubble.length_ns(),
                       layout_.thread(layout_.bubble_lane(bubble.device)),
                       kBubbleColours[static_cast<std::size_t>(bubble.kind)]);
      w_.field("step", metrics_.steps[bubble.step].step);
      w_.field("length_ns", bubble.length_ns());
      out_.end_event();
    });
  }

  // An arrow from each job to the jobs of other stages that depend on it.
  void write_flows() {
    // Dependencies on a critical path get their own category, to filter on.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> critical;
    for (const CriticalPath& path : options_.pipeline->critical_paths) {
      for (const CriticalPathJob& entry : path.jobs) {
        if (entry.via_dependency) critical.emplace_back(entry.job.device, entry.job.job);
      }
    }
    std::sort(critical.begin(), critical.end());
    std::int64_t id = 0;
    for (const Dependency& dep :
         selected_dependencies(run_, metrics_, options_.pipeline->dependencies, options_.steps)) {
      const bool on_path = std::binary_search(
          critical.begin(), critical.end(), std::make_pair(dep.consumer.device, dep.consumer.job));
      ++id;
      flow_end(dep.producer, id, on_path, /*start=*/true);
      flow_end(dep.consumer, id, on_path, /*start=*/false);
    }
  }

  void flow_end(const JobRef& ref, std::int64_t id, bool on_critical_path, bool start) {
    const Job& job = run_.devices[ref.device].jobs[ref.job];
    const TraceThread& lane = layout_.thread(layout_.job_lane(ref.device, ref.job));
    w_.begin_object(/*one_line=*/true);
    w_.field("name", "dependency");
    w_.field("cat", on_critical_path ? "critical_path" : "dependency");
    w_.field("ph", start ? "s" : "f");
    if (!start) w_.field("bp", "e");
    w_.field("id", id);
    // Inside the slice it belongs to, so viewers bind the arrow to it.
    out_.ts_field(job.start_ns);
    w_.field("pid", lane.pid);
    w_.field("tid", lane.tid);
    w_.end_object();
  }

  void write_trailer() {
    w_.field("displayTimeUnit", "ms");
    w_.key("otherData");
    w_.begin_object(/*one_line=*/true);
    w_.field("origin_ns", origin_ns_);
    w_.field("time_unit", "us");
    w_.field("generator", fmt::format("pipescope {}", kVersion));
    w_.end_object();
  }

  const Run& run_;
  const Metrics& metrics_;
  const TraceOptions& options_;
  const std::int64_t origin_ns_;
  const TraceLayout layout_;
  EventWriter out_;
  JsonWriter& w_;
};

}  // namespace

void append_ns_as_us(fmt::memory_buffer& out, std::int64_t ns) {
  // Magnitude in unsigned arithmetic so INT64_MIN has one too.
  const bool negative = ns < 0;
  const std::uint64_t magnitude =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  if (negative) out.push_back('-');
  const fmt::format_int whole(magnitude / 1000);
  out.append(whole.data(), whole.data() + whole.size());
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, digits + 4);
}

void write_chrome_trace(const Run& run, const Metrics& metrics, const TraceOptions& options,
                        const std::string& path) {
  AtomicFile file(path);
  ChromeWriter(run, metrics, options, file).write();
  file.append('\n');
  file.commit();
}

}  // namespace pipescope
