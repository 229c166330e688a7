#include "export/trace_size.h"

#include <fmt/core.h>

namespace pipescope {

std::string chrome_trace_size_advice(const std::string& path, std::uintmax_t bytes,
                                     bool perfetto_written) {
  if (bytes <= kChromeTracingLimitBytes) return {};
  return fmt::format(
      "{} is {:.0f} MB: chrome://tracing opens about 256 MB{}; select what to draw with "
      "--steps A-B (and --devices){}",
      path, static_cast<double>(bytes) / 1e6,
      bytes > kPerfettoUiJsonLimitBytes ? " and the Perfetto UI struggles above about 1 GB" : "",
      perfetto_written ? ", or open trace.pftrace (written beside it) instead"
                       : ", or write the compact trace.pftrace with --perfetto");
}

}  // namespace pipescope
