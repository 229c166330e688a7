#include "scan/decimal_time.h"

#include <string>

namespace pipescope {

namespace {
constexpr std::size_t kMaxIntegerDigits = 13;   // ms since the epoch until year 2286
constexpr std::size_t kMaxFractionDigits = 9;   // down to picoseconds, as printed

// The largest millisecond count whose nanoseconds can fit in int64.
constexpr std::int64_t kMaxMillis = 9'223'372'036'854;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

std::optional<std::int64_t> parse_millis_to_ns(std::string_view text) {
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
