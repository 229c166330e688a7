#include "simulate/log_format.h"

#include <stdexcept>

namespace pipescope::sim {

namespace {

constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kSecondsPerDay = 86'400;

// Appends value as exactly `width` digits (value < 10^width, value >= 0).
void append_padded(fmt::memory_buffer& out, std::int64_t value, int width) {
  char digits[20];
  for (int i = width - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(digits, digits + width);
}

struct CivilTime {
  int year, month, day, hour, minute, second;
  std::int64_t sub_ns;  // ns within the second
};

// Howard Hinnant's civil_from_days: proleptic Gregorian date of a day count.
CivilTime to_civil(std::int64_t ns) {
  std::int64_t seconds = ns / kNsPerSecond;
  std::int64_t sub = ns % kNsPerSecond;
  if (sub < 0) {
    sub += kNsPerSecond;
    --seconds;
  }
  std::int64_t days = seconds / kSecondsPerDay;
  std::int64_t in_day = seconds % kSecondsPerDay;
  if (in_day < 0) {
    in_day += kSecondsPerDay;
    --days;
  }
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2);
  return {static_cast<int>(y),
          static_cast<int>(m),
          static_cast<int>(d),
          static_cast<int>(in_day / 3600),
          static_cast<int>(in_day / 60 % 60),
          static_cast<int>(in_day % 60),
          sub};
}

}  // namespace

void append_ms_time(fmt::memory_buffer& out, std::int64_t ns, int decimals, std::uint64_t bits) {
  if (ns < 1) throw std::invalid_argument("log times must be positive");
  switch (decimals) {
    case 3: {
      const std::int64_t us = (ns + 500) / 1000;
      append_int(out, us / 1000);
      out.push_back('.');
      append_padded(out, us % 1000, 3);
      return;
    }
    case 6:
      append_int(out, ns / kNsPerMs);
      out.push_back('.');
      append_padded(out, ns % kNsPerMs, 6);
      return;
    case 9: {
      // Either ns followed by 000..499, or ns-1 followed by 500..999: both
      // round half up to ns.
      const bool up = (bits & 1) != 0;
      const std::int64_t base = up ? ns - 1 : ns;
      const auto sub = static_cast<std::int64_t>((bits >> 1) % 500) + (up ? 500 : 0);
      append_int(out, base / kNsPerMs);
      out.push_back('.');
      append_padded(out, base % kNsPerMs, 6);
      append_padded(out, sub, 3);
      return;
    }
    default:
      throw std::invalid_argument("time decimals must be 3, 6 or 9");
  }
}

std::int64_t printed_ns(std::int64_t ns, int decimals) {
  return decimals == 3 ? (ns + 500) / 1000 * 1000 : ns;
}

void append_glog_prefix(fmt::memory_buffer& out, char severity, std::int64_t ns, int thread_id,
                        std::string_view source) {
  const CivilTime t = to_civil(ns);
  out.push_back(severity);
  append_padded(out, t.month, 2);
  append_padded(out, t.day, 2);
  out.push_back(' ');
  append_padded(out, t.hour, 2);
  out.push_back(':');
  append_padded(out, t.minute, 2);
  out.push_back(':');
  append_padded(out, t.second, 2);
  out.push_back('.');
  append_padded(out, t.sub_ns / 1000, 6);
  out.push_back(' ');
  append_int(out, thread_id);
  out.push_back(' ');
  append_text(out, source);
  append_text(out, "] ");
}

void append_python_time(fmt::memory_buffer& out, std::int64_t ns) {
  const CivilTime t = to_civil(ns);
  append_padded(out, t.year, 4);
  out.push_back('-');
  append_padded(out, t.month, 2);
  out.push_back('-');
  append_padded(out, t.day, 2);
  out.push_back(' ');
  append_padded(out, t.hour, 2);
  out.push_back(':');
  append_padded(out, t.minute, 2);
  out.push_back(':');
  append_padded(out, t.second, 2);
  out.push_back(',');
  append_padded(out, t.sub_ns / 1'000'000, 3);
}

}  // namespace pipescope::sim
