#include "scan/decimal_time.h"

#include <bit>
#include <cstring>
#include <string>

namespace pipescope {

namespace {
constexpr std::size_t kMaxIntegerDigits = 13;   // ms since the epoch until year 2286
constexpr std::size_t kMaxFractionDigits = 9;   // down to picoseconds, as printed

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
  const std::uint64_t head = load8(p);       // digits 0-7
  const std::uint64_t middle = load8(p + 5);  // digits 5-12
  const std::uint64_t tail = (load8(p + 12) & ~std::uint64_t{0xFFFF}) | kZeros2;  // 00 + fraction
  if (!eight_digits(head) || !eight_digits(middle) || !eight_digits(tail)) return std::nullopt;
  const auto millis = static_cast<std::int64_t>(
      eight_digit_value(head) * 100000 +
      eight_digit_value((middle & ~std::uint64_t{0xFFFFFF}) | kZeros3));
  if (millis > kMaxMillis) return std::nullopt;
  std::int64_t ns = millis * 1'000'000;
  if (__builtin_add_overflow(ns, static_cast<std::int64_t>(eight_digit_value(tail)), &ns)) {
    return std::nullopt;
  }
  return ns;
}

std::optional<std::int64_t> parse_millis_to_ns(std::string_view text) {
  if (text.size() == kMaxIntegerDigits + 7 && text[kMaxIntegerDigits] == '.') {
    return parse_millis_13_6(text.data());
  }
  std::size_t i = 0;
  std::int64_t millis = 0;
  while (i < text.size() && is_digit(text[i])) {
    if (i == kMaxIntegerDigits) return std::nullopt;
    millis = millis * 10 + (text[i] - '0');
    ++i;
  }
  if (i == 0 || millis > kMaxMillis) return std::nullopt;
  std::int64_t ns = millis * 1'000'000;
  if (i == text.size()) return ns;
  if (text[i] != '.') return std::nullopt;
  ++i;
  const std::size_t fraction_begin = i;
  std::int64_t sub_ms = 0;   // first 6 fraction digits: whole nanoseconds
  std::int64_t sub_ns = 0;   // digits 7..9: thousandths of a nanosecond
  while (i < text.size() && is_digit(text[i])) {
    const std::size_t position = i - fraction_begin;
    if (position == kMaxFractionDigits) return std::nullopt;
    if (position < 6) {
      sub_ms = sub_ms * 10 + (text[i] - '0');
    } else {
      sub_ns = sub_ns * 10 + (text[i] - '0');
    }
    ++i;
  }
  const std::size_t fraction_digits = i - fraction_begin;
  if (fraction_digits == 0 || i != text.size()) return std::nullopt;
  static constexpr std::int64_t kPow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  if (fraction_digits < 6) {
    sub_ms *= kPow10[6 - fraction_digits];
  } else {
    sub_ns *= kPow10[kMaxFractionDigits - fraction_digits];  // scale to thousandths
  }
  // Beyond int64 nanoseconds (after 2262-04-11) is rejected, never wrapped.
  if (__builtin_add_overflow(ns, sub_ms + (sub_ns >= 500 ? 1 : 0), &ns)) return std::nullopt;
  return ns;  // sub-nanosecond digits rounded half up
}

std::string format_ns_as_millis(std::int64_t ns) {
  std::string fraction = std::to_string(ns % 1'000'000);
  return std::to_string(ns / 1'000'000) + "." + std::string(6 - fraction.size(), '0') + fraction;
}

}  // namespace pipescope
