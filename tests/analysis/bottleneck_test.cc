// find_bottleneck's stage statistics hold a stage's durations in 32 bits when
// every one fits, in 64 bits otherwise: both give the figures duration_stats
// gives on a plain 64-bit list of the stage's durations, checked on a run
// with only short jobs and on the same run with one job stretched past 2^32 ns.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "analysis/bottleneck.h"
#include "analysis/job_role.h"
#include "analysis/metrics.h"
#include "analysis/stage_map.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

void expect_plain_figures(const Run& run) {
  const Metrics metrics = compute_metrics(run);
  const StageMap stages = resolve_stage_map(run, "");
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const BottleneckReport report = find_bottleneck(run, metrics, stages, roles);
  ASSERT_EQ(report.stages.size(), stages.stage_count());
  for (std::size_t s = 0; s < stages.stage_count(); ++s) {
    std::vector<std::vector<std::int64_t>> by_role(kRoleCount);
    for (const std::size_t d : stages.devices[s]) {
      for (const Job& job : run.devices[d].jobs) {
        by_role[static_cast<std::size_t>(roles[job.type].role)].push_back(job.duration_ns());
      }
    }
    for (std::size_t r = 0; r < kRoleCount; ++r) {
      const DurationStats want = duration_stats(by_role[r]);
      const DurationStats& got = report.stages[s].by_role[r];
      EXPECT_EQ(got.count, want.count) << s << " " << r;
      EXPECT_EQ(got.total_ns, want.total_ns) << s << " " << r;
      EXPECT_EQ(got.median_ns, want.median_ns) << s << " " << r;
      EXPECT_EQ(got.p95_ns, want.p95_ns) << s << " " << r;
      EXPECT_EQ(got.max_ns, want.max_ns) << s << " " << r;
    }
  }
}

TEST(FindBottleneck, NarrowAndWideDurationsGiveThePlainFigures) {
  pipescope::Run run = testing::run_from_simulation(
      testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8));
  expect_plain_figures(run);  // every job far shorter than 4.29 s: 32 bits
  // One job of stage 1 lasting 5 s: that stage is held in 64 bits, and its
  // maximum is the long job.
  Job& job = run.devices[1].jobs[3];
  job.end_ns = job.start_ns + 5'000'000'000;
  expect_plain_figures(run);
  const BottleneckReport report = find_bottleneck(run, compute_metrics(run),
                                                  resolve_stage_map(run, ""),
                                                  classify_job_roles(run.types));
  const auto role = static_cast<std::size_t>(classify_job_roles(run.types)[job.type].role);
  EXPECT_EQ(report.stages[1].by_role[role].max_ns, 5'000'000'000);
}

}  // namespace
}  // namespace pipescope
