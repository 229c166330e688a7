#include "analysis/kernel_view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ingest/span_union.h"

namespace pipescope {
namespace {

CommKernel kernel(std::int64_t start, std::int64_t end, std::int64_t step, CommOp op,
                  std::string collective, std::vector<int> group, int peer = -1) {
  CommKernel c;
  c.start = start;
  c.end = end;
  c.step = step;
  c.op = op;
  if (op == CommOp::send || op == CommOp::recv) {
    c.op = CommOp::point_to_point;
    c.p2p = {{op, peer}};
  }
  c.collective = std::move(collective);
  c.group_name = "pp";
  c.group_ranks = std::move(group);
  return c;
}

RankKernels rank(int global, std::vector<TimeSpan> compute, std::vector<CommKernel> comm,
                 std::vector<RankKernels::StepExtent> steps) {
  RankKernels r;
  r.global_rank = global;
  r.device = global;
  r.compute = std::move(compute);
  r.comm = std::move(comm);
  r.steps = std::move(steps);
  r.step_spans = true;
  r.activities = r.compute.size() + r.comm.size();
  return r;
}

// Worked example (times in ns). Rank 0 computes [0,40), sends to rank 1 with
// a kernel [40,70), computes [70,100). Rank 1 computes [0,10), starts its recv
// [20,70) early, computes [60,100) (a kernel on another stream overlapping the
// recv's end). Peers: the send and the recv (k-th send 0->1, no Comms Id).
//  - Rank 0's send: its peer started at 20, before it: no wait, transfer 30.
//  - Rank 1's recv waits [20,40) for the send; transfers [40,70), of which
//    [60,70) is under compute. Window [0,100): rank 1 compute 50, transfer 20,
//    wait 20, idle 10 (the gap [10,20)).
TEST(KernelView, SplitsTheWindowByPrecedence) {
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(0, {{0, 40}, {70, 100}},
                       {kernel(40, 70, 1, CommOp::send, "send", {0, 1}, 1)}, {{1, 0, 100}}));
  ranks.push_back(rank(1, {{0, 10}, {60, 100}},
                       {kernel(20, 70, 1, CommOp::recv, "recv", {0, 1}, 0)}, {{1, 0, 100}}));
  const KernelView v = compute_kernel_view(ranks);
  ASSERT_TRUE(v.available);
  ASSERT_EQ(v.steps.size(), 1u);
  EXPECT_TRUE(v.steps[0].complete);
  EXPECT_EQ(v.steps[0].start, 0);
  EXPECT_EQ(v.steps[0].end, 100);
  const KernelSplit& r0 = v.ranks[0].steps[0].split;
  EXPECT_EQ(r0.compute, 70);
  EXPECT_EQ(r0.transfer, 30);
  EXPECT_EQ(r0.wait, 0);
  EXPECT_EQ(r0.idle, 0);
  const KernelSplit& r1 = v.ranks[1].steps[0].split;
  EXPECT_EQ(r1.compute, 50);
  EXPECT_EQ(r1.transfer, 20);
  EXPECT_EQ(r1.wait, 20);
  EXPECT_EQ(r1.idle, 10);
  EXPECT_EQ(v.ranks[1].steps[0].most_waited_on, 0);
  EXPECT_EQ(v.ranks[0].steps[0].most_waited_on, -1);
  EXPECT_EQ(v.comm_kernels_without_peers, 0u);
  EXPECT_DOUBLE_EQ(v.bubble_ratio(), 80.0 / 200.0);
  EXPECT_TRUE(v.warnings.empty());
}

// Comms Id above 2^63 pairs kernels whatever their order; a collective needs
// every member of its group; a kernel without peers leaves its rank's split
// unknown (its time held in transfer, never shown as measured).
TEST(KernelView, MatchesByCommsIdAndCountsKernelsWithoutPeers) {
  std::vector<RankKernels> ranks;
  CommKernel a = kernel(0, 50, 0, CommOp::collective, "allreduce", {0, 1});
  a.comms_id = 18'446'744'073'709'551'557u;
  CommKernel b = kernel(30, 50, 0, CommOp::collective, "allreduce", {0, 1});
  b.comms_id = 18'446'744'073'709'551'557u;
  // A broadcast over three ranks whose third is not in the files.
  CommKernel lonely = kernel(60, 80, 0, CommOp::collective, "broadcast", {0, 1, 2});
  ranks.push_back(rank(0, {}, {a, lonely}, {{0, 0, 80}}));
  ranks.push_back(rank(1, {}, {b, lonely}, {{0, 30, 80}}));
  const KernelView v = compute_kernel_view(ranks);
  const KernelSplit& r0 = v.ranks[0].steps[0].split;
  EXPECT_EQ(r0.wait, 30);           // [0,30) until rank 1 starts
  EXPECT_EQ(r0.transfer, 20 + 20);  // [30,50) and the lonely broadcast
  EXPECT_EQ(r0.idle, 10);
  EXPECT_FALSE(r0.comm_split_known);
  EXPECT_FALSE(v.total.comm_split_known);
  EXPECT_EQ(v.comm_kernels_without_peers, 2u);
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(v.warnings[0].code, WarningCode::comm_kernels_without_peers);
  EXPECT_NE(v.warnings[0].message.find("ranks 0, 1 is not split"), std::string::npos)
      << v.warnings[0].message;
}

CommKernel batched(std::int64_t start, std::int64_t end, std::vector<PeerOp> ops) {
  CommKernel c = kernel(start, end, 1, CommOp::point_to_point, "send/recv", {});
  c.p2p = std::move(ops);
  return c;
}

// Megatron's batched exchange: rank 1 receives from 0 and sends to 2 in one
// SendRecv kernel [30,50), which waits for both ends: rank 2's recv starts
// last (40). Each operation meets its own other end, wherever that end was
// batched. A batched kernel whose every operation did not meet its end has
// no peers (a partial wait would look measured).
TEST(KernelView, BatchedKernelWaitsForEveryOperationsPeer) {
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(0, {}, {batched(10, 50, {{CommOp::send, 1}})}, {{1, 0, 50}}));
  ranks.push_back(
      rank(1, {}, {batched(30, 50, {{CommOp::recv, 0}, {CommOp::send, 2}})}, {{1, 0, 50}}));
  ranks.push_back(rank(2, {}, {batched(40, 50, {{CommOp::recv, 1}})}, {{1, 0, 50}}));
  const KernelView v = compute_kernel_view(ranks);
  EXPECT_EQ(v.comm_kernels_without_peers, 0u);
  EXPECT_EQ(v.ranks[0].steps[0].split.wait, 20);  // [10,30): rank 1 starts at 30
  EXPECT_EQ(v.ranks[0].most_waited_on, 1);
  EXPECT_EQ(v.ranks[1].steps[0].split.wait, 10);  // [30,40): rank 2 starts at 40
  EXPECT_EQ(v.ranks[1].steps[0].split.transfer, 10);
  EXPECT_EQ(v.ranks[1].most_waited_on, 2);
  EXPECT_EQ(v.ranks[2].steps[0].split.wait, 0);
  EXPECT_EQ(v.ranks[2].most_waited_on, -1);
  EXPECT_EQ(v.layout.source, KernelLayoutSource::point_to_point);
  EXPECT_EQ(v.layout.pp, 3);

