// The schedule detector on the op orders of every schedule, for many P, M, V:
// the orders come from the simulator's own schedule construction
// (engine/simulate/schedule.cc), not from the detector's generators.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/metrics.h"
#include "analysis/schedule_detect.h"
#include "analysis/stage_map.h"
#include "support/pipeline_sim_run.h"
#include "simulate/schedule.h"

namespace pipescope {
namespace {

std::vector<std::vector<ScheduleStep>> sim_orders(const sim::ScheduleShape& shape) {
  std::vector<std::vector<ScheduleStep>> orders;
  for (int s = 0; s < shape.stages; ++s) {
    std::vector<ScheduleStep> ops;
    for (const sim::ScheduleOp& op : sim::stage_ops(shape, s)) {
      PipelineRole role = PipelineRole::forward;
      if (op.kind == sim::OpKind::backward) role = PipelineRole::backward;
      if (op.kind == sim::OpKind::weight) role = PipelineRole::weight;
      ops.push_back({role, op.micro_batch, op.chunk});
    }
    orders.push_back(std::move(ops));
  }
  return orders;
}

// The answer expected for a simulated shape: where two schedules give the
// same orders (M = 1, or warm-ups clipped by M) the detector prefers 1F1B,
// then FThenB.
PipelineSchedule expected_schedule(const sim::ScheduleShape& shape) {
  auto same_as = [&](sim::ScheduleKind other) {
    sim::ScheduleShape o = shape;
    o.kind = other;
    return sim_orders(o) == sim_orders(shape);
  };
  switch (shape.kind) {
    case sim::ScheduleKind::fthenb:
      return same_as(sim::ScheduleKind::one_f_one_b) ? PipelineSchedule::one_f_one_b
                                                     : PipelineSchedule::fthenb;
    case sim::ScheduleKind::one_f_one_b:
      return PipelineSchedule::one_f_one_b;
    case sim::ScheduleKind::eager_one_f_one_b:
      if (same_as(sim::ScheduleKind::one_f_one_b)) return PipelineSchedule::one_f_one_b;
      if (same_as(sim::ScheduleKind::fthenb)) return PipelineSchedule::fthenb;
      return PipelineSchedule::eager_one_f_one_b;
    case sim::ScheduleKind::interleaved:
      return PipelineSchedule::interleaved;
    case sim::ScheduleKind::zb_h1:
      return PipelineSchedule::zero_bubble;
  }
  return PipelineSchedule::unknown;
}

TEST(ScheduleDetect, EveryScheduleWithManyShapes) {
  int checked = 0;
  for (const auto kind : {sim::ScheduleKind::fthenb, sim::ScheduleKind::one_f_one_b,
                          sim::ScheduleKind::eager_one_f_one_b, sim::ScheduleKind::zb_h1}) {
    for (int p = 1; p <= 8; ++p) {
      for (int m = 1; m <= 12; ++m) {
        const sim::ScheduleShape shape{kind, p, m, 1};
        const ScheduleDetection d = detect_schedule(sim_orders(shape));
        const std::string where = fmt::format("{} P={} M={}", sim::schedule_kind_name(kind), p, m);
        EXPECT_EQ(d.schedule, expected_schedule(shape)) << where;
        EXPECT_TRUE(d.exact) << where;
        EXPECT_EQ(d.stages, p) << where;
        EXPECT_EQ(d.micro_batches, m) << where;
        EXPECT_EQ(d.chunks, 1) << where;
        ++checked;
      }
    }
  }
  for (int p = 1; p <= 6; ++p) {
    for (int groups = 1; groups <= 3; ++groups) {
      for (int v = 2; v <= 4; ++v) {
        const sim::ScheduleShape shape{sim::ScheduleKind::interleaved, p, p * groups, v};
        const ScheduleDetection d = detect_schedule(sim_orders(shape));
        const std::string where = fmt::format("vpp P={} M={} V={}", p, p * groups, v);
        EXPECT_EQ(d.schedule, PipelineSchedule::interleaved) << where;
        EXPECT_TRUE(d.exact) << where;
        EXPECT_EQ(d.stages, p) << where;
        EXPECT_EQ(d.micro_batches, p * groups) << where;
        EXPECT_EQ(d.chunks, v) << where;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 8 * 12 + 6 * 3 * 3);
}

TEST(ScheduleDetect, DistinguishesTheOneFOneBFamilyOnAHandWrittenOrder) {
  // P = 2, M = 4: the last stage runs F B F B ... under 1F1B and Eager1F1B,
  // stage 0 runs 2 forwards first under 1F1B and 3 under Eager1F1B.
  auto F = [](int mb) { return ScheduleStep{PipelineRole::forward, mb, 0}; };
  auto B = [](int mb) { return ScheduleStep{PipelineRole::backward, mb, 0}; };
  const std::vector<ScheduleStep> last = {F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3)};
  EXPECT_EQ(detect_schedule({{F(0), F(1), B(0), F(2), B(1), F(3), B(2), B(3)}, last}).schedule,
            PipelineSchedule::one_f_one_b);
  EXPECT_EQ(detect_schedule({{F(0), F(1), F(2), B(0), F(3), B(1), B(2), B(3)}, last}).schedule,
            PipelineSchedule::eager_one_f_one_b);
  const std::vector<ScheduleStep> gpipe = {F(0), F(1), F(2), F(3), B(0), B(1), B(2), B(3)};
  EXPECT_EQ(detect_schedule({gpipe, gpipe}).schedule, PipelineSchedule::fthenb);
  // Backwards in reverse order: not canonical, but all forwards come first.
  const std::vector<ScheduleStep> reversed = {F(0), F(1), F(2), F(3), B(3), B(2), B(1), B(0)};
  ScheduleDetection d = detect_schedule({reversed, reversed});
  EXPECT_EQ(d.schedule, PipelineSchedule::fthenb);
  EXPECT_FALSE(d.exact);
  // Something else entirely.
  d = detect_schedule({{B(0), F(0), F(1), B(1)}, {F(0), B(0), F(1), B(1)}});
  EXPECT_EQ(d.schedule, PipelineSchedule::unknown);
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(detect_schedule({}).schedule, PipelineSchedule::unknown);
  // Micro-batches numbered from 1 are still the canonical order.
  d = detect_schedule({{F(1), F(2), B(1), F(3), B(2), F(4), B(3), B(4)},
                       {F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4)}});
  EXPECT_EQ(d.schedule, PipelineSchedule::one_f_one_b);
  EXPECT_TRUE(d.exact);
}

TEST(ScheduleDetect, NamesTheFamilyWhenTheOrderIsNotCanonical) {
  auto F = [](int mb, int c) { return ScheduleStep{PipelineRole::forward, mb, c}; };
  auto B = [](int mb, int c) { return ScheduleStep{PipelineRole::backward, mb, c}; };
  // One stage, V = 2: the backward must visit chunk 1 first.
  ScheduleDetection d = detect_schedule({{F(0, 0), F(0, 1), B(0, 0), B(0, 1)}});
  EXPECT_EQ(d.schedule, PipelineSchedule::interleaved);
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(d.chunks, 2);
  d = detect_schedule({{F(0, 0), ScheduleStep{PipelineRole::weight, 0, 0}, B(0, 0)}});
  EXPECT_EQ(d.schedule, PipelineSchedule::zero_bubble);
  EXPECT_FALSE(d.exact);
}

TEST(ScheduleDetect, IdealBubbleRatios) {
  ScheduleDetection d;
  d.stages = 4;
  d.micro_batches = 8;
  d.schedule = PipelineSchedule::one_f_one_b;
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d, {}), 3.0 / 11.0);
  d.schedule = PipelineSchedule::fthenb;
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d, {}), 3.0 / 11.0);
  d.schedule = PipelineSchedule::interleaved;
  d.chunks = 2;
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d, {}), 3.0 / 19.0);
  d.schedule = PipelineSchedule::zero_bubble;
  d.chunks = 1;
  // (P-1)(F+B-W) / ((P-1)(F+B-W) + M(F+B+W)) with F=B=W=10: 30 / (30 + 240).
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d, {10, 10, 10}), 30.0 / 270.0);
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d, {1, 1, 5}), 0.0);  // W covers the bubble
  d.schedule = PipelineSchedule::unknown;
  EXPECT_FALSE(ideal_bubble_ratio(d, {}).has_value());
}

