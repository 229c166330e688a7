#include "compare/run_figures.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "analysis/job_kind.h"
#include "analysis/job_role.h"
#include "analysis/schedule_detect.h"
#include "analysis/stage_map.h"

namespace pipescope {

namespace {

// Schedule detection is a best-effort extra: a run it cannot place (odd
// devices, no compute jobs) simply has no schedule figures.
std::optional<ScheduleFigures> detect(const Run& run, const Metrics& metrics) {
  if (run.job_count() == 0 || metrics.steps.empty()) return std::nullopt;
  try {
    // The stage map `analyze` uses by default, so a log run and its summary agree.
    const StageMap stages = resolve_stage_map(run, "");
    const std::vector<JobRole> roles = classify_job_roles(run.types);
    const ScheduleReport report = detect_run_schedule(run, metrics, stages, roles);
    if (report.steps_examined == 0) return std::nullopt;
    ScheduleFigures s;
    s.name = std::string(pipeline_schedule_name(report.detection.schedule));
    s.stages = report.detection.stages;
    s.micro_batches = report.detection.micro_batches;
    s.chunks = report.detection.chunks;
    s.exact = report.detection.exact;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

RunFigures figures_from_run(const Run& run, const Metrics& metrics, std::string source) {
  RunFigures f;
  f.source = std::move(source);
  f.origin = "logs";
  f.jobs = static_cast<std::int64_t>(run.job_count());
  f.first_step = run.first_step.value_or(0);
  f.bubble_ratio = metrics.bubble_ratio;
  f.total_window_ns = metrics.total_window_ns;

  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    DeviceFigures df;
    df.device = device.index;
    df.machine = device.machine;
    df.machine_name = device.machine_name;
    df.rank = device.rank;
    df.jobs = static_cast<std::int64_t>(device.jobs.size());
    if (d < metrics.devices.size()) {
      df.busy_ns = metrics.devices[d].busy_ns;
      df.idle_ns = metrics.devices[d].idle_ns;
      df.utilization = metrics.devices[d].utilization;
    }
    f.devices.push_back(std::move(df));
  }

  for (const StepWindow& w : metrics.steps) {
    StepFigures s;
    s.step = w.step;
    s.start_ns = w.start_ns;
    s.end_ns = w.end_ns;
    s.duration_ns = w.window_ns();
    s.bubble_ratio = w.bubble_ratio;
    for (std::size_t d = 0; d < w.devices.size() && d < run.devices.size(); ++d) {
      s.devices.push_back({run.devices[d].index, w.devices[d].busy_ns, w.devices[d].idle_ns});
    }
    f.steps.push_back(std::move(s));
  }

  // Jobs and total duration per type, in type-name order like summary.json.
  std::vector<std::int64_t> counts(run.types.size(), 0);
  std::vector<std::int64_t> totals(run.types.size(), 0);
  for (const Device& device : run.devices) {
    for (const Job& job : device.jobs) {
      ++counts[job.type];
      totals[job.type] += job.duration_ns();
    }
  }
  for (TypeId id = 0; id < run.types.size(); ++id) {
    if (counts[id] == 0) continue;
    const std::string& name = run.types.name(id);
    f.job_types.push_back(
        {name, std::string(job_kind_name(classify_job_type(name))), counts[id], totals[id]});
  }
  std::sort(f.job_types.begin(), f.job_types.end(),
            [](const JobTypeFigures& a, const JobTypeFigures& b) { return a.type < b.type; });

  f.schedule = detect(run, metrics);
  return f;
}

}  // namespace pipescope
