#include "ingest/text_log_options.h"

#include <fmt/core.h>

#include "model/option_words.h"
#include "scan/job_line_parser.h"

namespace pipescope {

std::string job_lines_looked_for(const TextLogOptions& options, const OptionWords& words) {
  if (options.job_line != nullptr) {
    return fmt::format("lines matching {}", words.name(CallerOption::job_line));
  }
  return fmt::format("lines containing '{}'", kJobLineLiteral);
}

}  // namespace pipescope
