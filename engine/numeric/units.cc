#include "numeric/units.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace pipescope {

namespace {

// "<whole>.<3 digits>" of magnitude/unit, rounded half up, from integers.
std::string fixed3(std::uint64_t magnitude, std::uint64_t unit) {
  const std::uint64_t thousandths =
      unit >= 1000 ? (magnitude + unit / 2000) / (unit / 1000) : magnitude * (1000 / unit);
  return fmt::format("{}.{:03}", thousandths / 1000, thousandths % 1000);
}

std::uint64_t magnitude_of(std::int64_t v) {
  return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

}  // namespace

std::string percent(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  return fmt::format("{:.1f}%", ratio * 100.0);
}

std::string format_duration(std::int64_t ns) {
  const std::string_view sign = ns < 0 ? "-" : "";
  const std::uint64_t abs = magnitude_of(ns);
  if (abs < 1'000) return fmt::format("{}{} ns", sign, abs);
  if (abs < 1'000'000) return fmt::format("{}{} us", sign, fixed3(abs, 1'000));
  // Rounding can carry into the next unit (999.9996 ms is 1.000 s).
  if ((abs + 500) / 1'000 < 1'000'000) return fmt::format("{}{} ms", sign, fixed3(abs, 1'000'000));
  return fmt::format("{}{} s", sign, fixed3(abs, 1'000'000'000));
}

std::string format_ms(std::int64_t ns) {
  return fmt::format("{}{}", ns < 0 ? "-" : "", fixed3(magnitude_of(ns), 1'000'000));
}

}  // namespace pipescope
