#include "scan/decimal_time.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>

namespace pipescope {

namespace {
constexpr std::size_t kMaxMsIntegerDigits = 13;  // ms since the epoch until year 2286
constexpr std::size_t kMaxFractionDigits = 9;    // down to picoseconds, as printed

// The largest millisecond count whose nanoseconds can fit in int64.
constexpr std::int64_t kMaxMillis = 9'223'372'036'854;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Eight ASCII bytes at once (SWAR), text[0] in the lowest byte.
std::uint64_t load8(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, sizeof x);
  if constexpr (std::endian::native == std::endian::big) x = __builtin_bswap64(x);
  return x;
}

bool eight_digits(std::uint64_t x) {
  return ((x & 0xF0F0F0F0F0F0F0F0) | (((x + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) ==
         0x3333333333333333;
}

/// The number the eight digits spell (the first the most significant).
std::uint64_t eight_digit_value(std::uint64_t x) {
  x -= 0x3030303030303030;
  x = x * 10 + (x >> 8);
  return (((x & 0x000000FF000000FF) * (100 + (1000000ULL << 32))) +
          (((x >> 16) & 0x000000FF000000FF) * (1 + (10000ULL << 32)))) >>
         32;
}

}  // namespace

/// The form PaddlePaddle prints, `DDDDDDDDDDDDD.DDDDDD` (13 + 6 digits), in
/// three overlapping 8-byte words; the same result as the general parser.
std::optional<std::int64_t> parse_millis_13_6(const char* p) {
  constexpr std::uint64_t kZeros3 = 0x0000000000303030;  // '0' in the 3 lowest bytes
  constexpr std::uint64_t kZeros2 = 0x0000000000003030;
  const std::uint64_t head = load8(p);                                            // digits 0-7
  const std::uint64_t middle = load8(p + 5);                                      // digits 5-12
  const std::uint64_t tail = (load8(p + 12) & ~std::uint64_t{0xFFFF}) | kZeros2;  // 00 + fraction
  if (!eight_digits(head) || !eight_digits(middle) || !eight_digits(tail)) return std::nullopt;
  const auto millis =
      static_cast<std::int64_t>(eight_digit_value(head) * 100000 +
                                eight_digit_value((middle & ~std::uint64_t{0xFFFFFF}) | kZeros3));
  if (millis > kMaxMillis) return std::nullopt;
  std::int64_t ns = millis * 1'000'000;
  if (__builtin_add_overflow(ns, static_cast<std::int64_t>(eight_digit_value(tail)), &ns)) {
    return std::nullopt;
  }
  return ns;
}

namespace {

/// What one unit's text may hold.
struct DecimalRule {
  int unit_digits;                 // fraction digits that are whole ns: 6 for ms, 3 for us
  std::size_t max_integer_digits;  // more is rejected
  std::size_t max_fraction_digits;
  bool sign;  // a leading '-' is taken
};

constexpr std::int64_t pow10(int n) { return n == 0 ? 1 : 10 * pow10(n - 1); }

/// The one decimal reader behind every unit: whole units, then the fraction's
/// first `unit_digits` digits as whole nanoseconds, then the next digit
/// rounds half up (away from zero for a negative value). Overflow of int64
/// nanoseconds is checked digit by digit, so no digit count can wrap it.
template <DecimalRule R>
std::optional<std::int64_t> parse_decimal_ns(std::string_view text) {
  constexpr std::int64_t kUnit = pow10(R.unit_digits);
  constexpr std::int64_t kMaxWhole = std::numeric_limits<std::int64_t>::max() / kUnit;
  std::size_t i = 0;
  bool negative = false;
  if constexpr (R.sign) {
    if (i < text.size() && text[i] == '-') {
      negative = true;
      ++i;
    }
  }
  const std::size_t whole_begin = i;
  std::int64_t whole = 0;
  while (i < text.size() && is_digit(text[i])) {
    if (i - whole_begin == R.max_integer_digits) return std::nullopt;
    const int digit = text[i] - '0';
    if (whole > (kMaxWhole - digit) / 10) return std::nullopt;
    whole = whole * 10 + digit;
    ++i;
  }
  if (i == whole_begin) return std::nullopt;
  std::int64_t fraction = 0;  // whole nanoseconds below the unit
  if (i < text.size() && text[i] == '.') {
    ++i;
    std::size_t digits = 0;
    bool round_up = false;
    while (i < text.size() && is_digit(text[i])) {
      if (digits == R.max_fraction_digits) return std::nullopt;
      if (digits < static_cast<std::size_t>(R.unit_digits)) {
        fraction = fraction * 10 + (text[i] - '0');
      } else if (digits == static_cast<std::size_t>(R.unit_digits)) {
        round_up = text[i] >= '5';
      }
      ++digits;
      ++i;
    }
    if (digits == 0) return std::nullopt;
    for (; digits < static_cast<std::size_t>(R.unit_digits); ++digits) fraction *= 10;
    fraction += round_up ? 1 : 0;
  }
  if (i != text.size()) return std::nullopt;
  std::int64_t ns = whole * kUnit;  // whole <= kMaxWhole: no overflow
  // Beyond int64 nanoseconds (after 2262-04-11) is rejected, never wrapped.
  if (__builtin_add_overflow(ns, fraction, &ns)) return std::nullopt;
  return negative ? -ns : ns;
}

constexpr DecimalRule kMillis{6, kMaxMsIntegerDigits, kMaxFractionDigits, false};
// The other units of --job-line-unit, by the same rule: the integer digits of
// the largest int64 nanosecond count in the unit, fraction digits down to the
// picosecond.
constexpr DecimalRule kSecondsUnit{9, 10, 12, false};
constexpr DecimalRule kMicrosUnit{3, 16, 6, false};
constexpr DecimalRule kNanosUnit{0, 19, 3, false};
constexpr DecimalRule kMicros{3, std::numeric_limits<std::size_t>::max(),
                              std::numeric_limits<std::size_t>::max(), true};

}  // namespace

std::optional<std::int64_t> parse_millis_to_ns(std::string_view text) {
  if (text.size() == kMaxMsIntegerDigits + 7 && text[kMaxMsIntegerDigits] == '.') {
    return parse_millis_13_6(text.data());
  }
  return parse_decimal_ns<kMillis>(text);
}

std::optional<std::int64_t> parse_micros_to_ns(std::string_view text) {
  return parse_decimal_ns<kMicros>(text);
}

std::optional<TimeUnit> parse_time_unit(std::string_view name) {
  if (name == "s") return TimeUnit::s;
  if (name == "ms") return TimeUnit::ms;
  if (name == "us") return TimeUnit::us;
  if (name == "ns") return TimeUnit::ns;
  return std::nullopt;
}

std::string_view time_unit_name(TimeUnit unit) {
  switch (unit) {
    case TimeUnit::s:
      return "s";
    case TimeUnit::ms:
      return "ms";
    case TimeUnit::us:
      return "us";
    case TimeUnit::ns:
      return "ns";
  }
  return "?";
}

std::optional<std::int64_t> parse_decimal_to_ns(std::string_view text, TimeUnit unit) {
  switch (unit) {
    case TimeUnit::s:
      return parse_decimal_ns<kSecondsUnit>(text);
    case TimeUnit::ms:
      return parse_millis_to_ns(text);
    case TimeUnit::us:
      return parse_decimal_ns<kMicrosUnit>(text);
    case TimeUnit::ns:
      return parse_decimal_ns<kNanosUnit>(text);
  }
  return std::nullopt;
}

std::string format_ns_as_millis(std::int64_t ns) {
  std::string fraction = std::to_string(ns % 1'000'000);
  return std::to_string(ns / 1'000'000) + "." + std::string(6 - fraction.size(), '0') + fraction;
}

}  // namespace pipescope
