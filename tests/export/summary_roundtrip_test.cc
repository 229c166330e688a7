// summary.json round trip: figures written (summary_json.h) and read back
// (summary_reader.h) are the figures that were written, field for field; and
// a summary read back is what `check` and `diff` get from the logs it was
// written from.
//
// Every field is covered by construction: the hand-built figures set every
// member of every struct to a value other than its default (checked below
// through structured bindings, so a member added to summary_figures.h stops
// this file compiling until it is set here too), and the comparison is the
// structs' defaulted operator==.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/pipeline.h"
#include "compare/run_loader.h"
#include "export/summary_fields.h"
#include "export/summary_figures.h"
#include "export/summary_json.h"
#include "export/summary_reader.h"
#include "simulate/log_writer.h"
#include "support/command_runner.h"
#include "support/pipeline_sim_run.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::read_file;
using testing::TempDir;

// --- every member set ----------------------------------------------------------

template <typename... T>
void expect_set(std::string_view what, const T&... members) {
  int i = 0;
  const auto check = [&](bool is_default) {
    EXPECT_FALSE(is_default) << what << ": member " << i << " has its default value";
    ++i;
  };
  (check(members == T{}), ...);
}

// Declared first: the templates below call them for nested members.
void expect_all_set(const DeviceFigures& x);
void expect_all_set(const StepDeviceFigures& x);
void expect_all_set(const StepFigures& x);
void expect_all_set(const SegmentFigures& x);
void expect_all_set(const JobTypeFigures& x);
void expect_all_set(const InputFigures& x);
void expect_all_set(const DiagnosticFigures& x);
void expect_all_set(const ScheduleFigures& x);
void expect_all_set(const RoleDurationFigures& x);
void expect_all_set(const StageLoadFigures& x);
void expect_all_set(const StageFigures& x);
void expect_all_set(const LayoutFigures& x);
void expect_all_set(const ReplicaFigures& x);
void expect_all_set(const StagesFigures& x);
void expect_all_set(const BubbleSplitFigures& x);
void expect_all_set(const DeviceBubbleFigures& x);
void expect_all_set(const StepBubbleFigures& x);
void expect_all_set(const BubbleJobFigures& x);
void expect_all_set(const LongBubbleFigures& x);
void expect_all_set(const BubblesFigures& x);
void expect_all_set(const BottleneckFigures& x);
void expect_all_set(const PathStageFigures& x);
void expect_all_set(const PathStepFigures& x);
void expect_all_set(const PathJobFigures& x);
void expect_all_set(const LongestPathFigures& x);
void expect_all_set(const CriticalPathFigures& x);
void expect_all_set(const ClockPieceFigures& x);
void expect_all_set(const MachineClockFigures& x);
void expect_all_set(const MachinePairFigures& x);
void expect_all_set(const ClockFigures& x);
void expect_all_set(const WarningFigures& x);
void expect_all_set(const LeftOutFigures& x);
void expect_all_set(const KernelSplitFigures& x);
void expect_all_set(const KernelStepFigures& x);
void expect_all_set(const KernelRankStepFigures& x);
void expect_all_set(const KernelRankFigures& x);
void expect_all_set(const KernelMachineClockFigures& x);
void expect_all_set(const KernelClockFigures& x);
void expect_all_set(const KernelLayoutFigures& x);
void expect_all_set(const KernelViewFigures& x);
void expect_all_set(const EventCaptureFigures& x);
void expect_all_set(const EventFigures& x);
void expect_all_set(const EventStepFigures& x);
void expect_all_set(const EventCountFigures& x);
void expect_all_set(const TraceFileFigures& x);
void expect_all_set(const EventKindFigures& x);
void expect_all_set(const EventOutlierFigures& x);
void expect_all_set(const EventsFigures& x);
void expect_all_set(const SummaryFigures& x);

template <typename T>
void expect_all_set(const std::vector<T>& list) {
  EXPECT_FALSE(list.empty());
  for (const T& x : list) expect_all_set(x);
}
template <typename T>
void expect_all_set(const std::optional<T>& x) {
  ASSERT_TRUE(x.has_value());
  expect_all_set(*x);
}

