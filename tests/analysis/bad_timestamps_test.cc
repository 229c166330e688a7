// Bad timestamps (bad_timestamps.h): a job stamped far from both neighbours
// in its log is left out; a relaunch's jobs, close to one another, are not.
#include "analysis/bad_timestamps.h"

#include <gtest/gtest.h>

#include "support/hand_run.h"
#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::add_job;

using testing::kMs;
constexpr std::int64_t kToday = 1'700'000'000'000 * kMs;

TEST(BadTimestamps, AJobAtEpochZeroAmongTodaysIsLeftOut) {
  pipescope::Run run;
  for (int i = 0; i < 6; ++i) {
    const std::int64_t start = i == 3 ? 0 : kToday + i * 10 * kMs;
    add_job(run, 0, "forward", i, start, start + 10 * kMs);
  }
  run.finalize();
  const auto bad = leave_out_bad_timestamps(run);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].device, 0u);
  EXPECT_EQ(bad[0].line, 4u);
  EXPECT_EQ(bad[0].start_ns, 0);
  ASSERT_EQ(run.devices[0].jobs.size(), 5u);
  EXPECT_EQ(run.devices[0].jobs.front().start_ns, kToday);
}

TEST(BadTimestamps, FirstAndLastJobsAreJudgedByTheirOneNeighbour) {
  pipescope::Run run;
  add_job(run, 0, "forward", 0, 5 * kMs, 6 * kMs);  // first line, at 1970
  for (int i = 1; i < 5; ++i)
    add_job(run, 0, "forward", i, kToday + i * kMs, kToday + i * kMs + kMs);
  run.finalize();
  EXPECT_EQ(leave_out_bad_timestamps(run).size(), 1u);
  EXPECT_EQ(run.devices[0].jobs.size(), 4u);
}

TEST(BadTimestamps, ARelaunchHoursLaterIsNoBadTimestamp) {
  pipescope::Run run;
  for (int i = 0; i < 4; ++i)
    add_job(run, 0, "forward", i, kToday + i * kMs, kToday + i * kMs + kMs);
  const std::int64_t later = kToday + 5 * 3'600'000 * kMs;  // five hours later
  for (int i = 0; i < 4; ++i) add_job(run, 0, "forward", i, later + i * kMs, later + i * kMs + kMs);
  run.finalize();
  EXPECT_TRUE(leave_out_bad_timestamps(run).empty());
  EXPECT_EQ(run.devices[0].jobs.size(), 8u);
}

}  // namespace
}  // namespace pipescope