  // Rank 1's send goes to a rank 3 whose trace is not given.
  ranks[1].comm[0].p2p[1].peer = 3;
  const KernelView partial = compute_kernel_view(ranks);
  EXPECT_FALSE(partial.ranks[1].total.comm_split_known);
  EXPECT_TRUE(partial.ranks[0].total.comm_split_known);  // its send met rank 1's recv
  EXPECT_EQ(partial.ranks[0].steps[0].split.wait, 20);
}

// The order rules: where no trace names a peer, a world of two ranks (its
// world_size written) leaves each kernel one rank to have talked to; a
// send/recv naming its group of two members has the other member. Without
// either, the split stays unknown.
TEST(KernelView, OrderRulesFixPeersOnlyWhereTheStructureLeavesOne) {
  auto unnamed = [](std::int64_t start, std::int64_t end) {
    CommKernel c = kernel(start, end, 1, CommOp::point_to_point, "", {});
    c.group_name.clear();
    return c;  // PyTorch 2.1 and earlier: a SendRecv kernel naming nothing
  };
  auto collective = [](std::int64_t start, std::int64_t end) {
    CommKernel c = kernel(start, end, 1, CommOp::collective, "", {});
    c.group_name.clear();
    return c;
  };
  std::vector<RankKernels> ranks;
  ranks.push_back(
      rank(0, {}, {unnamed(0, 50), unnamed(60, 70), collective(80, 100)}, {{1, 0, 100}}));
  ranks.push_back(
      rank(1, {}, {unnamed(20, 50), unnamed(65, 70), collective(90, 100)}, {{1, 0, 100}}));
  // Without world_size, two traces may be two of many: nothing is fixed.
  const KernelView unknown = compute_kernel_view(ranks);
  EXPECT_EQ(unknown.comm_kernels_without_peers, 6u);
  EXPECT_FALSE(unknown.total.comm_split_known);

  ranks[0].world_size = 2;  // one trace writing it is enough, none saying otherwise
  const KernelView two = compute_kernel_view(ranks);
  EXPECT_EQ(two.comm_kernels_without_peers, 0u);
  ASSERT_TRUE(two.total.comm_split_known);
  // Rank 0 waits [0,20) for the first, [60,65) for the second, [80,90) for
  // the collective: each kernel met the other rank's k-th.
  EXPECT_EQ(two.ranks[0].steps[0].split.wait, 20 + 5 + 10);
  EXPECT_EQ(two.ranks[1].steps[0].split.wait, 0);
  EXPECT_EQ(two.ranks[0].most_waited_on, 1);
  const auto note = std::find_if(two.warnings.begin(), two.warnings.end(), [](const Warning& w) {
    return w.code == WarningCode::comm_peers_by_order;
  });
  ASSERT_NE(note, two.warnings.end());
  EXPECT_EQ(note->count, 6u);

  ranks[1].world_size = 4;  // a trace says the world is larger: no rule
  EXPECT_EQ(compute_kernel_view(ranks).comm_kernels_without_peers, 6u);

  // PyTorch 2.2: the calls name the direction and a group of two, not the
  // peer; ranks 4 and 6 of a world of 8 (the others' traces not needed).
  std::vector<RankKernels> pair;
  CommKernel send = batched(0, 50, {{.op = CommOp::send, .peer = -1, .pair = {4, 6}}});
  CommKernel recv = batched(30, 50, {{.op = CommOp::recv, .peer = -1, .pair = {4, 6}}});
  pair.push_back(rank(4, {}, {send}, {{1, 0, 50}}));
  pair.push_back(rank(6, {}, {recv}, {{1, 0, 50}}));
  pair[0].world_size = pair[1].world_size = 8;
  const KernelView grouped = compute_kernel_view(pair);
  EXPECT_EQ(grouped.comm_kernels_without_peers, 0u);
  EXPECT_EQ(grouped.ranks[0].steps[0].split.wait, 30);
  EXPECT_EQ(grouped.ranks[0].most_waited_on, 6);
  // A group of two that does not hold the rank fixes nothing.
  pair[0].comm[0].p2p[0].pair = {5, 6};
  EXPECT_EQ(compute_kernel_view(pair).comm_kernels_without_peers, 2u);
}

