// The field list of every summary.json object: each key spelled once, with
// what its absence means, in the order the writer writes it. The writer
// (summary_json.cc) and the reader (summary_reader.cc) both visit these lists,
// so a key cannot be written under one name and read under another, nor
// written in one place and forgotten in the other.
//
// fields(v, s) calls, for each key of the struct s, one of:
//   v(key, member)                   a value, an object, an array, or an
//                                    optional of one of these (see Rule)
//   v.inline_fields(member)          a struct whose keys sit in this object
//   v.inline_optional(member, key)   the same, set when `key` holds an object
//   v.keyed(key, list, &T::name)     an object whose keys are the list's names
//   v.pair(key, a, b)                a two-number array
//   v.derived(key, member, make)     a value that a summary may lack: make()
//                                    gives it when the reader finds none
//   v.named_values(key, list)        an object of the registered figures'
//                                    values (NamedFigure: key and number)
//   v.step_list(key, list, which)    a list of rows of some or all steps
//                                    (summary_step_rows.h): the writer takes
//                                    its rows from the step ranges' owners
//                                    (summary_json.h); otherwise as v(key, list)
// s is const for the writer and mutable for the reader. A struct written on
// one line is marked kOneLine. "schema" and "tool" are not figures: the
// writer stamps them and the reader checks the schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "analysis/schedule_table.h"
#include "export/summary_figures.h"
#include "export/summary_step_rows.h"

