// The text forms of ratios and durations every report shares.
#include "numeric/units.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace pipescope {
namespace {

TEST(Units, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(999), "999 ns");
  EXPECT_EQ(format_duration(1'000), "1.000 us");
  EXPECT_EQ(format_duration(999'999), "999.999 us");
  EXPECT_EQ(format_duration(1'000'000), "1.000 ms");
  EXPECT_EQ(format_duration(12'345'678), "12.346 ms");
  EXPECT_EQ(format_duration(12'345'499), "12.345 ms");
  EXPECT_EQ(format_duration(999'999'499), "999.999 ms");
  EXPECT_EQ(format_duration(999'999'500), "1.000 s");
  EXPECT_EQ(format_duration(1'234'567'891), "1.235 s");
  EXPECT_EQ(format_duration(3'600'000'000'000), "3600.000 s");
  EXPECT_EQ(format_duration(-1'500), "-1.500 us");
  EXPECT_EQ(format_duration(std::numeric_limits<std::int64_t>::min()), "-9223372036.855 s");
  EXPECT_EQ(format_duration(std::numeric_limits<std::int64_t>::max()), "9223372036.855 s");
}

TEST(Units, FormatMsHasThreeDecimalsAndNoUnit) {
  EXPECT_EQ(format_ms(0), "0.000");
  EXPECT_EQ(format_ms(1'234'567), "1.235");
  EXPECT_EQ(format_ms(1'234'499), "1.234");
  // Half away from zero, on either side.
  EXPECT_EQ(format_ms(1'000'500), "1.001");
  EXPECT_EQ(format_ms(-1'000'500), "-1.001");
  EXPECT_EQ(format_ms(-500), "-0.001");
  // A magnitude below half a microsecond keeps its sign.
  EXPECT_EQ(format_ms(-100), "-0.000");
  EXPECT_EQ(format_ms(3'600'000'000'000), "3600000.000");
  EXPECT_EQ(format_ms(std::numeric_limits<std::int64_t>::min()), "-9223372036854.776");
}

TEST(Units, PercentHasOneDecimal) {
  EXPECT_EQ(percent(0), "0.0%");
  EXPECT_EQ(percent(0.3125), "31.2%");  // fmt rounds the double 31.25 to even
  EXPECT_EQ(percent(0.2274), "22.7%");
  EXPECT_EQ(percent(1), "100.0%");
  EXPECT_EQ(percent(-0.05), "-5.0%");
}

TEST(Units, PercentOfANonFiniteRatioIsADash) {
  EXPECT_EQ(percent(std::nan("")), "-");
  EXPECT_EQ(percent(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(percent(-std::numeric_limits<double>::infinity()), "-");
}

}  // namespace
}  // namespace pipescope
