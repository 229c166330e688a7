// The analysis runs its passes as oneTBB tasks (per device, per step, side
// by side); its results must not depend on how many threads ran them. Each
// run below is analysed on one thread and on eight (an arena wider than the
// machine, so the work is split even on a small one), and everything the
// analysis returns must be equal: the summary's figures (exact doubles) and
// the lists whose order the reports show (dependencies, critical paths,
// longest bubbles, the inherent idle time per step and device).
#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <cstddef>

#include "analysis/pipeline.h"
#include "export/summary_figures.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

struct Analysed {
  AnalyzedRun result;
  SummaryFigures figures;
};

Analysed analyse_on(int threads, const sim::SimConfig& config, const PipelineOptions& options) {
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(threads));
  tbb::task_arena arena(threads);
  Analysed out;
  arena.execute([&] {
    Run run = testing::run_from_simulation(config);
    out.result = analyze_run(run, options);
    out.figures = summary_figures(run, out.result.metrics, out.result.pipeline);
  });
  return out;
}

void expect_same(const Analysed& one, const Analysed& many) {
  EXPECT_TRUE(one.figures == many.figures);
  const PipelineAnalysis& a = one.result.pipeline;
  const PipelineAnalysis& b = many.result.pipeline;
  const std::vector<Dependency> da = a.dependencies.to_vector();
  const std::vector<Dependency> db = b.dependencies.to_vector();
  ASSERT_EQ(da.size(), db.size());
  for (std::size_t i = 0; i < da.size(); ++i) {
    ASSERT_EQ(da[i].producer, db[i].producer) << i;
    ASSERT_EQ(da[i].consumer, db[i].consumer) << i;
  }
  EXPECT_EQ(a.critical_dependency_hops, b.critical_dependency_hops);
  ASSERT_EQ(a.critical_paths.size(), b.critical_paths.size());
  for (std::size_t i = 0; i < a.critical_paths.size(); ++i) {
    const CriticalPath& p = a.critical_paths[i];
    const CriticalPath& q = b.critical_paths[i];
    EXPECT_EQ(p.step, q.step);
    EXPECT_EQ(p.lead_in_ns, q.lead_in_ns);
    EXPECT_EQ(p.wait_ns, q.wait_ns);
    EXPECT_EQ(p.stage_ns, q.stage_ns);
    EXPECT_EQ(p.job_count, q.job_count);
    ASSERT_EQ(p.jobs.size(), q.jobs.size()) << "step " << p.step;
    for (std::size_t j = 0; j < p.jobs.size(); ++j) {
      EXPECT_EQ(p.jobs[j].job, q.jobs[j].job);
      EXPECT_EQ(p.jobs[j].wait_ns, q.jobs[j].wait_ns);
      EXPECT_EQ(p.jobs[j].via_dependency, q.jobs[j].via_dependency);
    }
  }
  ASSERT_EQ(a.bubbles.longest.size(), b.bubbles.longest.size());
  for (std::size_t i = 0; i < a.bubbles.longest.size(); ++i) {
    EXPECT_EQ(a.bubbles.longest[i].device, b.bubbles.longest[i].device);
    EXPECT_EQ(a.bubbles.longest[i].start_ns, b.bubbles.longest[i].start_ns);
    EXPECT_EQ(a.bubbles.longest[i].end_ns, b.bubbles.longest[i].end_ns);
    EXPECT_EQ(a.bubbles.longest[i].job_before, b.bubbles.longest[i].job_before);
    EXPECT_EQ(a.bubbles.longest[i].job_after, b.bubbles.longest[i].job_after);
  }
  EXPECT_EQ(a.split.known, b.split.known);
  EXPECT_EQ(a.split.inherent, b.split.inherent);
  EXPECT_EQ(a.split.receive_wait_ns, b.split.receive_wait_ns);
  EXPECT_EQ(a.split.send_wait_ns, b.split.send_wait_ns);
  EXPECT_EQ(a.explanation, b.explanation);
  ASSERT_EQ(a.warnings.size(), b.warnings.size());
  for (std::size_t i = 0; i < a.warnings.size(); ++i) {
    EXPECT_EQ(a.warnings[i].message, b.warnings[i].message);
  }
}

