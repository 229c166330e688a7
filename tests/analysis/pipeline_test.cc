// The pipeline analysis end to end on simulated runs whose answers are known
// by construction: a 2-machine VPP run with a slow stage and 3 ms of clock
// skew (the acceptance case), stage maps, dependencies, clock
// correction, the critical path and the data-quality warnings.
#include "analysis/pipeline.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

sim::SimConfig acceptance_config(std::int64_t skew_ns) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::interleaved, 4, 8, 2);
  config.machines = 2;
  config.steps = 3;
  config.stage_slowdown = {1, 1, 1.5, 1};
  config.machine_skew_ns = {0, skew_ns};
  return config;
}

TEST(PipelineAnalysis, TwoMachineVppWithASlowStageAndThreeMsOfSkew) {
  pipescope::Run run = testing::run_from_simulation(acceptance_config(3'000'000));
  PipelineOptions options;
  const ClockReport clock = correct_run_clocks(run, options);
  EXPECT_EQ(clock.method, ClockMethod::estimated);
  EXPECT_TRUE(clock.applied);
  EXPECT_GT(clock.violations_before, 0u);
  EXPECT_EQ(clock.violations_after, 0u);
  ASSERT_EQ(clock.machines.size(), 2u);
  EXPECT_EQ(clock.machines[0].offset_ns, 0);
  EXPECT_LE(std::llabs(clock.machines[1].offset_ns - 3'000'000), 200'000)
      << clock.machines[1].offset_ns;

  const Metrics metrics = compute_metrics(run);
  const PipelineAnalysis a = analyze_pipeline(run, metrics, options, clock);
  EXPECT_EQ(a.schedule.detection.id, ScheduleId::paddle_vpp);
  EXPECT_TRUE(a.schedule.detection.exact);
  EXPECT_EQ(a.schedule.detection.stages, 4);
  EXPECT_EQ(a.schedule.detection.micro_batches, 8);
  EXPECT_EQ(a.schedule.detection.chunks, 2);
  EXPECT_DOUBLE_EQ(*a.schedule.ideal_bubble_ratio, 3.0 / 19.0);
  EXPECT_EQ(a.bottleneck.slowest_stage, 2);
  EXPECT_GT(a.bottleneck.imbalance, 1.3);  // 1.5 / mean(1, 1, 1.5, 1) = 1.33 ± jitter
  EXPECT_LT(a.bottleneck.imbalance, 1.37);

  // Bubble kinds add up to the idle time, per device and step and overall.
  std::int64_t idle = 0;
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    for (std::size_t d = 0; d < run.devices.size(); ++d) {
      EXPECT_EQ(a.bubbles.per_step[k][d].idle_ns(), metrics.steps[k].devices[d].idle_ns);
      idle += metrics.steps[k].devices[d].idle_ns;
    }
  }
  EXPECT_EQ(a.bubbles.total.idle_ns(), idle);

  // The critical path runs mostly through the slow stage and accounts for
  // the whole step.
  ASSERT_EQ(a.critical_paths.size(), metrics.steps.size());
  // The analysis keeps the longest step's jobs only; every path's, walked again.
  const std::vector<CriticalPath> full =
      critical_paths(run, metrics, a.stages, a.dependencies, a.roles);
  ASSERT_EQ(full.size(), a.critical_paths.size());
  for (std::size_t k = 0; k < full.size(); ++k) {
    EXPECT_EQ(full[k].job_count, a.critical_paths[k].job_count);
    EXPECT_EQ(full[k].wait_ns, a.critical_paths[k].wait_ns);
  }
  for (const CriticalPath& path : full) {
    std::int64_t sum = path.lead_in_ns + path.wait_ns;
    for (const std::int64_t ns : path.stage_ns) sum += ns;
    EXPECT_EQ(sum, metrics.steps[path.step].window_ns());
    const auto slowest = std::max_element(path.stage_ns.begin(), path.stage_ns.end());
    EXPECT_EQ(slowest - path.stage_ns.begin(), 2);
    for (std::size_t i = 1; i < path.jobs.size(); ++i) {
      const Job& before = run.devices[path.jobs[i - 1].job.device].jobs[path.jobs[i - 1].job.job];
      const Job& after = run.devices[path.jobs[i].job.device].jobs[path.jobs[i].job.job];
      EXPECT_GE(after.start_ns, before.end_ns);  // clocks corrected: no negative wait
    }
  }
  for (const Warning& w : a.warnings) ADD_FAILURE() << warning_name(w.code) << ": " << w.message;
}

