#include "scan/decimal_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

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
  for (const char* bad : {"", ".", "1.", ".5", "-1", "+1", "1e3", "1.2.3", "12a", "1 2", "nan",
                          "12345678901234", "1.0000000001", " 1"}) {
    EXPECT_EQ(parse_millis_to_ns(bad), std::nullopt) << bad;
  }
}

TEST(DecimalTime, ThePrintedFormIsReadAsTheGeneralFormIs) {
  // `13 digits . 6 digits` has a path of its own; the same text with a 7th
  // fraction digit 0 (same value) takes the general one. They must agree on
  // every value and on every byte that is not a digit, wherever it sits.
  std::mt19937_64 rng(5);
  std::vector<std::string> texts = {"1697793307213.760986", "0000000000000.000000",
                                    "9223372036854.775807", "9223372036854.775808",
                                    "9223372036855.000000", "9999999999999.999999",
                                    "0000000000001.000001"};
  for (int i = 0; i < 20000; ++i) {
    std::string t = std::to_string(rng() % 10'000'000'000'000ULL);
    t = std::string(13 - t.size(), '0') + t + ".";
    const std::string f = std::to_string(rng() % 1'000'000);
    t += std::string(6 - f.size(), '0') + f;
    texts.push_back(t);
  }
  const std::string odd("/:.a 0\0\xff-+", 10);
  for (std::size_t at = 0; at < 20; ++at) {
    for (const char c : odd) {
      std::string t = "1697793307213.760986";
      t[at] = c;
      texts.push_back(t);
    }
  }
  for (const std::string& t : texts) {
    ASSERT_EQ(t.size(), 20u);
    EXPECT_EQ(parse_millis_to_ns(t), parse_millis_to_ns(t + "0")) << t;
  }
  EXPECT_EQ(parse_millis_to_ns("0000000000001.000001"), 1'000'001);
  EXPECT_EQ(parse_millis_to_ns("16977933072a3.760986"), std::nullopt);
  EXPECT_EQ(parse_millis_to_ns("1697793307213.76098a"), std::nullopt);
}

TEST(DecimalTime, ConvertsMicrosecondsExactly) {
  // Chrome-trace JSON: `ts` since the epoch with a fraction, `dur` small.
  EXPECT_EQ(parse_micros_to_ns("1712195495984501.2"), 1712195495984501200);
  EXPECT_EQ(parse_micros_to_ns("1712195495984501.234"), 1712195495984501234);
  EXPECT_EQ(parse_micros_to_ns("12"), 12'000);
  EXPECT_EQ(parse_micros_to_ns("0.001"), 1);
  EXPECT_EQ(parse_micros_to_ns("-3.5"), -3'500);
  EXPECT_EQ(parse_micros_to_ns("-0"), 0);
  // Any number of digits: leading zeros and a long fraction are still exact.
  EXPECT_EQ(parse_micros_to_ns("000000000000000000000012.5"), 12'500);
  EXPECT_EQ(parse_micros_to_ns("1.0004999999999999999999"), 1'000);
  // Beyond what int64 nanoseconds hold: rejected, not wrapped.
  EXPECT_EQ(parse_micros_to_ns("9223372036854775.807"), INT64_MAX);
  EXPECT_EQ(parse_micros_to_ns("-9223372036854775.807"), -INT64_MAX);
  EXPECT_EQ(parse_micros_to_ns("9223372036854775.8075"), std::nullopt);  // rounds past the end
  EXPECT_EQ(parse_micros_to_ns("9223372036854775.808"), std::nullopt);
  EXPECT_EQ(parse_micros_to_ns("9223372036854776"), std::nullopt);
  EXPECT_EQ(parse_micros_to_ns("99999999999999999999999"), std::nullopt);
}

TEST(DecimalTime, RoundsMicrosecondsHalfUpAwayFromZero) {
  EXPECT_EQ(parse_micros_to_ns("1.0005"), 1'001);
  EXPECT_EQ(parse_micros_to_ns("1.0004"), 1'000);
  EXPECT_EQ(parse_micros_to_ns("1.9995"), 2'000);
  EXPECT_EQ(parse_micros_to_ns("-0.0005"), -1);
  EXPECT_EQ(parse_micros_to_ns("-0.0004"), 0);
}

TEST(DecimalTime, RejectsMicrosecondsInAnyOtherForm) {
  for (const char* bad : {"", "-", ".", "1.", ".5", "-.5", "+1", "1e3", "1.5e2", "1.2.3", "12a",
                          "1 2", " 1", "1 ", "--1", "nan", "0x10"}) {
    EXPECT_EQ(parse_micros_to_ns(bad), std::nullopt) << bad;
  }
}

TEST(DecimalTime, MillisecondsAndMicrosecondsAreOneReading) {
  // The same digits in either unit, the point moved by three places, give
  // the same nanoseconds wherever both forms are taken.
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20000; ++i) {
    const std::string whole = std::to_string(rng() % 10'000'000'000'000ULL);
    std::string fraction = std::to_string(rng() % 1'000'000'000ULL);
    fraction = std::string(9 - fraction.size(), '0') + fraction;
    fraction.resize(1 + rng() % 9);
    const std::string ms = whole + "." + fraction;
    // The first three fraction digits join the whole (padded to three).
    std::string us = whole + fraction.substr(0, 3);
    us.append(3 - std::min<std::size_t>(3, fraction.size()), '0');
    if (fraction.size() > 3) us.append(1, '.').append(fraction, 3);
    EXPECT_EQ(parse_millis_to_ns(ms), parse_micros_to_ns(us)) << ms << " " << us;
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