void expect_all_set(const DeviceFigures& x) {
  const auto& [a, b, c, d, e, f, g, h, i, j, comm] = x;
  expect_set("DeviceFigures", a, b, c, d, e, f, g, h, i, j, comm);
}
void expect_all_set(const StepDeviceFigures& x) {
  const auto& [a, b, c, comm] = x;
  expect_set("StepDeviceFigures", a, b, c, comm);
}
void expect_all_set(const StepFigures& x) {
  const auto& [a, segment, complete, b, c, d, e, devices] = x;
  expect_set("StepFigures", a, segment, complete, b, c, d, e);
  expect_all_set(devices);
}
void expect_all_set(const SegmentFigures& x) {
  const auto& [a, b, c, d, e, f, g, h, files] = x;
  expect_set("SegmentFigures", a, b, c, d, e, f, g, h, files);
}
void expect_all_set(const JobTypeFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("JobTypeFigures", a, b, c, d);
}
void expect_all_set(const InputFigures& x) {
  const auto& [a, b, c, d, e, f, g, h] = x;
  expect_set("InputFigures", a, b, c, d, e, f, g, h);
}
void expect_all_set(const DiagnosticFigures& x) {
  const auto& [a, b, c] = x;
  expect_set("DiagnosticFigures", a, b, c);
}
void expect_all_set(const ScheduleFigures& x) {
  const auto& [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o] = x;
  expect_set("ScheduleFigures", a, b, c, d, e, f, g, h, i, j, k, l, m, n, o);
}
void expect_all_set(const RoleDurationFigures& x) {
  const auto& [a, b, c, d, e, f, g] = x;
  expect_set("RoleDurationFigures", a, b, c, d, e, f, g);
}
void expect_all_set(const StageLoadFigures& x) {
  const auto& [a, jobs] = x;
  expect_set("StageLoadFigures", a);
  expect_all_set(jobs);
}
void expect_all_set(const StageFigures& x) {
  const auto& [a, b, load] = x;
  expect_set("StageFigures", a, b);
  expect_all_set(load);
}
void expect_all_set(const LayoutFigures& x) {
  const auto& [a, b, c, d, e, f, g] = x;
  expect_set("LayoutFigures", a, b, c, d, e, f, g);
}
void expect_all_set(const ReplicaFigures& x) {
  const auto& [a, devices, c, d, e, f, g, h, i] = x;
  expect_set("ReplicaFigures", a, c, d, e, f, g, h, i);
  EXPECT_FALSE(devices.empty()) << "ReplicaFigures: devices";
}
void expect_all_set(const StagesFigures& x) {
  const auto& [a, list] = x;
  expect_set("StagesFigures", a);
  expect_all_set(list);
}
void expect_all_set(const BubbleSplitFigures& x) {
  const auto& [a, b, c, inherent, excess] = x;
  expect_set("BubbleSplitFigures", a, b, c, inherent, excess);
}
void expect_all_set(const DeviceBubbleFigures& x) {
  const auto& [a, split] = x;
  expect_set("DeviceBubbleFigures", a);
  expect_all_set(split);
}
void expect_all_set(const StepBubbleFigures& x) {
  const auto& [a, devices] = x;
  expect_set("StepBubbleFigures", a);
  expect_all_set(devices);
}
void expect_all_set(const BubbleJobFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("BubbleJobFigures", a, b, c, d);
}
void expect_all_set(const LongBubbleFigures& x) {
  const auto& [a, b, c, d, e, inherent, excess, before, after] = x;
  expect_set("LongBubbleFigures", a, b, c, d, e, inherent, excess);
  expect_all_set(before);
  expect_all_set(after);
}
void expect_all_set(const BubblesFigures& x) {
  const auto& [total, a, devices, steps, longest] = x;
  expect_all_set(total);
  expect_set("BubblesFigures", a);
  expect_all_set(devices);
  expect_all_set(steps);
  expect_all_set(longest);
}
void expect_all_set(const BottleneckFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("BottleneckFigures", a, b, c, d);
}
void expect_all_set(const PathStageFigures& x) {
  const auto& [a, b, c] = x;
  expect_set("PathStageFigures", a, b, c);
}
void expect_all_set(const PathStepFigures& x) {
  const auto& [a, b, c, d, e, stages] = x;
  expect_set("PathStepFigures", a, b, c, d, e);
  expect_all_set(stages);
}
void expect_all_set(const PathJobFigures& x) {
  const auto& [a, b, c, d, e, f, g, h] = x;
  expect_set("PathJobFigures", a, b, c, d, e, f, g, h);
}
void expect_all_set(const LongestPathFigures& x) {
  const auto& [a, jobs] = x;
  expect_set("LongestPathFigures", a);
  expect_all_set(jobs);
}
void expect_all_set(const CriticalPathFigures& x) {
  const auto& [steps, longest_step] = x;
  expect_all_set(steps);
  expect_all_set(longest_step);
}
void expect_all_set(const ClockPieceFigures& x) {
  const auto& [a, b] = x;
  expect_set("ClockPieceFigures", a, b);
}
void expect_all_set(const MachineClockFigures& x) {
  const auto& [a, b, c, d, pieces] = x;
  expect_set("MachineClockFigures", a, b, c, d);
  expect_all_set(pieces);
}
void expect_all_set(const MachinePairFigures& x) {
  const auto& [a, b, c, d, e, f, g, h, i] = x;
  expect_set("MachinePairFigures", a, b, c, d, e, f, g, h, i);
}
void expect_all_set(const ClockFigures& x) {
  const auto& [a, b, c, d, e, machines, pairs, f, g, h, i] = x;
  expect_set("ClockFigures", a, b, c, d, e, f, g, h, i);
  expect_all_set(machines);
  expect_all_set(pairs);
}
void expect_all_set(const WarningFigures& x) {
  const auto& [a, b, c, d, e] = x;
  expect_set("WarningFigures", a, b, c, d, e);
}
void expect_all_set(const LeftOutFigures& x) {
  const auto& [a, b, c, d, e, f] = x;
  expect_set("LeftOutFigures", a, b, c, d, e, f);
}
void expect_all_set(const KernelSplitFigures& x) {
  const auto& [a, b, c, d, e] = x;
  expect_set("KernelSplitFigures", a, b, c, d, e);
}
void expect_all_set(const KernelStepFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("KernelStepFigures", a, b, c, d);
}
void expect_all_set(const KernelRankStepFigures& x) {
  const auto& [a, b, c, d, split, e] = x;
  expect_set("KernelRankStepFigures", a, b, c, d, e);
  expect_all_set(split);
}
void expect_all_set(const KernelRankFigures& x) {
  const auto& [a, b, source, stage, c, split, d, steps] = x;
  expect_set("KernelRankFigures", a, b, source, stage, c, d);
  expect_all_set(split);
  expect_all_set(steps);
}
void expect_all_set(const KernelMachineClockFigures& x) {
  const auto& [a, b, c] = x;
  expect_set("KernelMachineClockFigures", a, b, c);
}
void expect_all_set(const KernelClockFigures& x) {
  const auto& [a, b, machines] = x;
  expect_set("KernelClockFigures", a, b);
  expect_all_set(machines);
}
void expect_all_set(const KernelLayoutFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("KernelLayoutFigures", a, b, c, d);
}
void expect_all_set(const KernelViewFigures& x) {
  const auto& [a, b, c, d, e, split, f, g, h, i, steps, ranks, clock, layout] = x;
  expect_all_set(layout);
  expect_set("KernelViewFigures", a, b, c, d, e, f, g, h, i);
  expect_all_set(split);
  expect_all_set(steps);
  expect_all_set(ranks);
  expect_all_set(clock);
}
void expect_all_set(const EventCaptureFigures& x) {
  const auto& [a, b] = x;
  expect_set("EventCaptureFigures", a, b);
}
void expect_all_set(const EventFigures& x) {
  const auto& [a, b, c, d, e, f, g, h, i, captures] = x;
  expect_set("EventFigures", a, b, c, d, e, f, g, h, i);
  expect_all_set(captures);
}
void expect_all_set(const EventStepFigures& x) {
  const auto& [a, before, events, b] = x;
  expect_set("EventStepFigures", a, b);
  expect_all_set(before);
  expect_all_set(events);
}
void expect_all_set(const EventCountFigures& x) {
  const auto& [a, b] = x;
  expect_set("EventCountFigures", a, b);
}
void expect_all_set(const EventKindFigures& x) {
  const auto& [a, b, c, d] = x;
  expect_set("EventKindFigures", a, b, c, d);
}
void expect_all_set(const EventOutlierFigures& x) {
  const auto& [a, b, c, d, e, f, g] = x;
  expect_set("EventOutlierFigures", a, b, c, d, e, f, g);
}
void expect_all_set(const EventsFigures& x) {
  const auto& [off, a, b, c, d, categories, kinds, steps, after_last, outliers, e, f] = x;
  expect_set("EventsFigures", a, b, c, d, e, f);
  expect_all_set(categories);
  expect_all_set(kinds);
  expect_all_set(steps);
  expect_all_set(after_last);
  expect_all_set(outliers);
}
void expect_all_set(const TraceFileFigures& x) {
  const auto& [a, b, c, d, e, f, g] = x;
  expect_set("TraceFileFigures", a, b, c, d, e, f, g);
}
void expect_all_set(const SummaryFigures& x) {
  const auto& [a, b, c, d, time_resolution_ns, comm, devices, steps, incomplete_steps, segments,
               job_types, inputs, diagnostics, left_out, layout, schedule, stages, replicas,
               bubbles, bottleneck, critical_path, clock, warnings, no_jobs, kernel_view, events,
               traces, figures] = x;
  expect_set("SummaryFigures", a, b, c, d, time_resolution_ns, comm, incomplete_steps, no_jobs,
             figures);
  expect_all_set(kernel_view);
  expect_all_set(events);
  expect_all_set(traces);
  expect_all_set(devices);
  expect_all_set(steps);
  expect_all_set(segments);
  expect_all_set(job_types);
  expect_all_set(inputs);
  expect_all_set(diagnostics);
  expect_all_set(left_out);
  expect_all_set(layout);
  expect_all_set(schedule);
  expect_all_set(stages);
  expect_all_set(replicas);
  expect_all_set(bubbles);
  expect_all_set(bottleneck);
  expect_all_set(critical_path);
  expect_all_set(clock);
  expect_all_set(warnings);
}

