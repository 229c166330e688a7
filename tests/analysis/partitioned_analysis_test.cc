// The metric contract and the bubbles computed by parts, each holding only the
// jobs of its step range plus the jobs that overlap its windows and their
// neighbours (analysis/step_partition.h), must give every figure of
// compute_metrics and summarize_bubbles on the whole run: on every golden
// folder, on simulated runs of each schedule, and on hand-made runs where a
// device starts a step while another still runs the previous one.
#include <gtest/gtest.h>

#include <string>

#include "analysis/bottleneck.h"
#include "analysis/bubble_split.h"
#include "analysis/bubbles.h"
#include "analysis/clock_skew.h"
#include "analysis/critical_path.h"
#include "analysis/dependencies.h"
#include "analysis/job_role.h"
#include "analysis/layout.h"
#include "analysis/metric_parts.h"
#include "analysis/replicas.h"
#include "analysis/schedule_detect.h"
#include "analysis/schedule_table.h"
#include "analysis/step_partition.h"
#include "ingest/discovery.h"
#include "load/load_run.h"
#include "support/hand_run.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

/// What the partitioned analysis does, in one process: the scanning side
/// numbers steps and finds each device's edges; every part then computes its
/// windows' figures from its own jobs only.
struct Partitioned {
  Metrics metrics;
  BubbleSummary bubbles;
  /// The dependencies each part found for the consumers of its steps, as
  /// whole-run job references, in consumer order.
  std::vector<Dependency> dependencies;
  /// The clock estimate from the parts' combined pair evidence.
  ClockReport clock;
  /// The schedule from the parts' votes and sums.
  ScheduleReport schedule;
  /// The critical paths of each part's steps, appended in step order.
  CriticalPathSummary paths;
  /// The stage statistics selected across the parts' durations.
  BottleneckReport bottleneck;
  /// Inherent and excess idle, from the parts' evidence and rows.
  BubbleSplit split;
  StepPartition plan;
  std::uint64_t halo_jobs = 0;  ///< jobs a part holds for their overlap only
};

Partitioned partitioned_analysis(const Run& run, std::size_t parts, std::size_t top_n) {
  Partitioned out;
  Metrics& m = out.metrics;
  const TypeKinds kinds(run.types);
  const StepCounts counts = number_steps(run, kinds, m);
  StepEdges edges(counts.steps);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    edges.combine(device_step_edges(run.devices[d], m.job_step[d], counts.steps));
  }
  place_windows(edges, run.devices.size(), m);

  std::vector<std::uint64_t> jobs_per_step(counts.steps, 0);
  for (const auto& steps : m.job_step) {
    for (const std::int32_t k : steps) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  out.plan = partition_steps(jobs_per_step, m.steps, parts);
  std::vector<PartRun> held;
  std::uint64_t owned = 0, total = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    held.push_back(cut_part(run, kinds, m.job_step, out.plan, p));
    owned += held.back().owned_jobs;
    for (const Device& device : held.back().run.devices) total += device.jobs.size();
  }
  EXPECT_EQ(owned, run.job_count());  // every job owned exactly once
  out.halo_jobs = total - owned;

  std::vector<std::int64_t> cut_ns;
  for (const Device& device : run.devices) cut_ns.push_back(device.cut_ns);
  mark_complete_steps(
      counts, cut_ns,
      [&](std::size_t d, std::size_t step) {
        // Only the owner of a step can count its jobs.
        const PartRun& part = held[out.plan.owner(step)];
        return step_kind_counts(part.run.devices[d], part.job_step[d], step, kinds);
      },
      m);
  for (std::size_t p = 0; p < parts; ++p) {
    add_window_times(held[p].run.devices, kinds, out.plan.windows(m.steps, p));
  }
  add_totals(m);

  // The stage map and schedule are whole-run decisions (taken here from the
  // whole run); the dependencies they imply are found by each part.
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const StageMap stages = detect_layout(run, m.job_step, roles).stages;
  const ScheduleReport schedule = detect_run_schedule(run, m, stages, roles);
  const StagePlacement placement = schedule.detection.id && schedule.detection.chunks == 2
                                       ? schedule_entry(*schedule.detection.id).placement
                                       : StagePlacement::looped;
  PairClocks pairs;
  ScheduleVotes votes;
  OpSums sums;
  constexpr std::int64_t kNoise = 100'000;
  const std::optional<std::size_t> keep = longest_critical_step(m.steps, edges.has_job);
  std::vector<StageDurations> durations;
  std::vector<SplitEvidence> evidence;
  OpCostSums run_sums;
  for (std::size_t p = 0; p < parts; ++p) {
    const PartRun& part = held[p];
    const std::size_t first = out.plan.bounds[p], last = out.plan.bounds[p + 1];
    {
      Metrics part_metrics;  // every window, the part's jobs' steps
      part_metrics.steps = m.steps;
      part_metrics.job_step = part.job_step;
      const Dependencies part_deps =
          find_dependencies(part.run, part.job_step, stages, roles, placement);
      append_critical_paths(
          out.paths, summarize_critical_path_range(part.run, part_metrics, stages, part_deps, roles,
                                                   first, last, keep, &part.job_index));
    }
    votes.add(vote_schedules(part.run, part.job_step, m.steps, first, last, stages, roles));
    durations.push_back(stage_durations(part.run, part.job_step, first, last, stages, roles));
    {
      Metrics part_metrics;  // every window, the part's jobs' steps
      part_metrics.steps = m.steps;
      part_metrics.job_step = part.job_step;
      evidence.push_back(split_evidence(part.run, part_metrics, stages, roles, first, last));
      run_sums.add(evidence.back().run_sums);
    }
    sums.add(op_sums(part.run, roles, &part.job_step, first, last));
    std::vector<Dependency> local;  // the part's own consumers, in its indices
    for (const Dependency& dep :
         find_dependencies(part.run, part.job_step, stages, roles, placement)) {
      const auto step =
          static_cast<std::size_t>(part.job_step[dep.consumer.device][dep.consumer.job]);
      if (out.plan.owner(step) != p) continue;  // a job it holds for its overlap only
      local.push_back(dep);
      const auto global = [&](JobRef ref) {
        return JobRef{ref.device, static_cast<std::uint32_t>(part.job_index[ref.device][ref.job])};
      };
      out.dependencies.push_back({global(dep.producer), global(dep.consumer)});
    }
    add_pair_clocks(pairs, pair_clocks(part.run, Dependencies(local), kNoise));
  }
  std::sort(out.dependencies.begin(), out.dependencies.end(),
            [](const Dependency& a, const Dependency& b) {
              return std::pair(a.consumer.device, a.consumer.job) <
                     std::pair(b.consumer.device, b.consumer.job);
            });
  out.clock = estimate_from_pair_clocks(pairs, machine_clock_names(run), kNoise);
  out.schedule = finish_schedule(votes, sums, stages.stage_count(), m.bubble_ratio);
  out.bottleneck = bottleneck_from_parts(durations, stages, m.steps.size());
  out.schedule.measured_bubble_ratio = m.bubble_ratio;
  std::vector<SplitRows> rows;
  for (const SplitEvidence& part : evidence) {
    rows.push_back(split_rows(part, run_sums, m.steps, stages, out.schedule));
  }
  out.split = assemble_split(evidence, std::move(rows), stages, run.devices.size());
  if (!out.dependencies.empty()) {
    const Dependencies whole = find_dependencies(run, m.job_step, stages, roles, placement);
    EXPECT_EQ(out.dependencies.size(), whole.size());
  }
  for (std::size_t p = 0; p < parts; ++p) {
    append_bubble_summary(
        out.bubbles,
        summarize_bubble_windows(held[p].run.devices, &held[p].job_index, run.types,
                                 out.plan.windows(m.steps, p), out.plan.bounds[p], top_n),
        top_n);
  }
  return out;
}

