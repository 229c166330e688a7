// Fuzzes the job-line grammar (scan/job_line_parser.h): any bytes, with or
// without ANSI codes, must parse or be rejected with a LineError, never read
// out of bounds, and an accepted line must satisfy the documented invariants.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "scan/job_line_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Feed the line through an exactly-sized heap copy so ASan sees any read
  // past its end (the caller's buffer may have slack).
  const std::string line(reinterpret_cast<const char*>(data), size);
  static std::string scratch;
  pipescope::JobLine job;
  const pipescope::LineError error = pipescope::parse_job_line(line, job, scratch);
  if (error == pipescope::LineError::none) {
    // What the parser promises for an accepted line.
    if (job.end_ns < job.start_ns) std::abort();
    if (job.type.empty() || job.type.find(',') != std::string_view::npos) std::abort();
    if (line.find(pipescope::kJobLineLiteral) == std::string::npos &&
        line.find('\x1b') == std::string::npos) {
      std::abort();
    }
  } else if (pipescope::describe(error).empty()) {
    std::abort();
  }
  (void)pipescope::parse_step_start_line(line);
  std::string stripped;
  const std::string_view clean = pipescope::strip_ansi(line, stripped);
  if (clean.size() > line.size()) std::abort();  // removing codes never adds bytes
  return 0;
}