// Every member set, with values that do not follow from each other (the
// writer must not compute one field from another).
SummaryFigures every_field() {
  SummaryFigures f;
  f.jobs = 11;
  f.first_step = 7;
  f.bubble_ratio = 0.1 + 0.2;  // not exactly 0.3: doubles must come back to the bit
  f.total_window_ns = 1'697'793'307'213'000'123;
  f.time_resolution_ns = 1'000'000;
  f.comm_ns = 77;
  f.devices = {{3, 1, "machine1", 2, "/logs/machine1/workerlog.2", 5, 4, 900, 100, 0.9, 40},
               {4, 1, "machine\"1\"", 3, "/logs/odd \\ path\n", 6, 5, 1, 999, 1e-300, 0}};
  // complete = false is a default value to expect_set: the round trip of an
  // incomplete step is its own test below.
  f.steps = {{7, 2, true, 10, 1010, 1000, 0.25, {{3, 750, 250, 30}, {4, 500, 500, 1}}},
             {8, 3, true, 1010, 3010, 2001, 1.0 / 3.0, {{3, -5, 2006, 2}}}};
  f.incomplete_steps = 9;
  f.segments = {{2, 10, 1010, 7, true, 1, 1, "step_start_line", {"/logs/machine1/workerlog.2"}},
                {3, 1010, 3010, 8, true, 5, 4, "restart_after_gap", {"a", "b\"c"}}};
  f.job_types = {{"backward_w(chunk1)", "backward", 4, 4000}, {"zzz", "other", 1, -3}};
  f.inputs = {{"/logs/machine1/workerlog.2", 1u << 31, 12, 5, 1, 2, 17, "read failed"},
              {"/logs/machine1/workerlog.3", 18'446'744'073'709'551'615u, 1, 1, 1, 1, 1, "x"}};
  f.diagnostics = {{"/logs/machine1/workerlog.2", 3, "malformed job line"}};
  f.left_out = {{5, 1, "machine1", 4, "/logs/machine1/workerlog.4", "empty_input"},
                {6, 2, "machine2", 1, "/logs/machine2/workerlog.1", "unreadable_input"}};
  f.schedule = ScheduleFigures{"ZBH1",
                               true,
                               4,
                               8,
                               2,
                               3,
                               2,
                               11,
                               22,
                               33,
                               0.125,
                               0.0625,
                               -0.5,
                               "zero-bubble",
                               "PaddlePaddle static ZBH1"};
  f.stages = StagesFigures{
      "tp",
      {{1,
        {3, 4},
        StageLoadFigures{555, {{"weight", 2, 20, 10, 9, 11, 12}, {"other", 1, 5, 5, 5, 5, 5}}}}}};
  f.bubbles =
      BubblesFigures{{1, 2, 3, 4, -5},
                     7,
                     {{3, {4, 5, 6, 10, 11}}},
                     {{7, {{4, {7, 8, 9, 12, 13}}}}},
                     {{4, 8, 1234, 56, "drain", 14, 15, BubbleJobFigures{"forward1", 3, 1000, 1234},
                       BubbleJobFigures{"?", -1, 1290, 1300}}}};
  f.bottleneck = BottleneckFigures{2, 4444, 3333, 1.25};
  f.critical_path =
      CriticalPathFigures{{{7, 1000, 12, 5, 6, {{1, 400, 0.4}, {2, 589, 0.589}}}},
                          LongestPathFigures{8, {{4, 1, "backward", 2, 100, 200, 7, true}}}};
  f.layout = LayoutFigures{4,
                           8,
                           2,
                           "pp,dp,tp",
                           "detected",
                           "job order and dependencies",
                           "device 3 does not follow device 2"};
  f.replicas = {{3, {4, 5}, 6, 700, 4200, 0.375, 2, 1.125, true}};
  f.clock = ClockFigures{"estimated",
                         true,
                         40,
                         3,
                         1,
                         {{1, "machine1", -2500, 2400, {{10, 2400}, {700, -147600600}}}},
                         {{1, 2, 20, 2, 1, -100, 300, 2, 1}},
                         100000,
                         3,
                         1,
                         "within noise"};
  f.warnings = std::vector<WarningFigures>{{"overlap", "jobs overlap on device 4", 4, 1, 2}};
  f.no_jobs = "none: kernel-level trace";
  KernelViewFigures k;
  k.step_spans = true;
  k.gpu_activities = 18'446'744'073'709'551'615u;
  k.without_launch = 3;
  k.comm_kernels = 40;
  k.comm_kernels_without_peers = 2;
  k.split = {1000, 600, 150, 200, 50};
  k.bubble_ratio = 0.4;
  k.idle_share = 0.05;
  k.wait_share = 0.2 + 0.1;
  k.transfer_share = 0.15;
  k.steps = {{550, true, 1'683'564'901'554'112'000, 1'683'564'901'754'112'001}};
  k.ranks = {{2,
              7,
              "communication",
              3,
              "/traces/rank\"7\".json",
              {999, 1, 2, 3, 993},
              4,
              {{550, true, 10, 1009, {999, 1, 2, 3, 993}, 5}}}};
  k.clock = KernelClockFigures{true, 6'000, {{1, -1'500'250, 48}}};
  k.layout = KernelLayoutFigures{"process_group", "PIPELINE_MODEL_PARALLEL_GROUP", 4, 2};
  f.kernel_view = k;
  // `off` stands alone in a summary (events off), so it is left out here and
  // round-tripped by its own test.
  EventsFigures ev;
  ev.patterns = 77;
  ev.total = 12;
  ev.approximate = 3;
  ev.unplaced = 1;
  ev.categories = {{"nccl", 5}, {"checkpoint", 7}};
  ev.kinds = {{"nccl_warn", "nccl", "warning", 5}};
  const EventFigures event{3,
                           "nccl_warn",
                           "nccl",
                           "warning",
                           1'697'793'307'265'326'000,
                           -2'000'000,
                           true,
                           "/logs/workerlog.\"3\"",
                           1234,
                           {{"message", "Call to ibv_reg_mr failed, \"x\""}}};
  ev.steps = {{412, {event}, {event, event}, 9}};
  ev.after_last = {event};
  ev.outliers = {
      {412, 3'104'000'000, 0.61, true, true, 2, "step 412 +3.104 s (bubble 61.0%): ..."}};
  ev.median_window_ns = 1'200'000'000;
  ev.median_bubble_ratio = 0.25;
  f.events = ev;
  f.traces = {
      {"trace.json", "size_limit", "0:9-11,1:41-43", "0:10", "1:42", 1'592'117'635, 268'435'456},
      {"trace.pftrace", "steps_option", "12", "3:4", "5", 7, 8}};
  // Registered figures: an integer and a ratio, unregistered here (read as
  // the JSON's number says).
  f.figures = {{"max_jobs", std::int64_t{13}}, {"some_share", 0.1 + 0.25}};
  return f;
}

// --- round trip ----------------------------------------------------------------

SummaryFigures round_trip(const SummaryFigures& f) {
  TempDir dir;
  const std::string path = dir / "summary.json";
  write_summary_json(f, path);
  return read_summary_figures(path);
}

// Section by section, so a failure names the section; the JSON of both sides
// shows what differs.
void expect_same(const SummaryFigures& got, const SummaryFigures& want) {
  EXPECT_EQ(got.jobs, want.jobs);
  EXPECT_EQ(got.first_step, want.first_step);
  EXPECT_EQ(got.bubble_ratio, want.bubble_ratio);
  EXPECT_EQ(got.total_window_ns, want.total_window_ns);
  EXPECT_EQ(got.time_resolution_ns, want.time_resolution_ns);
  EXPECT_EQ(got.comm_ns, want.comm_ns);
  EXPECT_TRUE(got.devices == want.devices);
  EXPECT_TRUE(got.steps == want.steps);
  EXPECT_EQ(got.incomplete_steps, want.incomplete_steps);
  EXPECT_TRUE(got.segments == want.segments);
  EXPECT_TRUE(got.job_types == want.job_types);
  EXPECT_TRUE(got.inputs == want.inputs);
  EXPECT_TRUE(got.diagnostics == want.diagnostics);
  EXPECT_TRUE(got.left_out == want.left_out);
  EXPECT_TRUE(got.layout == want.layout);
  EXPECT_TRUE(got.schedule == want.schedule);
  EXPECT_TRUE(got.stages == want.stages);
  EXPECT_TRUE(got.replicas == want.replicas);
  EXPECT_TRUE(got.bubbles == want.bubbles);
  EXPECT_TRUE(got.bottleneck == want.bottleneck);
  EXPECT_TRUE(got.critical_path == want.critical_path);
  EXPECT_TRUE(got.clock == want.clock);
  EXPECT_TRUE(got.warnings == want.warnings);
  EXPECT_TRUE(got.events == want.events);
  EXPECT_TRUE(got.traces == want.traces);
  EXPECT_TRUE(got.figures == want.figures);
  if (!(got == want)) {
    TempDir dir;
    write_summary_json(got, dir / "got.json");
    write_summary_json(want, dir / "want.json");
    ADD_FAILURE() << "read back:\n"
                  << read_file(dir / "got.json") << "\nwritten:\n"
                  << read_file(dir / "want.json");
  }
}

TEST(SummaryRoundTrip, HandBuiltFiguresSetEveryField) { expect_all_set(every_field()); }

// The field lists (summary_fields.h), walked over figures with every member
// set: no object lists a key twice (the JSON would hold it twice, and a
// reader would take one of them).
class KeyChecker {
 public:
  explicit KeyChecker(std::string where) : where_(std::move(where)) {}

  template <typename T>
  void operator()(summary_fields::Key key, const T& member) {
    add(key.name);
    descend(key.name, member);
  }
  template <typename T>
  void inline_fields(const T& member) {
    summary_fields::fields(*this, member);
  }
  template <typename T>
  void inline_optional(const std::optional<T>& member, std::string_view) {
    EXPECT_TRUE(member.has_value()) << where_;
    if (member) summary_fields::fields(*this, *member);
  }
  template <typename T>
  void keyed(summary_fields::Key key, const std::vector<T>& list, std::string T::*) {
    add(key.name);
    for (const T& item : list) {
      KeyChecker inner(where_ + "." + std::string(key.name));
      summary_fields::fields(inner, item);
    }
  }
  void pair(summary_fields::Key key, int, int) { add(key.name); }
  void named_values(summary_fields::Key key, const std::vector<NamedFigure>&) { add(key.name); }
  template <typename T, typename Make>
  void derived(summary_fields::Key key, const T&, Make&&) {
    add(key.name);
  }
  template <typename T>
  void step_list(summary_fields::Key key, const std::vector<T>& list, StepList) {
    (*this)(key, list);
  }

  std::size_t keys() const { return seen_.size(); }

 private:
  void add(std::string_view name) {
    EXPECT_TRUE(seen_.insert(std::string(name)).second)
        << where_ << " lists \"" << name << "\" twice";
  }
  template <typename T>
  void descend(std::string_view name, const T& member) {
    if constexpr (summary_fields::kIsOptional<T>) {
      if (member) descend(name, *member);
    } else if constexpr (summary_fields::kIsVector<T>) {
      for (const auto& e : member) descend(name, e);
    } else if constexpr (!summary_fields::kIsScalar<T>) {
      KeyChecker inner(where_ + "." + std::string(name));
      summary_fields::fields(inner, member);
    }
  }

  std::string where_;
  std::set<std::string> seen_;
};

TEST(SummaryRoundTrip, NoObjectListsAKeyTwice) {
  const SummaryFigures figures = every_field();
  KeyChecker checker("the summary");
  summary_fields::fields(checker, figures);
  // jobs ... figures: the 28 keys of the top level besides "schema" and "tool".
  EXPECT_EQ(checker.keys(), 28u);
}

TEST(SummaryRoundTrip, EveryFieldComesBack) {
  const SummaryFigures f = every_field();
  expect_same(round_trip(f), f);
}

TEST(SummaryRoundTrip, AnIncompleteStepComesBackIncomplete) {
  SummaryFigures f = every_field();
  f.steps[1].complete = false;
  const SummaryFigures got = round_trip(f);
  ASSERT_EQ(got.steps.size(), 2u);
  EXPECT_TRUE(got.steps[0].complete);
  EXPECT_FALSE(got.steps[1].complete);
}

TEST(SummaryRoundTrip, UnsetAndNullFieldsComeBackUnset) {
  // No pipeline sections at all (write_summary_json without the analysis);
  // no comm time (a summary written before the field existed).
  SummaryFigures f = every_field();
  f.comm_ns.reset();
  for (DeviceFigures& d : f.devices) d.comm_ns.reset();
  for (StepFigures& step : f.steps) {
    for (StepDeviceFigures& d : step.devices) d.comm_ns.reset();
  }
  f.job_types[0].total_ns.reset();
  f.inputs[0].error.clear();
  f.left_out.clear();        // written only when not empty
  f.time_resolution_ns = 0;  // written only when not 0
  f.schedule.reset();
  f.stages.reset();
  f.bubbles.reset();
  f.bottleneck.reset();
  f.critical_path.reset();
  f.clock.reset();
  f.warnings.reset();
  expect_same(round_trip(f), f);

  // Every nullable field null, every list empty.
  SummaryFigures g = every_field();
  g.schedule->ideal_bubble_ratio.reset();
  g.schedule->excess_bubble_ratio.reset();
  g.stages->list[0].load.reset();
  g.bubbles->longest[0].before.reset();
  g.bubbles->longest[0].inherent_ns.reset();  // a schedule without a job list: null
  g.bubbles->longest[0].excess_ns.reset();
  g.bubbles->total.inherent_ns.reset();
  g.bubbles->total.excess_ns.reset();
  g.bubbles->devices[0].split.inherent_ns.reset();
  g.bubbles->devices[0].split.excess_ns.reset();
  g.bubbles->steps[0].devices[0].split.inherent_ns.reset();
  g.bubbles->steps[0].devices[0].split.excess_ns.reset();
  g.bubbles->longest[0].after.reset();
  g.critical_path->longest_step.reset();
  g.clock->pairs[0].lower_ns.reset();
  g.clock->pairs[0].upper_ns.reset();
  expect_same(round_trip(g), g);

  SummaryFigures empty;
  empty.schedule = ScheduleFigures{};
  empty.stages = StagesFigures{};
  empty.bubbles = BubblesFigures{};
  empty.bottleneck = BottleneckFigures{};
  empty.critical_path = CriticalPathFigures{};
  empty.clock = ClockFigures{};
  empty.warnings.emplace();
  expect_same(round_trip(empty), empty);
  expect_same(round_trip(SummaryFigures{}), SummaryFigures{});
}

TEST(SummaryRoundTrip, WritingTheReadFiguresGivesTheSameBytes) {
  TempDir dir;
  write_summary_json(every_field(), dir / "a.json");
  write_summary_json(read_summary_figures(dir / "a.json"), dir / "b.json");
  EXPECT_EQ(read_file(dir / "a.json"), read_file(dir / "b.json"));
}

// A summary written before the schedule table has no "family" and no
// "frameworks": the family comes from the name, so that check still compares
// it by family (the former "ZB-H1" is the zero-bubble family).
TEST(SummaryRoundTrip, OlderSummaryWithoutFamilyGetsItFromTheName) {
  TempDir dir;
  for (const auto& [name, family] :
       {std::pair{"ZB-H1", "zero-bubble"}, std::pair{"VPP", "interleaved"},
        std::pair{"FThenB", "fthenb"}, std::pair{"1F1B", "1f1b"}, std::pair{"unknown", ""}}) {
    SummaryFigures f = every_field();
    f.schedule->name = name;
    write_summary_json(f, dir / "new.json");
    std::string text = read_file(dir / "new.json");
    for (const std::string_view key : {"\"family\"", "\"frameworks\""}) {
      const std::size_t at = text.find(key);
      ASSERT_NE(at, std::string::npos);
      const std::size_t comma = text.find(',', at);
      const std::size_t brace = text.find('}', at);
      // Drop `, "key": "value"` (the field is never the first of its object).
      const std::size_t before = text.rfind(',', at);
      text.erase(before, std::min(comma, brace) - before);
    }
    ASSERT_EQ(text.find("\"family\""), std::string::npos);
    {
      std::ofstream out(dir / "old.json", std::ios::binary);
      out << text;
    }
    const SummaryFigures read = read_summary_figures(dir / "old.json");
    ASSERT_TRUE(read.schedule.has_value());
    EXPECT_EQ(read.schedule->name, name);
    EXPECT_EQ(read.schedule->family, family) << name;
    EXPECT_EQ(read.schedule->frameworks, "");
  }
}

// --- from an analysed run ----------------------------------------------------------

// Two machines with skewed clocks, tensor-parallel pairs (a stage_map
// warning), send/recv jobs and a slow stage: every section has entries.
sim::SimConfig rich_config() {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 6);
  config.steps = 3;
  config.machines = 2;
  config.devices_per_stage = 2;
  config.comm_jobs = true;
  config.stage_slowdown = {1, 1, 1.4, 1};
  config.machine_skew_ns = {0, 2'000'000};
  return config;
}

TEST(SummaryRoundTrip, FiguresOfASimulatedRunComeBack) {
  pipescope::Run run = testing::run_from_simulation(rich_config());
  run.first_step = 40;
  run.inputs = {{"machine0/workerlog.0", 1000, 20, 18, 1, 1, "", 7},
                {"machine1/workerlog.1", 10, 1, 0, 0, 0, "read failed: Input/output error", 0}};
  run.diagnostics = {{"machine0/workerlog.0", 5, "malformed job line"}};
  PipelineOptions options;
  options.top_bubbles = 4;
  options.stages = parse_stage_spec(
      "device", "--stages");  // its tensor-parallel pairs as stages: a stage_map warning
  const AnalyzedRun analyzed = analyze_run(run, options);
  const SummaryFigures f = summary_figures(run, analyzed.metrics, analyzed.pipeline);

  // The run fills every section, so the comparison below means something.
  ASSERT_TRUE(f.schedule && f.stages && f.bubbles && f.bottleneck && f.critical_path && f.clock &&
              f.warnings);
  EXPECT_EQ(f.devices.size(), 8u);
  EXPECT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(f.job_types.size(), 7u);  // forward, backward, optimizer, send/recv x2
  EXPECT_FALSE(f.stages->list.empty());
  EXPECT_FALSE(f.bubbles->longest.empty());
  ASSERT_TRUE(f.critical_path->longest_step.has_value());
  EXPECT_FALSE(f.critical_path->longest_step->jobs.empty());
  EXPECT_EQ(f.clock->machines.size(), 2u);
  EXPECT_FALSE(f.clock->pairs.empty());
  EXPECT_FALSE(f.warnings->empty());

  expect_same(round_trip(f), f);
}

// What `check` and `diff` see: the figures of a log folder, and of the
// summary.json `analyze` wrote from it, are the same figures (the summary has
// more pipeline sections; the logs' are not computed for a comparison).
TEST(SummaryRoundTrip, SummaryReadsLikeTheLogsItWasWrittenFrom) {
  TempDir dir;
  sim::LogWriterOptions logs;
  logs.dir = dir.path() / "logs";
  logs.first_step = 12;
  logs.noise_per_job = 2;
  sim::SimConfig config = rich_config();
  config.devices_per_stage = 1;  // one device per stage: the schedule is recognised
  sim::write_simulated_logs(config, logs);
  const testing::CommandResult r =
      testing::run_cli("analyze " + testing::shell_quote(logs.dir.string()) + " -o " +
                       testing::shell_quote(dir / "out") + " --no-trace");
  ASSERT_EQ(r.status, 0) << r.output;

  LoadOptions with_events;  // as the CLI reads them
  with_events.events = make_event_setup(true, {});
  const RunFigures from_logs = load_run_figures(logs.dir.string(), with_events);
  const RunFigures from_summary = load_run_figures(dir / "out/summary.json");
  EXPECT_EQ(from_logs.origin, "logs");
  EXPECT_EQ(from_summary.origin, "summary");
  ASSERT_TRUE(from_logs.schedule.has_value());
  EXPECT_EQ(from_logs.schedule->name, "1F1B");

  // Every section, the pipeline ones included (diff compares stages).
  const SummaryFigures want = from_logs;
  const SummaryFigures got = from_summary;
  expect_same(got, want);
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

TEST(SummaryRoundTrip, EventsOffComesBackAlone) {
  SummaryFigures f = every_field();
  f.events = EventsFigures{};
  f.events->off = "log events are off (--no-events)";
  expect_same(round_trip(f), f);
}

}  // namespace
}  // namespace pipescope
