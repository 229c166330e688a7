// Pipeline analysis that explains the bubbles: the aggregate the exporters
// and the CLI use. It reads only the model and the contract's Metrics.
//
// Two calls, because clock correction changes the Run and must come before
// the contract's metrics are computed (they are then computed on corrected
// times):
//   ClockReport clock = correct_run_clocks(run, options);  // shifts machines' times
//   Metrics metrics = compute_metrics(run);
//   PipelineAnalysis a = analyze_pipeline(run, metrics, options, clock);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/critical_path.h"
#include "analysis/data_quality.h"
#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/schedule_detect.h"
#include "analysis/stage_map.h"
#include "model/run.h"

namespace pipescope {

struct PipelineOptions {
  /// Stage map spec (stage_map.h): "" = one stage per device, "tp=4", "0-3,4-7", "auto".
  std::string stages;
  ClockOptions clock;
  /// How many of the longest bubbles to list.
  std::size_t top_bubbles = 10;
};

struct PipelineAnalysis {
  StageMap stages;
  std::vector<JobRole> roles;  ///< by TypeId
  ScheduleReport schedule;
  BubbleSummary bubbles;
  BottleneckReport bottleneck;
  std::vector<Dependency> dependencies;
  std::vector<CriticalPath> critical_paths;
  ClockReport clock;
  std::vector<QualityWarning> warnings;
};

/// Resolves the stage map and corrects the machines' clocks (clock_skew.h).
/// Throws std::invalid_argument for a bad stage spec or imposed machine.
ClockReport correct_run_clocks(Run& run, const PipelineOptions& options);

/// Everything else. `clock` is what correct_run_clocks returned (kept in the
/// result; it adds a warning when violations remain). Throws
/// std::invalid_argument for a bad stage spec.
PipelineAnalysis analyze_pipeline(const Run& run, const Metrics& metrics,
                                  const PipelineOptions& options, ClockReport clock = {});

}  // namespace pipescope