void expect_same(const Metrics& a, const Metrics& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const StepWindow &x = a.steps[k], &y = b.steps[k];
    EXPECT_EQ(x.step, y.step) << k;
    EXPECT_EQ(x.segment, y.segment) << k;
    EXPECT_EQ(x.complete, y.complete) << k;
    EXPECT_EQ(x.start_ns, y.start_ns) << k;
    EXPECT_EQ(x.end_ns, y.end_ns) << k;
    EXPECT_EQ(x.bubble_ratio, y.bubble_ratio) << k;  // bit-identical, not near
    ASSERT_EQ(x.devices.size(), y.devices.size());
    for (std::size_t d = 0; d < x.devices.size(); ++d) {
      EXPECT_EQ(x.devices[d].busy_ns, y.devices[d].busy_ns) << k << "/" << d;
      EXPECT_EQ(x.devices[d].idle_ns, y.devices[d].idle_ns) << k << "/" << d;
      EXPECT_EQ(x.devices[d].comm_ns, y.devices[d].comm_ns) << k << "/" << d;
    }
  }
  ASSERT_EQ(a.segments.size(), b.segments.size());
  for (std::size_t s = 0; s < a.segments.size(); ++s) {
    EXPECT_EQ(a.segments[s].index, b.segments[s].index);
    EXPECT_EQ(a.segments[s].first_step, b.segments[s].first_step);
    EXPECT_EQ(a.segments[s].first, b.segments[s].first);
    EXPECT_EQ(a.segments[s].count, b.segments[s].count);
    EXPECT_EQ(a.segments[s].complete, b.segments[s].complete);
    EXPECT_EQ(a.segments[s].start_ns, b.segments[s].start_ns);
    EXPECT_EQ(a.segments[s].end_ns, b.segments[s].end_ns);
    EXPECT_EQ(a.segments[s].devices, b.segments[s].devices);
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].busy_ns, b.devices[d].busy_ns) << d;
    EXPECT_EQ(a.devices[d].idle_ns, b.devices[d].idle_ns) << d;
    EXPECT_EQ(a.devices[d].comm_ns, b.devices[d].comm_ns) << d;
    EXPECT_EQ(a.devices[d].steps, b.devices[d].steps) << d;
    EXPECT_EQ(a.devices[d].utilization, b.devices[d].utilization) << d;
  }
  EXPECT_EQ(a.bubble_ratio, b.bubble_ratio);
  EXPECT_EQ(a.total_window_ns, b.total_window_ns);
  EXPECT_EQ(a.comm_ns, b.comm_ns);
  EXPECT_EQ(a.incomplete_steps, b.incomplete_steps);
  EXPECT_EQ(a.job_step, b.job_step);
}

