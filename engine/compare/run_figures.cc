#include "compare/run_figures.h"

#include <utility>

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
    return schedule_figures(report);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

RunFigures figures_from_run(const Run& run, const Metrics& metrics,
                            const PipelineAnalysis& pipeline, std::string source) {
  return {summary_figures(run, metrics, pipeline), std::move(source), "logs"};
}

RunFigures figures_from_run(const Run& run, const Metrics& metrics, std::string source) {
  RunFigures f{summary_figures(run, metrics), std::move(source), "logs"};
  f.schedule = detect(run, metrics);
  return f;
}

}  // namespace pipescope
