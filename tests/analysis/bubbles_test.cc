// Bubbles: kinds, lengths and neighbours on a hand-built run, and on
// simulated runs of every schedule fill + interior + drain == idle(d, k)
// exactly, for every device and step.
#include "analysis/bubbles.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>
#include <tuple>

#include "analysis/metrics.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

Job job(pipescope::Run& run, std::string_view type, std::int64_t mb, std::int64_t start,
        std::int64_t end) {
  Job j;
  j.type = run.types.intern(type);
  j.micro_batch = mb;
  j.start_ns = start;
  j.end_ns = end;
  return j;
}

TEST(Bubbles, HandWorkedKindsAndNeighbours) {
  // The metric contract's worked example (tests/analysis/metrics_test.cc): windows
  // [0,55) and [56,90).
  pipescope::Run run;
  run.devices.resize(2);
  run.devices[0].index = 0;
  run.devices[1].index = 1;
  run.devices[0].jobs = {job(run, "forward", 0, 0, 10),    job(run, "forward", 1, 10, 20),
                         job(run, "backward", 0, 30, 40),  job(run, "backward", 1, 40, 50),
                         job(run, "optimizer", 0, 50, 55), job(run, "lr", 0, 56, 58),
                         job(run, "forward", 0, 60, 70),   job(run, "backward", 0, 80, 90)};
  run.devices[1].jobs = {job(run, "forward", 0, 10, 20),   job(run, "forward", 1, 20, 30),
                         job(run, "backward", 0, 25, 35),  job(run, "backward", 1, 35, 45),
                         job(run, "optimizer", 0, 45, 50), job(run, "recv_forward", 0, 62, 66),
                         job(run, "forward", 0, 70, 80),   job(run, "backward", 0, 80, 85)};
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  ASSERT_EQ(metrics.steps.size(), 2u);

  std::vector<Bubble> all;
  for_each_bubble(run, metrics, [&](const Bubble& b) { all.push_back(b); });
  // Device 0, step 0: [20,30) interior; busy until 55 = E_0, no drain.
  // Device 0, step 1: busy from 56 (lr), [58,60) and [70,80) interior.
  // Device 1 step 0: [0,10) fill, [50,55) drain (the next job, the recv at
  // 62, lies in step 1). Device 1 step 1: [56,70) fill (its recv [62,66) is
  // comm time, idle: it does not split the bubble), [85,90) drain. [55,56) is
  // in no window.
  struct Expect {
    std::size_t device, step;
    std::int64_t start, end;
    BubbleKind kind;
    std::int64_t before, after;
  };
  const std::vector<Expect> expected = {
      {0, 0, 20, 30, BubbleKind::interior, 1, 2},  {0, 1, 58, 60, BubbleKind::interior, 5, 6},
      {0, 1, 70, 80, BubbleKind::interior, 6, 7},  {1, 0, 0, 10, BubbleKind::fill, kNoJob, 0},
      {1, 0, 50, 55, BubbleKind::drain, 4, 6},     {1, 1, 56, 70, BubbleKind::fill, 4, 6},
      {1, 1, 85, 90, BubbleKind::drain, 7, kNoJob}};
  ASSERT_EQ(all.size(), expected.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].device, expected[i].device) << i;
    EXPECT_EQ(all[i].step, expected[i].step) << i;
    EXPECT_EQ(all[i].start_ns, expected[i].start) << i;
    EXPECT_EQ(all[i].end_ns, expected[i].end) << i;
    EXPECT_EQ(all[i].kind, expected[i].kind) << i;
    EXPECT_EQ(all[i].job_before, expected[i].before) << i;
    EXPECT_EQ(all[i].job_after, expected[i].after) << i;
  }

  // The totals cover the complete steps: step 1 is the last and holds fewer
  // jobs than step 0, so only step 0 counts (its bubbles are still visited).
  ASSERT_FALSE(metrics.steps[1].complete);
  const BubbleSummary summary = summarize_bubbles(run, metrics, 3);
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(summary.per_step[0][d].idle_ns(), metrics.steps[0].devices[d].idle_ns);
    EXPECT_EQ(summary.per_step[1][d].idle_ns(), 0);
  }
  EXPECT_EQ(summary.total.of(BubbleKind::fill), 10);
  EXPECT_EQ(summary.total.of(BubbleKind::interior), 10);
  EXPECT_EQ(summary.total.of(BubbleKind::drain), 5);
  EXPECT_EQ(summary.total.count[static_cast<std::size_t>(BubbleKind::interior)], 1u);
  // Each device's totals: its idle time and its bubbles in the complete steps.
  for (std::size_t d = 0; d < 2; ++d) {
    BubbleTime time;
    for (const auto& step : summary.per_step) time.add(step[d]);
    EXPECT_EQ(summary.per_device[d].ns, time.ns) << d;
    std::array<std::uint64_t, 3> count{};
    for (const Bubble& b : all) {
      if (b.device == d && b.step == 0) ++count[static_cast<std::size_t>(b.kind)];
    }
    EXPECT_EQ(summary.per_device[d].count, count) << d;
  }
  // Longest first: the two of 10 ordered by start, then the drain of 5.
  ASSERT_EQ(summary.longest.size(), 3u);
  EXPECT_EQ(summary.longest[0].length_ns(), 10);
  EXPECT_EQ(summary.longest[0].start_ns, 0);
  EXPECT_EQ(summary.longest[1].start_ns, 20);
  EXPECT_EQ(summary.longest[2].start_ns, 50);
  EXPECT_EQ(summary.longest[2].length_ns(), 5);
}