void expect_same(const BubbleTotals& a, const BubbleTotals& b, const std::string& what) {
  EXPECT_EQ(a.ns, b.ns) << what;
  EXPECT_EQ(a.count, b.count) << what;
}

void expect_same(const BubbleTime& a, const BubbleTime& b, const std::string& what) {
  EXPECT_EQ(a.ns, b.ns) << what;
}

void expect_same(const BubbleSummary& a, const BubbleSummary& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.per_step.size(), b.per_step.size());
  for (std::size_t k = 0; k < a.per_step.size(); ++k) {
    ASSERT_EQ(a.per_step[k].size(), b.per_step[k].size());
    for (std::size_t d = 0; d < a.per_step[k].size(); ++d) {
      expect_same(a.per_step[k][d], b.per_step[k][d], std::to_string(k) + "/" + std::to_string(d));
    }
  }
  ASSERT_EQ(a.per_device.size(), b.per_device.size());
  for (std::size_t d = 0; d < a.per_device.size(); ++d) {
    expect_same(a.per_device[d], b.per_device[d], "device " + std::to_string(d));
  }
  expect_same(a.total, b.total, "total");
  ASSERT_EQ(a.longest.size(), b.longest.size());
  for (std::size_t i = 0; i < a.longest.size(); ++i) {
    const Bubble &x = a.longest[i], &y = b.longest[i];
    EXPECT_EQ(x.device, y.device) << i;
    EXPECT_EQ(x.step, y.step) << i;
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.end_ns, y.end_ns) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.job_before, y.job_before) << i;
    EXPECT_EQ(x.job_after, y.job_after) << i;
  }
}

void expect_same(const ClockReport& a, const ClockReport& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.dependencies, b.dependencies);
  EXPECT_EQ(a.violations_before, b.violations_before);
  EXPECT_EQ(a.beyond_noise_before, b.beyond_noise_before);
  ASSERT_EQ(a.machines.size(), b.machines.size());
  for (std::size_t i = 0; i < a.machines.size(); ++i) {
    EXPECT_EQ(a.machines[i].name, b.machines[i].name);
    EXPECT_EQ(a.machines[i].estimate_ns, b.machines[i].estimate_ns) << a.machines[i].name;
  }
  ASSERT_EQ(a.pairs.size(), b.pairs.size());
  for (std::size_t i = 0; i < a.pairs.size(); ++i) {
    EXPECT_EQ(a.pairs[i].machine_a, b.pairs[i].machine_a);
    EXPECT_EQ(a.pairs[i].machine_b, b.pairs[i].machine_b);
    EXPECT_EQ(a.pairs[i].dependencies, b.pairs[i].dependencies);
    EXPECT_EQ(a.pairs[i].violations_before, b.pairs[i].violations_before);
    EXPECT_EQ(a.pairs[i].beyond_noise_before, b.pairs[i].beyond_noise_before);
    EXPECT_EQ(a.pairs[i].lower_ns, b.pairs[i].lower_ns);
    EXPECT_EQ(a.pairs[i].upper_ns, b.pairs[i].upper_ns);
  }
}

void expect_same(const CriticalPathSummary& a, const CriticalPathSummary& b,
                 const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.longest, b.longest);
  EXPECT_EQ(a.via_dependency, b.via_dependency);
  ASSERT_EQ(a.paths.size(), b.paths.size());
  for (std::size_t i = 0; i < a.paths.size(); ++i) {
    const CriticalPath &x = a.paths[i], &y = b.paths[i];
    EXPECT_EQ(x.step, y.step) << i;
    EXPECT_EQ(x.job_count, y.job_count) << i;
    EXPECT_EQ(x.lead_in_ns, y.lead_in_ns) << i;
    EXPECT_EQ(x.wait_ns, y.wait_ns) << i;
    EXPECT_EQ(x.stage_ns, y.stage_ns) << i;
    ASSERT_EQ(x.jobs.size(), y.jobs.size()) << i;
    for (std::size_t j = 0; j < x.jobs.size(); ++j) {
      EXPECT_EQ(x.jobs[j].job, y.jobs[j].job) << i << "/" << j;
      EXPECT_EQ(x.jobs[j].wait_ns, y.jobs[j].wait_ns) << i << "/" << j;
      EXPECT_EQ(x.jobs[j].stage, y.jobs[j].stage) << i << "/" << j;
      EXPECT_EQ(x.jobs[j].via_dependency, y.jobs[j].via_dependency) << i << "/" << j;
    }
  }
}

