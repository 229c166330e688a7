#include "compare/figure_format.h"

#include <fmt/format.h>

#include <cmath>

#include "numeric/units.h"

namespace pipescope {

std::string format_percent(double ratio) { return fmt::format("{:.2f}%", ratio * 100); }

std::string format_points(double delta) { return fmt::format("{:+.2f} pp", delta * 100); }

std::string format_relative(double change) {
  if (!std::isfinite(change)) return "n/a";
  return fmt::format("{:+.2f}%", change * 100);
}

std::string format_duration_ns(double ns) {
  return format_duration(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_signed_duration_ns(double ns) {
  const std::int64_t rounded = std::llround(ns);
  // fmt rather than operator+: GCC 12 warns falsely (-Wrestrict) on "-" + string.
  if (rounded < 0) return fmt::format("-{}", format_duration(-rounded));
  return fmt::format("+{}", format_duration(rounded));
}

}  // namespace pipescope