TEST(Bubbles, ADeviceWithoutJobsIsOneFillBubblePerWindow) {
  pipescope::Run run;
  run.devices.resize(2);
  run.devices[0].jobs = {job(run, "forward", 0, 100, 200)};
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  const BubbleSummary s = summarize_bubbles(run, metrics, 10);
  EXPECT_EQ(s.per_step[0][1].of(BubbleKind::fill), 100);
  EXPECT_EQ(s.per_step[0][0].idle_ns(), 0);
  ASSERT_EQ(s.longest.size(), 1u);
  EXPECT_EQ(s.longest[0].job_before, kNoJob);
  EXPECT_EQ(s.longest[0].job_after, kNoJob);
}

TEST(Bubbles, KindsAddUpToIdleOnSimulatedRunsOfEverySchedule) {
  int runs = 0;
  for (const auto kind : {sim::ScheduleKind::fthenb, sim::ScheduleKind::one_f_one_b,
                          sim::ScheduleKind::eager_one_f_one_b, sim::ScheduleKind::interleaved,
                          sim::ScheduleKind::zbh1}) {
    for (const bool comm : {false, true}) {
      sim::SimConfig config =
          testing::sim_config(kind, 4, 8, kind == sim::ScheduleKind::interleaved ? 2 : 1);
      config.comm_jobs = comm;
      config.machines = 2;
      config.machine_skew_ns = {0, comm ? 3'000'000 : -1'500'000};
      config.stage_slowdown = {1, 1, 1.6, 1};
      config.steps = 4;
      const pipescope::Run run = testing::run_from_simulation(config);
      const Metrics metrics = compute_metrics(run);
      const BubbleSummary s = summarize_bubbles(run, metrics, 5);
      std::int64_t idle = 0;
      for (std::size_t k = 0; k < metrics.steps.size(); ++k) {
        for (std::size_t d = 0; d < run.devices.size(); ++d) {
          EXPECT_EQ(s.per_step[k][d].idle_ns(), metrics.steps[k].devices[d].idle_ns)
              << sim::schedule_kind_name(kind) << " step " << k << " device " << d;
          idle += metrics.steps[k].devices[d].idle_ns;
        }
      }
      for (std::size_t d = 0; d < run.devices.size(); ++d) {
        EXPECT_EQ(s.per_device[d].idle_ns(), metrics.devices[d].idle_ns);
      }
      EXPECT_EQ(s.total.idle_ns(), idle);
      // Every stage but the first waits for the pipeline to fill.
      EXPECT_GT(s.per_device[3].of(BubbleKind::fill), 0);
      ASSERT_EQ(s.longest.size(), 5u);
      for (std::size_t i = 1; i < s.longest.size(); ++i) {
        EXPECT_GE(s.longest[i - 1].length_ns(), s.longest[i].length_ns());
      }
      ++runs;
    }
  }
  EXPECT_EQ(runs, 10);
}

Bubble bubble_at(std::size_t device, std::size_t step, std::int64_t start, std::int64_t end) {
  Bubble b;
  b.device = device;
  b.step = step;
  b.start_ns = start;
  b.end_ns = end;
  return b;
}

