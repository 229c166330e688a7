// Line stamps and their placement on the epoch. The expected epoch values
// were worked out apart from the code (`date -u -d '2023-10-20 09:15:07' +%s`
// and the like), not by calling it.
#include "scan/line_stamp.h"

#include <gtest/gtest.h>

#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::kSecond;
constexpr std::int64_t kHour = 3600 * kSecond;

TEST(LineStamp, ReadsGlogPythonAndIsoPrefixes) {
  const auto glog = find_line_stamp("I1020 09:15:07.265326 22317 standalone_executor.cc:217] x");
  ASSERT_TRUE(glog);
  EXPECT_EQ(*glog,
            (LineStamp{0, 10, 20, (9 * 3600 + 15 * 60 + 7) * kSecond + 265'326'000, std::nullopt}));
  const auto torch = find_line_stamp("[rank3]:[E1020 09:15:07.265326 1234 ProcessGroupNCCL.cpp:1]");
  ASSERT_TRUE(torch);
  EXPECT_EQ(torch->month, 10);
  // PyTorch's c10 logging prints nanoseconds.
  const auto c10 = find_line_stamp("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] x");
  ASSERT_TRUE(c10);
  EXPECT_EQ(*c10, (LineStamp{0, 12, 18, (20 * 3600 + 27 * 60 + 21) * kSecond + 426'415'540,
                             std::nullopt}));
  const auto python = find_line_stamp("[2023-10-20 09:15:07,265] [    INFO] - loss");
  ASSERT_TRUE(python);
  EXPECT_EQ(*python, (LineStamp{2023, 10, 20, (9 * 3600 + 15 * 60 + 7) * kSecond + 265'000'000,
                                std::nullopt}));
  const auto iso = find_line_stamp("2023-10-20T09:15:07.123456789Z worker");
  ASSERT_TRUE(iso);
  EXPECT_EQ(iso->ns_of_day, (9 * 3600 + 15 * 60 + 7) * kSecond + 123'456'789);
  const auto whole = find_line_stamp("2024-02-29 23:59:60 - INFO - leap second");
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->ns_of_day, 86'400 * kSecond);
  const auto coloured = find_line_stamp("\x1b[0;32mI1020 09:15:07.265326 1 a.cc:1] x");
  ASSERT_TRUE(coloured);
}

TEST(LineStamp, NoStampWhereNoneBeginsTheLine) {
  EXPECT_FALSE(find_line_stamp("gpu3:22317:22410 [3] NCCL WARN Call to ibv_reg_mr failed"));
  EXPECT_FALSE(find_line_stamp("XI1020 09:15:07.265326 glued to a word"));
  EXPECT_FALSE(find_line_stamp("I1320 09:15:07.265326 month 13"));
  EXPECT_FALSE(find_line_stamp("I1020 25:15:07.265326 hour 25"));
  EXPECT_FALSE(find_line_stamp("I1020 09:15:07.2653 four fraction digits"));
  EXPECT_FALSE(find_line_stamp("I1020 09:15:07.2653261 seven fraction digits"));
  EXPECT_FALSE(find_line_stamp("2023-02-30 09:15:07 February 30th"));
  // A date quoted far into the message is not the line's time.
  EXPECT_FALSE(find_line_stamp(std::string(100, 'x') + " 2023-10-20 09:15:07,265"));
}