/// Every split of 1 to 4 parts, and more parts than steps (empty parts).
std::uint64_t check_every_split(const Run& run, const std::string& what) {
  const Metrics whole = compute_metrics(run);
  std::uint64_t halo = 0;
  for (std::size_t parts : {1u, 2u, 3u, 4u, 7u}) {
    if (parts == 7 && whole.steps.size() >= 7) parts = whole.steps.size() + 2;
    // Every bubble (the longest list long enough for all), and the default ten.
    for (const std::size_t top_n : {std::size_t{10}, std::size_t{1} << 20}) {
      const std::string label =
          what + ", " + std::to_string(parts) + " parts, top " + std::to_string(top_n);
      const Partitioned p = partitioned_analysis(run, parts, top_n);
      expect_same(p.metrics, whole, label);
      expect_same(p.bubbles, summarize_bubbles(run, whole, top_n), label);
      // The layout from the run's head only is the whole run's.
      const std::vector<JobRole> roles = classify_job_roles(run.types);
      const Layout layout = detect_layout(run, whole.job_step, roles);
      const PartRun head = head_part(run, whole.job_step, kLayoutSteps);
      const Layout from_head = detect_layout(head.run, head.job_step, roles);
      EXPECT_EQ(from_head.method, layout.method) << label;
      EXPECT_EQ(describe_layout_shape(from_head.shape), describe_layout_shape(layout.shape))
          << label;
      EXPECT_EQ(from_head.shape.order, layout.shape.order) << label;
      EXPECT_EQ(from_head.stages.stage_of, layout.stages.stage_of) << label;
      EXPECT_EQ(from_head.replicas, layout.replicas) << label;
      EXPECT_EQ(from_head.reason, layout.reason) << label;
      // Dependencies and the clock evidence they give.
      const StageMap& stages = layout.stages;
      const ScheduleReport schedule = detect_run_schedule(run, whole, stages, roles);
      const StagePlacement placement = schedule.detection.id && schedule.detection.chunks == 2
                                           ? schedule_entry(*schedule.detection.id).placement
                                           : StagePlacement::looped;
      const Dependencies deps = find_dependencies(run, whole.job_step, stages, roles, placement);
      const std::vector<Dependency> list = deps.to_vector();
      EXPECT_EQ(p.dependencies.size(), list.size()) << label;
      for (std::size_t i = 0; i < std::min(list.size(), p.dependencies.size()); ++i) {
        EXPECT_EQ(p.dependencies[i].producer, list[i].producer) << label << " " << i;
        EXPECT_EQ(p.dependencies[i].consumer, list[i].consumer) << label << " " << i;
      }
      expect_same(p.clock, estimate_clock_offsets(run, deps, 100'000), label);
      expect_same(p.paths, summarize_critical_paths(run, whole, stages, deps, roles), label);
      const BubbleSplit split = split_bubbles(run, whole, stages, roles, schedule);
      EXPECT_EQ(p.split.known, split.known) << label;
      EXPECT_EQ(p.split.inherent, split.inherent) << label;
      EXPECT_EQ(p.split.device_inherent, split.device_inherent) << label;
      EXPECT_EQ(p.split.inherent_ns, split.inherent_ns) << label;
      EXPECT_EQ(p.split.excess_ns, split.excess_ns) << label;
      EXPECT_EQ(p.split.receive_wait_ns, split.receive_wait_ns) << label;
      EXPECT_EQ(p.split.send_wait_ns, split.send_wait_ns) << label;
      const BottleneckReport bottleneck = find_bottleneck(run, whole, stages, roles);
      EXPECT_EQ(p.bottleneck.slowest_stage, bottleneck.slowest_stage) << label;
      EXPECT_EQ(p.bottleneck.imbalance, bottleneck.imbalance) << label;
      EXPECT_EQ(p.bottleneck.mean_compute_per_step_ns, bottleneck.mean_compute_per_step_ns)
          << label;
      EXPECT_EQ(p.bottleneck.stages.size(), bottleneck.stages.size()) << label;
      for (std::size_t s = 0; s < std::min(bottleneck.stages.size(), p.bottleneck.stages.size());
           ++s) {
        const StageStats &x = p.bottleneck.stages[s], &y = bottleneck.stages[s];
        EXPECT_EQ(x.compute_per_step_ns, y.compute_per_step_ns) << label << " stage " << s;
        for (std::size_t r = 0; r < kRoleCount; ++r) {
          const DurationStats &a = x.by_role[r], &b = y.by_role[r];
          const std::string at =
              label + " stage " + std::to_string(s) + " role " + std::to_string(r);
          EXPECT_EQ(a.count, b.count) << at;
          EXPECT_EQ(a.total_ns, b.total_ns) << at;
          EXPECT_EQ(a.mean_ns, b.mean_ns) << at;
          EXPECT_EQ(a.median_ns, b.median_ns) << at;
          EXPECT_EQ(a.p95_ns, b.p95_ns) << at;
          EXPECT_EQ(a.max_ns, b.max_ns) << at;
        }
      }
      EXPECT_TRUE(p.schedule.detection == schedule.detection) << label;
      EXPECT_EQ(p.schedule.steps_agreeing, schedule.steps_agreeing) << label;
      EXPECT_EQ(p.schedule.steps_examined, schedule.steps_examined) << label;
      EXPECT_EQ(p.schedule.means.forward_ns, schedule.means.forward_ns) << label;
      EXPECT_EQ(p.schedule.means.backward_ns, schedule.means.backward_ns) << label;
      EXPECT_EQ(p.schedule.means.weight_ns, schedule.means.weight_ns) << label;
      EXPECT_EQ(p.schedule.ideal_bubble_ratio, schedule.ideal_bubble_ratio) << label;
      EXPECT_EQ(p.schedule.excess, schedule.excess) << label;
      if (parts == 1) {
        EXPECT_EQ(p.halo_jobs, 0u) << what;
      }
      halo += p.halo_jobs;
    }
  }
  return halo;
}

TEST(PartitionedAnalysis, GoldenFoldersAsAnalyzeReadsThem) {
  for (const char* folder : {"single", "multi", "edge", "prologue", "relaunch"}) {
    LoadOptions options;
    options.inputs.allow_unreadable = true;
    const LoadedRun loaded =
        load_run(find_inputs({std::string(PIPESCOPE_TESTDATA) + "/" + folder}), options);
    ASSERT_GT(loaded.run.job_count(), 0u) << folder;
    check_every_split(loaded.run, folder);
  }
}

TEST(PartitionedAnalysis, SimulatedSchedules) {
  using sim::ScheduleKind;
  struct Case {
    ScheduleKind kind;
    int stages, micro_batches, chunks;
    bool comm, lr;
  };
  for (const Case& c : {Case{ScheduleKind::fthenb, 4, 8, 1, false, false},
                        Case{ScheduleKind::one_f_one_b, 4, 8, 1, true, true},
                        Case{ScheduleKind::interleaved, 4, 8, 2, true, false},
                        Case{ScheduleKind::eager_one_f_one_b, 3, 6, 1, false, true},
                        Case{ScheduleKind::zbh1, 4, 8, 1, true, false}}) {
    sim::SimConfig config = testing::sim_config(c.kind, c.stages, c.micro_batches, c.chunks);
    config.steps = 6;
    config.comm_jobs = c.comm;
    config.lr_jobs = c.lr;
    config.step_gap_ns = 0;  // steps meet: devices overlap at the edges
    const pipescope::Run run = testing::run_from_simulation(config);
    check_every_split(run, "simulated " + std::to_string(static_cast<int>(c.kind)));
  }
}

// Two machines whose clocks disagree by 3 ms, two data-parallel replicas:
// dependencies cross the machines, violated on one side, and the offset
// estimated from the parts' evidence is the whole run's.
TEST(PartitionedAnalysis, TwoMachinesWithSkew) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.steps = 5;
  config.machines = 2;
  config.devices_per_stage = 2;
  config.machine_skew_ns = {0, 3'000'000};
  const pipescope::Run run = testing::run_from_simulation(config);
  ASSERT_EQ(run.devices.back().machine, 1);
  check_every_split(run, "two machines, skew");
  // More steps than the layout reads (its head), with replicas to tell apart.
  config.steps = kLayoutSteps + 6;
  const pipescope::Run longer = testing::run_from_simulation(config);
  check_every_split(longer, "two machines, skew, 22 steps");
  // The evidence is there to combine: violations beyond noise on the pair.
  const Metrics m = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const StageMap stages = detect_layout(run, m.job_step, roles).stages;
  const ClockReport clock =
      estimate_clock_offsets(run, find_dependencies(run, m.job_step, stages, roles), 100'000);
  EXPECT_GT(clock.beyond_noise_before, 0u);
  EXPECT_NE(clock.machines.at(1).estimate_ns, 0);
  // The schedule is known, so the split compared above is a real one.
  const ScheduleReport schedule = detect_run_schedule(run, m, stages, roles);
  EXPECT_TRUE(split_bubbles(run, m, stages, roles, schedule).known);
}

// Device 1 starts each step while device 0 still runs the previous one, and
// one of its comm jobs spans two windows: the early jobs count in the earlier
// window, so a part that held only its own steps' jobs would get it wrong.
TEST(PartitionedAnalysis, JobsOverlappingAnotherPartsWindow) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 5; ++k) {
    const std::int64_t t = k * 100;
    testing::add_job(run, 0, "forward", 0, t, t + 40);
    testing::add_job(run, 0, "backward", 0, t + 40, t + 90);
    testing::add_job(run, 0, "optimizer", 0, t + 90, t + 120);  // into the next window
    testing::add_job(run, 1, "recv_forward", 0, t + 5, t + 30);
    testing::add_job(run, 1, "forward", 0, t + 30, t + 60);
    testing::add_job(run, 1, "send_backward", 0, t + 60, t + 160);  // a comm job over two windows
    testing::add_job(run, 1, "backward", 0, t + 65, t + 80);
    testing::add_job(run, 1, "optimizer", 0, t + 80, t + 95);
  }
  run.finalize();
  const std::uint64_t halo = check_every_split(run, "overlapping steps");
  EXPECT_GT(halo, 0u);  // the case exercises the overlap
}