// Only wait after precedence is blamed, each instant on the peer whose late
// start ends the latest-ending wait then. Rank 3 receives from 1 (its send
// starts at 55) and from 2 (at 60) while computing [0,50) on another
// stream: it waits [50,55) only ([55,60) it transfers from rank 1), and at
// those instants rank 2's late start ends the later wait. Summing each
// kernel's wait before precedence would blame rank 1 (55 ns against 30).
TEST(KernelView, BlamesOnlyTheWaitLeftAfterPrecedence) {
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(1, {}, {batched(55, 100, {{CommOp::send, 3}})}, {{1, 55, 100}}));
  ranks.push_back(rank(2, {}, {batched(60, 100, {{CommOp::send, 3}})}, {{1, 60, 100}}));
  ranks.push_back(rank(
      3, {{0, 50}}, {batched(0, 100, {{CommOp::recv, 1}}), batched(30, 100, {{CommOp::recv, 2}})},
      {{1, 0, 100}}));
  const KernelView v = compute_kernel_view(ranks);
  const KernelRankView& r3 = v.ranks[2];
  EXPECT_EQ(r3.steps[0].split.wait, 5);
  EXPECT_EQ(r3.steps[0].split.transfer, 45);
  EXPECT_EQ(r3.steps[0].most_waited_on, 2);
  EXPECT_EQ(r3.steps[0].waited_on_ns, 5);
  EXPECT_EQ(r3.most_waited_on, 2);
  EXPECT_EQ(r3.waited_on_ns, 5);
}

