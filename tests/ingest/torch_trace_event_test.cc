// One event of a PyTorch profiler trace (ingest/torch_trace_event.h): the
// one-pass read of launches, kernels and CPU ops (read_plain_event) against
// the same events written otherwise, which take its generic member loop or
// simdjson (parse_event), and the answers its contract names.
#include "ingest/torch_trace_event.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ingest/trace_event_tokenizer.h"

namespace pipescope {
namespace {

struct Read {
  std::optional<ParsedEvent> event;
  PlainRead plain = PlainRead::other;
};

Read read(std::string text, const EventFilter& filter = {}) {
  const std::size_t size = text.size();
  text.append(TraceEventTokenizer::kPadding, ' ');
  const std::string_view event(text.data(), size);
  simdjson::ondemand::parser parser;
  Read r;
  PlainRecord record;
  r.plain = read_plain_event(event, filter, record);
  r.event = parse_event(event, 0, 0, parser, filter);
  return r;
}

/// What the join and the kernel record use of an event.
std::string fields(const std::optional<ParsedEvent>& e) {
  if (!e) return "none";
  return fmt::format("kind {} [{}, {}) correlation {} thread {} gpu {} graph {} malformed '{}'",
                     static_cast<int>(e->kind), e->start, e->end, e->correlation, e->thread, e->gpu,
                     e->graph, e->malformed);
}

/// An event's members written as `members` say, in this order, with `sep`
/// after each ':' and ','.
std::string object(const std::vector<std::pair<std::string, std::string>>& members,
                   std::string_view sep = " ") {
  std::string out = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    out += fmt::format("{}\"{}\":{}{}", i ? fmt::format(",{}", sep) : "", members[i].first, sep,
                       members[i].second);
  }
  return out + "}";
}

TEST(TorchTraceEvent, TheSameEventReadsAlikeInEveryLayout) {
  // A launch and a kernel as Kineto writes them (members in its order), then
  // with their members shuffled, other blanks, an extra member or an escape
  // in a name: the first take the one-pass read's Kineto path, the others
  // its generic loop or simdjson; all must give one event.
  const std::vector<std::pair<std::string, std::string>> launch = {
      {"ph", "\"X\""},
      {"cat", "\"cuda_runtime\""},
      {"name", "\"cudaLaunchKernel\""},
      {"pid", "2910249"},
      {"tid", "2919752"},
      {"ts", "4458676983526.767"},
      {"dur", "15.633"},
      {"args", R"({"External id": 12353, "cbid": 211, "correlation": 57541})"}};
  const std::vector<std::pair<std::string, std::string>> kernel = {
      {"ph", "\"X\""},
      {"cat", "\"kernel\""},
      {"name", "\"void at::native::vectorized_elementwise_kernel<4, {lambda(float)#1}>(int)\""},
      {"pid", "0"},
      {"tid", "7"},
      {"ts", "4458676983543.1837"},  // a fourth decimal: rounded, by parse_micros_to_ns
      {"dur", "41.407"},
      {"args", R"({"External id": 12353, "queued": 0, "device": 3, "context": 1, "stream": 7, )"
               R"("correlation": 57541, "grid": [512, 1, 1]})"}};
  for (const auto& members : {launch, kernel}) {
    const Read kineto = read(object(members));
    ASSERT_EQ(kineto.plain, PlainRead::plain);
    ASSERT_TRUE(kineto.event);
    EXPECT_EQ(kineto.event->correlation, 57541);
    std::mt19937_64 rng(7);
    for (int variant = 0; variant < 40; ++variant) {
      auto shuffled = members;
      if (variant % 4 != 0) std::shuffle(shuffled.begin(), shuffled.end(), rng);
      if (variant % 3 == 1) shuffled.insert(shuffled.begin() + 2, {"s", "\"t\""});
      const std::string sep = variant % 2 ? "\n      " : "";
      const Read r = read(object(shuffled, sep));
      EXPECT_EQ(fields(r.event), fields(kineto.event)) << object(shuffled, sep);
    }
  }
  const Read kernel_read = read(object(kernel));
  EXPECT_EQ(kernel_read.event->start, 4458676983543184);  // .1837 us rounds half up
  EXPECT_EQ(kernel_read.event->end, 4458676983543184 + 41407);
  EXPECT_EQ(kernel_read.event->gpu, 3);
  const Read launch_read = read(object(launch));
  EXPECT_EQ(launch_read.event->thread, 2919752);
  EXPECT_EQ(launch_read.event->start, 4458676983526767);
}

TEST(TorchTraceEvent, WhatTheOnePassReadDropsAndLeavesToSimdjson) {
  // CPU ops are dropped by their name, unless a communication's host call.
  EXPECT_EQ(read(R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2})").plain,
            PlainRead::dropped);
  const Read comms =
      read(R"({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 1, "dur": 2, )"
           R"("args": {"Collective name": "send", "Dst Rank": 1}})");
  EXPECT_EQ(comms.plain, PlainRead::other);
  ASSERT_TRUE(comms.event);
  EXPECT_EQ(comms.event->kind, EventClass::comm_call);
  // Flows and unknown categories: dropped; a launch that starts no GPU work too.
  EXPECT_EQ(read(R"({"ph": "s", "id": 5, "cat": "ac2g", "name": "ac2g"})").plain,
            PlainRead::dropped);
  EXPECT_EQ(read(R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", )"
                 R"("ts": 1, "dur": 2, "args": {"correlation": 9}})")
                .plain,
            PlainRead::dropped);
  // A graph launch is kept as one.
  const Read graph = read(R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", )"
                          R"("tid": 4, "ts": 1, "dur": 2, "args": {"correlation": 9}})");
  EXPECT_EQ(graph.plain, PlainRead::plain);
  EXPECT_TRUE(graph.event && graph.event->graph);
  // Left to simdjson: NCCL kernels (their args), annotations, escapes, a
  // category after a nested value, and a time that is not decimal (then
  // counted malformed).
  const Read nccl = read(R"({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", )"
                         R"("ts": 1, "dur": 2, "args": {"correlation": 3}})");
  EXPECT_EQ(nccl.plain, PlainRead::other);
  ASSERT_TRUE(nccl.event);
  EXPECT_TRUE(nccl.event->communication);
  EXPECT_EQ(
      read(R"({"ph": "X", "cat": "user_annotation", "name": "PP:0F1", "ts": 1, "dur": 2})").plain,
      PlainRead::other);
  const Read escaped = read(R"({"ph": "X", "cat": "kernel", "name": "a\"b", "ts": 1, "dur": 2, )"
                            R"("args": {"correlation": 3}})");
  EXPECT_EQ(escaped.plain, PlainRead::other);
  ASSERT_TRUE(escaped.event);
  EXPECT_EQ(escaped.event->kind, EventClass::kernel);
  EXPECT_EQ(read(R"({"args": {"correlation": 3}, "ph": "X", "cat": "kernel", "name": "k", )"
                 R"("ts": 1, "dur": 2})")
                .plain,
            PlainRead::other);
  const Read exponent = read(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1e3, "dur": 2, )"
                             R"("args": {"correlation": 3}})");
  EXPECT_EQ(exponent.plain, PlainRead::other);
  ASSERT_TRUE(exponent.event);
  EXPECT_FALSE(exponent.event->malformed.empty());
  const Read negative = read(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": -1, )"
                             R"("args": {"correlation": 3}})");
  EXPECT_EQ(negative.plain, PlainRead::other);
  ASSERT_TRUE(negative.event);
  EXPECT_FALSE(negative.event->malformed.empty());
  // An instant ("ph": "i") activity is no interval: dropped.
  EXPECT_EQ(read(R"({"ph": "i", "cat": "kernel", "name": "k", "ts": 1, "args": {}})").plain,
            PlainRead::dropped);
  // The second pass reads no CPU annotation of a job.
  EXPECT_EQ(read(R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2})",
                 EventFilter{true, nullptr})
                .plain,
            PlainRead::dropped);
}

}  // namespace
}  // namespace pipescope
