#include "export/summary_json.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "export/atomic_file.h"
#include "export/json_writer.h"
#include "version.h"

namespace pipescope {

namespace {

constexpr std::string_view kToolName = "pipescope";

void write_devices(JsonWriter& w, const std::vector<DeviceFigures>& devices) {
  w.key("devices");
  w.begin_array();
  for (const DeviceFigures& d : devices) {
    w.begin_object(/*one_line=*/true);
    w.field("device", d.device);
    w.field("machine", d.machine);
    w.field("machine_name", std::string_view(d.machine_name));
    w.field("rank", d.rank);
    w.field("path", std::string_view(d.path));
    w.field("jobs", d.jobs);
    w.field("steps", d.steps);
    w.field("busy_ns", d.busy_ns);
    w.field("idle_ns", d.idle_ns);
    if (d.comm_ns) w.field("comm_ns", *d.comm_ns);
    w.field("utilization", d.utilization);
    w.end_object();
  }
  w.end_array();
}

void write_segments(JsonWriter& w, const std::vector<SegmentFigures>& segments) {
  w.key("segments");
  w.begin_array();
  for (const SegmentFigures& s : segments) {
    w.begin_object();
    w.field("index", s.index);
    w.field("start_ns", s.start_ns);
    w.field("end_ns", s.end_ns);
    w.field("first_step", s.first_step);
    w.field("numbered_by_line", s.numbered_by_line);
    w.field("steps", s.steps);
    w.field("complete_steps", s.complete_steps);
    w.field("found_by", std::string_view(s.found_by));
    w.key("files");
    w.begin_array(/*one_line=*/true);
    for (const std::string& file : s.files) w.value(std::string_view(file));
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

void write_steps(JsonWriter& w, const std::vector<StepFigures>& steps) {
  w.key("steps");
  w.begin_array();
  for (const StepFigures& step : steps) {
    w.begin_object();
    w.field("step", step.step);
    w.field("segment", step.segment);
    w.field("complete", step.complete);
    w.field("start_ns", step.start_ns);
    w.field("end_ns", step.end_ns);
    w.field("duration_ns", step.duration_ns);
    w.field("bubble_ratio", step.bubble_ratio);
    w.key("devices");
    w.begin_array();
    for (const StepDeviceFigures& d : step.devices) {
      w.begin_object(/*one_line=*/true);
      w.field("device", d.device);
      w.field("busy_ns", d.busy_ns);
      w.field("idle_ns", d.idle_ns);
      if (d.comm_ns) w.field("comm_ns", *d.comm_ns);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

void write_job_types(JsonWriter& w, const std::vector<JobTypeFigures>& types) {
  w.key("job_types");
  w.begin_array();
  for (const JobTypeFigures& t : types) {
    w.begin_object(/*one_line=*/true);
    w.field("type", std::string_view(t.type));
    w.field("kind", std::string_view(t.kind));
    w.field("jobs", t.jobs);
    if (t.total_ns) w.field("total_ns", *t.total_ns);
    w.end_object();
  }
  w.end_array();
}

void write_inputs(JsonWriter& w, const std::vector<InputFigures>& inputs) {
  w.key("inputs");
  w.begin_array();
  for (const InputFigures& input : inputs) {
    w.begin_object(/*one_line=*/true);
    w.field("path", std::string_view(input.path));
    w.field("bytes", input.bytes);
    w.field("lines", input.lines);
    w.field("matched", input.matched);
    w.field("malformed", input.malformed);
    w.field("oversized", input.oversized);
    w.field("partial_last_line_bytes", input.partial_last_line_bytes);
    if (!input.error.empty()) w.field("error", std::string_view(input.error));
    w.end_object();
  }
  w.end_array();
}

void write_diagnostics(JsonWriter& w, const std::vector<DiagnosticFigures>& diagnostics) {
  w.key("diagnostics");
  w.begin_array();
  for (const DiagnosticFigures& diagnostic : diagnostics) {
    w.begin_object(/*one_line=*/true);
    w.field("path", std::string_view(diagnostic.path));
    w.field("line", diagnostic.line);
    w.field("message", std::string_view(diagnostic.message));
    w.end_object();
  }
  w.end_array();
}

void write_left_out(JsonWriter& w, const std::vector<LeftOutFigures>& left_out) {
  w.key("left_out");
  w.begin_array();
  for (const LeftOutFigures& d : left_out) {
    w.begin_object(/*one_line=*/true);
    w.field("device", d.device);
    w.field("machine", d.machine);
    w.field("machine_name", std::string_view(d.machine_name));
    w.field("rank", d.rank);
    w.field("path", std::string_view(d.path));
    w.field("reason", std::string_view(d.reason));
    w.end_object();
  }
  w.end_array();
}

// --- pipeline sections --------------------------------------------------------

template <typename T>
void write_optional(JsonWriter& w, std::string_view key, const std::optional<T>& v) {
  w.key(key);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

void write_schedule(JsonWriter& w, const ScheduleFigures& s) {
  w.key("schedule");
  w.begin_object();
  w.field("name", std::string_view(s.name));
  w.field("exact", s.exact);
  w.field("stages", s.stages);
  w.field("micro_batches", s.micro_batches);
  w.field("chunks", s.chunks);
  w.field("steps_examined", s.steps_examined);
  w.field("steps_agreeing", s.steps_agreeing);
  w.field("mean_forward_ns", s.mean_forward_ns);
  w.field("mean_backward_ns", s.mean_backward_ns);
  w.field("mean_weight_ns", s.mean_weight_ns);
  w.field("measured_bubble_ratio", s.measured_bubble_ratio);
  write_optional(w, "ideal_bubble_ratio", s.ideal_bubble_ratio);
  write_optional(w, "excess_bubble_ratio", s.excess_bubble_ratio);
  w.field("family", std::string_view(s.family));
  w.field("frameworks", std::string_view(s.frameworks));
  w.end_object();
}

void write_stages(JsonWriter& w, const StagesFigures& stages) {
  w.key("stages");
  w.begin_object();
  w.field("source", std::string_view(stages.source));
  w.key("list");
  w.begin_array();
  for (const StageFigures& stage : stages.list) {
    w.begin_object();
    w.field("stage", stage.stage);
    w.key("devices");
    w.begin_array(/*one_line=*/true);
    for (const int d : stage.devices) w.value(d);
    w.end_array();
    if (stage.load) {
      w.field("compute_per_step_ns", stage.load->compute_per_step_ns);
      w.key("jobs");
      w.begin_object();
      for (const RoleDurationFigures& d : stage.load->jobs) {
        w.key(d.role);
        w.begin_object(/*one_line=*/true);
        w.field("count", d.count);
        w.field("total_ns", d.total_ns);
        w.field("mean_ns", d.mean_ns);
        w.field("median_ns", d.median_ns);
        w.field("p95_ns", d.p95_ns);
        w.field("max_ns", d.max_ns);
        w.end_object();
      }
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_split(JsonWriter& w, const BubbleSplitFigures& s) {
  w.field("fill_ns", s.fill_ns);
  w.field("interior_ns", s.interior_ns);
  w.field("drain_ns", s.drain_ns);
  write_optional(w, "inherent_ns", s.inherent_ns);
  write_optional(w, "excess_ns", s.excess_ns);
}

void write_device_bubbles(JsonWriter& w, const std::vector<DeviceBubbleFigures>& devices) {
  w.key("devices");
  w.begin_array();
  for (const DeviceBubbleFigures& d : devices) {
    w.begin_object(/*one_line=*/true);
    w.field("device", d.device);
    write_split(w, d.split);
    w.end_object();
  }
  w.end_array();
}

void write_bubble_job(JsonWriter& w, std::string_view key,
                      const std::optional<BubbleJobFigures>& j) {
  w.key(key);
  if (!j) {
    w.null();
    return;
  }
  w.begin_object(/*one_line=*/true);
  w.field("type", std::string_view(j->type));
  w.field("micro_batch", j->micro_batch);
  w.field("start_ns", j->start_ns);
  w.field("end_ns", j->end_ns);
  w.end_object();
}

void write_bubbles(JsonWriter& w, const BubblesFigures& b) {
  w.key("bubbles");
  w.begin_object();
  write_split(w, b.total);
  w.field("idle_ns", b.idle_ns);
  write_device_bubbles(w, b.devices);
  w.key("steps");
  w.begin_array();
  for (const StepBubbleFigures& step : b.steps) {
    w.begin_object();
    w.field("step", step.step);
    write_device_bubbles(w, step.devices);
    w.end_object();
  }
  w.end_array();
  w.key("longest");
  w.begin_array();
  for (const LongBubbleFigures& bubble : b.longest) {
    w.begin_object();
    w.field("device", bubble.device);
    w.field("step", bubble.step);
    w.field("start_ns", bubble.start_ns);
    w.field("length_ns", bubble.length_ns);
    write_optional(w, "inherent_ns", bubble.inherent_ns);
    write_optional(w, "excess_ns", bubble.excess_ns);
    w.field("kind", std::string_view(bubble.kind));
    write_bubble_job(w, "before", bubble.before);
    write_bubble_job(w, "after", bubble.after);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_bottleneck(JsonWriter& w, const BottleneckFigures& b) {
  w.key("bottleneck");
  w.begin_object(/*one_line=*/true);
  w.field("slowest_stage", b.slowest_stage);
  w.field("slowest_compute_per_step_ns", b.slowest_compute_per_step_ns);
  w.field("mean_compute_per_step_ns", b.mean_compute_per_step_ns);
  w.field("imbalance", b.imbalance);
  w.end_object();
}

void write_critical_path(JsonWriter& w, const CriticalPathFigures& c) {
  w.key("critical_path");
  w.begin_object();
  w.key("steps");
  w.begin_array();
  for (const PathStepFigures& step : c.steps) {
    w.begin_object();
    w.field("step", step.step);
    w.field("duration_ns", step.duration_ns);
    w.field("jobs", step.jobs);
    w.field("lead_in_ns", step.lead_in_ns);
    w.field("wait_ns", step.wait_ns);
    w.key("stages");
    w.begin_array();
    for (const PathStageFigures& s : step.stages) {
      w.begin_object(/*one_line=*/true);
      w.field("stage", s.stage);
      w.field("ns", s.ns);
      w.field("share", s.share);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("longest_step");
  if (!c.longest_step) {
    w.null();
  } else {
    w.begin_object();
    w.field("step", c.longest_step->step);
    w.key("jobs");
    w.begin_array();
    for (const PathJobFigures& job : c.longest_step->jobs) {
      w.begin_object(/*one_line=*/true);
      w.field("device", job.device);
      w.field("stage", job.stage);
      w.field("type", std::string_view(job.type));
      w.field("micro_batch", job.micro_batch);
      w.field("start_ns", job.start_ns);
      w.field("end_ns", job.end_ns);
      w.field("wait_ns", job.wait_ns);
      w.field("via_dependency", job.via_dependency);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
}

void write_clock(JsonWriter& w, const ClockFigures& c) {
  w.key("clock");
  w.begin_object();
  w.field("method", std::string_view(c.method));
  w.field("applied", c.applied);
  w.field("dependencies", c.dependencies);
  w.field("violations_before", c.violations_before);
  w.field("violations_after", c.violations_after);
  w.key("machines");
  w.begin_array();
  for (const MachineClockFigures& m : c.machines) {
    w.begin_object(/*one_line=*/true);
    w.field("machine", m.machine);
    w.field("name", std::string_view(m.name));
    w.field("estimate_ns", m.estimate_ns);
    w.field("offset_ns", m.offset_ns);
    w.end_object();
  }
  w.end_array();
  w.key("pairs");
  w.begin_array();
  for (const MachinePairFigures& p : c.pairs) {
    w.begin_object(/*one_line=*/true);
    w.key("machines");
    w.begin_array(/*one_line=*/true);
    w.value(p.machine_a);
    w.value(p.machine_b);
    w.end_array();
    w.field("dependencies", p.dependencies);
    w.field("violations_before", p.violations_before);
    w.field("violations_after", p.violations_after);
    write_optional(w, "lower_ns", p.lower_ns);
    write_optional(w, "upper_ns", p.upper_ns);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_warnings(JsonWriter& w, const std::vector<WarningFigures>& warnings) {
  w.key("warnings");
  w.begin_array();
  for (const WarningFigures& warning : warnings) {
    w.begin_object(/*one_line=*/true);
    w.field("code", std::string_view(warning.code));
    w.field("message", std::string_view(warning.message));
    w.field("device", warning.device);
    w.field("stage", warning.stage);
    w.field("count", warning.count);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

/// The contract's sections, then each pipeline section that is set.
void write_summary_json(const SummaryFigures& f, const std::string& path) {
  AtomicFile file(path);
  JsonWriter w(file, JsonStyle::pretty());
  w.begin_object();
  w.field("schema", kSummarySchema);
  w.key("tool");
  w.begin_object(/*one_line=*/true);
  w.field("name", kToolName);
  w.field("version", kVersion);
  w.end_object();
  w.field("jobs", f.jobs);
  w.field("first_step", f.first_step);
  w.field("bubble_ratio", f.bubble_ratio);
  w.field("total_window_ns", f.total_window_ns);
  if (f.time_resolution_ns != 0) w.field("time_resolution_ns", f.time_resolution_ns);
  if (f.comm_ns) w.field("comm_ns", *f.comm_ns);
  write_devices(w, f.devices);
  write_steps(w, f.steps);
  w.field("incomplete_steps", f.incomplete_steps);
  write_segments(w, f.segments);
  write_job_types(w, f.job_types);
  write_inputs(w, f.inputs);
  write_diagnostics(w, f.diagnostics);
  if (!f.left_out.empty()) write_left_out(w, f.left_out);
  if (f.schedule) write_schedule(w, *f.schedule);
  if (f.stages) write_stages(w, *f.stages);
  if (f.bubbles) write_bubbles(w, *f.bubbles);
  if (f.bottleneck) write_bottleneck(w, *f.bottleneck);
  if (f.critical_path) write_critical_path(w, *f.critical_path);
  if (f.clock) write_clock(w, *f.clock);
  if (f.warnings) write_warnings(w, *f.warnings);
  w.end_object();
  file.append('\n');
  file.commit();
}

void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path) {
  write_summary_json(summary_figures(run, metrics), path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path) {
  write_summary_json(summary_figures(run, metrics, pipeline), path);
}

}  // namespace pipescope
