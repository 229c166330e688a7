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

TEST(DecimalTime, JobLineUnitsHaveTheirNames) {
  for (const TimeUnit unit : {TimeUnit::s, TimeUnit::ms, TimeUnit::us, TimeUnit::ns}) {
    EXPECT_EQ(parse_time_unit(time_unit_name(unit)), unit);
  }
  for (const char* bad : {"", "S", "sec", "seconds", "µs", "m", "ms "}) {
    EXPECT_EQ(parse_time_unit(bad), std::nullopt) << bad;
  }
}

TEST(DecimalTime, ConvertsSecondsExactly) {
  EXPECT_EQ(parse_decimal_to_ns("1714557600.123456", TimeUnit::s), 1714557600123456000);
  EXPECT_EQ(parse_decimal_to_ns("1714557600.123456789", TimeUnit::s), 1714557600123456789);
  EXPECT_EQ(parse_decimal_to_ns("1714557600", TimeUnit::s), 1714557600000000000);
  EXPECT_EQ(parse_decimal_to_ns("0.000000001", TimeUnit::s), 1);
  EXPECT_EQ(parse_decimal_to_ns("0", TimeUnit::s), 0);
  // The 10th decimal rounds half up; up to 12 (the picosecond) are taken.
  EXPECT_EQ(parse_decimal_to_ns("1.0000000005", TimeUnit::s), 1'000'000'001);
  EXPECT_EQ(parse_decimal_to_ns("1.000000000499", TimeUnit::s), 1'000'000'000);
  EXPECT_EQ(parse_decimal_to_ns("1.9999999995", TimeUnit::s), 2'000'000'000);
  EXPECT_EQ(parse_decimal_to_ns("1.0000000004999", TimeUnit::s), std::nullopt);
  // int64 nanoseconds end in 2262; 10 integer digits at most.
  EXPECT_EQ(parse_decimal_to_ns("9223372036.854775807", TimeUnit::s), INT64_MAX);
  EXPECT_EQ(parse_decimal_to_ns("9223372036.8547758075", TimeUnit::s), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("9223372036.854775808", TimeUnit::s), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("9223372037", TimeUnit::s), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("00000000001", TimeUnit::s), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("0000000001", TimeUnit::s), 1'000'000'000);
}

TEST(DecimalTime, ConvertsJobLineMillisecondsAsPaddlesAre) {
  std::mt19937_64 rng(17);
  std::vector<std::string> texts = {"1697793307213.760986",
                                    "1697793307213",
                                    "0.000001",
                                    "1.0000005",
                                    "1.0000004999",
                                    "9223372036854.775807",
                                    "9223372036854.7758075",
                                    "12345678901234",
                                    "",
                                    ".5",
                                    "-1",
                                    "1e3",
                                    " 1",
                                    "1.",
                                    "1.0000000001"};
  for (int i = 0; i < 5000; ++i) {
    std::string t = std::to_string(rng() % 100'000'000'000'000ULL);
    if (rng() % 4 != 0) {
      std::string f = std::to_string(rng() % 10'000'000'000ULL);
      f.resize(1 + rng() % f.size());
      t += "." + f;
    }
    texts.push_back(t);
  }
  for (const std::string& t : texts) {
    EXPECT_EQ(parse_decimal_to_ns(t, TimeUnit::ms), parse_millis_to_ns(t)) << t;
  }
}

TEST(DecimalTime, ConvertsJobLineMicrosecondsExactly) {
  EXPECT_EQ(parse_decimal_to_ns("1714557600123456.789", TimeUnit::us), 1714557600123456789);
  EXPECT_EQ(parse_decimal_to_ns("1714557600123456", TimeUnit::us), 1714557600123456000);
  EXPECT_EQ(parse_decimal_to_ns("0.001", TimeUnit::us), 1);
  EXPECT_EQ(parse_decimal_to_ns("1.0005", TimeUnit::us), 1'001);
  EXPECT_EQ(parse_decimal_to_ns("1.000499", TimeUnit::us), 1'000);
  EXPECT_EQ(parse_decimal_to_ns("1.0004999", TimeUnit::us), std::nullopt);  // 7 decimals
  EXPECT_EQ(parse_decimal_to_ns("9223372036854775.807", TimeUnit::us), INT64_MAX);
  EXPECT_EQ(parse_decimal_to_ns("9223372036854775.808", TimeUnit::us), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("00000000000000001", TimeUnit::us), std::nullopt);  // 17 digits
  // Unlike JSON's microseconds (parse_micros_to_ns), no sign.
  EXPECT_EQ(parse_decimal_to_ns("-3.5", TimeUnit::us), std::nullopt);
}

TEST(DecimalTime, ConvertsJobLineNanosecondsExactly) {
  EXPECT_EQ(parse_decimal_to_ns("1714557600123456789", TimeUnit::ns), 1714557600123456789);
  EXPECT_EQ(parse_decimal_to_ns("0", TimeUnit::ns), 0);
  EXPECT_EQ(parse_decimal_to_ns("1.5", TimeUnit::ns), 2);
  EXPECT_EQ(parse_decimal_to_ns("1.499", TimeUnit::ns), 1);
  EXPECT_EQ(parse_decimal_to_ns("1.4999", TimeUnit::ns), std::nullopt);  // 4 decimals
  EXPECT_EQ(parse_decimal_to_ns("9223372036854775807", TimeUnit::ns), INT64_MAX);
  EXPECT_EQ(parse_decimal_to_ns("9223372036854775807.5", TimeUnit::ns), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("9223372036854775808", TimeUnit::ns), std::nullopt);
  EXPECT_EQ(parse_decimal_to_ns("00000000000000000001", TimeUnit::ns), std::nullopt);
}

TEST(DecimalTime, JobLineUnitsRejectAnythingButAPlainDecimal) {
  for (const TimeUnit unit : {TimeUnit::s, TimeUnit::ms, TimeUnit::us, TimeUnit::ns}) {
    for (const char* bad : {"", ".", "1.", ".5", "-1", "+1", "1e3", "1.5E2", "1.2.3", "12a", "1 2",
                            " 1", "1 ", "nan", "inf", "0x10", "1,5", "Ù¡"}) {
      EXPECT_EQ(parse_decimal_to_ns(bad, unit), std::nullopt) << bad << " " << time_unit_name(unit);
    }
  }
}

TEST(DecimalTime, TheFourUnitsAreOneReading) {
  // A time in ns with up to 3 sub-nanosecond digits, written in each unit
  // (the point moved), reads as the same nanoseconds in each, the first
  // sub-nanosecond digit rounding half up.
  std::mt19937_64 rng(23);
  const std::pair<TimeUnit, int> units[] = {
      {TimeUnit::s, 9}, {TimeUnit::ms, 6}, {TimeUnit::us, 3}, {TimeUnit::ns, 0}};
  for (int i = 0; i < 20000; ++i) {
    const auto ns = static_cast<std::int64_t>(rng() % 9'000'000'000'000'000'000ULL);
    std::string sub = std::to_string(rng() % 1000);
    sub = std::string(3 - sub.size(), '0') + sub;
    sub.resize(rng() % 4);
    const std::int64_t expected = ns + (!sub.empty() && sub[0] >= '5' ? 1 : 0);
    const std::string digits = std::to_string(ns);
    for (const auto& [unit, point] : units) {
      std::string whole = digits.size() > static_cast<std::size_t>(point)
                              ? digits.substr(0, digits.size() - point)
                              : "0";
      std::string fraction = digits.size() > static_cast<std::size_t>(point)
                                 ? digits.substr(digits.size() - point)
                                 : std::string(point - digits.size(), '0') + digits;
      fraction += sub;
      const std::string text = fraction.empty() ? whole : whole + "." + fraction;
      EXPECT_EQ(parse_decimal_to_ns(text, unit), expected) << text << " " << time_unit_name(unit);
    }
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