// Windows follow the job contract; a step some rank lacks is incomplete and
// out of the totals; without step extents the whole trace is one window.
TEST(KernelView, WindowsAndCompleteSteps) {
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(0, {{0, 10}, {20, 30}}, {}, {{5, 0, 10}, {6, 8, 30}}));
  ranks.push_back(rank(1, {{0, 12}}, {}, {{5, 0, 12}}));
  const KernelView v = compute_kernel_view(ranks);
  ASSERT_EQ(v.steps.size(), 2u);
  EXPECT_EQ(v.steps[1].start, 12);  // max(first start 8, E_5 = 12)
  EXPECT_TRUE(v.steps[0].complete);
  EXPECT_FALSE(v.steps[1].complete);
  EXPECT_EQ(v.total.window, 24);
  EXPECT_EQ(v.total.compute, 22);

  std::vector<RankKernels> bare;
  bare.push_back(rank(3, {{100, 150}}, {}, {}));
  bare.back().first_start = 100;
  bare.back().last_end = 180;
  bare.back().step_spans = false;
  const KernelView one = compute_kernel_view(bare);
  ASSERT_EQ(one.steps.size(), 1u);
  EXPECT_EQ(one.steps[0].end - one.steps[0].start, 80);
  EXPECT_EQ(one.total.compute, 50);
  ASSERT_EQ(one.warnings.size(), 1u);
  EXPECT_EQ(one.warnings[0].code, WarningCode::kernel_view_one_window);
}

// Machine 1's clock reads 50 us ahead: its recv, which truly starts at 20 and
// ends with the send at 70, is written [50020, 50070). The ends of matched
// kernels give the offset; undone, rank 1 waits [20,40) as on one clock.
TEST(KernelView, UndoesAClockOffsetFoundFromMatchedKernels) {
  constexpr std::int64_t kAhead = 50'000;
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(0, {{0, 40}, {70, 100}},
                       {kernel(40, 70, 1, CommOp::send, "send", {0, 1}, 1)}, {{1, 0, 100}}));
  ranks.push_back(rank(1, {{kAhead, kAhead + 10}, {kAhead + 60, kAhead + 100}},
                       {kernel(kAhead + 20, kAhead + 70, 1, CommOp::recv, "recv", {0, 1}, 0)},
                       {{1, kAhead, kAhead + 100}}));
  ranks[1].machine = 1;
  const KernelView v = compute_kernel_view(ranks);
  ASSERT_EQ(v.clock.machines, 2u);
  EXPECT_TRUE(v.clock.applied);
  ASSERT_EQ(v.clock.offsets.size(), 2u);
  EXPECT_EQ(v.clock.offsets[1].offset_ns, kAhead);
  EXPECT_EQ(v.clock.offsets[1].pairs, 1u);
  EXPECT_EQ(v.steps[0].end, 100);
  EXPECT_EQ(v.ranks[1].steps[0].split.wait, 20);
  EXPECT_EQ(v.ranks[1].steps[0].split.idle, 10);
  // --no-clock-fix: estimated and reported, not applied.
  const KernelView kept = compute_kernel_view(ranks, {.fix_clocks = false});
  EXPECT_FALSE(kept.clock.applied);
  EXPECT_EQ(kept.clock.offsets[1].offset_ns, kAhead);
  EXPECT_EQ(kept.steps[0].end, kAhead + 100);
  // The note says what kept them, in the caller's words.
  const auto note_of = [](const KernelView& view) {
    for (const Warning& w : view.warnings) {
      if (w.code == WarningCode::kernel_clock_offsets) return w.message;
    }
    return std::string();
  };
  EXPECT_NE(note_of(kept).find("; not applied (clock correction disabled)"), std::string::npos)
      << note_of(kept);
  auto words = std::make_shared<OptionWords>();
  words->set(CallerOption::no_clock_fix, "--no-clock-fix", "");
  const KernelView flagged = compute_kernel_view(ranks, {.fix_clocks = false, .words = words});
  EXPECT_NE(note_of(flagged).find("; not applied (--no-clock-fix)"), std::string::npos)
      << note_of(flagged);
}

