// Text forms of the compared figures, shared by the terminal verdict, the
// markdown and JUnit reports and `diff`, so every output shows the same
// numbers the same way.
#pragma once

#include <cstdint>
#include <string>

namespace pipescope {

/// 0.3125 -> "31.25%" (two decimals).
std::string format_percent(double ratio);
/// A difference of ratios in percentage points: 0.015 -> "+1.50 pp".
std::string format_points(double delta);
/// A relative change: 0.04 -> "+4.00%".
std::string format_relative(double change);
/// A duration in ns that may be fractional (a median): "12.346 ms".
std::string format_duration_ns(double ns);
/// A signed duration: "+1.200 ms", "-0.500 ms".
std::string format_signed_duration_ns(double ns);

}  // namespace pipescope
