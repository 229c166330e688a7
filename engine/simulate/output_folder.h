// The refusal every simulation writer gives an output folder that is not
// empty, in the caller's words: the option that lets the writer replace
// what it wrote before is CallerOption::force.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "model/option_words.h"

namespace pipescope::sim {

/// "output folder DIR is not empty; use NAME to replace the WHAT in it",
/// `what` being what the writer writes ("worker logs", "traces").
std::invalid_argument non_empty_folder_error(const std::filesystem::path& dir,
                                             std::string_view what, const OptionWords& words);

}  // namespace pipescope::sim
