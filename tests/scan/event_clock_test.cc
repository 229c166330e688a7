// The offset each event stamp is read with, followed across chunks. The
// expected epoch values were worked out apart from the code, with Python's
// zoneinfo (America/New_York), e.g. `datetime(2024, 3, 10, 3, 0, 30,
// tzinfo=ZoneInfo("America/New_York")).timestamp()` = 1710054030.
#include "scan/event_clock.h"

#include <gtest/gtest.h>

#include <string>

#include "support/time_units.h"

namespace pipescope {
namespace {

using testing::kMs;
using testing::kSecond;

LineStamp stamp(const std::string& line) {
  const auto found = find_line_stamp(line);
  EXPECT_TRUE(found) << line;
  return found.value_or(LineStamp{});
}

/// A job line printed at local `glog_time` (GLOG's `I0310 01:59:03.200000`)
/// whose job ended at `end_s` + 192 ms UTC.
StampAnchor job(const std::string& glog_time, std::int64_t end_s) {
  return {stamp(glog_time + " 1 standalone_executor.cc:217]"), end_s * kSecond + 192 * kMs};
}

EventSeen event(const std::string& line, std::optional<StampAnchor> anchor = std::nullopt) {
  EventSeen seen;
  seen.stamp = find_line_stamp(line);
  seen.anchor = anchor;
  return seen;
}

/// The epoch ns the clock gives the event, as the readers ask it: the
/// anchor taken while its chunk is the one being taken.
std::optional<std::int64_t> placed(const EventClock& clock, const EventSeen& seen) {
  return clock.place(seen.stamp, clock.anchor_of(seen));
}

// America/New_York, 2024-03-10: 02:00 EST becomes 03:00 EDT (07:00 UTC). A
// local stamp takes the offset of the nearest stamped job line before it,
// also when that line is in an earlier chunk.
TEST(EventClock, FollowsASpringForwardFromTheNextJobLine) {
  EventClock clock;
  const StampAnchor est = job("I0310 01:59:03.200000", 1'710'053'943);  // 06:59:03 UTC
  const StampAnchor edt = job("I0310 03:00:03.200000", 1'710'054'003);  // 07:00:03 UTC
  // Chunk 1: an event before any job line, then the EST job line.
  const EventSeen early = event("[2024-03-10 01:58:00,000] [    INFO] - Saving model checkpoint");
  ChunkScan one;
  one.anchor = one.last_anchor = est;
  EXPECT_FALSE(clock.anchor_of(early));
  EXPECT_FALSE(placed(clock, early));  // no job line read yet
  clock.advance(one);
  // It takes the file's first stamped job line's offset once that is known.
  EXPECT_EQ(clock.place(early.stamp, std::nullopt), 1'710'053'880 * kSecond);
  // Chunk 2 begins with an event (its job line is in chunk 1), then the EDT
  // job line and an event after it (its anchor from the scanner).
  const EventSeen carried = event("W0310 01:59:30.000000 1 comm_task_manager.cc:158] x");
  const EventSeen after = event("W0310 03:00:30.000000 1 comm_task_manager.cc:158] x", edt);
  EXPECT_EQ(clock.anchor_of(carried), est);
  EXPECT_EQ(placed(clock, carried), 1'710'053'970 * kSecond);
  EXPECT_EQ(placed(clock, after), 1'710'054'030 * kSecond);
  ChunkScan two;
  two.anchor = two.last_anchor = edt;
  clock.advance(two);
  // Chunk 3: no job line; its events go on by the EDT line.
  EXPECT_EQ(clock.anchor_of(event("W0310 03:01:00.000000 1 a.cc:1] x")), edt);
  EXPECT_EQ(placed(clock, event("W0310 03:01:00.000000 1 a.cc:1] x")), 1'710'054'060 * kSecond);
  EXPECT_EQ(clock.first(), est);
  // Read by the first job line's offset alone (the old rule), the last
  // event would have been an hour late.
  EXPECT_EQ(placement_from(est)->place(stamp("W0310 03:01:00.000000 1 a.cc:1] x")),
            (1'710'054'060 + 3600) * kSecond);
}

// 2024-11-03: 02:00 EDT becomes 01:00 EST (06:00 UTC); 01:00-02:00 local
// is printed twice. The same local stamp is two times an hour apart, told
// apart by the job line before it.
TEST(EventClock, FollowsAFallBackThroughTheRepeatedHour) {
  EventClock clock;
  const StampAnchor edt = job("I1103 01:59:03.200000", 1'730'613'543);  // 05:59:03 UTC
  const StampAnchor est = job("I1103 01:00:03.200000", 1'730'613'603);  // 06:00:03 UTC
  const std::string line = "I1103 01:59:30.000000 1 a.cc:1] Saving model checkpoint";
  EXPECT_EQ(placed(clock, event(line, edt)), 1'730'613'570 * kSecond);  // 01:59:30 EDT
  EXPECT_EQ(placed(clock, event("I1103 01:00:30.000000 1 a.cc:1] x", est)),
            1'730'613'630 * kSecond);                                   // 01:00:30 EST
  EXPECT_EQ(placed(clock, event(line, est)), 1'730'617'170 * kSecond);  // 01:59:30 EST
  // The rule's one blind spot, as the guide says: an event printed after
  // the change but before the next job line is read with the offset before
  // it (01:00:30 EST read as EDT: an hour early).
  EXPECT_EQ(placed(clock, event("I1103 01:00:30.000000 1 a.cc:1] x", edt)),
            (1'730'613'630 - 3600) * kSecond);
}

// A stamp that writes its offset needs no job line, and ignores the one
// before it.
TEST(EventClock, AWrittenOffsetNeedsNoJobLine) {
  EventClock clock;
  const EventSeen z = event("2024-03-10T09:59:59.944Z INFO Saving model checkpoint to x");
  EXPECT_EQ(placed(clock, z), 1'710'064'799 * kSecond + 944 * kMs);
  // In a +05:30 file (a job ending 10:00:00.192 UTC printed at 15:30:00.2).
  const StampAnchor ist = job("I0310 15:30:00.200000", 1'710'064'800);
  EXPECT_EQ(placed(clock, event("2024-03-10T09:59:59.944Z INFO x", ist)),
            1'710'064'799 * kSecond + 944 * kMs);
  EXPECT_EQ(placed(clock, event("2024-03-10 15:29:59,944 INFO x", ist)),
            1'710'064'799 * kSecond + 944 * kMs);
  // No stamp (and no dated line before it): no time.
  EXPECT_FALSE(clock.place(std::nullopt, ist));
  // A job line no time zone explains (two days off) places no local stamp.
  const StampAnchor far = job("I0308 15:30:00.200000", 1'710'064'800);
  EXPECT_FALSE(placed(clock, event("2024-03-10 15:29:59,944 INFO x", far)));
}

}  // namespace
}  // namespace pipescope
