// The trace writers' integer-to-text routines against fmt over edge values:
// every digit count, both signs, the ends of the int64 and uint64 ranges, and
// microseconds with each fraction (no digit, one, two or three significant).
#include "export/decimal_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pipescope {
namespace {

std::string text_of(std::uint64_t v) {
  char buffer[kMaxDecimalChars];
  const char* end = write_decimal(buffer, v);
  EXPECT_LE(static_cast<std::size_t>(end - buffer), kMaxDecimalChars);
  return std::string(buffer, static_cast<std::size_t>(end - buffer));
}

std::string text_of(std::int64_t v) {
  char buffer[kMaxDecimalChars];
  const char* end = write_decimal(buffer, v);
  EXPECT_LE(static_cast<std::size_t>(end - buffer), kMaxDecimalChars);
  return std::string(buffer, static_cast<std::size_t>(end - buffer));
}

std::string us_of(std::int64_t ns) {
  char buffer[kMaxNsAsUsChars];
  const char* end = write_ns_as_us(buffer, ns);
  EXPECT_LE(static_cast<std::size_t>(end - buffer), kMaxNsAsUsChars);
  return std::string(buffer, static_cast<std::size_t>(end - buffer));
}

// The trace's microseconds as the writers printed them before: sign, whole
// microseconds and three decimals, from the magnitude in unsigned arithmetic.
std::string reference_us(std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t magnitude =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  return fmt::format("{}{}.{:03}", negative ? "-" : "", magnitude / 1000, magnitude % 1000);
}

// 0, 1, 9, 10, 11, 99, 100, ... up to the top of the range, and their negatives.
std::vector<std::uint64_t> edge_magnitudes() {
  std::vector<std::uint64_t> values = {0, std::numeric_limits<std::uint64_t>::max(),
                                       std::numeric_limits<std::uint64_t>::max() - 1,
                                       std::uint64_t{1} << 63, (std::uint64_t{1} << 63) - 1};
  std::uint64_t power = 1;
  for (int digits = 1; digits <= 20; ++digits) {
    values.push_back(power);
    values.push_back(power + 1);
    if (power > 1) values.push_back(power - 1);
    if (digits == 20) break;
    power *= 10;
  }
  return values;
}

TEST(DecimalText, UnsignedMatchesFmt) {
  for (const std::uint64_t v : edge_magnitudes()) EXPECT_EQ(text_of(v), fmt::format("{}", v));
  std::mt19937_64 random(20);
  for (int i = 0; i < 100000; ++i) {
    // Every bit width, so every digit count, about equally often.
    const std::uint64_t v = random() >> (i % 64);
    ASSERT_EQ(text_of(v), fmt::format("{}", v));
  }
  EXPECT_EQ(text_of(std::uint64_t{0}), "0");
  EXPECT_EQ(text_of(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
}

TEST(DecimalText, SignedMatchesFmt) {
  for (const std::uint64_t m : edge_magnitudes()) {
    const auto v = static_cast<std::int64_t>(m);
    EXPECT_EQ(text_of(v), fmt::format("{}", v));
    EXPECT_EQ(text_of(std::uint64_t{0} - m), fmt::format("{}", std::uint64_t{0} - m));
  }
  std::mt19937_64 random(21);
  for (int i = 0; i < 100000; ++i) {
    const auto v = static_cast<std::int64_t>(random()) >> (i % 64);
    ASSERT_EQ(text_of(v), fmt::format("{}", v));
  }
  EXPECT_EQ(text_of(std::int64_t{-1}), "-1");
  EXPECT_EQ(text_of(std::numeric_limits<std::int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(text_of(std::numeric_limits<std::int64_t>::max()), "9223372036854775807");
  char buffer[kMaxDecimalChars];
  EXPECT_EQ(std::string(buffer, write_decimal(buffer, std::uint32_t{4294967295u})), "4294967295");
}

TEST(DecimalText, MicrosecondsWithThreeDecimals) {
  EXPECT_EQ(us_of(0), "0.000");
  EXPECT_EQ(us_of(1), "0.001");
  EXPECT_EQ(us_of(-1), "-0.001");
  EXPECT_EQ(us_of(10), "0.010");
  EXPECT_EQ(us_of(100), "0.100");
  EXPECT_EQ(us_of(999), "0.999");
  EXPECT_EQ(us_of(1000), "1.000");
  EXPECT_EQ(us_of(-1000), "-1.000");
  EXPECT_EQ(us_of(1234567), "1234.567");
  EXPECT_EQ(us_of(1697793307213760986), "1697793307213760.986");
  EXPECT_EQ(us_of(std::numeric_limits<std::int64_t>::min()), "-9223372036854775.808");
  EXPECT_EQ(us_of(std::numeric_limits<std::int64_t>::max()), "9223372036854775.807");
  // Each whole part (every digit count) with each kind of fraction.
  for (const std::uint64_t m : edge_magnitudes()) {
    for (const std::int64_t fraction : {0, 1, 9, 10, 99, 100, 500, 999}) {
      for (const std::int64_t whole : {static_cast<std::int64_t>(m / 1000),
                                       static_cast<std::int64_t>(m % 9223372036854775ull)}) {
        if (whole > std::numeric_limits<std::int64_t>::max() / 1000 - 1) continue;
        const std::int64_t ns = whole * 1000 + fraction;
        ASSERT_EQ(us_of(ns), reference_us(ns)) << ns;
        ASSERT_EQ(us_of(-ns), reference_us(-ns)) << -ns;
      }
    }
  }
  std::mt19937_64 random(22);
  for (int i = 0; i < 100000; ++i) {
    const auto ns = static_cast<std::int64_t>(random()) >> (i % 64);
    ASSERT_EQ(us_of(ns), reference_us(ns)) << ns;
  }
}

}  // namespace
}  // namespace pipescope
