// The job timer on the host backend: records, ordering, streams, steps, and
// the clock anchoring (with injected fake clocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "records/ivl_reader.h"
#include "support/temp_dir.h"
#include "timer/job_timer.h"

namespace pipescope {
namespace {

using testing::TempDir;

struct HostRead {
  ivl::Header header;
  std::vector<ivl::Record> records;
  std::vector<std::string> types;
  std::uint64_t blocks = 0;
  std::uint64_t problems = 0;
};

HostRead read_host_records(const std::string& path) {
  HostRead out;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) out.records.push_back(block.record(i));
    out.types = *block.types;
  };
  const ivl::ReadResult result = ivl::read_file(path, cb);
  out.header = result.header;
  out.blocks = result.blocks;
  out.problems = result.problems;
  return out;
}

/// A fake pair of clocks the test moves by hand.
struct FakeClocks {
  std::int64_t steady = 1'000;
  std::int64_t realtime = 1'700'000'000'000'000'000;
  static std::int64_t read_steady(void* self) { return static_cast<FakeClocks*>(self)->steady; }
  static std::int64_t read_realtime(void* self) { return static_cast<FakeClocks*>(self)->realtime; }
  timer::HostClocks clocks() {
    return {&FakeClocks::read_steady, &FakeClocks::read_realtime, this};
  }
};