// A device whose input was cut (a crash): the complete rule reads the cut and
// the job counts of the last step, which only its owner holds.
TEST(PartitionedAnalysis, CutInputAndLastStepJudgedByCounts) {
  pipescope::Run run;
  for (std::int64_t k = 0; k < 4; ++k) {
    const std::int64_t t = k * 100;
    for (std::size_t d = 0; d < 3; ++d) {
      const auto o = static_cast<std::int64_t>(d) * 5;
      testing::add_job(run, d, "forward", 0, t + o, t + o + 30);
      testing::add_job(run, d, "backward", 0, t + o + 30, t + o + 70);
      if (k < 3 || d != 2) testing::add_job(run, d, "optimizer", 0, t + o + 70, t + o + 80);
    }
  }
  run.finalize();
  check_every_split(run, "last step short of an optimizer");
  run.devices[1].cut_ns = 250;
  check_every_split(run, "cut input");
}

TEST(StepPartition, BalancedByJobsAndOwnersContiguous) {
  std::vector<StepWindow> windows(6);
  for (std::size_t k = 0; k < windows.size(); ++k) {
    windows[k].start_ns = static_cast<std::int64_t>(k) * 10;
    windows[k].end_ns = windows[k].start_ns + 8;
  }
  const std::vector<std::uint64_t> jobs = {10, 10, 10, 10, 10, 50};
  const StepPartition plan = partition_steps(jobs, windows, 3);
  // 100 jobs: a third is reached after step 3 (40), two thirds after step 5.
  EXPECT_EQ(plan.bounds, (std::vector<std::size_t>{0, 4, 6, 6}));
  EXPECT_EQ(plan.owner(0), 0u);
  EXPECT_EQ(plan.owner(3), 0u);
  EXPECT_EQ(plan.owner(4), 1u);
  EXPECT_EQ(plan.owner(5), 1u);
  EXPECT_EQ(plan.span_start[1], 40);
  EXPECT_EQ(plan.span_end[1], 58);
  // A job of step 4 that began in step 3's window goes to part 0 as well.
  std::vector<std::size_t> to;
  plan.for_each_recipient(35, 45, 4, [&](std::size_t p) { to.push_back(p); });
  EXPECT_EQ(to, (std::vector<std::size_t>{1, 0}));
  to.clear();
  plan.for_each_recipient(45, 45, 4, [&](std::size_t p) { to.push_back(p); });
  EXPECT_EQ(to, (std::vector<std::size_t>{1}));  // no length, in its owner's span
  to.clear();
  plan.for_each_recipient(35, 35, 4, [&](std::size_t p) { to.push_back(p); });
  EXPECT_EQ(to, (std::vector<std::size_t>{1, 0}));  // no length, in part 0's span
  EXPECT_THROW(partition_steps(jobs, windows, 0), std::invalid_argument);
}

