// The schedule detector on the op orders of every schedule, for many P, M, V:
// the orders come from the simulator's own schedule construction
// (engine/simulate/schedule.cc), not from the detector's generators.
#include "analysis/schedule_detect.h"

#include <gtest/gtest.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <climits>
#include <stdexcept>
#include <string>

#include "analysis/metrics.h"
#include "analysis/schedule_table.h"
#include "analysis/stage_map.h"
#include "simulate/schedule.h"
#include "simulate/simulator.h"
#include "support/pipeline_sim_run.h"

namespace pipescope {
namespace {

std::vector<ScheduleStep> to_steps(const std::vector<sim::ScheduleOp>& ops) {
  std::vector<ScheduleStep> steps;
  for (const sim::ScheduleOp& op : ops) {
    ScheduleStep step{PipelineRole::forward, op.micro_batch, op.chunk, false};
    if (op.kind == sim::OpKind::backward) step.role = PipelineRole::backward;
    if (op.kind == sim::OpKind::backward_input) {
      step.role = PipelineRole::backward;
      step.split = true;
    }
    if (op.kind == sim::OpKind::weight) step.role = PipelineRole::weight;
    steps.push_back(step);
  }
  return steps;
}

std::vector<std::vector<ScheduleStep>> sim_orders(const sim::ScheduleShape& shape) {
  std::vector<std::vector<ScheduleStep>> orders;
  for (int s = 0; s < shape.stages; ++s) orders.push_back(to_steps(sim::stage_ops(shape, s)));
  return orders;
}

// The table entry each simulated kind transcribes.
ScheduleId table_id(sim::ScheduleKind kind) {
  switch (kind) {
    case sim::ScheduleKind::fthenb:
      return ScheduleId::paddle_fthenb;
    case sim::ScheduleKind::one_f_one_b:
      return ScheduleId::paddle_1f1b;
    case sim::ScheduleKind::interleaved:
      return ScheduleId::paddle_vpp;
    case sim::ScheduleKind::eager_one_f_one_b:
      return ScheduleId::paddle_eager_1f1b;
    case sim::ScheduleKind::zbh1:
      return ScheduleId::paddle_zbh1;
    case sim::ScheduleKind::zbvpp:
      return ScheduleId::paddle_zbvpp;
    case sim::ScheduleKind::dygraph_one_f_one_b:
      return ScheduleId::dygraph_1f1b;
    case sim::ScheduleKind::dygraph_interleave:
      return ScheduleId::dygraph_interleave;
    case sim::ScheduleKind::torch_gpipe:
      return ScheduleId::torch_gpipe;
    case sim::ScheduleKind::torch_one_f_one_b:
      return ScheduleId::torch_1f1b;
    case sim::ScheduleKind::torch_interleaved_1f1b:
      return ScheduleId::torch_interleaved_1f1b;
    case sim::ScheduleKind::torch_interleaved_zero_bubble:
      return ScheduleId::torch_interleaved_zero_bubble;
    case sim::ScheduleKind::torch_zbv_zero_bubble:
      return ScheduleId::torch_zbv_zero_bubble;
    case sim::ScheduleKind::torch_dualpipev:
      return ScheduleId::torch_dualpipev;
    case sim::ScheduleKind::vpp_split_backward:
      return ScheduleId::paddle_vpp_split_backward;
  }
  return ScheduleId::paddle_fthenb;
}

bool valid_for_simulator(const sim::ScheduleShape& shape) {
  try {
    sim::validate_schedule(shape);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// Every entry of the table against the simulator's own transcription, job by
// job, for small P, M and V: the same shapes accepted, the same lists.
TEST(ScheduleTable, EveryListEqualsTheSimulatorsTranscriptionJobByJob) {
  int compared = 0;
  for (const sim::ScheduleKind kind : sim::all_schedule_kinds()) {
    const ScheduleId id = table_id(kind);
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 14; ++m) {
        for (int v = 1; v <= 3; ++v) {
          const sim::ScheduleShape shape{kind, p, m, v};
          const bool simulated = valid_for_simulator(shape);
          for (int s = 0; s < p; ++s) {
            const auto list = schedule_job_list(id, p, m, v, s);
            const std::string where = fmt::format("{} P={} M={} V={} stage {}",
                                                  sim::schedule_kind_name(kind), p, m, v, s);
            ASSERT_EQ(list.has_value(), simulated) << where;
            if (!simulated) continue;
            // The simulator lists ops alone; which of them one action runs
            // together (DualPipeV's OVERLAP_F_B) is checked below.
            std::vector<ScheduleStep> ops = *list;
            for (ScheduleStep& op : ops) op.overlap_next = false;
            ASSERT_EQ(ops, to_steps(sim::stage_ops(shape, s))) << where;
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 4000);
  // ZBVPP has no list: a memory-aware search builds it.
  EXPECT_FALSE(schedule_entry(ScheduleId::paddle_zbvpp).has_job_list);
  EXPECT_FALSE(schedule_job_list(ScheduleId::paddle_zbvpp, 4, 8, 2, 0).has_value());
}

// torch's ScheduleDualPipeV overlaps a forward and a full backward in one
// OVERLAP_F_B action in its main step (both pairs of every round but the
// last rank's first F0) and in step 5 (the F1B0 pair): a forward marked
// overlap_next followed by a whole backward.
TEST(ScheduleTable, DualPipeVMarksItsOverlappedActions) {
  for (int p = 1; p <= 5; ++p) {
    for (int m = 2 * p; m <= 12; ++m) {
      for (int r = 0; r < p; ++r) {
        const auto list = schedule_job_list(ScheduleId::torch_dualpipev, p, m, 2, r);
        ASSERT_TRUE(list.has_value());
        const int step_4 = m - 2 * p + r + 1;
        const int expected = 2 * step_4 - (r == p - 1 && step_4 > 0 ? 1 : 0) + (p - r - 1);
        int pairs = 0;
        for (std::size_t i = 0; i < list->size(); ++i) {
          if (!(*list)[i].overlap_next) continue;
          ++pairs;
          ASSERT_LT(i + 1, list->size());
          EXPECT_EQ((*list)[i].role, PipelineRole::forward);
          EXPECT_EQ((*list)[i + 1].role, PipelineRole::backward);
          EXPECT_FALSE((*list)[i + 1].split);
          EXPECT_NE((*list)[i].chunk, (*list)[i + 1].chunk);
        }
        EXPECT_EQ(pairs, expected) << fmt::format("P={} M={} rank {}", p, m, r);
      }
    }
  }
  // No other schedule overlaps.
  for (const ScheduleEntry& e : schedule_table()) {
    if (e.id == ScheduleId::torch_dualpipev || !e.has_job_list) continue;
    for (int s = 0; s < 4; ++s) {
      const auto list = schedule_job_list(e.id, 4, 4, e.min_chunks, s);
      if (!list) continue;
      for (const ScheduleStep& op : *list) EXPECT_FALSE(op.overlap_next) << e.name;
    }
  }
}

// Paddle's VPP pass with split_backward (M == P), by hand for P = M = 2,
// V = 2, stage 0: forwards F0 F1 of chunk 0 then chunk 1; backward_b of
// chunk 1 then chunk 0; backward_w of chunk 1 (mb 0, 1) then chunk 0.
TEST(ScheduleTable, PaddleVppSplitBackwardWrittenOutByHand) {
  auto F = [](int mb, int c) { return ScheduleStep{PipelineRole::forward, mb, c, false}; };
  auto b = [](int mb, int c) { return ScheduleStep{PipelineRole::backward, mb, c, true}; };
  auto w = [](int mb, int c) { return ScheduleStep{PipelineRole::weight, mb, c, false}; };
  const std::vector<ScheduleStep> expected = {F(0, 0), F(1, 0), F(0, 1), F(1, 1), b(0, 1), b(1, 1),
                                              b(0, 0), b(1, 0), w(0, 1), w(1, 1), w(0, 0), w(1, 0)};
  EXPECT_EQ(schedule_job_list(ScheduleId::paddle_vpp_split_backward, 2, 2, 2, 0), expected);
  EXPECT_EQ(schedule_job_list(ScheduleId::paddle_vpp_split_backward, 2, 2, 2, 1), expected);
  // Only M == P splits (real_split_backward).
  EXPECT_FALSE(schedule_job_list(ScheduleId::paddle_vpp_split_backward, 2, 4, 2, 0).has_value());
  const ScheduleEntry& e = schedule_entry(ScheduleId::paddle_vpp_split_backward);
  EXPECT_EQ(e.name, "VPP");
  EXPECT_EQ(e.family, ScheduleFamily::interleaved);
}

TEST(ScheduleTable, EveryEntryNamesItsSource) {
  std::size_t i = 0;
  for (const ScheduleEntry& e : schedule_table()) {
    EXPECT_EQ(static_cast<std::size_t>(e.id), i++);
    EXPECT_NE(e.source.find(".py, "), std::string_view::npos) << e.name;
    EXPECT_NE(e.source.find("20"), std::string_view::npos) << e.name;  // a year
    EXPECT_FALSE(e.requirement.empty()) << e.name;
  }
  EXPECT_EQ(i, sim::all_schedule_kinds().size());
}

// Paddle's ZBH1 for P = 4, M = 8, written out by hand from
// PipelineZeroBubblePipelinePass._create_job_list (b = backward_b,
// B = backward, w = backward_w).
TEST(ScheduleTable, PaddleZbh1WrittenOutByHand) {
  auto F = [](int mb) { return ScheduleStep{PipelineRole::forward, mb, 0, false}; };
  auto B = [](int mb) { return ScheduleStep{PipelineRole::backward, mb, 0, false}; };
  auto b = [](int mb) { return ScheduleStep{PipelineRole::backward, mb, 0, true}; };
  auto w = [](int mb) { return ScheduleStep{PipelineRole::weight, mb, 0, false}; };
  // Stage 2: P-s = 2 forwards; s = 2 pairs (b, F); M-P = 4 pairs (B, F);
  // P-s-1 = 1 backward; b7 w7; then w0 w1.
  EXPECT_EQ(*schedule_job_list(ScheduleId::paddle_zbh1, 4, 8, 1, 2),
            (std::vector<ScheduleStep>{F(0), F(1), b(0), F(2), b(1), F(3), B(2), F(4), B(3), F(5),
                                       B(4), F(6), B(5), F(7), B(6), b(7), w(7), w(0), w(1)}));
  // Stage 0: 4 forwards, (B, F) x 4, 3 backwards, and a full backward at the end.
  EXPECT_EQ(*schedule_job_list(ScheduleId::paddle_zbh1, 4, 8, 1, 0),
            (std::vector<ScheduleStep>{F(0), F(1), F(2), F(3), B(0), F(4), B(1), F(5), B(2), F(6),
                                       B(3), F(7), B(4), B(5), B(6), B(7)}));
  // Stage 3: 1 forward, (b, F) x 3, (B, F) x 4, no full backward, b7 w7, w0 w1 w2.
  EXPECT_EQ(
      *schedule_job_list(ScheduleId::paddle_zbh1, 4, 8, 1, 3),
      (std::vector<ScheduleStep>{F(0), b(0), F(1), b(1), F(2), b(2), F(3), B(3), F(4), B(4),
                                 F(5), B(5), F(6), B(6), F(7), b(7), w(7), w(0), w(1), w(2)}));
}

// The ideal under uniform costs is the simulated list; the closed forms are
// cross-checks where the list reaches them.
TEST(ScheduleTable, UniformIdealsAgainstTheClosedForms) {
  for (int p = 1; p <= 8; ++p) {
    for (int m = p; m <= 16; ++m) {
      const double one_f_one_b = (p - 1.0) / (m + p - 1.0);
      for (const ScheduleId id :
           {ScheduleId::paddle_fthenb, ScheduleId::paddle_1f1b, ScheduleId::dygraph_1f1b,
            ScheduleId::torch_gpipe, ScheduleId::torch_1f1b}) {
        EXPECT_NEAR(*uniform_bubble_ratio(id, p, m, 1), one_f_one_b, 1e-12)
            << schedule_entry(id).framework << " " << schedule_entry(id).name << " P=" << p
            << " M=" << m;
      }
      if (m % p == 0 && m > p) {
        for (int v = 2; v <= 3; ++v) {
          const double interleaved = (p - 1.0) / (v * m + p - 1.0);
          EXPECT_NEAR(*uniform_bubble_ratio(ScheduleId::paddle_vpp, p, m, v), interleaved, 1e-12)
              << "VPP P=" << p << " M=" << m << " V=" << v;
        }
      }
    }
  }
  // The figures for Paddle's ZBH1 list, and the paper's ZB-H1 form
  // (P-1)/(3M+P-1) with F = B = W, which Paddle's list does not reach.
  EXPECT_NEAR(*uniform_bubble_ratio(ScheduleId::paddle_zbh1, 4, 8, 1), 0.172, 5e-4);
  EXPECT_NEAR(*uniform_bubble_ratio(ScheduleId::paddle_zbh1, 8, 16, 1), 0.213, 5e-4);
  EXPECT_GT(*uniform_bubble_ratio(ScheduleId::paddle_zbh1, 4, 8, 1), 3.0 / 27.0 + 0.05);
  // ZBVPP has no ideal.
  EXPECT_FALSE(uniform_bubble_ratio(ScheduleId::paddle_zbvpp, 4, 8, 2).has_value());
}

// The ideal equals the simulator's own timing of its own transcription with
// equal costs, no jitter and no latency (an optimizer of 1 ns).
TEST(ScheduleTable, UniformIdealEqualsTheSimulatorsTiming) {
  int checked = 0;
  for (const sim::ScheduleKind kind : sim::all_schedule_kinds()) {
    for (const auto [p, m, v] : {std::array{2, 4, 2}, std::array{4, 8, 2}, std::array{3, 9, 1},
                                 std::array{4, 12, 2}, std::array{3, 6, 3}}) {
      const int chunks = sim::v_shape(kind) ? 2 : (sim::has_chunks(kind) ? v : 1);
      const sim::ScheduleShape shape{kind, p, m, chunks};
      if (!valid_for_simulator(shape)) continue;
      sim::SimConfig config;
      config.shape = shape;
      config.steps = 1;
      config.resolution_ns = 1;
      config.jitter = 0;
      config.p2p_latency_ns = 0;
      config.optimizer_ns = 1;
      config.costs = {1'000'000, 1'000'000, 1'000'000};  // F = B(input) = W; whole B = 2
      const sim::SimulatedRun run = sim::simulate(config);
      std::int64_t first = INT64_MAX, last = 0, busy = 0;
      for (const auto& jobs : run.jobs) {
        for (const sim::SimJob& job : jobs) {
          first = std::min(first, job.start_ns);
          last = std::max(last, job.end_ns);
          busy += job.end_ns - job.start_ns;
        }
      }
      const double simulated =
          1.0 -
          static_cast<double>(busy) / (static_cast<double>(p) * static_cast<double>(last - first));
      const auto ideal = uniform_bubble_ratio(table_id(kind), p, m, chunks);
      ASSERT_TRUE(ideal.has_value()) << sim::schedule_kind_name(kind);
      EXPECT_NEAR(*ideal, simulated, 1e-5)
          << sim::schedule_kind_name(kind) << " P=" << p << " M=" << m << " V=" << chunks;
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(ScheduleDetect, NamesEveryTableEntryOnItsOwnListWithTheFrameworks) {
  int checked = 0;
  for (const sim::ScheduleKind kind : sim::all_schedule_kinds()) {
    for (int p = 1; p <= 6; ++p) {
      for (int m = 1; m <= 12; ++m) {
        for (int v = 1; v <= 3; ++v) {
          const sim::ScheduleShape shape{kind, p, m, v};
          if (!valid_for_simulator(shape)) continue;
          const ScheduleDetection d = detect_schedule(sim_orders(shape));
          const std::string where =
              fmt::format("{} P={} M={} V={}", sim::schedule_kind_name(kind), p, m, v);
          const ScheduleId id = table_id(kind);
          EXPECT_TRUE(d.exact) << where;
          EXPECT_NE(std::find(d.matches.begin(), d.matches.end(), id), d.matches.end()) << where;
          ASSERT_FALSE(d.matches.empty()) << where;
          EXPECT_EQ(d.id, d.matches.front()) << where;
          EXPECT_EQ(d.stages, p) << where;
          EXPECT_EQ(d.micro_batches, m) << where;
          const std::string frameworks = detection_frameworks(d);
          EXPECT_NE(frameworks.find(fmt::format("{} {}", schedule_entry(id).framework,
                                                schedule_entry(id).name)),
                    std::string::npos)
              << where << ": " << frameworks;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(ScheduleDetect, HandWrittenOrders) {
  auto F = [](int mb) { return ScheduleStep{PipelineRole::forward, mb, 0}; };
  auto B = [](int mb) { return ScheduleStep{PipelineRole::backward, mb, 0}; };
  // P = 2, M = 4: the last stage runs F B F B ... under 1F1B; stage 0 runs 2
  // forwards first under 1F1B, 3 under Eager1F1B (which needs M >= 2P-1 = 3).
  const std::vector<ScheduleStep> last = {F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3)};
  ScheduleDetection d = detect_schedule({{F(0), F(1), B(0), F(2), B(1), F(3), B(2), B(3)}, last});
  EXPECT_EQ(d.id, ScheduleId::paddle_1f1b);
  EXPECT_EQ(d.matches, (std::vector<ScheduleId>{ScheduleId::paddle_1f1b, ScheduleId::dygraph_1f1b,
                                                ScheduleId::torch_1f1b}));
  EXPECT_EQ(detection_frameworks(d),
            "PaddlePaddle static 1F1B = PaddlePaddle dygraph 1F1B = PyTorch 1F1B");
  EXPECT_EQ(detect_schedule({{F(0), F(1), F(2), B(0), F(3), B(1), B(2), B(3)}, last}).id,
            ScheduleId::paddle_eager_1f1b);
  const std::vector<ScheduleStep> gpipe = {F(0), F(1), F(2), F(3), B(0), B(1), B(2), B(3)};
  d = detect_schedule({gpipe, gpipe});
  EXPECT_EQ(d.id, ScheduleId::paddle_fthenb);
  EXPECT_EQ(detection_frameworks(d), "PaddlePaddle static FThenB = PyTorch GPipe");
  // Backwards in reverse order: no list, but all forwards come first.
  const std::vector<ScheduleStep> reversed = {F(0), F(1), F(2), F(3), B(3), B(2), B(1), B(0)};
  d = detect_schedule({reversed, reversed});
  EXPECT_EQ(d.family, ScheduleFamily::fthenb);
  EXPECT_FALSE(d.id.has_value());
  EXPECT_EQ(detection_name(d), "fthenb");
  EXPECT_FALSE(d.exact);
  EXPECT_FALSE(ideal_bubble_ratio(d).has_value());
  // Something else entirely.
  d = detect_schedule({{B(0), F(0), F(1), B(1)}, {F(0), B(0), F(1), B(1)}});
  EXPECT_FALSE(d.family.has_value());
  EXPECT_EQ(detection_name(d), "unknown");
  EXPECT_FALSE(detect_schedule({}).family.has_value());
  // Micro-batches numbered from 1 are still the list.
  d = detect_schedule({{F(1), F(2), B(1), F(3), B(2), F(4), B(3), B(4)},
                       {F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4)}});
  EXPECT_EQ(d.id, ScheduleId::paddle_1f1b);
  EXPECT_TRUE(d.exact);
  EXPECT_DOUBLE_EQ(*ideal_bubble_ratio(d), 1.0 / 5.0);  // (P-1)/(M+P-1)
}

// The order `simulate --schedule zbh1` wrote before the table (1F1B's
// warm-up, B for every micro-batch, P-s-1 W's held back): not ZB-H1, not any
// list of the table; its types still show the zero-bubble family.
TEST(ScheduleDetect, TheFormerInventedZbh1OrderIsNotZbh1) {
  const int p = 4, m = 8;
  std::vector<std::vector<ScheduleStep>> orders;
  for (int s = 0; s < p; ++s) {
    const int warmup = p - s - 1;
    std::vector<ScheduleStep> ops;
    int next_w = 0;
    auto f = [&](int mb) { ops.push_back({PipelineRole::forward, mb, 0, false}); };
    auto b = [&](int mb) { ops.push_back({PipelineRole::backward, mb, 0, true}); };
    auto w = [&] { ops.push_back({PipelineRole::weight, next_w++, 0, false}); };
    for (int i = 0; i < warmup; ++i) f(i);
    for (int i = 0; i < m - warmup; ++i) {
      f(warmup + i);
      b(i);
      if (i >= warmup) w();
    }
    for (int i = m - warmup; i < m; ++i) {
      b(i);
      w();
    }
    while (next_w < m) w();
    orders.push_back(ops);
  }
  const ScheduleDetection d = detect_schedule(orders);
  EXPECT_FALSE(d.exact);
  EXPECT_FALSE(d.id.has_value());
  EXPECT_EQ(d.family, ScheduleFamily::zero_bubble);
  EXPECT_EQ(detection_name(d), "zero-bubble");
  EXPECT_FALSE(ideal_bubble_ratio(d).has_value());
  // Its uniform-cost bubble is exactly 1F1B's, (P-1)/(M+P-1) = 3/11: not a
  // zero-bubble schedule at all.
  EXPECT_NEAR(*simulated_bubble_ratio(orders, StagePlacement::looped, 1, OpCosts{}), 3.0 / 11.0,
              1e-12);
}

TEST(ScheduleDetect, ChunkedSplitTypesAreZbvppWithoutAnIdeal) {
  auto F = [](int mb, int c) { return ScheduleStep{PipelineRole::forward, mb, c, false}; };
  auto b = [](int mb, int c) { return ScheduleStep{PipelineRole::backward, mb, c, true}; };
  auto w = [](int mb, int c) { return ScheduleStep{PipelineRole::weight, mb, c, false}; };
  // One stage, V = 2, an order no listed schedule writes.
  const ScheduleDetection d =
      detect_schedule({{F(0, 0), F(0, 1), b(0, 1), b(0, 0), w(0, 0), w(0, 1)}});
  EXPECT_EQ(d.id, ScheduleId::paddle_zbvpp);
  EXPECT_EQ(detection_name(d), "ZBVPP");
  EXPECT_EQ(detection_frameworks(d), "PaddlePaddle static ZBVPP");
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(d.chunks, 2);
  EXPECT_FALSE(ideal_bubble_ratio(d).has_value());
  // The same types in the order of Paddle's VPP pass with split_backward
  // (every forward, every backward_b, then backward_w from the last chunk)
  // are VPP, not ZBVPP.
  const ScheduleDetection vpp =
      detect_schedule({{F(0, 0), F(0, 1), b(0, 1), b(0, 0), w(0, 1), w(0, 0)}});
  EXPECT_TRUE(vpp.exact);
  EXPECT_EQ(vpp.id, ScheduleId::paddle_vpp_split_backward);
  EXPECT_EQ(detection_name(vpp), "VPP");
  EXPECT_EQ(detection_frameworks(vpp), "PaddlePaddle static VPP with split_backward");
  EXPECT_EQ(vpp.family, ScheduleFamily::interleaved);
  EXPECT_TRUE(ideal_bubble_ratio(vpp).has_value());
  // Chunked types alone: the interleaved family.
  auto B = [](int mb, int c) { return ScheduleStep{PipelineRole::backward, mb, c, false}; };
  const ScheduleDetection i = detect_schedule({{F(0, 0), F(0, 1), B(0, 0), B(0, 1)}});
  EXPECT_EQ(i.family, ScheduleFamily::interleaved);
  EXPECT_FALSE(i.exact);
}

TEST(ScheduleDetect, OnWholeSimulatedRunsWithJitterAndTypesAsLogged) {
  struct Case {
    sim::ScheduleKind kind;
    int p, m, v;
    std::vector<ScheduleId> matches;
  };
  const std::vector<Case> cases = {
      {sim::ScheduleKind::fthenb, 4, 8, 1, {ScheduleId::paddle_fthenb, ScheduleId::torch_gpipe}},
      {sim::ScheduleKind::torch_one_f_one_b,
       3,
       6,
       1,
       {ScheduleId::paddle_1f1b, ScheduleId::dygraph_1f1b, ScheduleId::torch_1f1b}},
      // With one chunk the interleaved lists warm up with 2(P-s-1) forwards:
      // Eager1F1B's list.
      {sim::ScheduleKind::eager_one_f_one_b,
       3,
       8,
       1,
       {ScheduleId::paddle_eager_1f1b, ScheduleId::dygraph_interleave,
        ScheduleId::torch_interleaved_1f1b}},
      {sim::ScheduleKind::interleaved,
       4,
       8,
       3,
       {ScheduleId::paddle_vpp, ScheduleId::dygraph_interleave,
        ScheduleId::torch_interleaved_1f1b}},
      // M == P: Paddle's VPP pass makes every forward warm-up, the others do not.
      {sim::ScheduleKind::torch_interleaved_1f1b,
       4,
       4,
       2,
       {ScheduleId::dygraph_interleave, ScheduleId::torch_interleaved_1f1b}},
      {sim::ScheduleKind::dygraph_interleave, 4, 10, 2, {ScheduleId::dygraph_interleave}},
      {sim::ScheduleKind::zbh1, 4, 6, 1, {ScheduleId::paddle_zbh1}},
      {sim::ScheduleKind::torch_interleaved_zero_bubble,
       4,
       8,
       2,
       {ScheduleId::torch_interleaved_zero_bubble}},
      {sim::ScheduleKind::torch_zbv_zero_bubble, 4, 8, 2, {ScheduleId::torch_zbv_zero_bubble}},
      {sim::ScheduleKind::torch_dualpipev, 3, 8, 2, {ScheduleId::torch_dualpipev}},
  };
  for (const Case& c : cases) {
    sim::SimConfig config = testing::sim_config(c.kind, c.p, c.m, c.v);
    config.comm_jobs = true;  // send/recv jobs must not disturb the order
    config.jitter = 0.3;
    const pipescope::Run run = testing::run_from_simulation(config);
    const Metrics metrics = compute_metrics(run);
    const ScheduleReport report = detect_run_schedule(
        run, metrics, one_stage_per_device(run.devices.size()), classify_job_roles(run.types));
    const std::string where = std::string(sim::schedule_kind_name(c.kind));
    EXPECT_EQ(report.detection.matches, c.matches) << where;
    EXPECT_TRUE(report.detection.exact) << where;
    EXPECT_EQ(report.detection.stages, c.p) << where;
    EXPECT_EQ(report.detection.micro_batches, c.m) << where;
    EXPECT_EQ(report.detection.chunks, c.v) << where;
    EXPECT_EQ(report.steps_examined, config.steps) << where;
    EXPECT_EQ(report.steps_agreeing, config.steps) << where;
    ASSERT_TRUE(report.ideal_bubble_ratio.has_value()) << where;
    EXPECT_EQ(*report.ideal_bubble_ratio, *uniform_bubble_ratio(c.matches.front(), c.p, c.m, c.v));
    EXPECT_DOUBLE_EQ(*report.excess, metrics.bubble_ratio - *report.ideal_bubble_ratio);
  }
}

// Detection runs blocks of steps as parallel tasks, each with its own votes;
// the votes are combined in step order, so the detection seen first wins a
// tie whatever the thread count. Of 200 steps (several blocks), 100 have two
// forwards of stage 0 swapped and 100 are 1F1B: whichever half comes first
// wins the tie, on one thread and on eight.
TEST(ScheduleDetect, VotesOverBlocksOfStepsAreTheSameOnOneThreadAndOnEight) {
  sim::SimConfig config = testing::sim_config(sim::ScheduleKind::one_f_one_b, 4, 8, 1);
  config.steps = 200;
  config.comm_jobs = true;
  const pipescope::Run original = testing::run_from_simulation(config);
  const std::vector<JobRole> roles = classify_job_roles(original.types);
  const Metrics original_metrics = compute_metrics(original);
  ASSERT_EQ(original_metrics.steps.size(), 200u);
  const StageMap stages = one_stage_per_device(original.devices.size());
  // Steps first .. first + 99 with the second and third forwards of stage 0 swapped.
  const auto swapped_from = [&](std::size_t first) {
    pipescope::Run run = original;
    auto& jobs = run.devices[0].jobs;
    for (std::size_t k = first; k < first + 100; ++k) {
      std::vector<std::size_t> forwards;
      for (std::size_t i = 0; i < jobs.size(); ++i) {
        if (original_metrics.job_step[0][i] == static_cast<std::int64_t>(k) &&
            roles[jobs[i].type].role == PipelineRole::forward) {
          forwards.push_back(i);
        }
      }
      if (forwards.size() < 3) ADD_FAILURE() << "step " << k;
      if (forwards.size() >= 3)
        std::swap(jobs[forwards[1]].micro_batch, jobs[forwards[2]].micro_batch);
    }
    return run;
  };
  const auto detect_on = [&](const pipescope::Run& run, int threads) {
    const Metrics metrics = compute_metrics(run);
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                              static_cast<std::size_t>(threads));
    tbb::task_arena arena(threads);
    ScheduleReport report;
    arena.execute([&] { report = detect_run_schedule(run, metrics, stages, roles); });
    return report;
  };
  for (const std::size_t first : {std::size_t{0}, std::size_t{100}}) {
    const pipescope::Run run = swapped_from(first);
    const ScheduleReport one = detect_on(run, 1);
    const ScheduleReport many = detect_on(run, 8);
    EXPECT_EQ(one.steps_examined, 200) << first;
    EXPECT_EQ(one.steps_agreeing, 100) << first;
    // Swapped first: no list matches; 1F1B first: the exact match wins.
    EXPECT_EQ(one.detection.exact, first == 100) << first;
    EXPECT_EQ(one.detection.matches.empty(), first == 0) << first;
    EXPECT_EQ(one.detection.micro_batches, 8) << first;
    EXPECT_EQ(many.steps_examined, one.steps_examined) << first;
    EXPECT_EQ(many.steps_agreeing, one.steps_agreeing) << first;
    EXPECT_TRUE(many.detection == one.detection) << first;
    EXPECT_EQ(many.means.forward_ns, one.means.forward_ns) << first;
    EXPECT_EQ(many.means.backward_ns, one.means.backward_ns) << first;
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
  // Paddle's VPP with split_backward: the weight half that runs sharding's reduce.
  EXPECT_EQ(classify_job_role("backward_w1_reduce").role, PipelineRole::weight);
  EXPECT_EQ(classify_job_role("backward_w1_reduce").chunk, 1);
  EXPECT_EQ(classify_job_role("backward_w1_reduced").role, PipelineRole::other);
  EXPECT_EQ(classify_job_role("forward(chunkx)").role, PipelineRole::other);
  EXPECT_EQ(classify_job_role("optimizer").role, PipelineRole::optimizer);
  EXPECT_EQ(classify_job_role("recv_forward").role, PipelineRole::comm);
  EXPECT_EQ(classify_job_role("lr_schedule").role, PipelineRole::other);
}

// Paddle's 1F1B with enable_backward_forward_overlap: `forward(chunkK)` beside
// a whole `forward` is piece K of one op of chunk 0; the same types in an
// interleaved run (no whole type) are chunks.
TEST(JobRole, OverlapPiecesBesideWholeTypesAreOneOp) {
  TypeTable overlap;
  for (const char* t : {"forward", "backward", "forward(chunk0)", "backward(chunk0)",
                        "forward(chunk1)", "backward(chunk1)", "optimizer"}) {
    overlap.intern(t);
  }
  const std::vector<JobRole> roles = classify_job_roles(overlap);
  EXPECT_EQ(roles[0].piece, -1);
  EXPECT_EQ(roles[2].role, PipelineRole::forward);
  EXPECT_EQ(roles[2].piece, 0);
  EXPECT_EQ(roles[4].piece, 1);
  EXPECT_EQ(roles[5].role, PipelineRole::backward);
  EXPECT_EQ(roles[5].piece, 1);
  for (const JobRole& r : roles) {
    EXPECT_EQ(r.chunk, 0);
    EXPECT_FALSE(r.chunked);
  }
  TypeTable interleaved;
  for (const char* t : {"forward(chunk0)", "backward(chunk0)", "forward(chunk1)",
                        "backward(chunk1)", "optimizer"}) {
    interleaved.intern(t);
  }
  const std::vector<JobRole> chunks = classify_job_roles(interleaved);
  EXPECT_EQ(chunks[2].chunk, 1);
  EXPECT_TRUE(chunks[2].chunked);
  EXPECT_EQ(chunks[2].piece, -1);
  // Digit chunks (Paddle's VPP pass) are never pieces.
  TypeTable digits;
  for (const char* t : {"forward", "forward1"}) digits.intern(t);
  EXPECT_EQ(classify_job_roles(digits)[1].chunk, 1);
}

}  // namespace
}  // namespace pipescope
