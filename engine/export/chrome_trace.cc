#include "export/chrome_trace.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/job_kind.h"
#include "export/atomic_file.h"
#include "export/json_writer.h"
#include "export/trace_content.h"
#include "export/trace_lanes.h"

namespace pipescope {

namespace {

constexpr std::string_view kGenerator = "pipescope 0.1.0";
constexpr std::int64_t kStepsPid = 1;
constexpr std::int64_t kStepsTid = 1;
// Thread sort indices leave room for this many lanes per device before they
// would run into the next device's.
constexpr std::int64_t kMinLaneStride = 16;

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
  }
  return "generic_work";
}
constexpr std::string_view kStepColour = "thread_state_iowait";  // orange

std::int64_t machine_pid(int machine) { return std::int64_t{machine} + 2; }

// a - b without signed overflow for any pair whose true difference fits.
std::int64_t ns_diff(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

class TraceWriter {
 public:
  TraceWriter(AtomicFile& file, std::int64_t origin_ns)
      : w_(file, JsonStyle{0, false}), origin_ns_(origin_ns) {}

  JsonWriter& json() { return w_; }

  void time_field(std::string_view key, std::int64_t ns) {
    scratch_.clear();
    append_ns_as_us(scratch_, ns);
    w_.key(key);
    w_.raw_value(std::string_view(scratch_.data(), scratch_.size()));
  }

  void metadata(std::string_view name, std::int64_t pid, std::int64_t tid, std::string_view key,
                std::string_view text) {
    begin_metadata(name, pid, tid);
    w_.field(key, text);
    end_metadata();
  }
  void metadata(std::string_view name, std::int64_t pid, std::int64_t tid, std::string_view key,
                std::int64_t number) {
    begin_metadata(name, pid, tid);
    w_.field(key, number);
    end_metadata();
  }

  // One complete event; the caller writes its args object's fields.
  void begin_slice(std::string_view name, std::string_view category, std::int64_t start_ns,
                   std::int64_t duration_ns, std::int64_t pid, std::int64_t tid,
                   std::string_view colour) {
    w_.begin_object(/*one_line=*/true);
    w_.field("name", name);
    w_.field("cat", category);
    w_.field("ph", "X");
    time_field("ts", ns_diff(start_ns, origin_ns_));
    time_field("dur", duration_ns);
    w_.field("pid", pid);
    w_.field("tid", tid);
    w_.field("cname", colour);
    w_.key("args");
    w_.begin_object();
  }
  void end_slice() {
    w_.end_object();
    w_.end_object();
  }

 private:
  // Metadata events carry no "ts": viewers accept that, and a ts of 0 would
  // stretch an absolute-time trace back to 1970 in some of them.
  void begin_metadata(std::string_view name, std::int64_t pid, std::int64_t tid) {
    w_.begin_object(/*one_line=*/true);
    w_.field("name", name);
    w_.field("ph", "M");
    w_.field("pid", pid);
    w_.field("tid", tid);
    w_.key("args");
    w_.begin_object();
  }
  void end_metadata() {
    w_.end_object();
    w_.end_object();
  }

  JsonWriter w_;
  std::int64_t origin_ns_;
  fmt::memory_buffer scratch_;
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
  const StepSelection& selected = options.steps;
  const auto job_step = [&](std::size_t d, std::size_t i) {
    return trace_job_step(run, metrics, d, i);
  };
  const std::int64_t origin_ns =
      options.absolute_time ? 0 : earliest_selected_start(run, metrics, selected).value_or(0);

  // Lanes first: the sort-index stride must fit the busiest device.
  std::vector<std::vector<int>> lanes(run.devices.size());
  std::vector<int> lane_counts(run.devices.size(), 1);
  std::int64_t stride = kMinLaneStride;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    lanes[d] = assign_trace_lanes(run.devices[d].jobs, lane_counts[d]);
    // With pipeline analysis, the lane after a device's job lanes holds its bubbles.
    stride = std::max<std::int64_t>(stride, lane_counts[d] + (options.pipeline ? 1 : 0));
  }
  const auto tid_of = [&](std::size_t d, int lane) {
    return kStepsTid + 1 + static_cast<std::int64_t>(d) * stride + lane;
  };

  // Per type: the slice category and colour, looked up once.
  std::vector<std::string_view> type_kind(run.types.size());
  std::vector<std::string_view> type_colour(run.types.size());
  for (TypeId id = 0; id < run.types.size(); ++id) {
    const JobKind kind = classify_job_type(run.types.name(id));
    type_kind[id] = job_kind_name(kind);
    type_colour[id] = kind_colour(kind);
  }

  AtomicFile file(path);
  TraceWriter trace(file, origin_ns);
  JsonWriter& w = trace.json();
  w.begin_object();
  w.key("traceEvents");
  w.begin_array();

  trace.metadata("process_name", kStepsPid, kStepsTid, "name", "Steps");
  trace.metadata("process_sort_index", kStepsPid, kStepsTid, "sort_index", std::int64_t{0});
  trace.metadata("thread_name", kStepsPid, kStepsTid, "name", "Steps");
  trace.metadata("thread_sort_index", kStepsPid, kStepsTid, "sort_index", std::int64_t{0});

  // One process per machine, named after its first device's machine folder.
  std::map<int, std::size_t> first_device_of_machine;
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    first_device_of_machine.emplace(run.devices[d].machine, d);
  }
  for (const auto& [machine, d] : first_device_of_machine) {
    const std::int64_t pid = machine_pid(machine);
    trace.metadata("process_name", pid, tid_of(d, 0), "name", trace_machine_label(run.devices[d]));
    trace.metadata("process_sort_index", pid, tid_of(d, 0), "sort_index",
                   std::int64_t{machine} + 1);
  }
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    for (int lane = 0; lane < lane_counts[d]; ++lane) {
      const std::int64_t pid = machine_pid(device.machine);
      trace.metadata("thread_name", pid, tid_of(d, lane), "name", trace_lane_name(device, lane));
      trace.metadata("thread_sort_index", pid, tid_of(d, lane), "sort_index",
                     static_cast<std::int64_t>(d) * stride + lane);
    }
    if (options.pipeline != nullptr) {
      const std::int64_t pid = machine_pid(device.machine);
      trace.metadata("thread_name", pid, tid_of(d, lane_counts[d]), "name",
                     trace_bubble_lane_name(device));
      trace.metadata("thread_sort_index", pid, tid_of(d, lane_counts[d]), "sort_index",
                     static_cast<std::int64_t>(d) * stride + lane_counts[d]);
    }
  }

  std::string name;
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    if (!selected.contains(static_cast<std::int64_t>(k))) continue;
    const StepWindow& step = metrics.steps[k];
    name = fmt::format("step {}", step.step);
    trace.begin_slice(name, "step", step.start_ns, step.window_ns(), kStepsPid, kStepsTid,
                      kStepColour);
    w.field("bubble_ratio", step.bubble_ratio);
    w.field("duration_ns", step.window_ns());
    trace.end_slice();
  }
  if (options.pipeline != nullptr) {
    // A stacked counter of each step's idle share by bubble kind; it drops
    // to 0 where a run of selected windows ends.
    for (const BubbleRatioSample& sample :
         bubble_ratio_samples(run, metrics, options.pipeline->bubbles, selected)) {
      w.begin_object(/*one_line=*/true);
      w.field("name", "bubble ratio");
      w.field("ph", "C");
      trace.time_field("ts", ns_diff(sample.time_ns, origin_ns));
      w.field("pid", kStepsPid);
      w.field("tid", kStepsTid);
      w.key("args");
      w.begin_object();
      for (const BubbleKind kind : {BubbleKind::fill, BubbleKind::interior, BubbleKind::drain}) {
        w.field(bubble_kind_name(kind), sample.share[static_cast<std::size_t>(kind)]);
      }
      w.end_object();
      w.end_object();
    }
  }

  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    const std::int64_t pid = machine_pid(device.machine);
    for (std::size_t i = 0; i < device.jobs.size(); ++i) {
      const std::int32_t k = job_step(d, i);
      if (!selected.contains(k)) continue;
      const Job& job = device.jobs[i];
      const bool known_type = job.type < run.types.size();
      name.assign(known_type ? std::string_view(run.types.name(job.type)) : "?");
      name += " mb";
      name += fmt::format_int(job.micro_batch).c_str();
      trace.begin_slice(name, known_type ? type_kind[job.type] : "other", job.start_ns,
                        job.duration_ns(), pid, tid_of(d, lanes[d][i]),
                        known_type ? type_colour[job.type] : kind_colour(JobKind::other));
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
      trace.end_slice();
    }
  }
  if (options.pipeline != nullptr) {
    for_each_bubble(run, metrics, [&](const Bubble& bubble) {
      if (!selected.contains(static_cast<std::int64_t>(bubble.step))) return;
      const Device& device = run.devices[bubble.device];
      std::string_view colour = "yellow";
      if (bubble.kind == BubbleKind::interior) colour = "bad";
      if (bubble.kind == BubbleKind::drain) colour = "olive";
      trace.begin_slice(bubble_kind_name(bubble.kind), "bubble", bubble.start_ns,
                        bubble.length_ns(), machine_pid(device.machine),
                        tid_of(bubble.device, lane_counts[bubble.device]), colour);
      w.field("step", metrics.steps[bubble.step].step);
      w.field("length_ns", bubble.length_ns());
      trace.end_slice();
    });
  }
  if (options.pipeline != nullptr && options.flows) {
    // Dependencies on a critical path get their own category, to filter on.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> critical;
    for (const CriticalPath& path : options.pipeline->critical_paths) {
      for (const CriticalPathJob& entry : path.jobs) {
        if (entry.via_dependency) critical.emplace_back(entry.job.device, entry.job.job);
      }
    }
    std::sort(critical.begin(), critical.end());
    std::int64_t id = 0;
    for (const Dependency& dep : options.pipeline->dependencies) {
      if (!selected.contains(job_step(dep.producer.device, dep.producer.job)) ||
          !selected.contains(job_step(dep.consumer.device, dep.consumer.job))) {
        continue;
      }
      const bool on_path = std::binary_search(critical.begin(), critical.end(),
                                              std::make_pair(dep.consumer.device, dep.consumer.job));
      const std::string_view category = on_path ? "critical_path" : "dependency";
      ++id;
      for (const bool start : {true, false}) {
        const JobRef ref = start ? dep.producer : dep.consumer;
        const Job& job = run.devices[ref.device].jobs[ref.job];
        w.begin_object(/*one_line=*/true);
        w.field("name", "dependency");
        w.field("cat", category);
        w.field("ph", start ? "s" : "f");
        if (!start) w.field("bp", "e");
        w.field("id", id);
        // Inside the slice it belongs to, so viewers bind the arrow to it.
        trace.time_field("ts", ns_diff(job.start_ns, origin_ns));
        w.field("pid", machine_pid(run.devices[ref.device].machine));
        w.field("tid", tid_of(ref.device, lanes[ref.device][ref.job]));
        w.end_object();
      }
    }
  }
  w.end_array();

  w.field("displayTimeUnit", "ms");
  w.key("otherData");
  w.begin_object(/*one_line=*/true);
  w.field("origin_ns", origin_ns);
  w.field("time_unit", "us");
  w.field("generator", kGenerator);
  w.end_object();
  w.end_object();
  file.append('\n');
  file.commit();
}

}  // namespace pipescope