// A replica's windows may begin a step before the whole run's (its devices
// finished the step before while another replica had not): a widened part
// holds the jobs of that earlier start too.
TEST(StepPartition, WidenedForAnotherSetOfWindows) {
  std::vector<StepWindow> windows(4), replica(4);
  for (std::size_t k = 0; k < 4; ++k) {
    windows[k].start_ns = static_cast<std::int64_t>(k) * 10;
    windows[k].end_ns = windows[k].start_ns + 10;
    replica[k].start_ns = windows[k].start_ns - (k == 2 ? 4 : 0);
    replica[k].end_ns = windows[k].end_ns - 2;
  }
  StepPartition plan = partition_steps(std::vector<std::uint64_t>{1, 1, 1, 1}, windows, 2);
  ASSERT_EQ(plan.bounds, (std::vector<std::size_t>{0, 2, 4}));
  std::vector<std::size_t> to;
  plan.for_each_recipient(16, 17, 1, [&](std::size_t p) { to.push_back(p); });
  EXPECT_EQ(to, (std::vector<std::size_t>{0}));  // before part 1's own windows
  plan.widen(replica);
  EXPECT_EQ(plan.span_start[1], 16);
  EXPECT_EQ(plan.span_end[1], 40);
  to.clear();
  plan.for_each_recipient(16, 17, 1, [&](std::size_t p) { to.push_back(p); });
  EXPECT_EQ(to, (std::vector<std::size_t>{0, 1}));  // in the replica's window of step 2
}