namespace pipescope::summary_fields {

/// What a key's absence means.
enum class Rule {
  /// The reader fails without it (`check` and `diff` cannot do without it).
  required,
  /// Always written; read as its default when absent or of another type.
  optional,
  /// Written only when set (an optional) or not empty (a string, a list) or
  /// not 0 (a number); read as optional.
  omitted,
  /// An optional written as null when unset; null or absent read as unset.
  nullable,
};

struct Key {
  std::string_view name;
  Rule rule;
};

constexpr Key req(std::string_view name) { return {name, Rule::required}; }
constexpr Key opt(std::string_view name) { return {name, Rule::optional}; }
constexpr Key omitted(std::string_view name) { return {name, Rule::omitted}; }
constexpr Key nullable(std::string_view name) { return {name, Rule::nullable}; }

/// S is T, const or not.
template <typename S, typename T>
concept Of = std::is_same_v<std::remove_const_t<S>, T>;

template <typename T>
inline constexpr bool kIsOptional = false;
template <typename T>
inline constexpr bool kIsOptional<std::optional<T>> = true;
template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;
/// A JSON number, boolean or string.
template <typename T>
inline constexpr bool kIsScalar = std::is_arithmetic_v<T> || std::is_same_v<T, std::string>;

/// Objects written on one line.
template <typename T>
inline constexpr bool kOneLine = false;
template <>
inline constexpr bool kOneLine<DeviceFigures> = true;
template <>
inline constexpr bool kOneLine<StepDeviceFigures> = true;
template <>
inline constexpr bool kOneLine<JobTypeFigures> = true;
template <>
inline constexpr bool kOneLine<KernelStepFigures> = true;
template <>
inline constexpr bool kOneLine<KernelRankStepFigures> = true;
template <>
inline constexpr bool kOneLine<KernelMachineClockFigures> = true;
template <>
inline constexpr bool kOneLine<KernelLayoutFigures> = true;
template <>
inline constexpr bool kOneLine<InputFigures> = true;
template <>
inline constexpr bool kOneLine<EventFigures> = true;
template <>
inline constexpr bool kOneLine<EventCaptureFigures> = true;
template <>
inline constexpr bool kOneLine<EventKindFigures> = true;
template <>
inline constexpr bool kOneLine<DiagnosticFigures> = true;
template <>
inline constexpr bool kOneLine<LeftOutFigures> = true;
template <>
inline constexpr bool kOneLine<RoleDurationFigures> = true;
template <>
inline constexpr bool kOneLine<DeviceBubbleFigures> = true;
template <>
inline constexpr bool kOneLine<BubbleJobFigures> = true;
template <>
inline constexpr bool kOneLine<BottleneckFigures> = true;
template <>
inline constexpr bool kOneLine<PathStageFigures> = true;
template <>
inline constexpr bool kOneLine<PathJobFigures> = true;
template <>
inline constexpr bool kOneLine<MachineClockFigures> = true;
template <>
inline constexpr bool kOneLine<MachinePairFigures> = true;
template <>
inline constexpr bool kOneLine<WarningFigures> = true;
template <>
inline constexpr bool kOneLine<LayoutFigures> = true;
template <>
inline constexpr bool kOneLine<TraceFileFigures> = true;

// --- the metric contract's sections --------------------------------------------

void fields(auto& v, Of<DeviceFigures> auto& d) {
  v(req("device"), d.device);
  v(req("machine"), d.machine);
  v(opt("machine_name"), d.machine_name);
  v(req("rank"), d.rank);
  v(opt("path"), d.path);
  v(req("jobs"), d.jobs);
  v(opt("steps"), d.steps);
  v(req("busy_ns"), d.busy_ns);
  v(req("idle_ns"), d.idle_ns);
  v(omitted("comm_ns"), d.comm_ns);
  v(req("utilization"), d.utilization);
}

void fields(auto& v, Of<StepDeviceFigures> auto& d) {
  v(req("device"), d.device);
  v(req("busy_ns"), d.busy_ns);
  v(req("idle_ns"), d.idle_ns);
  v(omitted("comm_ns"), d.comm_ns);
}

void fields(auto& v, Of<StepFigures> auto& s) {
  v(req("step"), s.step);
  v(opt("segment"), s.segment);
  v(opt("complete"), s.complete);
  v(req("start_ns"), s.start_ns);
  v(req("end_ns"), s.end_ns);
  v(req("duration_ns"), s.duration_ns);
  v(req("bubble_ratio"), s.bubble_ratio);
  v(req("devices"), s.devices);
}

void fields(auto& v, Of<SegmentFigures> auto& s) {
  v(req("index"), s.index);
  v(req("start_ns"), s.start_ns);
  v(req("end_ns"), s.end_ns);
  v(req("first_step"), s.first_step);
  v(opt("numbered_by_line"), s.numbered_by_line);
  v(req("steps"), s.steps);
  v(opt("complete_steps"), s.complete_steps);
  v(opt("found_by"), s.found_by);
  v(opt("files"), s.files);
}

void fields(auto& v, Of<JobTypeFigures> auto& t) {
  v(req("type"), t.type);
  v(req("kind"), t.kind);
  v(req("jobs"), t.jobs);
  v(omitted("total_ns"), t.total_ns);
}

void fields(auto& v, Of<InputFigures> auto& i) {
  v(opt("path"), i.path);
  v(opt("bytes"), i.bytes);
  v(opt("lines"), i.lines);
  v(opt("matched"), i.matched);
  v(opt("malformed"), i.malformed);
  v(opt("oversized"), i.oversized);
  v(opt("partial_last_line_bytes"), i.partial_last_line_bytes);
  v(omitted("error"), i.error);
}

void fields(auto& v, Of<DiagnosticFigures> auto& d) {
  v(opt("path"), d.path);
  v(opt("line"), d.line);
  v(opt("message"), d.message);
}

void fields(auto& v, Of<LeftOutFigures> auto& d) {
  v(opt("device"), d.device);
  v(opt("machine"), d.machine);
  v(opt("machine_name"), d.machine_name);
  v(opt("rank"), d.rank);
  v(opt("path"), d.path);
  v(opt("reason"), d.reason);
}

// --- the pipeline sections -----------------------------------------------------

void fields(auto& v, Of<ScheduleFigures> auto& s) {
  v.derived(opt("name"), s.name, [] { return std::string("unknown"); });
  v(opt("exact"), s.exact);
  v(opt("stages"), s.stages);
  v(opt("micro_batches"), s.micro_batches);
  v(opt("chunks"), s.chunks);
  v(opt("steps_examined"), s.steps_examined);
  v(opt("steps_agreeing"), s.steps_agreeing);
  v(opt("mean_forward_ns"), s.mean_forward_ns);
  v(opt("mean_backward_ns"), s.mean_backward_ns);
  v(opt("mean_weight_ns"), s.mean_weight_ns);
  v(opt("measured_bubble_ratio"), s.measured_bubble_ratio);
  v(nullable("ideal_bubble_ratio"), s.ideal_bubble_ratio);
  v(nullable("excess_bubble_ratio"), s.excess_bubble_ratio);
  // Summaries written before the schedule table (issue 14) have no family:
  // derived from the name, so that check still compares them by family.
  v.derived(opt("family"), s.family, [&s] {
    const auto family = family_of_schedule_name(s.name);
    return family ? std::string(schedule_family_name(*family)) : std::string();
  });
  v(opt("frameworks"), s.frameworks);
}

void fields(auto& v, Of<RoleDurationFigures> auto& d) {
  // The role is the key of the "jobs" object that holds it (StageLoadFigures).
  v(opt("count"), d.count);
  v(opt("total_ns"), d.total_ns);
  v(opt("mean_ns"), d.mean_ns);
  v(opt("median_ns"), d.median_ns);
  v(opt("p95_ns"), d.p95_ns);
  v(opt("max_ns"), d.max_ns);
}

void fields(auto& v, Of<StageLoadFigures> auto& load) {
  v(opt("compute_per_step_ns"), load.compute_per_step_ns);
  v.keyed(opt("jobs"), load.jobs, &RoleDurationFigures::role);
}

void fields(auto& v, Of<StageFigures> auto& s) {
  v(opt("stage"), s.stage);
  v(opt("devices"), s.devices);
  // "compute_per_step_ns" and "jobs" come together, for a stage the
  // bottleneck analysis covered.
  v.inline_optional(s.load, "jobs");
}

void fields(auto& v, Of<LayoutFigures> auto& l) {
  v(opt("pp"), l.pp);
  v(opt("dp"), l.dp);
  v(opt("tp"), l.tp);
  v(opt("order"), l.order);
  v(opt("method"), l.method);
  v(omitted("evidence"), l.evidence);
  v(omitted("reason"), l.reason);
}

void fields(auto& v, Of<ReplicaFigures> auto& r) {
  v(opt("replica"), r.replica);
  v(opt("devices"), r.devices);
  v(opt("complete_steps"), r.complete_steps);
  v(opt("step_ns"), r.step_ns);
  v(opt("total_window_ns"), r.total_window_ns);
  v(opt("bubble_ratio"), r.bubble_ratio);
  v(opt("slowest_stage"), r.slowest_stage);
  v(opt("imbalance"), r.imbalance);
  v(opt("slowest"), r.slowest);
}

void fields(auto& v, Of<StagesFigures> auto& s) {
  v(opt("source"), s.source);
  v(opt("list"), s.list);
}

void fields(auto& v, Of<BubbleSplitFigures> auto& s) {
  v(opt("fill_ns"), s.fill_ns);
  v(opt("interior_ns"), s.interior_ns);
  v(opt("drain_ns"), s.drain_ns);
  v(nullable("inherent_ns"), s.inherent_ns);
  v(nullable("excess_ns"), s.excess_ns);
}

void fields(auto& v, Of<DeviceBubbleFigures> auto& d) {
  v(opt("device"), d.device);
  v.inline_fields(d.split);
}

void fields(auto& v, Of<StepBubbleFigures> auto& s) {
  v(opt("step"), s.step);
  v(opt("devices"), s.devices);
}

void fields(auto& v, Of<BubbleJobFigures> auto& j) {
  v(opt("type"), j.type);
  v(opt("micro_batch"), j.micro_batch);
  v(opt("start_ns"), j.start_ns);
  v(opt("end_ns"), j.end_ns);
}

void fields(auto& v, Of<LongBubbleFigures> auto& b) {
  v(opt("device"), b.device);
  v(opt("step"), b.step);
  v(opt("start_ns"), b.start_ns);
  v(opt("length_ns"), b.length_ns);
  v(nullable("inherent_ns"), b.inherent_ns);
  v(nullable("excess_ns"), b.excess_ns);
  v(opt("kind"), b.kind);
  v(nullable("before"), b.before);
  v(nullable("after"), b.after);
}

void fields(auto& v, Of<BubblesFigures> auto& b) {
  v.inline_fields(b.total);
  v(opt("idle_ns"), b.idle_ns);
  v(opt("devices"), b.devices);
  v.step_list(opt("steps"), b.steps, StepList::bubble_steps);
  v(opt("longest"), b.longest);
}

void fields(auto& v, Of<BottleneckFigures> auto& b) {
  v(opt("slowest_stage"), b.slowest_stage);
  v(opt("slowest_compute_per_step_ns"), b.slowest_compute_per_step_ns);
  v(opt("mean_compute_per_step_ns"), b.mean_compute_per_step_ns);
  v(opt("imbalance"), b.imbalance);
}

void fields(auto& v, Of<PathStageFigures> auto& s) {
  v(opt("stage"), s.stage);
  v(opt("ns"), s.ns);
  v(opt("share"), s.share);
}

void fields(auto& v, Of<PathStepFigures> auto& s) {
  v(opt("step"), s.step);
  v(opt("duration_ns"), s.duration_ns);
  v(opt("jobs"), s.jobs);
  v(opt("lead_in_ns"), s.lead_in_ns);
  v(opt("wait_ns"), s.wait_ns);
  v(opt("stages"), s.stages);
}

void fields(auto& v, Of<PathJobFigures> auto& j) {
  v(opt("device"), j.device);
  v(opt("stage"), j.stage);
  v(opt("type"), j.type);
  v(opt("micro_batch"), j.micro_batch);
  v(opt("start_ns"), j.start_ns);
  v(opt("end_ns"), j.end_ns);
  v(opt("wait_ns"), j.wait_ns);
  v(opt("via_dependency"), j.via_dependency);
}

void fields(auto& v, Of<LongestPathFigures> auto& l) {
  v(opt("step"), l.step);
  v(opt("jobs"), l.jobs);
}

void fields(auto& v, Of<CriticalPathFigures> auto& c) {
  v.step_list(opt("steps"), c.steps, StepList::critical_path_steps);
  v(nullable("longest_step"), c.longest_step);
}

void fields(auto& v, Of<ClockPieceFigures> auto& p) {
  v(opt("from_ns"), p.from_ns);
  v(opt("offset_ns"), p.offset_ns);
}

void fields(auto& v, Of<MachineClockFigures> auto& m) {
  v(opt("machine"), m.machine);
  v(opt("name"), m.name);
  v(opt("estimate_ns"), m.estimate_ns);
  v(opt("offset_ns"), m.offset_ns);
  v(omitted("pieces"), m.pieces);
}

void fields(auto& v, Of<MachinePairFigures> auto& p) {
  v.pair(opt("machines"), p.machine_a, p.machine_b);
  v(opt("dependencies"), p.dependencies);
  v(opt("violations_before"), p.violations_before);
  v(opt("violations_after"), p.violations_after);
  v(nullable("lower_ns"), p.lower_ns);
  v(nullable("upper_ns"), p.upper_ns);
  v(omitted("beyond_noise_before"), p.beyond_noise_before);
  v(omitted("beyond_noise_after"), p.beyond_noise_after);
}

void fields(auto& v, Of<ClockFigures> auto& c) {
  v(opt("method"), c.method);
  v(opt("applied"), c.applied);
  v(opt("dependencies"), c.dependencies);
  v(opt("violations_before"), c.violations_before);
  v(opt("violations_after"), c.violations_after);
  v(opt("machines"), c.machines);
  v(opt("pairs"), c.pairs);
  v(omitted("noise_ns"), c.noise_ns);
  v(omitted("beyond_noise_before"), c.beyond_noise_before);
  v(omitted("beyond_noise_after"), c.beyond_noise_after);
  v(omitted("reason"), c.reason);
}

void fields(auto& v, Of<WarningFigures> auto& w) {
  v(opt("code"), w.code);
  v(opt("message"), w.message);
  v(opt("device"), w.device);
  v(opt("stage"), w.stage);
  v(opt("count"), w.count);
}

void fields(auto& v, Of<KernelSplitFigures> auto& s) {
  v(opt("window_ns"), s.window_ns);
  v(opt("compute_ns"), s.compute_ns);
  v(nullable("transfer_ns"), s.transfer_ns);
  v(nullable("wait_ns"), s.wait_ns);
  v(opt("idle_ns"), s.idle_ns);
}

void fields(auto& v, Of<KernelStepFigures> auto& s) {
  v(opt("step"), s.step);
  v(opt("complete"), s.complete);
  v(opt("start_ns"), s.start_ns);
  v(opt("end_ns"), s.end_ns);
}

void fields(auto& v, Of<KernelRankStepFigures> auto& s) {
  v(opt("step"), s.step);
  v(opt("complete"), s.complete);
  v(opt("start_ns"), s.start_ns);
  v(opt("end_ns"), s.end_ns);
  v.inline_fields(s.split);
  v(nullable("most_waited_on"), s.most_waited_on);
}

void fields(auto& v, Of<KernelRankFigures> auto& r) {
  v(opt("device"), r.device);
  v(opt("global_rank"), r.global_rank);
  v(opt("rank_source"), r.rank_source);
  v(nullable("stage"), r.stage);
  v(opt("path"), r.path);
  v.inline_fields(r.split);
  v(nullable("most_waited_on"), r.most_waited_on);
  v(opt("steps"), r.steps);
}

void fields(auto& v, Of<KernelMachineClockFigures> auto& m) {
  v(opt("machine"), m.machine);
  v(opt("offset_ns"), m.offset_ns);
  v(opt("pairs"), m.pairs);
}

void fields(auto& v, Of<KernelClockFigures> auto& c) {
  v(opt("applied"), c.applied);
  v(opt("noise_ns"), c.noise_ns);
  v(opt("machines"), c.machines);
}

void fields(auto& v, Of<KernelLayoutFigures> auto& l) {
  v(opt("source"), l.source);
  v(omitted("group"), l.group);
  v(opt("pp"), l.pp);
  v(opt("dp"), l.dp);
}

void fields(auto& v, Of<KernelViewFigures> auto& k) {
  v(opt("step_spans"), k.step_spans);
  v(opt("gpu_activities"), k.gpu_activities);
  v(opt("without_launch"), k.without_launch);
  v(opt("comm_kernels"), k.comm_kernels);
  v(opt("comm_kernels_without_peers"), k.comm_kernels_without_peers);
  v.inline_fields(k.split);
  v(opt("bubble_ratio"), k.bubble_ratio);
  v(opt("idle_share"), k.idle_share);
  v(nullable("wait_share"), k.wait_share);
  v(nullable("transfer_share"), k.transfer_share);
  v(opt("steps"), k.steps);
  v(opt("ranks"), k.ranks);
  v(omitted("clock"), k.clock);
  v(omitted("layout"), k.layout);
}

// --- log events ------------------------------------------------------------------

void fields(auto& v, Of<EventCaptureFigures> auto& c) {
  v(opt("name"), c.name);
  v(opt("value"), c.value);
}

void fields(auto& v, Of<EventFigures> auto& e) {
  v(opt("device"), e.device);
  v(opt("id"), e.id);
  v(opt("category"), e.category);
  v(opt("severity"), e.severity);
  v(opt("time_ns"), e.time_ns);
  v(opt("offset_ns"), e.offset_ns);
  v(omitted("approximate"), e.approximate);
  v(opt("path"), e.path);
  v(opt("line"), e.line);
  v(omitted("captures"), e.captures);
}

void fields(auto& v, Of<EventStepFigures> auto& s) {
  v(opt("step"), s.step);
  v(omitted("before"), s.before);
  v(omitted("events"), s.events);
  v(omitted("more"), s.more);
}

void fields(auto& v, Of<EventCountFigures> auto& c) { v(opt("count"), c.count); }

void fields(auto& v, Of<EventKindFigures> auto& k) {
  v(opt("id"), k.id);
  v(opt("category"), k.category);
  v(opt("severity"), k.severity);
  v(opt("count"), k.count);
}

void fields(auto& v, Of<EventOutlierFigures> auto& o) {
  v(opt("step"), o.step);
  v(opt("extra_ns"), o.extra_ns);
  v(opt("bubble_ratio"), o.bubble_ratio);
  v(opt("slow"), o.slow);
  v(opt("bubble"), o.bubble);
  v(opt("events"), o.events);
  v(opt("text"), o.text);
}

void fields(auto& v, Of<EventsFigures> auto& e) {
  v(omitted("off"), e.off);
  v(omitted("patterns"), e.patterns);
  v(omitted("total"), e.total);
  v(omitted("approximate"), e.approximate);
  v(omitted("unplaced"), e.unplaced);
  v.keyed(omitted("categories"), e.categories, &EventCountFigures::name);
  v(omitted("kinds"), e.kinds);
  v.step_list(omitted("steps"), e.steps, StepList::event_steps);
  v(omitted("after_last"), e.after_last);
  v.step_list(omitted("outliers"), e.outliers, StepList::event_outliers);
  v(omitted("median_window_ns"), e.median_window_ns);
  v(omitted("median_bubble_ratio"), e.median_bubble_ratio);
}

void fields(auto& v, Of<TraceFileFigures> auto& t) {
  v(opt("reason"), t.reason);
  v(opt("steps"), t.steps);
  v(omitted("median_step"), t.median_step);
  v(omitted("slowest_step"), t.slowest_step);
  v(omitted("estimated_full_bytes"), t.estimated_full_bytes);
  v(omitted("limit_bytes"), t.limit_bytes);
}

// --- the whole summary ---------------------------------------------------------

void fields(auto& v, Of<SummaryFigures> auto& f) {
  v(req("jobs"), f.jobs);
  v(req("first_step"), f.first_step);
  v(req("bubble_ratio"), f.bubble_ratio);
  v(req("total_window_ns"), f.total_window_ns);
  v(omitted("time_resolution_ns"), f.time_resolution_ns);
  v(omitted("comm_ns"), f.comm_ns);
  v(req("devices"), f.devices);
  v.step_list(req("steps"), f.steps, StepList::steps);
  v(opt("incomplete_steps"), f.incomplete_steps);
  v(opt("segments"), f.segments);
  v(opt("job_types"), f.job_types);
  v(opt("inputs"), f.inputs);
  v(opt("diagnostics"), f.diagnostics);
  v(omitted("left_out"), f.left_out);
  v(omitted("layout"), f.layout);
  v(omitted("schedule"), f.schedule);
  v(omitted("stages"), f.stages);
  v(omitted("replicas"), f.replicas);
  v(omitted("bubbles"), f.bubbles);
  v(omitted("bottleneck"), f.bottleneck);
  v(omitted("critical_path"), f.critical_path);
  v(omitted("clock"), f.clock);
  v(omitted("warnings"), f.warnings);
  v(omitted("no_jobs"), f.no_jobs);
  v(omitted("kernel_view"), f.kernel_view);
  v(omitted("events"), f.events);
  v.keyed(omitted("traces"), f.traces, &TraceFileFigures::file);
  // The figures registered without a member here (export/figure_registry.h).
  v.named_values(omitted("figures"), f.figures);
}

}  // namespace pipescope::summary_fields
