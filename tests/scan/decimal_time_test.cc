#include "scan/decimal_time.h"

#include <gtest/gtest.h>

namespace pipescope {
namespace {

TEST(DecimalTime, ConvertsMillisecondsExactly) {
  EXPECT_EQ(parse_millis_to_ns("1697793307213.760986"), 1697793307213760986);
  EXPECT_EQ(parse_millis_to_ns("1697793307213"), 1697793307213000000);
  EXPECT_EQ(parse_millis_to_ns("1697793307213.7"), 1697793307213700000);
  EXPECT_EQ(parse_millis_to_ns("0.000001"), 1);
  EXPECT_EQ(parse_millis_to_ns("0"), 0);
  // Beyond what int64 nanoseconds hold (year 2262): rejected, not wrapped.
  EXPECT_EQ(parse_millis_to_ns("9223372036854.775807"), INT64_MAX);
  EXPECT_EQ(parse_millis_to_ns("9223372036854.7758074"), INT64_MAX);
  EXPECT_EQ(parse_millis_to_ns("9223372036854.7758075"), std::nullopt);  // rounds past the end
  EXPECT_EQ(parse_millis_to_ns("9223372036854.775808"), std::nullopt);
  EXPECT_EQ(parse_millis_to_ns("9999999999999.999999"), std::nullopt);
}

TEST(DecimalTime, RoundsSubNanosecondDigitsHalfUp) {
  EXPECT_EQ(parse_millis_to_ns("1.0000005"), 1'000'001);
  EXPECT_EQ(parse_millis_to_ns("1.0000004999"), std::nullopt);  // 10 decimals: too many
  EXPECT_EQ(parse_millis_to_ns("1.000000499"), 1'000'000);
  EXPECT_EQ(parse_millis_to_ns("1.000000500"), 1'000'001);
  EXPECT_EQ(parse_millis_to_ns("1.00000099"), 1'000'001);
  EXPECT_EQ(parse_millis_to_ns("1.999999999"), 2'000'000);
  EXPECT_EQ(parse_millis_to_ns("1.0000001"), 1'000'000);
}

TEST(DecimalTime, RejectsAnythingElse) {
  for (const char* bad : {"", ".", "1.", ".5", "-1", "+1", "1e3", "1.2.3", "12a", "1 2",
                          "nan", "12345678901234", "1.0000000001", " 1"}) {
    EXPECT_EQ(parse_millis_to_ns(bad), std::nullopt) << bad;
  }
}

TEST(DecimalTime, FormatIsTheInverse) {
  for (std::int64_t ns : {0LL, 1LL, 999999LL, 1000000LL, 1697793307213760986LL}) {
    EXPECT_EQ(parse_millis_to_ns(format_ns_as_millis(ns)), ns);
  }
  EXPECT_EQ(format_ns_as_millis(1697793307213000001), "1697793307213.000001");
}

}  // namespace
}  // namespace pipescope
