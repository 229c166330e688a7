// Text forms of ratios and durations, each written one way everywhere: the
// text report, the HTML report, `whatif` and `watch` show the same figure
// the same way. (`check` and `diff` add their own two-decimal forms on top,
// compare/figure_format.h.)
#pragma once

#include <cstdint>
#include <string>

namespace pipescope {

/// A ratio as a percentage with one decimal: 0.3125 -> "31.2%" (fmt's
/// rounding of ratio·100); "-" when the ratio is not finite.
std::string percent(double ratio);

/// "999 ns", "12.345 us", "12.345 ms", "1.234 s": the largest unit that keeps
/// at least 1 before the point (after rounding: 999.9996 ms is "1.000 s"),
/// three decimals rounded half away from zero, computed in integers; negative
/// values carry a "-".
std::string format_duration(std::int64_t ns);

/// A duration in milliseconds with three decimals and no unit, for columns
/// headed "ms": 1234567 -> "1.235", -500 -> "-0.001" (half away from zero, in
/// integers).
std::string format_ms(std::int64_t ns);

}  // namespace pipescope
