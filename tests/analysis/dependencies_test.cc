// find_dependencies on runs of a few jobs, every edge worked out by hand from
// the rules of dependencies.h (docs/guide.md, "Explaining the bubbles"):
//   F(m, c) on stage s needs F(m, c) on s-1 (stage 0, c > 0: F(m, c-1) on the last stage)
//   B(m, c) on stage s needs B(m, c) on s+1 (last stage, c < V-1: B(m, c+1) on stage 0)
// matched within one step, the i-th device of a stage paired with the
// (i mod size)-th device of the other.
#include "analysis/dependencies.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/metrics.h"
#include "support/hand_run.h"

namespace pipescope {
namespace {

using testing::add_job;

/// "consumer <- producer" as "dD.jJ <- dD.jJ" (device position, job index in
/// start order), so a mismatch reads as a list of edges.
std::vector<std::string> edges(const Dependencies& deps) {
  std::vector<std::string> out;
  for (const Dependency& dep : deps) {
    out.push_back(fmt::format("d{}.j{} <- d{}.j{}", dep.consumer.device, dep.consumer.job,
                              dep.producer.device, dep.producer.job));
  }
  return out;
}

std::vector<std::string> edges_of(const pipescope::Run& run, const StageMap& stages) {
  const Metrics metrics = compute_metrics(run);
  return edges(find_dependencies(run, metrics.job_step, stages, classify_job_roles(run.types)));
}

std::vector<std::string> edges_of(const pipescope::Run& run) {
  return edges_of(run, one_stage_per_device(run.devices.size()));
}

// 1F1B with P = 2, M = 2 in one step; micro-batch ids start at `mb0`.
//   device 0 (stage 0): F0 F1 B0 B1     jobs 0 1 2 3
//   device 1 (stage 1): F0 B0 F1 B1     jobs 0 1 2 3
pipescope::Run one_f_one_b(std::int64_t mb0) {
  pipescope::Run run;
  add_job(run, 0, "forward", mb0, 0, 10);
  add_job(run, 0, "forward", mb0 + 1, 10, 20);
  add_job(run, 0, "backward", mb0, 30, 40);
  add_job(run, 0, "backward", mb0 + 1, 50, 60);
  add_job(run, 1, "forward", mb0, 12, 22);
  add_job(run, 1, "backward", mb0, 22, 28);
  add_job(run, 1, "forward", mb0 + 1, 28, 38);
  add_job(run, 1, "backward", mb0 + 1, 38, 48);
  run.finalize();
  return run;
}

// Stage 1's forwards wait for stage 0's (d1.j0 <- d0.j0 for F0, d1.j2 <- d0.j1
// for F1); stage 0's backwards wait for stage 1's (d0.j2 <- d1.j1 for B0,
// d0.j3 <- d1.j3 for B1). Stage 0's forwards and the last stage's backwards
// (V = 1) have none. Sorted by consumer: device 0's first.
const std::vector<std::string> kOneFOneBEdges = {"d0.j2 <- d1.j1", "d0.j3 <- d1.j3",
                                                 "d1.j0 <- d0.j0", "d1.j2 <- d0.j1"};

TEST(Dependencies, TwoStageOneFOneB) { EXPECT_EQ(edges_of(one_f_one_b(0)), kOneFOneBEdges); }

// Micro-batch ids that are negative or huge leave the dense table for the
// sorted list; the edges must be the same.
TEST(Dependencies, OddMicroBatchIdsGiveTheSameEdges) {
  EXPECT_EQ(edges_of(one_f_one_b(-7)), kOneFOneBEdges);
  EXPECT_EQ(edges_of(one_f_one_b(5'000'000'000)), kOneFOneBEdges);
}

TEST(Dependencies, ThreeStagesMiddleStageHasBothDirections) {
  // One micro-batch through three stages:
  //   device 0: F [0,10)  B [50,60)
  //   device 1: F [10,20) B [40,50)
  //   device 2: F [20,30) B [30,40)
  // Stage 1's F needs stage 0's, its B needs stage 2's; stage 2's F needs
  // stage 1's; stage 0's B needs stage 1's.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 50, 60);
  add_job(run, 1, "forward", 0, 10, 20);
  add_job(run, 1, "backward", 0, 40, 50);
  add_job(run, 2, "forward", 0, 20, 30);
  add_job(run, 2, "backward", 0, 30, 40);
  run.finalize();
  EXPECT_EQ(edges_of(run), (std::vector<std::string>{"d0.j1 <- d1.j1", "d1.j0 <- d0.j0",
                                                     "d1.j1 <- d2.j1", "d2.j0 <- d1.j0"}));
}

// VPP, P = 2, V = 2, M = 1, in true order
//   S0 F c0, S1 F c0, S0 F c1, S1 F c1, S1 B c1, S0 B c1, S1 B c0, S0 B c0:
//   device 0: F c0 [0,10)  F c1 [20,30) B c1 [50,60) B c0 [70,80)   jobs 0 1 2 3
//   device 1: F c0 [10,20) F c1 [30,40) B c1 [40,50) B c0 [60,70)   jobs 0 1 2 3
// Edges:
//   d0.j1 (S0 F c1) <- d1.j0 (last stage F c0: stage 0, c > 0)
//   d0.j2 (S0 B c1) <- d1.j2 (S1 B c1)
//   d0.j3 (S0 B c0) <- d1.j3 (S1 B c0)
//   d1.j0 (S1 F c0) <- d0.j0
//   d1.j1 (S1 F c1) <- d0.j1
//   d1.j3 (S1 B c0) <- d0.j2 (stage 0 B c1: last stage, c < V-1)
// S0 F c0 and S1 B c1 (last stage, last chunk) have none.
void add_vpp(pipescope::Run& run, std::string_view f0, std::string_view f1, std::string_view b0,
             std::string_view b1) {
  add_job(run, 0, f0, 0, 0, 10);
  add_job(run, 0, f1, 0, 20, 30);
  add_job(run, 0, b1, 0, 50, 60);
  add_job(run, 0, b0, 0, 70, 80);
  add_job(run, 1, f0, 0, 10, 20);
  add_job(run, 1, f1, 0, 30, 40);
  add_job(run, 1, b1, 0, 40, 50);
  add_job(run, 1, b0, 0, 60, 70);
  run.finalize();
}

const std::vector<std::string> kVppEdges = {"d0.j1 <- d1.j0", "d0.j2 <- d1.j2", "d0.j3 <- d1.j3",
                                            "d1.j0 <- d0.j0", "d1.j1 <- d0.j1", "d1.j3 <- d0.j2"};

TEST(Dependencies, InterleavedChunksWrapAroundTheStages) {
  pipescope::Run digits;
  add_vpp(digits, "forward0", "forward1", "backward0", "backward1");
  EXPECT_EQ(edges_of(digits), kVppEdges);
  pipescope::Run named;
  add_vpp(named, "forward(chunk0)", "forward(chunk1)", "backward(chunk0)", "backward(chunk1)");
  EXPECT_EQ(edges_of(named), kVppEdges);
}

// ZB-V's placement with P = 2, one micro-batch: device 0 holds global stages
// 0 (chunk 0) and 3 (chunk 1), device 1 stages 1 and 2. The forward runs
// g0 g1 g2 g3 (d0 d1 d1 d0), the backward g3 g2 g1 g0 (d0 d1 d1 d0).
//   device 0: forward0 forward1 backward1 backward0   jobs 0 1 2 3
//   device 1: forward0 forward1 backward1 backward0   jobs 0 1 2 3
TEST(Dependencies, VShapedPlacementFlowsBackUpTheStages) {
  pipescope::Run run;
  add_job(run, 0, "forward0", 0, 0, 10);
  add_job(run, 0, "forward1", 0, 40, 50);
  add_job(run, 0, "backward1", 0, 50, 60);
  add_job(run, 0, "backward0", 0, 90, 100);
  add_job(run, 1, "forward0", 0, 12, 22);
  add_job(run, 1, "forward1", 0, 22, 32);
  add_job(run, 1, "backward1", 0, 62, 72);
  add_job(run, 1, "backward0", 0, 72, 82);
  run.finalize();
  const Metrics metrics = compute_metrics(run);
  const auto roles = classify_job_roles(run.types);
  const StageMap stages = one_stage_per_device(2);
  // g3's forward needs g2's (d1's chunk 1); g2's backward needs g3's; g0's
  // backward needs g1's; g1's forward needs g0's. g2's forward and g1's
  // backward take their input from their own device: no edge.
  EXPECT_EQ(edges(find_dependencies(run, metrics.job_step, stages, roles, StagePlacement::v_shape)),
            (std::vector<std::string>{"d0.j1 <- d1.j1", "d0.j3 <- d1.j3", "d1.j0 <- d0.j0",
                                      "d1.j2 <- d0.j2"}));
  // Read looped (d0 holds g0 and g2, d1 g1 and g3), the same jobs chain
  // otherwise: g2's forward on d0 after g1's on d1, g3's on d1 after g2's,
  // and the backwards back down: the placement decides.
  EXPECT_EQ(edges(find_dependencies(run, metrics.job_step, stages, roles)),
            (std::vector<std::string>{"d0.j1 <- d1.j0", "d0.j2 <- d1.j2", "d0.j3 <- d1.j3",
                                      "d1.j0 <- d0.j0", "d1.j1 <- d0.j1", "d1.j3 <- d0.j2"}));
}

TEST(Dependencies, MatchedWithinTheStepOnly) {
  // Two steps of P = 2, M = 1: F0 B0 | F0 B0 on both devices (jobs 0 1 | 2 3).
  // Step 1's jobs (2, 3) pair with step 1's, never with step 0's jobs of the
  // same type and micro-batch.
  pipescope::Run run;
  for (std::size_t d = 0; d < 2; ++d) {
    add_job(run, d, "forward", 0, 0, 10);
    add_job(run, d, "backward", 0, 10, 20);
    add_job(run, d, "forward", 0, 100, 110);
    add_job(run, d, "backward", 0, 110, 120);
  }
  run.finalize();
  EXPECT_EQ(edges_of(run), (std::vector<std::string>{"d0.j1 <- d1.j1", "d0.j3 <- d1.j3",
                                                     "d1.j0 <- d0.j0", "d1.j2 <- d0.j2"}));
}

TEST(Dependencies, AStepThePartnerDeviceNeverReachedHasNoEdge) {
  // Device 0's log ends after step 0; device 1 runs two steps. Device 1's
  // step-1 forward (j2) has no step-1 forward to wait for.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 30, 40);
  add_job(run, 1, "forward", 0, 10, 20);
  add_job(run, 1, "backward", 0, 20, 30);
  add_job(run, 1, "forward", 0, 50, 60);
  add_job(run, 1, "backward", 0, 60, 70);
  run.finalize();
  EXPECT_EQ(edges_of(run), (std::vector<std::string>{"d0.j1 <- d1.j1", "d1.j0 <- d0.j0"}));
}

TEST(Dependencies, MissingPartnerJobLeavesTheConsumerWithoutAnEdge) {
  // Stage 0 lost its F1 line: device 0 runs F0 B0 B1 (jobs 0 1 2), device 1
  // F0 B0 F1 B1. Device 1's F1 (j2) has no producer; the rest pair as usual.
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "backward", 0, 30, 40);
  add_job(run, 0, "backward", 1, 50, 60);
  add_job(run, 1, "forward", 0, 12, 22);
  add_job(run, 1, "backward", 0, 22, 28);
  add_job(run, 1, "forward", 1, 28, 38);
  add_job(run, 1, "backward", 1, 38, 48);
  run.finalize();
  EXPECT_EQ(edges_of(run),
            (std::vector<std::string>{"d0.j1 <- d1.j1", "d0.j2 <- d1.j3", "d1.j0 <- d0.j0"}));
}

TEST(Dependencies, RepeatedOpInAStepUsesItsFirstJob) {
  // Device 0 logged F0 twice (jobs 0 and 1; a forward after a forward starts
  // no step): device 1's F0 waits for the first. Same with odd micro-batch
  // ids (the sorted-list index).
  for (const std::int64_t mb : {std::int64_t{0}, std::int64_t{-3}}) {
    pipescope::Run run;
    add_job(run, 0, "forward", mb, 0, 10);
    add_job(run, 0, "forward", mb, 10, 20);
    add_job(run, 1, "forward", mb, 20, 30);
    run.finalize();
    EXPECT_EQ(edges_of(run), (std::vector<std::string>{"d1.j0 <- d0.j0"})) << "mb " << mb;
  }
}

TEST(Dependencies, OnlyForwardAndBackwardOpsTakePart) {
  // Zero-bubble split: backward_b is B, backward_w (W) needs no edge; comm,
  // optimizer and other jobs never take part.
  //   device 0: F0 [0,10) send [10,11) B_b0 [40,50) W0 [50,60) optimizer [60,65)
  //   device 1: recv [10,12) F0 [12,22) B_b0 [22,30) send [30,31) W0 [31,40) memcpy [40,41)
  // Edges: d0.j2 (B_b) <- d1.j2 (B_b), d1.j1 (F) <- d0.j0 (F).
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 0, "send_forward", 0, 10, 11);
  add_job(run, 0, "backward_b", 0, 40, 50);
  add_job(run, 0, "backward_w", 0, 50, 60);
  add_job(run, 0, "optimizer", 0, 60, 65);
  add_job(run, 1, "recv_forward", 0, 10, 12);
  add_job(run, 1, "forward", 0, 12, 22);
  add_job(run, 1, "backward_b", 0, 22, 30);
  add_job(run, 1, "send_backward", 0, 30, 31);
  add_job(run, 1, "backward_w", 0, 31, 40);
  add_job(run, 1, "memcpy", 0, 40, 41);
  run.finalize();
  EXPECT_EQ(edges_of(run), (std::vector<std::string>{"d0.j2 <- d1.j2", "d1.j1 <- d0.j0"}));
}

TEST(Dependencies, TensorParallelPeersPairByRankInStage) {
  // Stages of two devices each ("0-1,2-3"), every device running F0 then B0:
  // rank 0 pairs with rank 0, rank 1 with rank 1.
  pipescope::Run run;
  for (std::size_t d = 0; d < 4; ++d) {
    const std::int64_t t = d < 2 ? 0 : 10;
    add_job(run, d, "forward", 0, t, t + 10);
    add_job(run, d, "backward", 0, 40 - t, 50 - t);
  }
  run.finalize();
  EXPECT_EQ(edges_of(run, resolve_stage_map(run, "0-1,2-3")),
            (std::vector<std::string>{"d0.j1 <- d2.j1", "d1.j1 <- d3.j1", "d2.j0 <- d0.j0",
                                      "d3.j0 <- d1.j0"}));
  // A smaller next stage ("0-1,2"): rank r pairs with device (r mod 1) = 2 of
  // stage 1, and device 2 (rank 0) with device (0 mod 2) = 0 of stage 0.
  pipescope::Run uneven;
  for (std::size_t d = 0; d < 3; ++d) {
    const std::int64_t t = d < 2 ? 0 : 10;
    add_job(uneven, d, "forward", 0, t, t + 10);
    add_job(uneven, d, "backward", 0, 40 - t, 50 - t);
  }
  uneven.finalize();
  EXPECT_EQ(edges_of(uneven, resolve_stage_map(uneven, "0-1,2")),
            (std::vector<std::string>{"d0.j1 <- d2.j1", "d1.j1 <- d2.j1", "d2.j0 <- d0.j0"}));
}

TEST(Dependencies, StagesFollowTheMapNotTheDeviceOrder) {
  // "1,0": device 1 is stage 0, device 0 is stage 1. Device 1 runs F0 [0,10)
  // B0 [30,40); device 0 runs F0 [10,20) B0 [20,30).
  pipescope::Run run;
  add_job(run, 1, "forward", 0, 0, 10);
  add_job(run, 1, "backward", 0, 30, 40);
  add_job(run, 0, "forward", 0, 10, 20);
  add_job(run, 0, "backward", 0, 20, 30);
  run.finalize();
  EXPECT_EQ(edges_of(run, resolve_stage_map(run, "1,0")),
            (std::vector<std::string>{"d0.j0 <- d1.j0", "d1.j1 <- d0.j1"}));
}

TEST(Dependencies, ADeviceOutsideTheMapTakesNoPart) {
  // Stage map by hand: device 1 in no stage. Device 2 (stage 1) pairs with
  // device 0 (stage 0); device 1's jobs are neither consumers nor producers.
  pipescope::Run run;
  for (std::size_t d = 0; d < 3; ++d) {
    add_job(run, d, "forward", 0, 10 * static_cast<std::int64_t>(d),
            10 * static_cast<std::int64_t>(d) + 10);
  }
  run.finalize();
  StageMap stages;
  stages.stage_of = {0, -1, 1};
  stages.devices = {{0}, {2}};
  EXPECT_EQ(edges_of(run, stages), (std::vector<std::string>{"d2.j0 <- d0.j0"}));
}

TEST(Dependencies, JobsAddedOutOfOrderAreMatchedInStartOrder) {
  // one_f_one_b(0) with every device's jobs added last to first: finalize()
  // sorts them, and the edges name the sorted positions.
  pipescope::Run run;
  add_job(run, 0, "backward", 1, 50, 60);
  add_job(run, 0, "backward", 0, 30, 40);
  add_job(run, 0, "forward", 1, 10, 20);
  add_job(run, 0, "forward", 0, 0, 10);
  add_job(run, 1, "backward", 1, 38, 48);
  add_job(run, 1, "forward", 1, 28, 38);
  add_job(run, 1, "backward", 0, 22, 28);
  add_job(run, 1, "forward", 0, 12, 22);
  run.finalize();
  EXPECT_EQ(edges_of(run), kOneFOneBEdges);
}

TEST(Dependencies, OneDeviceHasNoneEvenWithChunks) {
  // A single stage is both the first and the last: F c1 would wait for F c0
  // on the last stage and B c0 for B c1 on stage 0, i.e. on the same device,
  // whose jobs run in order anyway.
  pipescope::Run run;
  add_job(run, 0, "forward0", 0, 0, 10);
  add_job(run, 0, "forward1", 0, 10, 20);
  add_job(run, 0, "backward1", 0, 20, 30);
  add_job(run, 0, "backward0", 0, 30, 40);
  run.finalize();
  EXPECT_TRUE(edges_of(run).empty());
}

TEST(Dependencies, EmptyInputs) {
  const pipescope::Run empty;
  EXPECT_TRUE(edges_of(empty).empty());
  // Devices without jobs.
  pipescope::Run idle;
  testing::device_at(idle, 1);
  EXPECT_TRUE(edges_of(idle).empty());
  // No stage, or no step numbering: nothing to match.
  const pipescope::Run run = one_f_one_b(0);
  const std::vector<JobRole> roles = classify_job_roles(run.types);
  const Metrics metrics = compute_metrics(run);
  EXPECT_TRUE(find_dependencies(run, metrics.job_step, StageMap{}, roles).empty());
  EXPECT_TRUE(find_dependencies(run, {}, one_stage_per_device(2), roles).empty());
}

// The compact form: a hand-made list in any order comes back sorted by
// consumer, a consumer listed twice keeps its first producer, and lookups
// find exactly the listed consumers.
TEST(Dependencies, HandMadeListSortedByConsumer) {
  const Dependencies deps(std::vector<Dependency>{
      {{1, 7}, {2, 5}}, {{0, 3}, {1, 2}}, {{3, 1}, {2, 0}}, {{0, 9}, {1, 2}}, {{1, 4}, {2, 3}}});
  EXPECT_EQ(deps.size(), 4u);
  EXPECT_EQ(edges(deps), (std::vector<std::string>{"d1.j2 <- d0.j3", "d2.j0 <- d3.j1",
                                                   "d2.j3 <- d1.j4", "d2.j5 <- d1.j7"}));
  EXPECT_EQ(deps.producer_of({2, 0}), (JobRef{3, 1}));
  EXPECT_EQ(deps.producer_of({2, 5}), (JobRef{1, 7}));
  EXPECT_FALSE(deps.producer_of({2, 1}));
  EXPECT_FALSE(deps.producer_of({2, 6}));  // past the device's last consumer
  EXPECT_FALSE(deps.producer_of({0, 0}));  // a device without consumers
  EXPECT_FALSE(deps.producer_of({9, 0}));  // past the last device
  EXPECT_EQ(deps.to_vector().size(), 4u);
  EXPECT_TRUE(Dependencies().empty());
  EXPECT_TRUE(Dependencies().begin() == Dependencies().end());
}

// More producers than the packed form's 15 slots, or a producer job index of
// 2^28 or more, keep that device's pairs whole: the same answers.
TEST(Dependencies, DevicesThatDoNotPackKeepPairs) {
  std::vector<Dependency> list;
  for (std::uint32_t p = 0; p < 16; ++p) list.push_back({{p + 1, p}, {0, p}});
  list.push_back({{1, std::uint32_t{1} << 28}, {20, 0}});
  list.push_back({{1, (std::uint32_t{1} << 28) - 1}, {21, 3}});
  const Dependencies deps(list);
  EXPECT_EQ(deps.size(), 18u);
  for (std::uint32_t p = 0; p < 16; ++p) EXPECT_EQ(deps.producer_of({0, p}), (JobRef{p + 1, p}));
  EXPECT_EQ(deps.producer_of({20, 0}), (JobRef{1, std::uint32_t{1} << 28}));
  EXPECT_EQ(deps.producer_of({21, 3}), (JobRef{1, (std::uint32_t{1} << 28) - 1}));
  const std::vector<Dependency> back = deps.to_vector();
  ASSERT_EQ(back.size(), 18u);
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(back[i].consumer, (JobRef{0, std::uint32_t(i)}));
  EXPECT_EQ(back[16].consumer, (JobRef{20, 0}));
  EXPECT_EQ(back[17].consumer, (JobRef{21, 3}));
  EXPECT_EQ(back[17].producer, (JobRef{1, (std::uint32_t{1} << 28) - 1}));
}

// A part's own consumers: ranges of jobs per device, packed and wide
// devices alike; the same as filtering the pairs one by one.
TEST(Dependencies, ConsumersInRangesOfJobs) {
  std::vector<Dependency> list;
  for (std::uint32_t j = 0; j < 12; ++j) list.push_back({{0, j}, {1, j}});       // packed
  for (std::uint32_t p = 0; p < 16; ++p) list.push_back({{p + 2, p}, {18, p}});  // wide
  list.push_back({{1, 3}, {19, 7}});
  const Dependencies deps(list);
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {
      {0, 0}, {3, 9}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0},
      {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {5, 40}};
  const Dependencies kept = deps.consumers_in(ranges);
  std::vector<Dependency> expected;
  for (const Dependency& dep : list) {
    const std::size_t d = dep.consumer.device, j = dep.consumer.job;
    if (d < ranges.size() && j >= ranges[d].first && j < ranges[d].second) {
      expected.push_back(dep);
    }
  }
  const std::vector<Dependency> got = kept.to_vector();
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(kept.size(), expected.size());
  std::sort(expected.begin(), expected.end(), [](const Dependency& a, const Dependency& b) {
    return std::pair(a.consumer.device, a.consumer.job) <
           std::pair(b.consumer.device, b.consumer.job);
  });
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].consumer, expected[i].consumer) << i;
    EXPECT_EQ(got[i].producer, expected[i].producer) << i;
  }
  EXPECT_FALSE(kept.producer_of({1, 2}));  // before the range
  EXPECT_EQ(kept.producer_of({1, 8}), (JobRef{0, 8}));
  EXPECT_FALSE(kept.producer_of({19, 7}));  // a device past the ranges keeps none
}

}  // namespace
}  // namespace pipescope