TEST(Bubbles, PeersOfAStageIdleAtOnceFoldIntoOne) {
  // Devices 0-3 are stage 0, 4-5 stage 1, 6 has no stage.
  const std::vector<int> stage_of = {0, 0, 0, 0, 1, 1, -1};
  const std::vector<Bubble> longest_first = {
      bubble_at(0, 2, 100, 200),  // stage 0, step 2
      bubble_at(1, 2, 101, 199),  // its peer, overlapping
      bubble_at(4, 2, 100, 197),  // stage 1: another group
      bubble_at(2, 2, 102, 198),  // stage 0 again
      bubble_at(6, 2, 100, 196),  // no stage: alone
      bubble_at(3, 2, 300, 390),  // stage 0, same step, later: another time
      bubble_at(5, 1, 100, 189),  // stage 1, another step
      bubble_at(3, 2, 105, 180),  // stage 0, overlapping the first
      bubble_at(5, 2, 150, 170),  // stage 1 with device 4
  };
  const std::vector<FoldedBubble> folded = fold_peer_bubbles(longest_first, stage_of, 10);
  ASSERT_EQ(folded.size(), 5u);
  EXPECT_EQ(folded[0].bubble.device, 0u);
  EXPECT_EQ(folded[0].devices, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(folded[0].shortest_ns, 75);
  EXPECT_EQ(folded[1].bubble.device, 4u);
  EXPECT_EQ(folded[1].devices, (std::vector<std::size_t>{4, 5}));
  EXPECT_EQ(folded[2].devices, (std::vector<std::size_t>{6}));
  EXPECT_EQ(folded[3].bubble.start_ns, 300);
  EXPECT_EQ(folded[3].devices, (std::vector<std::size_t>{3}));
  EXPECT_EQ(folded[4].bubble.step, 1u);
  // top_n bounds the groups; later peers still join the open ones.
  const std::vector<FoldedBubble> two = fold_peer_bubbles(longest_first, stage_of, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].devices.size(), 4u);
  EXPECT_EQ(two[1].devices.size(), 2u);
}

TEST(Bubbles, TheFoldedLongestOfTensorParallelPeersListOneBubblePerStageAndTime) {
  // 4 stages of 8 identical peers: the plain list's 10 longest are copies of
  // a few bubbles; the folded list names each once, with its 8 peers.
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8);
  config.devices_per_stage = 8;
  config.steps = 3;
  const pipescope::Run run = testing::run_from_simulation(config);
  const Metrics metrics = compute_metrics(run);
  std::vector<int> stage_of(run.devices.size());
  for (std::size_t d = 0; d < run.devices.size(); ++d) stage_of[d] = static_cast<int>(d / 8);
  const BubbleSummary s = summarize_bubbles(run, metrics, 10, stage_of);
  const BubbleSummary plain = summarize_bubbles(run, metrics, 10);
  EXPECT_EQ(s.longest.size(), plain.longest.size());
  for (std::size_t i = 0; i < s.longest.size(); ++i) {
    EXPECT_EQ(s.longest[i].device, plain.longest[i].device);
    EXPECT_EQ(s.longest[i].start_ns, plain.longest[i].start_ns);
  }
  ASSERT_EQ(s.longest_folded.size(), 10u);
  // Independently: every bubble of the run, grouped by (stage, step, start).
  std::map<std::tuple<int, std::size_t, std::int64_t>, std::set<std::size_t>> groups;
  for_each_bubble(run, metrics, [&](const Bubble& b) {
    if (metrics.steps[b.step].complete) {
      groups[{stage_of[b.device], b.step, b.start_ns}].insert(b.device);
    }
  });
  std::set<std::tuple<int, std::size_t, std::int64_t>> seen;
  for (std::size_t i = 0; i < s.longest_folded.size(); ++i) {
    const FoldedBubble& f = s.longest_folded[i];
    const auto key = std::make_tuple(stage_of[f.bubble.device], f.bubble.step, f.bubble.start_ns);
    EXPECT_TRUE(seen.insert(key).second) << "one bubble per stage and time";
    EXPECT_EQ(f.devices.size(), 8u);
    EXPECT_EQ(std::set<std::size_t>(f.devices.begin(), f.devices.end()), groups.at(key));
    if (i > 0) {
      EXPECT_GE(s.longest_folded[i - 1].bubble.length_ns(), f.bubble.length_ns());
    }
  }
  // The plain list's first is the folded list's first.
  EXPECT_EQ(s.longest_folded[0].bubble.start_ns, s.longest[0].start_ns);
}

}  // namespace
}  // namespace pipescope
