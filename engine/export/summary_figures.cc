#include "export/summary_figures.h"

#include <algorithm>
#include <map>
#include <utility>

#include "analysis/job_kind.h"
#include "analysis/step_events.h"
#include "export/figure_registry.h"
#include "export/summary_step_rows.h"

namespace pipescope {

namespace {

std::vector<DeviceFigures> device_figures(const Run& run, const Metrics& metrics,
                                          const SummaryJobFacts& facts) {
  std::vector<DeviceFigures> out;
  out.reserve(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    const Device& device = run.devices[d];
    // Metrics computed for another run (or none) must not crash the export.
    const DeviceTotals totals = d < metrics.devices.size() ? metrics.devices[d] : DeviceTotals{};
    out.push_back({device.index, device.machine, device.machine_name, device.rank, device.path,
                   d < facts.device_jobs.size() ? facts.device_jobs[d] : 0, totals.steps,
                   totals.busy_ns, totals.idle_ns, totals.utilization, totals.comm_ns});
  }
  return out;
}

std::vector<SegmentFigures> segment_figures(const Run& run, const Metrics& metrics) {
  std::vector<SegmentFigures> out;
  for (const SegmentSteps& segment : metrics.segments) {
    SegmentFigures f;
    f.index = segment.index;
    f.start_ns = segment.start_ns;
    f.end_ns = segment.end_ns;
    f.first_step = segment.first_step;
    f.steps = static_cast<std::int64_t>(segment.count);
    f.complete_steps = static_cast<std::int64_t>(segment.complete);
    for (const LaunchSegment& launch : run.segments) {
      if (launch.index != segment.index) continue;
      f.numbered_by_line = launch.numbered_by_line;
      f.found_by = launch_signal_name(launch.found_by);
    }
    if (run.segments.empty()) f.numbered_by_line = run.first_step.has_value();
    for (const std::size_t d : segment.devices) {
      if (d < run.devices.size()) f.files.push_back(run.devices[d].path);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<InputFigures> input_figures(const Run& run) {
  std::vector<InputFigures> out;
  out.reserve(run.inputs.size());
  for (const InputStats& input : run.inputs) {
    out.push_back({input.path, input.bytes, input.lines, input.matched, input.malformed,
                   input.oversized, input.partial_last_line_bytes, input.error});
  }
  return out;
}

std::vector<DiagnosticFigures> diagnostic_figures(const Run& run) {
  std::vector<DiagnosticFigures> out;
  out.reserve(run.diagnostics.size());
  for (const Diagnostic& diagnostic : run.diagnostics) {
    out.push_back({diagnostic.path, diagnostic.line, diagnostic.message});
  }
  return out;
}

std::vector<LeftOutFigures> left_out_figures(const Run& run) {
  std::vector<LeftOutFigures> out;
  for (const LeftOutDevice& d : run.left_out) {
    out.push_back({d.device, d.machine, d.machine_name, d.rank, d.path, d.reason});
  }
  return out;
}

std::string_view type_name(const Run& run, TypeId type) {
  return type < run.types.size() ? std::string_view(run.types.name(type)) : "?";
}

StagesFigures stages_figures(const Run& run, const PipelineAnalysis& a) {
  StagesFigures out{std::string(stage_source_name(a.stages.source)), {}};
  for (std::size_t s = 0; s < a.stages.stage_count(); ++s) {
    StageFigures stage{static_cast<std::int64_t>(s), {}, std::nullopt};
    for (const std::size_t d : a.stages.devices[s]) stage.devices.push_back(run.devices[d].index);
    if (s < a.bottleneck.stages.size()) {
      const StageStats& stats = a.bottleneck.stages[s];
      StageLoadFigures load{stats.compute_per_step_ns, {}};
      for (std::size_t r = 0; r < kRoleCount; ++r) {
        const DurationStats& d = stats.by_role[r];
        if (d.count == 0) continue;
        load.jobs.push_back({std::string(pipeline_role_name(static_cast<PipelineRole>(r))), d.count,
                             d.total_ns, d.mean_ns, d.median_ns, d.p95_ns, d.max_ns});
      }
      stage.load = std::move(load);
    }
    out.list.push_back(std::move(stage));
  }
  return out;
}

std::optional<BubbleJobFigures> bubble_job(const Run& run, const std::optional<Job>& job) {
  if (!job) return std::nullopt;
  return BubbleJobFigures{std::string(type_name(run, job->type)), job->micro_batch, job->start_ns,
                          job->end_ns};
}

/// The job `index` of `device`, when it names one.
std::optional<Job> job_at(const Device& device, std::int64_t index) {
  if (index < 0 || static_cast<std::size_t>(index) >= device.jobs.size()) return std::nullopt;
  return device.jobs[static_cast<std::size_t>(index)];
}

/// `inherent` where the split is known.
std::optional<std::int64_t> known(const BubbleSplit& split, std::int64_t inherent) {
  return split.known ? std::optional<std::int64_t>(inherent) : std::nullopt;
}

BubblesFigures bubbles_figures(const Run& run, const Metrics& metrics, const PipelineAnalysis& a,
                               const SummaryJobFacts& facts, SummaryRows rows) {
  const BubbleSummary& b = a.bubbles;
  const BubbleSplit& split = a.split;
  BubblesFigures out;
  out.total = bubble_split_figures(b.total.time(), known(split, split.inherent_ns));
  out.idle_ns = b.total.idle_ns();
  for (std::size_t d = 0; d < b.per_device.size() && d < run.devices.size(); ++d) {
    const std::optional<std::int64_t> inherent =
        d < split.device_inherent.size() ? known(split, split.device_inherent[d]) : std::nullopt;
    out.devices.push_back(
        {run.devices[d].index, bubble_split_figures(b.per_device[d].time(), inherent)});
  }
  // The per-step rows, as each step range writes its own (summary_step_rows.h).
  if (rows == SummaryRows::all) {
    out.steps = bubble_step_rows(metrics, run.devices, 0, b.per_step, split.known, split.inherent);
  }
  for (std::size_t i = 0; i < b.longest.size(); ++i) {
    const Bubble& bubble = b.longest[i];
    const SummaryJobFacts::LongBubble named =
        i < facts.longest_bubbles.size() ? facts.longest_bubbles[i] : SummaryJobFacts::LongBubble{};
    const std::optional<std::int64_t> inherent = named.inherent_ns;
    out.longest.push_back(
        {run.devices[bubble.device].index, metrics.steps[bubble.step].step, bubble.start_ns,
         bubble.length_ns(), std::string(bubble_kind_name(bubble.kind)), inherent,
         inherent ? std::optional<std::int64_t>(bubble.length_ns() - *inherent) : std::nullopt,
         bubble_job(run, named.before), bubble_job(run, named.after)});
  }
  return out;
}

BottleneckFigures bottleneck_figures(const PipelineAnalysis& a) {
  const BottleneckReport& b = a.bottleneck;
  return {b.slowest_stage,
          b.slowest_stage >= 0
              ? b.stages[static_cast<std::size_t>(b.slowest_stage)].compute_per_step_ns
              : std::int64_t{0},
          b.mean_compute_per_step_ns, b.imbalance};
}

CriticalPathFigures critical_path_figures(const Run& run, const Metrics& metrics,
                                          const PipelineAnalysis& a, const SummaryJobFacts& facts,
                                          SummaryRows rows) {
  CriticalPathFigures out;
  const CriticalPath* longest = longest_complete_path(metrics, a.critical_paths);
  // The per-step rows, as each step range writes its own (summary_step_rows.h).
  if (rows == SummaryRows::all) out.steps = critical_path_step_rows(metrics, a.critical_paths);
  if (longest != nullptr) {
    LongestPathFigures chain{metrics.steps[longest->step].step, {}};
    for (std::size_t i = 0; i < longest->jobs.size(); ++i) {
      const CriticalPathJob& entry = longest->jobs[i];
      const Device& device = run.devices[entry.job.device];
      const Job job = i < facts.longest_path_jobs.size() ? facts.longest_path_jobs[i] : Job{};
      chain.jobs.push_back({device.index, entry.stage, std::string(type_name(run, job.type)),
                            job.micro_batch, job.start_ns, job.end_ns, entry.wait_ns,
                            entry.via_dependency});
    }
    out.longest_step = std::move(chain);
  }
  return out;
}

ClockFigures clock_figures(const PipelineAnalysis& a) {
  const ClockReport& c = a.clock;
  ClockFigures out;
  out.method = std::string(clock_method_name(c.method));
  out.applied = c.applied;
  out.dependencies = c.dependencies;
  out.violations_before = c.violations_before;
  out.violations_after = c.violations_after;
  for (const MachineClock& m : c.machines) {
    std::vector<ClockPieceFigures> pieces;
    for (const ClockPiece& p : m.pieces) pieces.push_back({p.from_ns, p.offset_ns});
    out.machines.push_back({m.machine, m.name, m.estimate_ns, m.offset_ns, std::move(pieces)});
  }
  for (const MachinePairClock& p : c.pairs) {
    out.pairs.push_back({p.machine_a, p.machine_b, p.dependencies, p.violations_before,
                         p.violations_after, p.lower_ns, p.upper_ns, p.beyond_noise_before,
                         p.beyond_noise_after});
  }
  // The noise matters only where there was something to judge.
  if (c.violations_before > 0) out.noise_ns = c.noise_ns;
  out.beyond_noise_before = c.beyond_noise_before;
  out.beyond_noise_after = c.beyond_noise_after;
  out.reason = c.reason;
  return out;
}

LayoutFigures layout_figures(const PipelineAnalysis& a) {
  const Layout& l = a.layout;
  return {l.shape.pp,
          l.shape.dp,
          l.shape.tp,
          layout_order_name(l.shape.order),
          std::string(layout_method_name(l.method)),
          l.evidence,
          l.reason};
}

std::vector<ReplicaFigures> replica_figures(const Run& run, const PipelineAnalysis& a) {
  std::vector<ReplicaFigures> out;
  for (std::size_t i = 0; i < a.replicas.replicas.size(); ++i) {
    const ReplicaStats& r = a.replicas.replicas[i];
    ReplicaFigures f;
    f.replica = r.replica;
    for (const std::size_t d : r.devices) f.devices.push_back(run.devices[d].index);
    f.complete_steps = static_cast<std::int64_t>(r.complete_steps);
    f.step_ns = r.step_ns;
    f.total_window_ns = r.total_window_ns;
    f.bubble_ratio = r.bubble_ratio;
    f.slowest_stage = r.bottleneck.slowest_stage;
    f.imbalance = r.bottleneck.imbalance;
    f.slowest = static_cast<int>(i) == a.replicas.slowest;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<WarningFigures> warning_figures(const std::vector<Warning>& warnings) {
  std::vector<WarningFigures> out;
  for (const Warning& w : warnings) {
    out.push_back({std::string(warning_name(w.code)), w.message, w.device, w.stage, w.count});
  }
  return out;
}

std::vector<JobTypeFigures> job_type_figures(const TypeTable& types,
                                             std::span<const TypeJobSums> sums) {
  std::vector<JobTypeFigures> out;
  for (TypeId id = 0; id < sums.size() && id < types.size(); ++id) {
    if (sums[id].jobs == 0) continue;
    const std::string& name = types.name(id);
    out.push_back({name, std::string(job_kind_name(classify_job_type(name))), sums[id].jobs,
                   sums[id].total_ns});
  }
  std::sort(out.begin(), out.end(),
            [](const JobTypeFigures& a, const JobTypeFigures& b) { return a.type < b.type; });
  return out;
}

ScheduleFigures schedule_figures(const ScheduleReport& s) {
  return {std::string(detection_name(s.detection)),
          s.detection.exact,
          s.detection.stages,
          s.detection.micro_batches,
          s.detection.chunks,
          s.steps_examined,
          s.steps_agreeing,
          static_cast<std::int64_t>(s.means.forward_ns),
          static_cast<std::int64_t>(s.means.backward_ns),
          static_cast<std::int64_t>(s.means.weight_ns),
          s.measured_bubble_ratio,
          s.ideal_bubble_ratio,
          s.excess,
          s.detection.family ? std::string(schedule_family_name(*s.detection.family)) : "",
          detection_frameworks(s.detection)};
}

const CriticalPath* longest_complete_path(const Metrics& metrics,
                                          const std::vector<CriticalPath>& paths) {
  const CriticalPath* longest = nullptr;
  for (const CriticalPath& path : paths) {
    const std::int64_t window = metrics.steps[path.step].window_ns();
    const bool candidate = metrics.steps[path.step].complete;  // incomplete: not in the totals
    if (candidate && (longest == nullptr || window > metrics.steps[longest->step].window_ns())) {
      longest = &path;
    }
  }
  return longest;
}

std::vector<FoldedBubble> report_longest_bubbles(const PipelineAnalysis& pipeline) {
  const BubbleSummary& bubbles = pipeline.bubbles;
  if (!bubbles.longest_folded.empty()) return bubbles.longest_folded;
  return fold_peer_bubbles(bubbles.longest, pipeline.stages.stage_of, bubbles.longest.size());
}

SummaryJobFacts::LongBubble long_bubble_facts(const Run& run, const Metrics& metrics,
                                              const SummaryJobFacts& facts,
                                              const PipelineAnalysis& pipeline,
                                              const Bubble& bubble) {
  const std::vector<Bubble>& longest = pipeline.bubbles.longest;
  for (std::size_t i = 0; i < longest.size() && i < facts.longest_bubbles.size(); ++i) {
    if (longest[i].device == bubble.device && longest[i].start_ns == bubble.start_ns) {
      return facts.longest_bubbles[i];
    }
  }
  const Device& device = run.devices[bubble.device];
  return {job_at(device, bubble.job_before), job_at(device, bubble.job_after),
          bubble_inherent_ns(pipeline.split, metrics, bubble)};
}

SummaryJobFacts summary_job_facts(const Run& run, const Metrics& metrics,
                                  const PipelineAnalysis* pipeline) {
  SummaryJobFacts facts;
  for (const Device& device : run.devices) {
    facts.device_jobs.push_back(static_cast<std::int64_t>(device.jobs.size()));
  }
  facts.figures = figure_parts({.run = run,
                                .metrics = metrics,
                                .job_step = metrics.job_step,
                                .first = 0,
                                .last = metrics.steps.size(),
                                .whole_run = true});
  if (pipeline == nullptr) return facts;
  for (const Bubble& bubble : pipeline->bubbles.longest) {
    const Device& device = run.devices[bubble.device];
    facts.longest_bubbles.push_back({job_at(device, bubble.job_before),
                                     job_at(device, bubble.job_after),
                                     bubble_inherent_ns(pipeline->split, metrics, bubble)});
  }
  if (const CriticalPath* longest = longest_complete_path(metrics, pipeline->critical_paths)) {
    for (const CriticalPathJob& entry : longest->jobs) {
      facts.longest_path_jobs.push_back(run.devices[entry.job.device].jobs[entry.job.job]);
    }
  }
  return facts;
}

SummaryFigures summary_figures(const Run& run, const Metrics& metrics,
                               const PipelineAnalysis* pipeline, const SummaryJobFacts& facts,
                               SummaryRows rows) {
  SummaryFigures f;
  // The registered figures: jobs and job_types in their members, the
  // others in `figures`.
  place_figures(facts.figures, run, f);
  f.first_step = run.first_step.value_or(0);
  f.bubble_ratio = metrics.bubble_ratio;
  f.total_window_ns = metrics.total_window_ns;
  f.time_resolution_ns = run.time_resolution_ns;
  f.comm_ns = metrics.comm_ns;
  f.devices = device_figures(run, metrics, facts);
  // The per-step rows, as each step range writes its own (summary_step_rows.h).
  if (rows == SummaryRows::all) {
    f.steps = step_figure_rows(metrics, run.devices, 0, metrics.steps.size());
  }
  f.incomplete_steps = static_cast<std::int64_t>(metrics.incomplete_steps);
  f.segments = segment_figures(run, metrics);
  f.inputs = input_figures(run);
  f.diagnostics = diagnostic_figures(run);
  f.left_out = left_out_figures(run);
  // The events read only the windows and the devices' events (which a
  // partitioned run's rank 0 holds for every device); their step lists are
  // the writer's when it serves the rows by range.
  f.events = events_figures(run, metrics);
  if (rows == SummaryRows::none && f.events) {
    f.events->steps.clear();
    f.events->outliers.clear();
  }
  if (pipeline == nullptr) return f;
  const PipelineAnalysis& a = *pipeline;
  f.layout = layout_figures(a);
  f.schedule = schedule_figures(a.schedule);
  f.stages = stages_figures(run, a);
  f.replicas = replica_figures(run, a);
  f.bubbles = bubbles_figures(run, metrics, a, facts, rows);
  f.bottleneck = bottleneck_figures(a);
  f.critical_path = critical_path_figures(run, metrics, a, facts, rows);
  f.clock = clock_figures(a);
  f.warnings = warning_figures(a.warnings);
  return f;
}

SummaryFigures summary_figures(const Run& run, const Metrics& metrics) {
  return summary_figures(run, metrics, nullptr, summary_job_facts(run, metrics, nullptr),
                         SummaryRows::all);
}

SummaryFigures summary_figures(const Run& run, const Metrics& metrics,
                               const PipelineAnalysis& pipeline) {
  return summary_figures(run, metrics, &pipeline, summary_job_facts(run, metrics, &pipeline),
                         SummaryRows::all);
}

namespace {

KernelSplitFigures split_figures(const KernelSplit& s) {
  if (!s.comm_split_known) return {s.window, s.compute, std::nullopt, std::nullopt, s.idle};
  return {s.window, s.compute, s.transfer, s.wait, s.idle};
}

std::optional<std::int64_t> rank_or_null(int rank) {
  return rank >= 0 ? std::optional<std::int64_t>(rank) : std::nullopt;
}

}  // namespace

std::optional<KernelViewFigures> kernel_view_figures(const KernelView& view) {
  if (!view.available) return std::nullopt;
  KernelViewFigures f;
  f.step_spans = view.step_spans;
  f.gpu_activities = view.gpu_activities;
  f.without_launch = view.without_launch;
  f.comm_kernels = view.comm_kernels;
  f.comm_kernels_without_peers = view.comm_kernels_without_peers;
  f.split = split_figures(view.total);
  f.bubble_ratio = view.bubble_ratio();
  f.idle_share = view.share(view.total.idle);
  if (view.total.comm_split_known) {
    f.wait_share = view.share(view.total.wait);
    f.transfer_share = view.share(view.total.transfer);
  }
  for (const KernelStepWindow& w : view.steps) {
    f.steps.push_back({w.step, w.complete, w.start, w.end});
  }
  if (view.layout.source != KernelLayoutSource::none) {
    f.layout = KernelLayoutFigures{std::string(kernel_layout_source_name(view.layout.source)),
                                   view.layout.group, view.layout.pp, view.layout.dp};
  }
  if (view.clock.machines > 1) {
    KernelClockFigures clock;
    clock.applied = view.clock.applied;
    clock.noise_ns = view.clock.noise_ns;
    for (const KernelMachineClock& m : view.clock.offsets) {
      clock.machines.push_back({m.machine, m.offset_ns, m.pairs});
    }
    f.clock = std::move(clock);
  }
  for (const KernelRankView& r : view.ranks) {
    KernelRankFigures rf;
    rf.device = r.device;
    rf.global_rank = r.global_rank;
    rf.rank_source = std::string(rank_source_name(r.rank_source));
    if (r.stage >= 0) rf.stage = r.stage;
    rf.path = r.path;
    rf.split = split_figures(r.total);
    rf.most_waited_on = rank_or_null(r.most_waited_on);
    for (std::size_t k = 0; k < r.steps.size(); ++k) {
      const KernelStepWindow& w = view.steps[k];
      rf.steps.push_back({w.step, w.complete, w.start, w.end, split_figures(r.steps[k].split),
                          rank_or_null(r.steps[k].most_waited_on)});
    }
    f.ranks.push_back(std::move(rf));
  }
  return f;
}

SummaryFigures kernel_run_figures(const Run& run, const Metrics& metrics, const KernelView& view,
                                  const std::vector<Warning>& warnings) {
  SummaryFigures f = summary_figures(run, metrics);
  f.no_jobs = std::string(kNoJobsKernelTrace);
  f.warnings = warning_figures(warnings);
  f.kernel_view = kernel_view_figures(view);
  // The layout the NCCL kernels show feeds the run's: its pipelines count as
  // data-parallel replicas (tensor-parallel ranks are pipelines of their own
  // to the kernels: dp here is data x tensor parallelism).
  if (view.layout.source != KernelLayoutSource::none) {
    LayoutFigures layout;
    layout.pp = view.layout.pp;
    layout.dp = view.layout.dp;
    layout.tp = 1;
    layout.method = "detected";
    layout.evidence = view.layout.source == KernelLayoutSource::process_group
                          ? "the NCCL kernels' pipeline process group (" + view.layout.group + ")"
                          : "who sends to whom in the NCCL point-to-point kernels";
    f.layout = layout;
  }
  f.devices.clear();
  f.steps.clear();
  f.segments.clear();
  f.bubble_ratio = view.bubble_ratio();
  f.total_window_ns = 0;
  f.incomplete_steps = 0;
  std::int64_t comm = 0;
  for (const KernelStepWindow& w : view.steps) {
    if (w.complete) f.total_window_ns += w.end - w.start;
  }
  if (!view.steps.empty()) f.first_step = view.steps.front().step;
  for (std::size_t k = 0; k < view.steps.size(); ++k) {
    const KernelStepWindow& w = view.steps[k];
    StepFigures step;
    step.step = w.step;
    step.complete = w.complete;
    step.start_ns = w.start;
    step.end_ns = w.end;
    step.duration_ns = w.end - w.start;
    std::int64_t window = 0, idle = 0;
    for (const KernelRankView& r : view.ranks) {
      const KernelSplit& s = r.steps[k].split;
      step.devices.push_back({r.device, s.compute, s.window - s.compute, s.transfer + s.wait});
      window += s.window;
      idle += s.window - s.compute;
    }
    step.bubble_ratio = window > 0 ? static_cast<double>(idle) / static_cast<double>(window) : 0.0;
    f.incomplete_steps += w.complete ? 0 : 1;
    f.steps.push_back(std::move(step));
  }
  for (const KernelRankView& r : view.ranks) {
    DeviceFigures d;
    d.device = r.device;
    d.machine = r.machine;
    d.rank = r.global_rank;
    d.path = r.path;
    for (const KernelRankStep& s : r.steps) d.steps += s.split.compute > 0 ? 1 : 0;
    d.busy_ns = r.total.compute;
    d.idle_ns = r.total.window - r.total.compute;
    d.utilization = r.total.window > 0
                        ? static_cast<double>(r.total.compute) / static_cast<double>(r.total.window)
                        : 0.0;
    d.comm_ns = r.total.transfer + r.total.wait;
    comm += *d.comm_ns;
    f.devices.push_back(std::move(d));
  }
  f.comm_ns = comm;
  return f;
}

std::optional<EventsFigures> events_figures(const Run& run, const Metrics& metrics) {
  if (!run.events_off.empty()) {
    EventsFigures f;
    f.off = run.events_off;
    return f;
  }
  if (run.event_kinds.empty()) return std::nullopt;
  const StepEvents placed = place_step_events(run, metrics);
  EventsFigures f;
  f.patterns = static_cast<std::int64_t>(run.event_kinds.size());
  f.total = static_cast<std::int64_t>(placed.total);
  f.unplaced = static_cast<std::int64_t>(placed.unplaced.size());
  for (const Device& device : run.devices) {
    for (const LogEvent& event : device.events) {
      if (event.time_kind == EventTime::approximate) ++f.approximate;
    }
  }
  std::map<std::string, std::int64_t> categories;
  for (std::size_t k = 0; k < run.event_kinds.size(); ++k) {
    if (placed.per_kind[k] == 0) continue;
    const EventKind& kind = run.event_kinds[k];
    const auto count = static_cast<std::int64_t>(placed.per_kind[k]);
    f.kinds.push_back({kind.id, kind.category, kind.severity, count});
    categories[kind.category] += count;
  }
  std::sort(f.kinds.begin(), f.kinds.end(),
            [](const EventKindFigures& a, const EventKindFigures& b) { return a.id < b.id; });
  for (const auto& [name, count] : categories) f.categories.push_back({name, count});
  // The per-step rows, as each step range writes its own (summary_step_rows.h).
  f.steps = event_step_rows(run, metrics, 0, placed.before_step, placed.in_step);
  const std::int64_t last_end = metrics.steps.empty() ? 0 : metrics.steps.back().end_ns;
  for (std::size_t i = 0; i < placed.after_last.size() && i < kEventsListedPerStep; ++i) {
    f.after_last.push_back(event_figures(run, placed.after_last[i], last_end));
  }
  f.outliers = event_outlier_rows(run, metrics, placed.outliers);
  f.median_window_ns = placed.median_window_ns;
  f.median_bubble_ratio = placed.median_bubble;
  return f;
}

}  // namespace pipescope
