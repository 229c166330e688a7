#include "ingest/text_log_options.h"

#include <fmt/core.h>

#include "scan/job_line_parser.h"

namespace pipescope {

std::string job_lines_looked_for(const TextLogOptions& options) {
  if (options.job_line != nullptr) return options.job_line_label;
  return fmt::format("lines containing '{}'", kJobLineLiteral);
}

}  // namespace pipescope
