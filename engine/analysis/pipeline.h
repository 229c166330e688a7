// Pipeline analysis that explains the bubbles: the aggregate the exporters
// and the CLI use. It reads only the model and the contract's Metrics.
//
// Clock correction changes the Run and must come before the contract's
// metrics are computed (they are then computed on corrected times). One call
// does it all in that order and matches the dependencies (the costliest part)
// once:
//   AnalyzedRun result = analyze_run(run, options);
// or, in two calls that each find the dependencies again:
//   ClockReport clock = correct_run_clocks(run, options);  // shifts machines' times
//   Metrics metrics = compute_metrics(run);
//   PipelineAnalysis a = analyze_pipeline(run, metrics, options, clock);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/critical_path.h"
#include "analysis/data_quality.h"
#include "analysis/dependencies.h"
#include "analysis/explanation.h"
#include "analysis/job_role.h"
#include "analysis/layout.h"
#include "analysis/metrics.h"
#include "analysis/replicas.h"
#include "analysis/schedule_detect.h"
#include "analysis/stage_map.h"
#include "model/option_words.h"
#include "model/run.h"

namespace pipescope {

struct PipelineOptions {
  /// The layout given (layout.h parse_layout_spec: "pp=4,dp=8,tp=8[,order=...]"),
  /// parsed once by the caller; nullopt: detected (unless `stages` is given).
  std::optional<LayoutShape> layout;
  /// The stage map given (stage_map.h parse_stage_spec: "device", "tp=4",
  /// "0-3,4-7", "auto"); Form::none: the layout's. Not with `layout`.
  StageSpec stages;
  /// How messages name the layout and the stage map and say how to pass one
  /// (model/option_words.h: CallerOption::layout, stages): the caller's words
  /// (the analysis never names a command's flags). Never null.
  std::shared_ptr<const OptionWords> words = OptionWords::engine();
  ClockOptions clock;
  /// How many of the longest bubbles to list.
  std::size_t top_bubbles = 10;
  /// Whether PipelineAnalysis::dependencies outlives the analysis, for the
  /// outputs that draw them (traces, the HTML report). When false they are
  /// freed once the critical paths are walked, the last pass to read them,
  /// before the replicas are measured (4 bytes per job of a consumer device,
  /// held at the analysis's peak of memory otherwise).
  bool keep_dependencies = true;
};

struct PipelineAnalysis {
  /// The layout (layout.h): how the devices form stages and replicas.
  Layout layout;
  /// The layout's stage map.
  StageMap stages;
  /// Each replica's figures when there are several (replicas.h); the
  /// bottleneck below is then the slowest replica's.
  ReplicaSummary replicas;
  std::vector<JobRole> roles;  ///< by TypeId
  ScheduleReport schedule;
  BubbleSummary bubbles;
  /// Idle time split into inherent and excess; comm time by the stage waited for.
  BubbleSplit split;
  BottleneckReport bottleneck;
  Dependencies dependencies;
  /// One per non-empty step window; only the longest complete step's keeps
  /// its jobs (critical_path.h, summarize_critical_paths).
  std::vector<CriticalPath> critical_paths;
  /// Every job a critical path entered through a dependency, sorted.
  std::vector<JobRef> critical_dependency_hops;
  ClockReport clock;
  std::vector<Warning> warnings;
  /// The plain sentence the reports lead with (explanation.h).
  std::string explanation;
};

/// The layout the options give: stated (`layout`), from a stage map
/// (`stages`), or detected (detect_layout: it reads the run's first
/// kLayoutSteps steps only). `--stages auto` guesses from every job of
/// every device: from `stage_evidence` where given (the whole run's, when
/// `run` holds only a part of its jobs), else from `run`'s jobs. Throws
/// std::invalid_argument for a bad spec or both given.
Layout choose_layout(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<JobRole>& roles, const PipelineOptions& options,
                     const StageJobEvidence* stage_evidence = nullptr);

/// The warnings the analysis adds after the data-quality checks, in this
/// order: layout_not_found, clock_estimate_rejected, dependency_violations,
/// stage_map_contradicted (a map given as tp or list whose stage's devices
/// do not run together), stage_map (one stage per device where the guess
/// groups devices). `run`'s devices are read for their count, machine and
/// index only; their jobs through `evidence` (stage_map.h), so a run held in
/// parts gives the same warnings from facts combined across ranks.
std::vector<Warning> pipeline_tail_warnings(const Run& run, const Layout& layout,
                                            const StageMap& stages, const ClockReport& clock,
                                            const PipelineOptions& options,
                                            const StageJobEvidence& evidence);

/// Where the detected schedule puts each global stage: the dependencies
/// follow it (a V-shaped schedule's second chunk flows back up the ranks).
StagePlacement detected_placement(const ScheduleReport& schedule);

/// The clock options with what the layout allows (layout_known), in the
/// options' words (`words`).
ClockOptions clock_options(const PipelineOptions& options, const Layout& layout);

/// Resolves the stage map and corrects the machines' clocks (clock_skew.h).
/// Throws std::invalid_argument for a bad stage spec or imposed machine.
ClockReport correct_run_clocks(Run& run, const PipelineOptions& options);

/// Everything else. `clock` is what correct_run_clocks returned (kept in the
/// result; it adds a warning when violations remain). Throws
/// std::invalid_argument for a bad stage spec.
PipelineAnalysis analyze_pipeline(const Run& run, const Metrics& metrics,
                                  const PipelineOptions& options, ClockReport clock = {});

struct AnalyzedRun {
  /// The contract's figures, on corrected times.
  Metrics metrics;
  PipelineAnalysis pipeline;
};

/// Clock correction, metrics and the analysis, with each intermediate (stage
/// map, roles, dependencies) computed once. Throws std::invalid_argument for
/// a bad stage spec or imposed machine.
AnalyzedRun analyze_run(Run& run, const PipelineOptions& options);

/// The first part of analyze_run, which is this followed by the rest of the
/// analysis: clock correction, the metrics on corrected times, and of the
/// pipeline analysis only the stage map, roles, detected schedule,
/// dependencies and clock report (the rest left empty). So the schedule is
/// the one analyze_run reports, for a caller that wants no more than it
/// (the passes left out: bubbles, split, bottleneck, critical paths, data
/// quality). Throws like analyze_run.
AnalyzedRun analyze_schedule(Run& run, const PipelineOptions& options);

}  // namespace pipescope
