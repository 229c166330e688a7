#include "compare/run_figures.h"

#include <utility>

namespace pipescope {

RunFigures figures_from_run(const Run& run, const Metrics& metrics,
                            const PipelineAnalysis& pipeline, std::string source) {
  return {summary_figures(run, metrics, pipeline), std::move(source), "logs"};
}

RunFigures figures_from_run(const Run& run, const Metrics& metrics, const ScheduleReport* schedule,
                            std::string source) {
  RunFigures f{summary_figures(run, metrics), std::move(source), "logs"};
  if (schedule != nullptr) f.schedule = schedule_figures(*schedule);
  return f;
}

}  // namespace pipescope
