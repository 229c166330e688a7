#include "analysis/pipeline.h"

#include <fmt/core.h>
#include <tbb/parallel_invoke.h>

#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "model/malloc_control.h"

namespace pipescope {

namespace {

/// The stage map, roles, detected schedule and the dependencies it implies:
/// what clock correction and the rest of the analysis start from.
PipelineAnalysis with_dependencies(const Run& run, const Metrics& metrics,
                                   const PipelineOptions& options) {
  PipelineAnalysis a;
  a.roles = classify_job_roles(run.types);
  a.layout = choose_layout(run, metrics.job_step, a.roles, options);
  a.stages = a.layout.stages;
  a.schedule = detect_run_schedule(run, metrics, a.stages, a.roles);
  a.dependencies =
      find_dependencies(run, metrics.job_step, a.stages, a.roles, detected_placement(a.schedule));
  // The per-device match lists (8 bytes per job) were freed on the worker
  // threads that built them; handed back before the passes that follow.
  release_free_memory();
  return a;
}

}  // namespace

std::vector<Warning> pipeline_tail_warnings(const Run& run, const Layout& layout,
                                            const StageMap& stages, const ClockReport& clock,
                                            const PipelineOptions& options,
                                            const StageJobEvidence& evidence) {
  const OptionWords& words = *options.words;
  std::vector<Warning> warnings;
  if (layout.method == LayoutMethod::none && run.devices.size() > 1) {
    warnings.push_back({WarningCode::layout_not_found,
                        fmt::format("no pipeline layout fits the run ({}): each device is "
                                    "analysed as its own stage and the clocks are not "
                                    "corrected; check the order of the machines (machines "
                                    "out of order look like this), or state it with {}",
                                    layout.reason, words.name(CallerOption::layout)),
                        -1, -1, static_cast<std::uint64_t>(run.devices.size())});
  }
  if (clock.method == ClockMethod::rejected) {
    std::string estimates;
    for (const MachineClock& m : clock.machines) {
      if (m.estimate_ns == 0) continue;
      // Rounded to the microsecond as the text report rounds it.
      const std::int64_t us = (std::abs(m.estimate_ns) + 500) / 1000;
      estimates += fmt::format("{}{} {}{}.{:03} ms", estimates.empty() ? "" : ", ", m.name,
                               m.estimate_ns < 0 ? "-" : "+", us / 1000, us % 1000);
    }
    const std::string what =
        estimates.empty()
            ? fmt::format(
                  "the clock offsets estimated are 0 for every machine: no offset removes "
                  "the {} dependency violations between machines",
                  clock.violations_before)
            : fmt::format("the estimated clock offsets ({}) were not applied: {}", estimates,
                          clock.reason);
    warnings.push_back({WarningCode::clock_estimate_rejected,
                        what + "; check the order of the machines (machines out of order look "
                               "like a clock skew that no offset fixes)",
                        -1, -1, clock.violations_before});
  }
  if (clock.violations_after > 0) {
    warnings.push_back(
        {WarningCode::dependency_violations,
         fmt::format("{} of {} dependencies between machines still start before their input "
                     "ended{} (clock skew, or jobs matched across stages wrongly)",
                     clock.violations_after, clock.dependencies,
                     clock.method == ClockMethod::disabled
                         ? fmt::format(" ({})", words.name(CallerOption::no_clock_fix))
                         : std::string()),
         -1, -1, clock.violations_after});
  }
  for (std::string& why : stage_map_contradictions(run, stages, evidence)) {
    warnings.push_back({WarningCode::stage_map_contradicted,
                        fmt::format("{}: {}; {}", words.name(CallerOption::stages), why,
                                    words.advice(CallerOption::stages)),
                        -1, -1, 1});
  }
  if (stages.source == StageSource::device) {
    const StageMap guess = guess_stage_map(run, evidence);
    if (guess.stage_count() < stages.stage_count()) {
      std::string groups;
      // The first four groups of several devices (the groups before them
      // may be single devices).
      std::size_t named = 0;
      for (std::size_t s = 0; s < guess.stage_count() && named < 4; ++s) {
        if (guess.devices[s].size() < 2) continue;
        groups +=
            fmt::format("{}{}", groups.empty() ? "" : ", ", describe_stage_devices(run, guess, s));
        ++named;
      }
      warnings.push_back(
          {WarningCode::stage_map,
           fmt::format("devices {} run the same jobs at the same times: they look like one "
                       "stage each (tensor-parallel peers); {}",
                       groups, words.advice(CallerOption::stages)),
           -1, -1, static_cast<std::uint64_t>(stages.stage_count() - guess.stage_count())});
    }
  }
  return warnings;
}

StagePlacement detected_placement(const ScheduleReport& schedule) {
  // Detection reads each device's job order, which no clock offset changes.
  const ScheduleDetection& d = schedule.detection;
  if (!d.id || d.chunks != 2) return StagePlacement::looped;
  return schedule_entry(*d.id).placement;
}

Layout choose_layout(const Run& run, const std::vector<std::vector<std::int32_t>>& job_step,
                     const std::vector<JobRole>& roles, const PipelineOptions& options,
                     const StageJobEvidence* stage_evidence) {
  const OptionWords& words = *options.words;
  if (options.layout && options.stages.given()) {
    throw std::invalid_argument(
        fmt::format("{} and {} both say how the devices form stages: give one",
                    words.name(CallerOption::layout), words.name(CallerOption::stages)));
  }
  if (options.layout)
    return layout_from_shape(run, *options.layout, words.name(CallerOption::layout));
  if (options.stages.given()) {
    const StageMap map =
        options.stages.form == StageSpec::Form::automatic && stage_evidence != nullptr
            ? guess_stage_map(run, *stage_evidence)
            : resolve_stage_map(run, options.stages, words.name(CallerOption::stages));
    Layout layout = layout_from_stage_map(run, map);
    layout.evidence = words.name(CallerOption::stages);
    return layout;
  }
  return detect_layout(run, job_step, roles);
}

ClockOptions clock_options(const PipelineOptions& options, const Layout& layout) {
  ClockOptions clock = options.clock;
  clock.layout_known = layout.aligns_clocks();
  clock.words = options.words;
  return clock;
}

ClockReport correct_run_clocks(Run& run, const PipelineOptions& options) {
  const Metrics metrics = compute_metrics(run);
  const PipelineAnalysis a = with_dependencies(run, metrics, options);
  return correct_clocks(run, a.dependencies, clock_options(options, a.layout));
}

namespace {

/// The analysis once the stage map, roles and dependencies are known.
/// `a.schedule` is detected already (on metrics whose step windows may
/// have moved since, which detection does not read).
/// `lend`: the run itself, mutable, when the replicas may borrow its
/// devices (summarize_replicas_in_place, after the passes that read them);
/// null to copy them, beside the other passes.
PipelineAnalysis assemble(const Run& run, const Metrics& metrics, const PipelineOptions& options,
                          PipelineAnalysis a, ClockReport clock, Run* lend = nullptr) {
  // Independent passes over the same jobs, run as tasks (each one's result
  // is what it computes alone: nothing is shared but the inputs). Each hands
  // its freed scratch back: a pass frees it on the worker thread that ran
  // it, and glibc keeps such memory in that thread's heap, where the passes
  // beside it do not reuse it (on the 1 GB dense folder the peak of
  // anonymous memory was 3.8 MiB higher without it).
  tbb::parallel_invoke(
      [&] {
        a.bubbles = summarize_bubbles(run, metrics, options.top_bubbles, a.stages.stage_of);
        release_free_memory();
      },
      [&] {
        // With replicas, the run's bottleneck is the slowest replica's
        // (below): the whole run's stage statistics would be replaced.
        if (measures_replicas(a.layout)) return;
        a.bottleneck = find_bottleneck(run, metrics, a.stages, a.roles);
        release_free_memory();
      },
      [&] {
        a.split = split_bubbles(run, metrics, a.stages, a.roles, a.schedule);
        release_free_memory();
      },
      [&] {
        CriticalPathSummary paths =
            summarize_critical_paths(run, metrics, a.stages, a.dependencies, a.roles);
        a.critical_paths = std::move(paths.paths);
        a.critical_dependency_hops = std::move(paths.via_dependency);
        release_free_memory();
      },
      [&] {
        a.warnings = check_data_quality(run, metrics, a.stages);
        release_free_memory();
      },
      [&] {
        if (lend != nullptr) return;  // below, once the other passes are done
        a.replicas = summarize_replicas(run, a.layout, a.roles);
        release_free_memory();
      });
  if (!options.keep_dependencies) {
    a.dependencies = Dependencies();
    release_free_memory();
  }
  if (lend != nullptr) {
    // Each replica's devices lent to a run of their own, not copied (half
    // the jobs a second time with two replicas): nothing else reads the run
    // now.
    a.replicas = summarize_replicas_in_place(*lend, a.layout, a.roles);
    release_free_memory();
  }
  // The run's bottleneck is the one of the replica that bounds its step.
  if (a.replicas.slowest >= 0) {
    a.bottleneck = a.replicas.replicas[static_cast<std::size_t>(a.replicas.slowest)].bottleneck;
  }
  a.explanation = explain_bubbles(run, metrics, a.schedule, a.split, a.bottleneck);
  a.clock = std::move(clock);

  for (Warning& w :
       pipeline_tail_warnings(run, a.layout, a.stages, a.clock, options, stage_job_evidence(run))) {
    a.warnings.push_back(std::move(w));
  }
  return a;
}

}  // namespace

PipelineAnalysis analyze_pipeline(const Run& run, const Metrics& metrics,
                                  const PipelineOptions& options, ClockReport clock) {
  return assemble(run, metrics, options, with_dependencies(run, metrics, options),
                  std::move(clock));
}

AnalyzedRun analyze_schedule(Run& run, const PipelineOptions& options) {
  // The steps (and so the dependencies) follow each device's job order,
  // which a machine's clock offset does not change; only the step windows
  // move, so the metrics are recomputed when offsets were applied.
  Metrics metrics = compute_metrics(run);
  PipelineAnalysis a = with_dependencies(run, metrics, options);
  a.clock = correct_clocks(run, a.dependencies, clock_options(options, a.layout));
  if (a.clock.applied) {
    metrics = compute_metrics(run);
    // The measured bubble ratio it carries is the corrected run's.
    a.schedule = detect_run_schedule(run, metrics, a.stages, a.roles);
  }
  return {std::move(metrics), std::move(a)};
}

AnalyzedRun analyze_run(Run& run, const PipelineOptions& options) {
  AnalyzedRun result = analyze_schedule(run, options);
  ClockReport clock = std::move(result.pipeline.clock);
  result.pipeline =
      assemble(run, result.metrics, options, std::move(result.pipeline), std::move(clock), &run);
  return result;
}

}  // namespace pipescope
