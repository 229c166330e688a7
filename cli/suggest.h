// "Did you mean ...?" after a command line CLI11 refused: the nearest
// subcommand or option name to each word it could not place.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope::cli {

/// The name among `names` closest to `word` (edit distance, at most a third
/// of the word's length and at most 3), or "" when none is that close.
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

/// Prints "pipescope: did you mean ...?" on stderr for a first argument that
/// names no subcommand, and for each `--option` the chosen subcommand does not
/// have.
void suggest_options(CLI::App& app, int argc, char** argv);

}  // namespace pipescope::cli