/// Each replica's figures by the run's own step ranges: the replica's
/// windows come from its devices' edges (as the scanning side gives them),
/// widen the ranges' spans, and each range computes the replica's window
/// times and durations from what it holds for the whole run.
ReplicaSummary replicas_by_parts(const pipescope::Run& run, std::size_t parts) {
  const TypeKinds kinds(run.types);
  Metrics m;
  const StepCounts counts = number_steps(run, kinds, m);
  StepEdges edges(counts.steps);
  for (std::size_t d = 0; d < run.devices.size(); ++d) {
    edges.combine(device_step_edges(run.devices[d], m.job_step[d], counts.steps));
  }
  place_windows(edges, run.devices.size(), m);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Layout layout = detect_layout(run, m.job_step, roles);

  struct Replica {
    int index = 0;
    std::vector<std::size_t> devices;
    StageMap stages;
    Metrics metrics;
    StepCounts counts;
    std::vector<std::size_t> to_global;  // replica step -> the run's step
  };
  std::vector<Replica> replicas;
  std::size_t with_devices = 0;
  for (const auto& devices : layout.replicas) with_devices += !devices.empty();
  if (with_devices < 2) return {};
  for (std::size_t r = 0; r < layout.replicas.size(); ++r) {
    if (layout.replicas[r].empty()) continue;
    Replica rep;
    rep.index = static_cast<int>(r);
    rep.devices = layout.replicas[r];
    const ReplicaRun sub = replica_run(run, layout, rep.devices);
    rep.stages = sub.stages;
    rep.counts = number_steps(sub.run, kinds, rep.metrics);
    StepEdges own(rep.counts.steps);
    for (std::size_t i = 0; i < sub.run.devices.size(); ++i) {
      own.combine(device_step_edges(sub.run.devices[i], rep.metrics.job_step[i], rep.counts.steps));
    }
    place_windows(own, rep.devices.size(), rep.metrics);
    for (std::size_t s = 0; s < rep.metrics.segments.size(); ++s) {
      const SegmentSteps& mine = rep.metrics.segments[s];
      for (std::size_t j = 0; j < mine.count; ++j) rep.to_global.push_back(m.segments[s].first + j);
    }
    replicas.push_back(std::move(rep));
  }
  std::vector<std::uint64_t> jobs_per_step(counts.steps, 0);
  for (const auto& steps : m.job_step) {
    for (const std::int32_t k : steps) ++jobs_per_step[static_cast<std::size_t>(k)];
  }
  StepPartition plan = partition_steps(jobs_per_step, m.steps, parts);
  for (const Replica& rep : replicas) {
    std::vector<StepWindow> in_run_steps = m.steps;  // the run's own where the replica has none
    for (std::size_t k = 0; k < rep.to_global.size(); ++k) {
      in_run_steps[rep.to_global[k]] = rep.metrics.steps[k];
    }
    plan.widen(in_run_steps);
  }
  std::vector<PartRun> held;
  for (std::size_t p = 0; p < parts; ++p) held.push_back(cut_part(run, kinds, m.job_step, plan, p));

  ReplicaSummary out;
  for (Replica& rep : replicas) {
    std::vector<std::int64_t> cut_ns;
    for (const std::size_t d : rep.devices) cut_ns.push_back(run.devices[d].cut_ns);
    mark_complete_steps(
        rep.counts, cut_ns,
        [&](std::size_t i, std::size_t step) {
          const std::size_t k = rep.to_global[step];
          const PartRun& part = held[plan.owner(k)];
          const std::size_t d = rep.devices[i];
          return step_kind_counts(part.run.devices[d], part.job_step[d], k, kinds);
        },
        rep.metrics);
    std::vector<StageDurations> durations;
    for (std::size_t p = 0; p < parts; ++p) {
      // The replica's steps this range owns, and its devices' jobs here.
      std::size_t a = 0;
      while (a < rep.to_global.size() && rep.to_global[a] < plan.bounds[p]) ++a;
      std::size_t b = a;
      while (b < rep.to_global.size() && rep.to_global[b] < plan.bounds[p + 1]) ++b;
      const ReplicaRun here = replica_run(held[p].run, layout, rep.devices);
      add_window_times(here.run.devices, kinds,
                       std::span<StepWindow>(rep.metrics.steps).subspan(a, b - a));
      std::vector<std::vector<std::int32_t>> steps_here;
      for (const std::size_t d : rep.devices) steps_here.push_back(held[p].job_step[d]);
      durations.push_back(stage_durations(here.run, steps_here, plan.bounds[p], plan.bounds[p + 1],
                                          here.stages, roles));
    }
    add_totals(rep.metrics);
    add_replica(
        out, replica_stats(rep.index, rep.devices, rep.metrics,
                           bottleneck_from_parts(durations, rep.stages, rep.metrics.steps.size())));
  }
  return out;
}

