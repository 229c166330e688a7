#include "simulate/output_folder.h"

#include <fmt/format.h>

namespace pipescope::sim {

std::invalid_argument non_empty_folder_error(const std::filesystem::path& dir,
                                             std::string_view what, const OptionWords& words) {
  return std::invalid_argument(
      fmt::format("output folder {} is not empty; use {} to replace the {} in it", dir.string(),
                  words.name(CallerOption::force), what));
}

}  // namespace pipescope::sim