TEST(StampPlacement, TheJobLinesEndTimeGivesTheYearAndTheOffset) {
  // Job ends 2023-10-20 09:15:07.254006104 UTC (1697793307254006104 ns);
  // its line is printed in UTC+8 (Beijing) 11 ms later.
  const std::int64_t end = 1'697'793'307'254'006'104;
  const StampAnchor anchor{*find_line_stamp("I1020 17:15:07.265326 1 a.cc:1]"), end};
  const auto placement = placement_from(anchor);
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->utc_offset_ns, 8 * kHour);
  // An event printed at 17:20:00.5 local is 09:20:00.5 UTC that day:
  // 1697793600 s (date -u -d '2023-10-20 09:20:00' +%s) + 0.5 s.
  EXPECT_EQ(placement->place(*find_line_stamp("W1020 17:20:00.500000 1 b.cc:2] x")),
            1'697'793'600 * kSecond + 500'000'000);
  // A Python line of the same file carries its year; the same offset.
  EXPECT_EQ(placement->place(*find_line_stamp("2023-10-20 17:20:00,500 - INFO - x")),
            1'697'793'600 * kSecond + 500'000'000);
  // Offsets of a quarter hour (Nepal, UTC+5:45) and west of UTC (UTC-7).
  EXPECT_EQ(
      placement_from({*find_line_stamp("I1020 15:00:07.300000 1 a.cc:1]"), end})->utc_offset_ns,
      5 * kHour + 45 * 60 * kSecond);
  EXPECT_EQ(
      placement_from({*find_line_stamp("I1020 02:15:07.300000 1 a.cc:1]"), end})->utc_offset_ns,
      -7 * kHour);
}

TEST(StampPlacement, ARunOverNewYearsEveKeepsItsOrder) {
  // A job ends 2023-12-31 23:59:59 UTC (1704067199 s); its line and the
  // events are printed in UTC.
  const std::int64_t end = 1'704'067'199 * kSecond;
  const auto placement = placement_from({*find_line_stamp("I1231 23:59:59.000000 1 a.cc:1]"), end});
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->utc_offset_ns, 0);
  // Two seconds later, in January of the next year: 1704067201 s.
  EXPECT_EQ(placement->place(*find_line_stamp("I0101 00:00:01.000000 1 a.cc:1]")),
            1'704'067'201 * kSecond);
  // And one from the day before stays in December.
  EXPECT_EQ(placement->place(*find_line_stamp("I1230 23:59:59.000000 1 a.cc:1]")),
            (1'704'067'199 - 86'400) * kSecond);
}

TEST(StampPlacement, AStampNoTimeZoneExplainsPlacesNothing) {
  const std::int64_t end = 1'697'793'307'254'006'104;  // 2023-10-20 09:15 UTC
  EXPECT_FALSE(placement_from({*find_line_stamp("I0420 09:15:07.265326 1 a.cc:1]"), end}));
  EXPECT_FALSE(placement_from({*find_line_stamp("2021-10-20 09:15:07,265"), end}));
}

// An ISO stamp may write its UTC offset after the time, as loggers print
// them: `Z`, `datetime.isoformat()`'s `+05:30`, `%z`'s `+0530` (also after
// a space), ISO's `+05`. The offset is read, not the time moved.
TEST(LineStamp, ReadsAWrittenUtcOffset) {
  const std::int64_t nine_59 = (9 * 3600 + 59 * 60 + 59) * kSecond;
  const auto z = find_line_stamp("2024-03-10T09:59:59.944Z INFO Saving model checkpoint");
  ASSERT_TRUE(z);
  EXPECT_EQ(*z, (LineStamp{2024, 3, 10, nine_59 + 944'000'000, 0}));
  const auto iso = find_line_stamp("2024-03-10T15:29:59.944000+05:30 INFO x");
  ASSERT_TRUE(iso);
  EXPECT_EQ(iso->utc_offset_minutes, 330);
  EXPECT_EQ(iso->ns_of_day, (15 * 3600 + 29 * 60 + 59) * kSecond + 944'000'000);
  EXPECT_EQ(find_line_stamp("2024-03-10T01:59:59-0800 | INFO | x")->utc_offset_minutes, -480);
  EXPECT_EQ(find_line_stamp("[2024-03-10 01:59:59,944 -07:00] x")->utc_offset_minutes, -420);
  EXPECT_EQ(find_line_stamp("2024-03-10 15:29:59 +0530 INFO x")->utc_offset_minutes, 330);
  EXPECT_EQ(find_line_stamp("2024-03-10T15:29:59+05 x")->utc_offset_minutes, 300);
  EXPECT_EQ(find_line_stamp("2024-03-10T20:14:59.5+14:00")->utc_offset_minutes, 840);
  // No offset: Python logging's separators, a word glued to the time, a
  // bare ` -05` after a space, more than 14 hours, a fifth digit.
  for (const char* line :
       {"2023-10-20 09:15:07,265 - root - INFO - x", "2023-10-20 09:15:07,265-rank3 x",
        "2023-10-20T09:15:07Zulu x", "2023-10-20 09:15:07 -05 x", "2023-10-20T09:15:07+15:00 x",
        "2023-10-20T09:15:07+053012 x", "2023-10-20 09:15:07 +05:3 x"}) {
    const auto stamp = find_line_stamp(line);
    ASSERT_TRUE(stamp) << line;
    EXPECT_FALSE(stamp->utc_offset_minutes) << line;
  }
  // GLOG writes none.
  EXPECT_FALSE(find_line_stamp("I0310 09:59:59.944000 1 a.cc:1] Z")->utc_offset_minutes);
}

// A written offset is obeyed, whatever the file's job lines say of its zone
// (2024-03-10 09:59:59.944 UTC is 1710064799 s: `date -u -d '2024-03-10
// 09:59:59' +%s`).
TEST(StampPlacement, AWrittenOffsetIsObeyed) {
  const std::int64_t truth = 1'710'064'799 * kSecond + 944'000'000;
  // The file's job lines print +05:30 (a job ending 10:00:00 UTC at 15:30).
  const auto placement = placement_from(
      {*find_line_stamp("I0310 15:30:00.010000 1 a.cc:1]"), 1'710'064'800 * kSecond});
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->utc_offset_ns, 5 * kHour + 30 * 60 * kSecond);
  for (const char* line :
       {"2024-03-10T09:59:59.944Z INFO x", "2024-03-10T15:29:59.944000+05:30 INFO x",
        "2024-03-10T01:59:59.944-08:00 INFO x", "2024-03-10 02:59:59.944 -0700 INFO x"}) {
    const auto stamp = find_line_stamp(line);
    ASSERT_TRUE(stamp) << line;
    EXPECT_EQ(placement->place(*stamp), truth) << line;
    EXPECT_EQ(written_epoch_ns(*stamp), truth) << line;
  }
  // A local stamp takes the job line's offset.
  EXPECT_EQ(placement->place(*find_line_stamp("2024-03-10 15:29:59,944 INFO x")), truth);
  EXPECT_FALSE(written_epoch_ns(*find_line_stamp("2024-03-10 15:29:59,944 INFO x")));
}

TEST(LineStamp, UtcYear) {
  EXPECT_EQ(utc_year(0), 1970);
  EXPECT_EQ(utc_year(1'704'067'199 * kSecond), 2023);
  EXPECT_EQ(utc_year(1'704'067'200 * kSecond), 2024);
  EXPECT_EQ(utc_year(-1), 1969);
}

}  // namespace
}  // namespace pipescope