// Data-parallel replicas on two machines whose clocks disagree, more steps
// than the layout reads: each replica's figures by the run's ranges are its
// figures measured alone.
TEST(PartitionedAnalysis, ReplicasByTheRunsRanges) {
  // Two replicas of a 4-stage pipeline, each simulated with its own jitter,
  // one per machine, the second machine's clock 1 ms ahead.
  pipescope::Run run;
  for (int r = 0; r < 2; ++r) {
    sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
    config.steps = 9;
    config.step_gap_ns = 0;
    config.seed = 21 + static_cast<std::uint64_t>(r);
    pipescope::Run replica = testing::run_from_simulation(config);
    if (r == 0) run.types = replica.types;  // the same names in the same order
    for (Device& device : replica.devices) {
      device.index = static_cast<int>(run.devices.size());
      device.machine = r;
      device.machine_name = "machine" + std::to_string(r);
      for (Job& job : device.jobs) {
        job.start_ns += r * 1'000'000;
        job.end_ns += r * 1'000'000;
      }
      run.devices.push_back(std::move(device));
    }
  }
  run.finalize();
  const Metrics whole = compute_metrics(run);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Layout layout = detect_layout(run, whole.job_step, roles);
  const ReplicaSummary expected = summarize_replicas(run, layout, roles);
  ASSERT_GE(expected.replicas.size(), 2u);
  // Lending the devices instead of copying them: the same figures, and the
  // run as it was afterwards.
  {
    pipescope::Run lender = run;
    const ReplicaSummary lent = summarize_replicas_in_place(lender, layout, roles);
    ASSERT_EQ(lent.replicas.size(), expected.replicas.size());
    EXPECT_EQ(lent.slowest, expected.slowest);
    for (std::size_t r = 0; r < lent.replicas.size(); ++r) {
      EXPECT_EQ(lent.replicas[r].total_window_ns, expected.replicas[r].total_window_ns);
      EXPECT_EQ(lent.replicas[r].bubble_ratio, expected.replicas[r].bubble_ratio);
    }
    ASSERT_EQ(lender.devices.size(), run.devices.size());
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      EXPECT_EQ(lender.devices[d].path, run.devices[d].path);
      ASSERT_EQ(lender.devices[d].jobs.size(), run.devices[d].jobs.size()) << d;
      EXPECT_TRUE(std::equal(
          lender.devices[d].jobs.begin(), lender.devices[d].jobs.end(), run.devices[d].jobs.begin(),
          [](const Job& a, const Job& b) {
            return a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.line == b.line;
          }))
          << d;
    }
  }
  for (const std::size_t parts : {1u, 2u, 3u, 4u, 12u}) {
    const ReplicaSummary got = replicas_by_parts(run, parts);
    EXPECT_EQ(got.slowest, expected.slowest) << parts;
    ASSERT_EQ(got.replicas.size(), expected.replicas.size()) << parts;
    for (std::size_t r = 0; r < expected.replicas.size(); ++r) {
      const ReplicaStats &x = got.replicas[r], &y = expected.replicas[r];
      EXPECT_EQ(x.replica, y.replica);
      EXPECT_EQ(x.devices, y.devices);
      EXPECT_EQ(x.complete_steps, y.complete_steps) << parts << "/" << r;
      EXPECT_EQ(x.total_window_ns, y.total_window_ns) << parts << "/" << r;
      EXPECT_EQ(x.step_ns, y.step_ns) << parts << "/" << r;
      EXPECT_EQ(x.bubble_ratio, y.bubble_ratio) << parts << "/" << r;
      EXPECT_EQ(x.bottleneck.slowest_stage, y.bottleneck.slowest_stage) << parts << "/" << r;
      EXPECT_EQ(x.bottleneck.imbalance, y.bottleneck.imbalance) << parts << "/" << r;
      for (std::size_t s = 0; s < y.bottleneck.stages.size(); ++s) {
        EXPECT_EQ(x.bottleneck.stages.at(s).compute_per_step_ns,
                  y.bottleneck.stages[s].compute_per_step_ns);
        EXPECT_EQ(x.bottleneck.stages.at(s).by_role[0].median_ns,
                  y.bottleneck.stages[s].by_role[0].median_ns);
      }
    }
  }
}

// A step's prologue puts a job of the next step ahead of the last jobs of the
// step before on the same device: the part of the later step holds the
// earlier step's job between its own (walks along the device see the same
// neighbours), though it lies outside its span.
TEST(StepPartition, PartHoldsTheJobsBetweenItsOwn) {
  pipescope::Run run;
  testing::add_job(run, 0, "forward", 0, 0, 4);        // step 0
  testing::add_job(run, 0, "recv_forward", 0, 5, 6);   // step 1 (its prologue)
  testing::add_job(run, 0, "send_backward", 0, 6, 8);  // step 0, after it
  testing::add_job(run, 0, "forward", 0, 10, 14);      // step 1
  testing::add_job(run, 0, "backward", 0, 14, 18);     // step 1
  const std::vector<std::int32_t> job_step = {0, 1, 0, 1, 1};
  std::vector<StepWindow> windows(2);
  windows[0].start_ns = 0;
  windows[0].end_ns = 8;
  windows[1].start_ns = 8;
  windows[1].end_ns = 18;
  const StepPartition plan = partition_steps(std::vector<std::uint64_t>{3, 2}, windows, 2);
  ASSERT_EQ(plan.bounds, (std::vector<std::size_t>{0, 1, 2}));
  const TypeKinds kinds(run.types);
  // Part 1: its jobs 1, 3, 4, job 2 between them (it ends as the span
  // begins: only this rule brings it) and job 0, the busy job before its
  // span; part 0: its own, job 1, which starts in its span, and job 3, the
  // busy job after it.
  EXPECT_EQ(part_job_indices(run.devices[0], job_step, kinds, plan, 1),
            (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(part_job_indices(run.devices[0], job_step, kinds, plan, 0),
            (std::vector<std::size_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace pipescope