TEST(HostTimer, AnchoringMapsSteadyToRealtimePerStep) {
  TempDir dir;
  FakeClocks fake;
  timer::TimerOptions options;
  options.path = dir / "t.ivl";
  options.first_step = 7;
  int s0 = 0;
  int s1 = 0;
  {
    timer::JobTimer timer(timer::make_host_backend(fake.clocks()), options);
    EXPECT_EQ(timer.backend().anchor().first, fake.realtime);
    EXPECT_EQ(timer.backend().anchor().second, 1'000);
    const auto fwd = timer.job_type("forward");
    fake.steady = 1'500;
    timer.begin(fwd, 0, &s0);
    fake.steady = 2'500;
    timer.end(&s0);
    // The wall clock is stepped by +1 s (NTP) mid-step: this step's jobs keep
    // the anchor taken at the previous flush.
    fake.realtime += 1'000'000'000;
    timer.flush();
    EXPECT_EQ(timer.step(), 8);
    // The new anchor pairs the stepped realtime with steady 2'500.
    fake.steady = 3'000;
    timer.begin("backward", 1, &s1);
    fake.steady = 3'100;
    timer.end(&s1);
    timer.close();
  }
  const HostRead r = read_host_records(options.path);
  ASSERT_EQ(r.records.size(), 2u);
  const std::int64_t base = 1'700'000'000'000'000'000;
  EXPECT_EQ(r.records[0].start_ns, base + 500);
  EXPECT_EQ(r.records[0].end_ns, base + 1'500);
  EXPECT_EQ(r.records[0].step, 7);
  EXPECT_EQ(r.records[0].stream, 0u);
  EXPECT_EQ(r.records[1].start_ns, base + 1'000'000'000 + 500);
  EXPECT_EQ(r.records[1].end_ns, base + 1'000'000'000 + 600);
  EXPECT_EQ(r.records[1].step, 8);
  EXPECT_EQ(r.records[1].stream, 1u);
  EXPECT_EQ(r.records[1].micro_batch, 1);
  EXPECT_EQ(r.types[r.records[1].type], "backward");
  EXPECT_EQ(r.header.first_step, 7);
}

TEST(HostTimer, RealClockRecordsLieWithinTheWallClockBracket) {
  TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "t.ivl";
  options.machine = 1;
  options.rank = 2;
  std::vector<std::pair<std::int64_t, std::int64_t>> brackets;
  {
    auto timer = timer::make_host_timer(options);
    EXPECT_LT(timer->backend().anchor_uncertainty_ns(), 1'000'000);
    int stream = 0;
    for (int step = 0; step < 3; ++step) {
      for (int mb = 0; mb < 4; ++mb) {
        const std::int64_t before = timer::realtime_ns();
        timer->begin("forward", mb, &stream);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        timer->end(&stream);
        brackets.emplace_back(before, timer::realtime_ns());
      }
      timer->flush();
    }
  }
  const HostRead r = read_host_records(options.path);
  EXPECT_EQ(r.header.machine, 1);
  EXPECT_EQ(r.header.rank, 2);
  EXPECT_EQ(r.blocks, 3u + 1u);  // one record block per step, one type block
  ASSERT_EQ(r.records.size(), 12u);
  // Anchoring error (bracket half-width) plus scheduling slack.
  const std::int64_t slack = 200'000;
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_GE(r.records[i].start_ns, brackets[i].first - slack) << i;
    EXPECT_LE(r.records[i].end_ns, brackets[i].second + slack) << i;
    EXPECT_GE(r.records[i].end_ns - r.records[i].start_ns, 200'000) << i;  // slept 200 us
    if (i > 0) {
      EXPECT_GE(r.records[i].start_ns, r.records[i - 1].end_ns) << i;
    }
    EXPECT_EQ(r.records[i].step, static_cast<std::int32_t>(i / 4));
    EXPECT_EQ(r.records[i].micro_batch, static_cast<std::int32_t>(i % 4));
  }
}

TEST(HostTimer, StreamsNestingOpenJobsAndStrayEnds) {
  TempDir dir;
  FakeClocks fake;
  // Both clocks advance together here, so every anchor maps steady t to
  // base + t.
  const std::int64_t base = fake.realtime - fake.steady;
  auto at = [&](std::int64_t steady) {
    fake.realtime = base + steady;
    fake.steady = steady;
  };
  timer::TimerOptions options;
  options.path = dir / "t.ivl";
  options.job_types = {"forward", "send_forward"};
  int compute = 0;
  int comm = 0;
  {
    timer::JobTimer timer(timer::make_host_backend(fake.clocks()), options);
    at(2'000);
    timer.begin(0u, 0, &compute);  // forward on stream 0
    at(2'100);
    timer.begin(1u, 0, &comm);  // overlapping send on stream 1
    at(2'200);
    timer.end(&comm);
    timer.end(&comm);  // stray: counted, ignored
    EXPECT_EQ(timer.unmatched_ends(), 1u);
    // The forward is still running at the step boundary: it is recorded when
    // it ends, with the start resolved at this flush.
    timer.flush();
    at(5'000);
    timer.end(&compute);
    timer.flush();
    EXPECT_EQ(timer.streams(), 2u);
  }
  const HostRead r = read_host_records(options.path);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.types[r.records[0].type], "send_forward");
  EXPECT_EQ(r.records[0].stream, 1u);
  EXPECT_EQ(r.records[0].start_ns, base + 2'100);
  EXPECT_EQ(r.records[0].end_ns, base + 2'200);
  EXPECT_EQ(r.types[r.records[1].type], "forward");
  EXPECT_EQ(r.records[1].stream, 0u);
  EXPECT_EQ(r.records[1].start_ns, base + 2'000);
  EXPECT_EQ(r.records[1].end_ns, base + 5'000);
  EXPECT_EQ(r.records[1].step, 1);  // ended in the second step
}

TEST(HostTimer, DestructorFlushesCompletedJobs) {
  TempDir dir;
  timer::TimerOptions options;
  options.path = dir / "t.ivl";
  {
    auto timer = timer::make_host_timer(options);
    int s = 0;
    timer->begin("optimizer", 0, &s);
    timer->end(&s);
  }
  const HostRead r = read_host_records(options.path);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_LE(r.records[0].start_ns, r.records[0].end_ns);
  EXPECT_EQ(r.problems, 0u);
}

}  // namespace
}  // namespace pipescope
