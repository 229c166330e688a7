// How big a Chrome JSON trace may get before the viewers give up: both
// chrome://tracing and the Perfetto UI parse the whole JSON in the browser,
// the former up to about 256 MB, the latter slowly up to about 1 GB.
#pragma once

#include <cstdint>
#include <string>

namespace pipescope {

inline constexpr std::uintmax_t kChromeTracingLimitBytes = 256ull << 20;
inline constexpr std::uintmax_t kPerfettoUiJsonLimitBytes = 1ull << 30;

/// What to tell the user about a JSON trace of `bytes` at `path`: empty when
/// it opens everywhere, else which viewers it is too big for and the options
/// that make it smaller (`--steps`, `--devices`, and `--perfetto` unless the
/// protobuf trace was written too).
std::string chrome_trace_size_advice(const std::string& path, std::uintmax_t bytes,
                                     bool perfetto_written);

}  // namespace pipescope
