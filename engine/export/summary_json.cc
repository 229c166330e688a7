#include "export/summary_json.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis/job_kind.h"
#include "export/atomic_file.h"
#include "export/json_writer.h"

namespace pipescope {

namespace {

constexpr std::string_view kSchema = "pipescope.summary/1";
constexpr std::string_view kToolName = "pipescope";
constexpr std::string_view kToolVersion = "0.1.0";

void write_devices(JsonWriter& w, const Run& run, const Metrics& metrics) {
  w.key("devices");
  w.begin_array();
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    // Metrics computed for another run (or none) must not crash the export.
    const DeviceTotals totals = d < metrics.devices.size() ? metrics.devices[d] : DeviceTotals{};
    w.begin_object(/*one_line=*/true);
    w.field("device", device.index);
    w.field("machine", device.machine);
    w.field("machine_name", std::string_view(device.machine_name));
    w.field("rank", device.rank);
    w.field("path", std::string_view(device.path));
    w.field("jobs", static_cast<std::uint64_t>(device.jobs.size()));
    w.field("steps", totals.steps);
    w.field("busy_ns", totals.busy_ns);
    w.field("idle_ns", totals.idle_ns);
    w.field("utilization", totals.utilization);
    w.end_object();
  }
  w.end_array();
}

void write_steps(JsonWriter& w, const Run& run, const Metrics& metrics) {
  w.key("steps");
  w.begin_array();
  for (const StepWindow& step : metrics.steps) {
    w.begin_object();
    w.field("step", step.step);
    w.field("start_ns", step.start_ns);
    w.field("end_ns", step.end_ns);
    w.field("duration_ns", step.window_ns());
    w.field("bubble_ratio", step.bubble_ratio);
    w.key("devices");
    w.begin_array();
    for (std::size_t d = 0; d < step.devices.size(); ++d) {
      w.begin_object(/*one_line=*/true);
      // The global device index, as in "devices" (a --devices selection leaves gaps).
      if (d < run.devices.size()) {
        w.field("device", run.devices[d].index);
      } else {
        w.field("device", static_cast<std::uint64_t>(d));
      }
      w.field("busy_ns", step.devices[d].busy_ns);
      w.field("idle_ns", step.devices[d].idle_ns);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

void write_job_types(JsonWriter& w, const Run& run) {
  std::vector<std::uint64_t> counts(run.types.size(), 0);
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      if (job.type < counts.size()) ++counts[job.type];
    }
  }
  // Type ids follow the order importers met the names in, which parallel
  // reading does not fix; sorting by name keeps the output deterministic.
  std::vector<TypeId> order;
  for (TypeId id = 0; id < counts.size(); ++id) {
    if (counts[id] != 0) order.push_back(id);
  }
  std::sort(order.begin(), order.end(),
            [&](TypeId a, TypeId b) { return run.types.name(a) < run.types.name(b); });

  w.key("job_types");
  w.begin_array();
  for (const TypeId id : order) {
    const std::string& name = run.types.name(id);
    w.begin_object(/*one_line=*/true);
    w.field("type", std::string_view(name));
    w.field("kind", job_kind_name(classify_job_type(name)));
    w.field("jobs", counts[id]);
    w.end_object();
  }
  w.end_array();
}

void write_inputs(JsonWriter& w, const Run& run) {
  w.key("inputs");
  w.begin_array();
  for (const InputStats& input : run.inputs) {
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

void write_diagnostics(JsonWriter& w, const Run& run) {
  w.key("diagnostics");
  w.begin_array();
  for (const Diagnostic& diagnostic : run.diagnostics) {
    w.begin_object(/*one_line=*/true);
    w.field("path", std::string_view(diagnostic.path));
    w.field("line", diagnostic.line);
    w.field("message", std::string_view(diagnostic.message));
    w.end_object();
  }
  w.end_array();
}


// --- pipeline sections (analysis/pipeline.h) --------------------------------

void write_optional_ratio(JsonWriter& w, std::string_view key, const std::optional<double>& v) {
  w.key(key);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

void write_schedule(JsonWriter& w, const PipelineAnalysis& a) {
  const ScheduleReport& s = a.schedule;
  w.key("schedule");
  w.begin_object();
  w.field("name", pipeline_schedule_name(s.detection.schedule));
  w.field("exact", s.detection.exact);
  w.field("stages", s.detection.stages);
  w.field("micro_batches", s.detection.micro_batches);
  w.field("chunks", s.detection.chunks);
  w.field("steps_examined", s.steps_examined);
  w.field("steps_agreeing", s.steps_agreeing);
  w.field("mean_forward_ns", static_cast<std::int64_t>(s.means.forward_ns));
  w.field("mean_backward_ns", static_cast<std::int64_t>(s.means.backward_ns));
  w.field("mean_weight_ns", static_cast<std::int64_t>(s.means.weight_ns));
  w.field("measured_bubble_ratio", s.measured_bubble_ratio);
  write_optional_ratio(w, "ideal_bubble_ratio", s.ideal_bubble_ratio);
  write_optional_ratio(w, "excess_bubble_ratio", s.excess);
  w.end_object();
}

void write_stages(JsonWriter& w, const Run& run, const PipelineAnalysis& a) {
  w.key("stages");
  w.begin_object();
  w.field("source", std::string_view(a.stages.source));
  w.key("list");
  w.begin_array();
  for (std::size_t s = 0; s < a.stages.stage_count(); ++s) {
    w.begin_object();
    w.field("stage", static_cast<std::uint64_t>(s));
    w.key("devices");
    w.begin_array(/*one_line=*/true);
    for (const std::size_t d : a.stages.devices[s]) w.value(run.devices[d].index);
    w.end_array();
    if (s < a.bottleneck.stages.size()) {
      const StageStats& stats = a.bottleneck.stages[s];
      w.field("compute_per_step_ns", stats.compute_per_step_ns);
      w.key("jobs");
      w.begin_object();
      for (std::size_t r = 0; r < kRoleCount; ++r) {
        const DurationStats& d = stats.by_role[r];
        if (d.count == 0) continue;
        w.key(pipeline_role_name(static_cast<PipelineRole>(r)));
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

void write_bubble_totals(JsonWriter& w, const BubbleTotals& t) {
  w.field("fill_ns", t.of(BubbleKind::fill));
  w.field("interior_ns", t.of(BubbleKind::interior));
  w.field("drain_ns", t.of(BubbleKind::drain));
}

void write_job_ref(JsonWriter& w, const Run& run, const Device& device, std::int64_t job) {
  if (job < 0 || static_cast<std::size_t>(job) >= device.jobs.size()) {
    w.null();
    return;
  }
  const Job& j = device.jobs[static_cast<std::size_t>(job)];
  w.begin_object(/*one_line=*/true);
  w.field("type", j.type < run.types.size() ? std::string_view(run.types.name(j.type)) : "?");
  w.field("micro_batch", j.micro_batch);
  w.field("start_ns", j.start_ns);
  w.field("end_ns", j.end_ns);
  w.end_object();
}

void write_bubbles(JsonWriter& w, const Run& run, const Metrics& metrics,
                   const PipelineAnalysis& a) {
  const BubbleSummary& b = a.bubbles;
  w.key("bubbles");
  w.begin_object();
  write_bubble_totals(w, b.total);
  w.field("idle_ns", b.total.idle_ns());
  w.key("devices");
  w.begin_array();
  for (std::size_t d = 0; d < b.per_device.size() && d < run.devices.size(); ++d) {
    w.begin_object(/*one_line=*/true);
    w.field("device", run.devices[d].index);
    write_bubble_totals(w, b.per_device[d]);
    w.end_object();
  }
  w.end_array();
  w.key("steps");
  w.begin_array();
  for (std::size_t k = 0; k < b.per_step.size() && k < metrics.steps.size(); ++k) {
    w.begin_object();
    w.field("step", metrics.steps[k].step);
    w.key("devices");
    w.begin_array();
    for (std::size_t d = 0; d < b.per_step[k].size() && d < run.devices.size(); ++d) {
      w.begin_object(/*one_line=*/true);
      w.field("device", run.devices[d].index);
      write_bubble_totals(w, b.per_step[k][d]);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("longest");
  w.begin_array();
  for (const Bubble& bubble : b.longest) {
    const Device& device = run.devices[bubble.device];
    w.begin_object();
    w.field("device", device.index);
    w.field("step", metrics.steps[bubble.step].step);
    w.field("start_ns", bubble.start_ns);
    w.field("length_ns", bubble.length_ns());
    w.field("kind", bubble_kind_name(bubble.kind));
    w.key("before");
    write_job_ref(w, run, device, bubble.job_before);
    w.key("after");
    write_job_ref(w, run, device, bubble.job_after);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_bottleneck(JsonWriter& w, const PipelineAnalysis& a) {
  const BottleneckReport& b = a.bottleneck;
  w.key("bottleneck");
  w.begin_object(/*one_line=*/true);
  w.field("slowest_stage", b.slowest_stage);
  w.field("slowest_compute_per_step_ns",
          b.slowest_stage >= 0 ? b.stages[static_cast<std::size_t>(b.slowest_stage)].compute_per_step_ns
                               : std::int64_t{0});
  w.field("mean_compute_per_step_ns", b.mean_compute_per_step_ns);
  w.field("imbalance", b.imbalance);
  w.end_object();
}

void write_critical_path(JsonWriter& w, const Run& run, const Metrics& metrics,
                         const PipelineAnalysis& a) {
  w.key("critical_path");
  w.begin_object();
  w.key("steps");
  w.begin_array();
  const CriticalPath* longest = nullptr;
  for (const CriticalPath& path : a.critical_paths) {
    const std::int64_t window = metrics.steps[path.step].window_ns();
    if (longest == nullptr || window > metrics.steps[longest->step].window_ns()) longest = &path;
    w.begin_object();
    w.field("step", metrics.steps[path.step].step);
    w.field("duration_ns", window);
    w.field("jobs", static_cast<std::uint64_t>(path.jobs.size()));
    w.field("lead_in_ns", path.lead_in_ns);
    w.field("wait_ns", path.wait_ns);
    w.key("stages");
    w.begin_array();
    for (std::size_t s = 0; s < path.stage_ns.size(); ++s) {
      w.begin_object(/*one_line=*/true);
      w.field("stage", static_cast<std::uint64_t>(s));
      w.field("ns", path.stage_ns[s]);
      w.field("share", window > 0 ? static_cast<double>(path.stage_ns[s]) / static_cast<double>(window)
                                  : 0.0);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.key("longest_step");
  if (longest == nullptr) {
    w.null();
  } else {
    w.begin_object();
    w.field("step", metrics.steps[longest->step].step);
    w.key("jobs");
    w.begin_array();
    for (const CriticalPathJob& entry : longest->jobs) {
      const Device& device = run.devices[entry.job.device];
      const Job& job = device.jobs[entry.job.job];
      w.begin_object(/*one_line=*/true);
      w.field("device", device.index);
      w.field("stage", entry.stage);
      w.field("type", job.type < run.types.size() ? std::string_view(run.types.name(job.type)) : "?");
      w.field("micro_batch", job.micro_batch);
      w.field("start_ns", job.start_ns);
      w.field("end_ns", job.end_ns);
      w.field("wait_ns", entry.wait_ns);
      w.field("via_dependency", entry.via_dependency);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
}

void write_clock(JsonWriter& w, const PipelineAnalysis& a) {
  const ClockReport& c = a.clock;
  w.key("clock");
  w.begin_object();
  w.field("method", std::string_view(c.method));
  w.field("applied", c.applied);
  w.field("dependencies", c.dependencies);
  w.field("violations_before", c.violations_before);
  w.field("violations_after", c.violations_after);
  w.key("machines");
  w.begin_array();
  for (const MachineClock& m : c.machines) {
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
  for (const MachinePairClock& p : c.pairs) {
    w.begin_object(/*one_line=*/true);
    w.key("machines");
    w.begin_array(/*one_line=*/true);
    w.value(p.machine_a);
    w.value(p.machine_b);
    w.end_array();
    w.field("dependencies", p.dependencies);
    w.field("violations_before", p.violations_before);
    w.field("violations_after", p.violations_after);
    w.key("lower_ns");
    if (p.lower_ns) { w.value(*p.lower_ns); } else { w.null(); }
    w.key("upper_ns");
    if (p.upper_ns) { w.value(*p.upper_ns); } else { w.null(); }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_warnings(JsonWriter& w, const PipelineAnalysis& a) {
  w.key("warnings");
  w.begin_array();
  for (const QualityWarning& warning : a.warnings) {
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

/// The contract's sections, then the pipeline analysis when there is one.
void write_summary(const Run& run, const Metrics& metrics, const PipelineAnalysis* pipeline,
                   const std::string& path) {
  AtomicFile file(path);
  JsonWriter w(file, JsonStyle::pretty());
  w.begin_object();
  w.field("schema", kSchema);
  w.key("tool");
  w.begin_object(/*one_line=*/true);
  w.field("name", kToolName);
  w.field("version", kToolVersion);
  w.end_object();
  w.field("jobs", run.job_count());
  w.field("first_step", run.first_step.value_or(0));
  w.field("bubble_ratio", metrics.bubble_ratio);
  w.field("total_window_ns", metrics.total_window_ns);
  write_devices(w, run, metrics);
  write_steps(w, run, metrics);
  write_job_types(w, run);
  write_inputs(w, run);
  write_diagnostics(w, run);
  if (pipeline != nullptr) {
    write_schedule(w, *pipeline);
    write_stages(w, run, *pipeline);
    write_bubbles(w, run, metrics, *pipeline);
    write_bottleneck(w, *pipeline);
    write_critical_path(w, run, metrics, *pipeline);
    write_clock(w, *pipeline);
    write_warnings(w, *pipeline);
  }
  w.end_object();
  file.append('\n');
  file.commit();
}

}  // namespace

void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path) {
  write_summary(run, metrics, nullptr, path);
}

void write_summary_json(const Run& run, const Metrics& metrics, const PipelineAnalysis& pipeline,
                        const std::string& path) {
  write_summary(run, metrics, &pipeline, path);
}

}  // namespace pipescope