TEST(PipelineAnalysis, CorrectedTimesMatchTheUnskewedRun) {
  // With an exact estimate, the corrected run is the run without skew, so
  // the contract's metrics are those of true time.
  pipescope::Run skewed = testing::run_from_simulation(acceptance_config(3'000'000));
  const pipescope::Run truth = testing::run_from_simulation(acceptance_config(0));
  const ClockReport clock = correct_run_clocks(skewed, PipelineOptions{});
  if (clock.machines[1].offset_ns != 3'000'000) GTEST_SKIP() << "estimate not exact";
  const Metrics a = compute_metrics(skewed);
  const Metrics b = compute_metrics(truth);
  EXPECT_EQ(a.total_window_ns, b.total_window_ns);
  EXPECT_DOUBLE_EQ(a.bubble_ratio, b.bubble_ratio);
}

TEST(PipelineAnalysis, ClockOptions) {
  // --no-clock-fix: violations counted, nothing moved.
  pipescope::Run run = testing::run_from_simulation(acceptance_config(-2'000'000));
  const std::int64_t first = run.devices[2].jobs[0].start_ns;
  PipelineOptions options;
  options.clock.fix = false;
  ClockReport clock = correct_run_clocks(run, options);
  EXPECT_EQ(clock.method, ClockMethod::disabled);
  EXPECT_FALSE(clock.applied);
  EXPECT_GT(clock.violations_before, 0u);
  EXPECT_EQ(clock.violations_after, clock.violations_before);
  EXPECT_EQ(run.devices[2].jobs[0].start_ns, first);
  EXPECT_LE(std::llabs(clock.machines[1].estimate_ns + 2'000'000), 200'000);
  const Metrics metrics = compute_metrics(run);
  const PipelineAnalysis a = analyze_pipeline(run, metrics, options, clock);
  EXPECT_TRUE(std::any_of(a.warnings.begin(), a.warnings.end(), [](const Warning& w) {
    return w.code == WarningCode::dependency_violations;
  }));

  // Imposed by name: subtracted as given.
  options.clock.fix = true;
  options.clock.imposed = {parse_clock_offset("machine1=-2ms", "offset")};
  clock = correct_run_clocks(run, options);
  EXPECT_EQ(clock.method, ClockMethod::imposed);
  EXPECT_EQ(run.devices[2].jobs[0].start_ns, first + 2'000'000);
  EXPECT_EQ(clock.machines[1].offset_ns, -2'000'000);
  EXPECT_EQ(clock.violations_after, 0u);

  options.clock.imposed = {{"machine7", 1}};
  EXPECT_THROW(correct_run_clocks(run, options), std::invalid_argument);

  // No skew: nothing to correct, nothing moved.
  pipescope::Run clean = testing::run_from_simulation(acceptance_config(0));
  const std::int64_t clean_first = clean.devices[2].jobs[0].start_ns;
  clock = correct_run_clocks(clean, PipelineOptions{});
  EXPECT_EQ(clock.method, ClockMethod::consistent);
  EXPECT_EQ(clock.violations_before, 0u);
  EXPECT_EQ(clean.devices[2].jobs[0].start_ns, clean_first);
  ASSERT_EQ(clock.pairs.size(), 3u);  // (0,0), (0,1), (1,1)
  const MachinePairClock& cross = clock.pairs[1];
  ASSERT_TRUE(cross.lower_ns && cross.upper_ns);
  EXPECT_LE(*cross.lower_ns, 0);  // true offset 0 lies inside the interval
  EXPECT_GE(*cross.upper_ns, 0);
}

TEST(PipelineAnalysis, ParsesDurations) {
  EXPECT_EQ(parse_duration_ns("2.5ms"), 2'500'000);
  EXPECT_EQ(parse_duration_ns("+250us"), 250'000);
  EXPECT_EQ(parse_duration_ns("-3000000ns"), -3'000'000);
  EXPECT_EQ(parse_duration_ns("1s"), 1'000'000'000);
  EXPECT_EQ(parse_duration_ns("0.000000001s"), 1);
  EXPECT_FALSE(parse_duration_ns("1.5ns").has_value());
  EXPECT_FALSE(parse_duration_ns("12").has_value());
  EXPECT_FALSE(parse_duration_ns("ms").has_value());
  EXPECT_FALSE(parse_duration_ns("1e3ms").has_value());
  EXPECT_EQ(parse_clock_offset("machine1=+2.5ms", "offset"),
            std::make_pair(std::string("machine1"), std::int64_t{2'500'000}));
  EXPECT_THROW(parse_clock_offset("machine1", "offset"), std::invalid_argument);
  EXPECT_THROW(parse_clock_offset("machine1=3", "offset"), std::invalid_argument);
}

TEST(PipelineAnalysis, StageMaps) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 3, 6);
  config.devices_per_stage = 2;
  config.stage_slowdown = {1, 1.8, 1};
  const pipescope::Run run = testing::run_from_simulation(config);
  const StageMap guess = guess_stage_map(run);
  EXPECT_EQ(guess.source, StageSource::automatic);
  ASSERT_EQ(guess.stage_count(), 3u);
  EXPECT_EQ(guess.devices[1], (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(guess.rank_in_stage(3), 1u);
  const StageMap tp = resolve_stage_map(run, "tp=2");
  EXPECT_EQ(tp.stage_of, guess.stage_of);
  const StageMap list = resolve_stage_map(run, "0-1,2+3,4-5");
  EXPECT_EQ(list.stage_of, guess.stage_of);
  EXPECT_EQ(describe_stage_devices(run, list, 1), "2-3");
  const StageMap odd = resolve_stage_map(run, "0+2,1+3,4,5");
  EXPECT_EQ(describe_stage_devices(run, odd, 0), "0+2");
  EXPECT_EQ(resolve_stage_map(run, "").stage_count(), 6u);
  EXPECT_THROW(resolve_stage_map(run, "tp=4"), std::invalid_argument);
  EXPECT_THROW(resolve_stage_map(run, "0-2,2-5"), std::invalid_argument);
  EXPECT_THROW(resolve_stage_map(run, "0-4"), std::invalid_argument);
  EXPECT_THROW(resolve_stage_map(run, "0-5,9"), std::invalid_argument);
  EXPECT_THROW(resolve_stage_map(run, "a-b"), std::invalid_argument);
  // The right maps fit the run; a map that groups two pipeline stages does
  // not, and says why with the first job as evidence.
  EXPECT_TRUE(stage_map_contradictions(run, tp).empty());
  EXPECT_TRUE(stage_map_contradictions(run, list).empty());
  const std::vector<std::string> wrong = stage_map_contradictions(run, odd);
  ASSERT_EQ(wrong.size(), 2u);
  EXPECT_TRUE(wrong[0].starts_with("stage 0 (devices 0+2) does not look like one stage: device 2:"))
      << wrong[0];
  // One stage per device (pipeline only): tp=2 groups stage pairs.
  sim::SimConfig pipeline_only = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  const pipescope::Run pure = testing::run_from_simulation(pipeline_only);
  const std::vector<std::string> paired =
      stage_map_contradictions(pure, resolve_stage_map(pure, "tp=2"));
  ASSERT_EQ(paired.size(), 2u);
  EXPECT_NE(paired[0].find("device 1:"), std::string::npos) << paired[0];
  EXPECT_TRUE(stage_map_contradictions(pure, resolve_stage_map(pure, "")).empty());

  // With the right map: P = 3, the slow stage found; one stage per device warns.
  const Metrics metrics = compute_metrics(run);
  PipelineOptions options;
  options.stages = parse_stage_spec("auto", "--stages");
  const PipelineAnalysis a = analyze_pipeline(run, metrics, options);
  EXPECT_EQ(a.schedule.detection.id, ScheduleId::paddle_1f1b);
  EXPECT_EQ(a.schedule.detection.stages, 3);
  EXPECT_EQ(a.bottleneck.slowest_stage, 1);
  EXPECT_EQ(a.bottleneck.stages[1].by_role[0].count, 2u * 6u * 3u);  // 2 devices · M · steps
  // The layout found by default groups them the same way (tp=2).
  const PipelineAnalysis found = analyze_pipeline(run, metrics, PipelineOptions{});
  EXPECT_EQ(found.layout.method, LayoutMethod::detected);
  EXPECT_EQ(found.layout.shape.tp, 2);
  EXPECT_EQ(found.schedule.detection.stages, 3);
  EXPECT_FALSE(std::any_of(found.warnings.begin(), found.warnings.end(),
                           [](const Warning& w) { return w.code == WarningCode::stage_map; }));
  PipelineOptions one_per_device;
  one_per_device.stages = parse_stage_spec("device", "--stages");
  const PipelineAnalysis by_device = analyze_pipeline(run, metrics, one_per_device);
  EXPECT_TRUE(std::any_of(by_device.warnings.begin(), by_device.warnings.end(),
                          [](const Warning& w) { return w.code == WarningCode::stage_map; }));
}

TEST(PipelineAnalysis, DependenciesOfOneFOneB) {
  // P = 2, M = 4, 1 step: stage 1's 4 forwards wait for stage 0, stage 0's 4
  // backwards wait for stage 1.
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 2, 4);
  config.steps = 1;
  const pipescope::Run run = testing::run_from_simulation(config);
  const Metrics metrics = compute_metrics(run);
  const auto deps = find_dependencies(run, metrics.job_step, one_stage_per_device(2),
                                      classify_job_roles(run.types));
  ASSERT_EQ(deps.size(), 8u);
  for (const Dependency& dep : deps) {
    const Job& p = run.devices[dep.producer.device].jobs[dep.producer.job];
    const Job& c = run.devices[dep.consumer.device].jobs[dep.consumer.job];
    EXPECT_EQ(p.micro_batch, c.micro_batch);
    EXPECT_EQ(p.type, c.type);
    EXPECT_GE(c.start_ns, p.end_ns + config.p2p_latency_ns);
  }
}

TEST(PipelineAnalysis, DataQualityWarnings) {
  pipescope::Run run;
  run.devices.resize(3);
  for (int d = 0; d < 3; ++d) run.devices[d].index = d;
  auto add = [&](int d, std::string_view type, std::int64_t mb, std::int64_t s, std::int64_t e) {
    Job j;
    j.type = run.types.intern(type);
    j.micro_batch = mb;
    j.start_ns = s;
    j.end_ns = e;
    j.line = static_cast<std::uint32_t>(run.devices[d].jobs.size() + 1);
    run.devices[d].jobs.push_back(j);
  };
  const std::int64_t ms = 1'000'000;
  // Device 0: two steps, an overlap and a zero-length job.
  add(0, "forward", 0, 0, 10 * ms);
  add(0, "backward", 0, 5 * ms, 20 * ms);
  add(0, "optimizer", 0, 20 * ms, 20 * ms);
  add(0, "forward", 0, 30 * ms, 40 * ms);
  add(0, "backward", 0, 40 * ms, 50 * ms);
  // Device 1: one step only, and one job a day later.
  add(1, "forward", 0, 0, 10 * ms);
  add(1, "backward", 0, 10 * ms, 20 * ms);
  add(1, "optimizer", 0, 86'400'000 * ms, 86'400'001 * ms);
  // Device 2 (same stage as 1): three jobs in step 0.
  add(2, "forward", 0, 0, 10 * ms);
  add(2, "backward", 0, 10 * ms, 20 * ms);
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  const auto warnings = check_data_quality(run, metrics, resolve_stage_map(run, "0,1-2"));
  auto has = [&](std::string_view code, int device, std::uint64_t count) {
    return std::any_of(warnings.begin(), warnings.end(), [&](const Warning& w) {
      return warning_name(w.code) == code && w.device == device && w.count == count;
    });
  };
  EXPECT_TRUE(has("overlap", 0, 1));
  EXPECT_TRUE(has("nonpositive_length", 0, 1));
  EXPECT_TRUE(has("missing_steps", 1, 1));
  EXPECT_TRUE(has("missing_steps", 2, 1));
  EXPECT_TRUE(has("job_count_mismatch", -1, 1));
  EXPECT_TRUE(has("time_outlier", 1, 1));
  // Devices 1 and 2 never start step 1: neither step is complete.
  EXPECT_TRUE(has("incomplete_steps", -1, 2));
  EXPECT_TRUE(has("no_complete_step", -1, 2));
  EXPECT_EQ(warnings.size(), 8u);
  for (const Warning& w : warnings) EXPECT_FALSE(w.message.empty());
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// analyze_run matches the dependencies once, before the clock correction;
// the two-call path matches them again on corrected times. The results must
// be the same: a machine's offset moves all its jobs alike.
TEST(PipelineAnalysis, OneCallEqualsTheTwoCallPathOnASkewedRun) {
  pipescope::Run one = testing::run_from_simulation(acceptance_config(3'000'000));
  pipescope::Run two = testing::run_from_simulation(acceptance_config(3'000'000));
  const PipelineOptions options;
  const AnalyzedRun a = analyze_run(one, options);
  const ClockReport clock = correct_run_clocks(two, options);
  const Metrics metrics = compute_metrics(two);
  const PipelineAnalysis b = analyze_pipeline(two, metrics, options, clock);

  ASSERT_TRUE(a.pipeline.clock.applied);
  EXPECT_EQ(a.pipeline.clock.machines[1].offset_ns, b.clock.machines[1].offset_ns);
  EXPECT_EQ(a.pipeline.clock.violations_after, b.clock.violations_after);
  ASSERT_EQ(a.metrics.steps.size(), metrics.steps.size());
  for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
    EXPECT_EQ(a.metrics.steps[k].start_ns, metrics.steps[k].start_ns) << k;
    EXPECT_EQ(a.metrics.steps[k].end_ns, metrics.steps[k].end_ns) << k;
  }
  EXPECT_EQ(a.metrics.bubble_ratio, metrics.bubble_ratio);
  const std::vector<Dependency> da = a.pipeline.dependencies.to_vector();
  const std::vector<Dependency> db = b.dependencies.to_vector();
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t i = 0; i < db.size(); ++i) {
    EXPECT_EQ(da[i].producer, db[i].producer);
    EXPECT_EQ(da[i].consumer, db[i].consumer);
  }
  ASSERT_EQ(a.pipeline.critical_paths.size(), b.critical_paths.size());
  for (std::size_t k = 0; k < b.critical_paths.size(); ++k) {
    EXPECT_EQ(a.pipeline.critical_paths[k].job_count, b.critical_paths[k].job_count) << k;
    EXPECT_EQ(a.pipeline.critical_paths[k].wait_ns, b.critical_paths[k].wait_ns) << k;
  }
  EXPECT_EQ(a.pipeline.bubbles.total.count, b.bubbles.total.count);
  EXPECT_EQ(a.pipeline.bubbles.total.ns, b.bubbles.total.ns);
  EXPECT_EQ(a.pipeline.warnings.size(), b.warnings.size());
}

}  // namespace
}  // namespace pipescope