sim::SimConfig config_of(sim::ScheduleKind kind, int stages, int micro_batches, int chunks,
                         int steps) {
  sim::SimConfig config = testing::sim_config(kind, stages, micro_batches, chunks);
  config.steps = steps;
  config.seed = 11;
  return config;
}

// Enough steps that the per-step passes split into several blocks.
constexpr int kSteps = 300;

TEST(ParallelAnalysis, OneFOneBIsTheSameOnOneThreadAndOnEight) {
  const sim::SimConfig config = config_of(sim::ScheduleKind::one_f_one_b, 4, 8, 1, kSteps);
  const Analysed one = analyse_on(1, config, {});
  const Analysed many = analyse_on(8, config, {});
  ASSERT_EQ(one.result.metrics.steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_TRUE(one.result.pipeline.split.known);
  EXPECT_FALSE(one.result.pipeline.dependencies.empty());
  expect_same(one, many);
}

TEST(ParallelAnalysis, TwoMachineVppWithSkewAndCommJobsIsTheSameOnOneThreadAndOnEight) {
  sim::SimConfig config = config_of(sim::ScheduleKind::interleaved, 4, 8, 2, kSteps);
  config.machines = 2;
  config.comm_jobs = true;
  config.machine_skew_ns = {0, 2'000'000};
  config.stage_slowdown = {1, 1, 1.5, 1};
  const Analysed one = analyse_on(1, config, {});
  const Analysed many = analyse_on(8, config, {});
  EXPECT_TRUE(one.result.pipeline.clock.applied);
  EXPECT_GT(one.result.metrics.comm_ns, 0);
  // Violations are counted over blocks of 16384 dependencies: several here.
  EXPECT_GT(one.result.pipeline.dependencies.size(), 2u * 16384u);
  const ClockReport& a = one.result.pipeline.clock;
  const ClockReport& b = many.result.pipeline.clock;
  EXPECT_GT(a.violations_before, 0u);
  EXPECT_EQ(a.dependencies, b.dependencies);
  EXPECT_EQ(a.violations_before, b.violations_before);
  EXPECT_EQ(a.violations_after, b.violations_after);
  ASSERT_EQ(a.pairs.size(), b.pairs.size());
  for (std::size_t i = 0; i < a.pairs.size(); ++i) {
    EXPECT_EQ(a.pairs[i].machine_a, b.pairs[i].machine_a);
    EXPECT_EQ(a.pairs[i].machine_b, b.pairs[i].machine_b);
    EXPECT_EQ(a.pairs[i].dependencies, b.pairs[i].dependencies);
    EXPECT_EQ(a.pairs[i].violations_before, b.pairs[i].violations_before);
    EXPECT_EQ(a.pairs[i].violations_after, b.pairs[i].violations_after);
    EXPECT_EQ(a.pairs[i].lower_ns, b.pairs[i].lower_ns);
    EXPECT_EQ(a.pairs[i].upper_ns, b.pairs[i].upper_ns);
  }
  expect_same(one, many);
}

TEST(ParallelAnalysis, TensorParallelStagesAndZeroBubbleAreTheSameOnOneThreadAndOnEight) {
  sim::SimConfig config = config_of(sim::ScheduleKind::zbh1, 4, 8, 1, kSteps);
  config.devices_per_stage = 2;
  config.lr_jobs = true;
  PipelineOptions options;
  options.stages = parse_stage_spec("auto", "--stages");
  const Analysed one = analyse_on(1, config, options);
  const Analysed many = analyse_on(8, config, options);
  EXPECT_EQ(one.result.pipeline.stages.stage_count(), 4u);
  expect_same(one, many);
}

TEST(ParallelAnalysis, DualPipeVIsTheSameOnOneThreadAndOnEight) {
  const sim::SimConfig config = config_of(sim::ScheduleKind::torch_dualpipev, 4, 8, 2, 100);
  const Analysed one = analyse_on(1, config, {});
  const Analysed many = analyse_on(8, config, {});
  expect_same(one, many);
}

}  // namespace
}  // namespace pipescope