TEST(ScheduleDetect, OnWholeSimulatedRunsWithTypesAsLogged) {
  struct Case {
    sim::ScheduleKind kind;
    int p, m, v;
    PipelineSchedule expected;
  };
  for (const Case& c :
       {Case{sim::ScheduleKind::fthenb, 4, 8, 1, PipelineSchedule::fthenb},
        Case{sim::ScheduleKind::one_f_one_b, 3, 6, 1, PipelineSchedule::one_f_one_b},
        Case{sim::ScheduleKind::eager_one_f_one_b, 4, 8, 1, PipelineSchedule::eager_one_f_one_b},
        Case{sim::ScheduleKind::interleaved, 4, 8, 3, PipelineSchedule::interleaved},
        Case{sim::ScheduleKind::zb_h1, 4, 6, 1, PipelineSchedule::zero_bubble}}) {
    sim::SimConfig config = testing::sim_config(c.kind, c.p, c.m, c.v);
    config.comm_jobs = true;  // send/recv jobs must not disturb the order
    const pipescope::Run run = testing::run_from_simulation(config);
    const Metrics metrics = compute_metrics(run);
    const ScheduleReport report = detect_run_schedule(
        run, metrics, one_stage_per_device(run.devices.size()), classify_job_roles(run.types));
    EXPECT_EQ(report.detection.schedule, c.expected) << sim::schedule_kind_name(c.kind);
    EXPECT_TRUE(report.detection.exact);
    EXPECT_EQ(report.detection.stages, c.p);
    EXPECT_EQ(report.detection.micro_batches, c.m);
    EXPECT_EQ(report.detection.chunks, c.v);
    EXPECT_EQ(report.steps_examined, config.steps);
    EXPECT_EQ(report.steps_agreeing, config.steps);
    ASSERT_TRUE(report.ideal_bubble_ratio.has_value());
    EXPECT_DOUBLE_EQ(*report.excess, metrics.bubble_ratio - *report.ideal_bubble_ratio);
  }
}

