#include "export/summary_json.h"

#include <algorithm>
#include <cstdint>
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

}  // namespace

void write_summary_json(const Run& run, const Metrics& metrics, const std::string& path) {
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
  w.end_object();
  file.append('\n');
  file.commit();
}

}  // namespace pipescope