// Exports or traces of two runs in one folder: the ranks fall into two groups
// in time. One window over both would be idle for the time between them, so
// the view is refused; ranks a few seconds apart, or machines whose clocks the
// matched kernels align, are one run.
TEST(KernelView, RefusesRanksOfTwoRuns) {
  const auto spanned = [](RankKernels r, std::int64_t first, std::int64_t last) {
    r.first_start = first;
    r.last_end = last;
    return r;
  };
  constexpr std::int64_t kDay = 86'400'000'000'000;
  std::vector<RankKernels> ranks;
  ranks.push_back(spanned(rank(0, {{0, 40}}, {}, {{1, 0, 40}}), 0, 40));
  ranks.push_back(spanned(rank(1, {{10, 50}}, {}, {{1, 10, 50}}), 10, 50));
  ranks.push_back(spanned(rank(2, {{3 * kDay, 3 * kDay + 30}}, {}, {{1, 3 * kDay, 3 * kDay + 30}}),
                          3 * kDay, 3 * kDay + 30));
  ranks[1].path = "a/rank1.json";
  ranks[2].path = "b/rank2.json";
  const KernelView v = compute_kernel_view(ranks);
  EXPECT_NE(v.refusal.find("the traces hold two runs: 2 of the ranks end 3.0 days before the "
                           "other 1 begin (rank 1 of a/rank1.json is the last to end before the "
                           "gap, rank 2 of b/rank2.json the first to begin after it)"),
            std::string::npos)
      << v.refusal;
  // 59 s apart: one run (a rank that began late), not refused.
  constexpr std::int64_t kLate = 59'000'000'000;
  ranks[2] =
      spanned(rank(2, {{kLate, kLate + 30}}, {}, {{1, kLate, kLate + 30}}), kLate, kLate + 30);
  EXPECT_EQ(compute_kernel_view(ranks).refusal, "");
  // A rank with no activity has no span: it cuts nothing.
  ranks[2] = rank(2, {}, {}, {});
  EXPECT_EQ(compute_kernel_view(ranks).refusal, "");
}

TEST(KernelView, MachinesFarApartInClockAreOneRunOnceAligned) {
  constexpr std::int64_t kAhead = 300'000'000'000;  // 5 minutes
  std::vector<RankKernels> ranks;
  ranks.push_back(rank(0, {{0, 40}, {70, 100}},
                       {kernel(40, 70, 1, CommOp::send, "send", {0, 1}, 1)}, {{1, 0, 100}}));
  ranks.push_back(rank(1, {{kAhead, kAhead + 10}, {kAhead + 60, kAhead + 100}},
                       {kernel(kAhead + 20, kAhead + 70, 1, CommOp::recv, "recv", {0, 1}, 0)},
                       {{1, kAhead, kAhead + 100}}));
  ranks[0].last_end = 100;
  ranks[1].first_start = kAhead;
  ranks[1].last_end = kAhead + 100;
  ranks[1].machine = 1;
  const KernelView aligned = compute_kernel_view(ranks);
  EXPECT_TRUE(aligned.clock.applied);
  EXPECT_EQ(aligned.refusal, "");
  EXPECT_EQ(aligned.steps[0].end, 100);
  // Left as read, they are 5 minutes apart: refused, naming the clocks too.
  const KernelView kept = compute_kernel_view(ranks, {.fix_clocks = false});
  EXPECT_NE(kept.refusal.find("end 5.0 minutes before the other 1 begin"), std::string::npos)
      << kept.refusal;
  EXPECT_NE(kept.refusal.find("or one run whose machines' clocks are that far apart"),
            std::string::npos)
      << kept.refusal;
}

TEST(SpanUnion, MergesSpansInAnyOrder) {
  SpanUnion u;
  u.add(10, 20);
  u.add(30, 40);
  u.add(0, 5);
  u.add(20, 25);  // touching: merged
  u.add(7, 7);    // empty: nothing
  EXPECT_EQ(u.take(), (std::vector<TimeSpan>{{0, 5}, {10, 25}, {30, 40}}));
  u.add(10, 20);
  u.add(30, 40);
  u.add(0, 5);
  u.add(4, 31);  // bridges all three
  EXPECT_EQ(u.take(), (std::vector<TimeSpan>{{0, 40}}));
}

TEST(SpanUnion, ManyOutOfOrderSpansEqualASortedMerge) {
  // Per-stream write order: two streams' intervals interleaved backwards,
  // past the side list's threshold, against a plain sort and merge.
  SpanUnion u;
  std::vector<TimeSpan> all;
  std::uint64_t x = 12345;
  for (int i = 0; i < 50'000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::int64_t start = static_cast<std::int64_t>((x >> 20) % 10'000'000);
    const std::int64_t len = static_cast<std::int64_t>((x >> 8) % 300);
    u.add(start, start + len);
    all.push_back({start, start + len});
  }
  std::sort(all.begin(), all.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.start < b.start; });
  std::vector<TimeSpan> want;
  for (const TimeSpan& s : all) {
    if (s.end <= s.start) continue;
    if (!want.empty() && s.start <= want.back().end) {
      want.back().end = std::max(want.back().end, s.end);
    } else {
      want.push_back(s);
    }
  }
  EXPECT_EQ(u.take(), want);
}

}  // namespace
}  // namespace pipescope