TEST(JobRole, ClassifiesTypes) {
  EXPECT_EQ(classify_job_role("forward").role, PipelineRole::forward);
  EXPECT_EQ(classify_job_role("forward3").chunk, 3);
  EXPECT_TRUE(classify_job_role("forward(chunk12)").chunked);
  EXPECT_EQ(classify_job_role("forward(chunk12)").chunk, 12);
  EXPECT_EQ(classify_job_role("backward(chunk1)").role, PipelineRole::backward);
  EXPECT_EQ(classify_job_role("backward_b").role, PipelineRole::backward);
  EXPECT_TRUE(classify_job_role("backward_b").split_backward);
  EXPECT_EQ(classify_job_role("backward_w1").role, PipelineRole::weight);
  EXPECT_EQ(classify_job_role("backward_w1").chunk, 1);
  EXPECT_EQ(classify_job_role("backward_w1_reduce").role, PipelineRole::other);
  EXPECT_EQ(classify_job_role("forward(chunkx)").role, PipelineRole::other);
  EXPECT_EQ(classify_job_role("optimizer").role, PipelineRole::optimizer);
  EXPECT_EQ(classify_job_role("recv_forward").role, PipelineRole::comm);
  EXPECT_EQ(classify_job_role("lr_schedule").role, PipelineRole::other);
}

}  // namespace
}  // namespace pipescope
