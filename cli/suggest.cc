#include "suggest.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>

namespace pipescope::cli {

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  const std::size_t limit = std::min<std::size_t>(3, std::max<std::size_t>(1, word.size() / 3));
  std::string best;
  std::size_t best_distance = limit + 1;
  for (const std::string& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) {
      best_distance = d;
      best = name;
    }
  }
  return best;
}

void suggest_options(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return;
  const std::string first = argv[1];
  CLI::App* command = nullptr;
  std::vector<std::string> commands;
  for (CLI::App* sub : app.get_subcommands({})) {
    commands.push_back(sub->get_name());
    for (const std::string& alias : sub->get_aliases()) commands.push_back(alias);
    if (sub->check_name(first)) command = sub;
  }
  if (command == nullptr) {
    if (first.starts_with("-")) return;
    const std::string near = nearest_name(first, commands);
    if (!near.empty()) fmt::print(stderr, "pipescope: did you mean `pipescope {}`?\n", near);
    return;
  }
  std::vector<std::string> options;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) options.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    std::string_view word = argv[i];
    if (!word.starts_with("--") || word == "--") continue;
    word = word.substr(0, word.find('='));
    if (std::find(options.begin(), options.end(), word) != options.end()) continue;
    const std::string near = nearest_name(word, options);
    if (!near.empty()) fmt::print(stderr, "pipescope: {}: did you mean {}?\n", word, near);
  }
}

}  // namespace pipescope::cli
