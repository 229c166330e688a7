#include "analysis/step_selection.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

namespace pipescope {

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::int64_t parse_step_number(std::string_view text, std::string_view flag) {
  text = trimmed(text);
  std::int64_t value = 0;
  bool ok = !text.empty();
  for (const char c : text) {
    if (c < '0' || c > '9' || value > (INT64_MAX - 9) / 10) {
      ok = false;
      break;
    }
    value = value * 10 + (c - '0');
  }
  if (!ok) throw std::invalid_argument(fmt::format("{}: '{}' is not a step number", flag, text));
  return value;
}

}  // namespace

std::vector<std::size_t> parse_step_list(std::string_view spec, const Metrics& metrics,
                                         std::string_view flag) {
  if (metrics.steps.empty()) {
    throw std::invalid_argument(fmt::format("{}: the run has no steps", flag));
  }
  const std::int64_t first = metrics.steps.front().step;
  const std::int64_t last = metrics.steps.back().step;
  std::vector<std::size_t> chosen;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    const std::string_view item = spec.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const std::int64_t a = parse_step_number(item.substr(0, dash), flag);
    const std::int64_t b =
        dash == std::string_view::npos ? a : parse_step_number(item.substr(dash + 1), flag);
    if (b < a) {
      throw std::invalid_argument(fmt::format("{}: '{}' is an empty range", flag, trimmed(item)));
    }
    for (const std::int64_t s : {a, b}) {
      if (s < first || s > last) {
        throw std::invalid_argument(
            fmt::format("{}: the run has no step {} (steps {}-{})", flag, s, first, last));
      }
    }
    // Step numbers are consecutive (first_step + index), so a range maps to
    // an index range without walking a huge one item by item.
    for (std::int64_t s = a; s <= b; ++s) chosen.push_back(static_cast<std::size_t>(s - first));
    pos = comma + 1;
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

StepSelection StepSelection::parse(std::string_view spec, const Metrics& metrics,
                                   std::string_view flag) {
  StepSelection selection;
  if (trimmed(spec).empty()) return selection;
  const std::vector<std::size_t> indices = parse_step_list(spec, metrics, flag);
  selection.everything_ = false;
  selection.chosen_.assign(metrics.steps.size(), false);
  selection.start_ns_ = INT64_MAX;
  selection.end_ns_ = INT64_MIN;
  for (const std::size_t k : indices) {
    selection.chosen_[k] = true;
    selection.start_ns_ = std::min(selection.start_ns_, metrics.steps[k].start_ns);
    selection.end_ns_ = std::max(selection.end_ns_, metrics.steps[k].end_ns);
  }
  return selection;
}

}  // namespace pipescope
