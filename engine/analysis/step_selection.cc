#include "analysis/step_selection.h"

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "numeric/statistics.h"

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

namespace {

/// "10-12" or "10-12 in segment 0, 12-13 in segment 1": what the run has.
std::string steps_the_run_has(const std::vector<SegmentSteps>& segments) {
  std::string out;
  for (const SegmentSteps& segment : segments) {
    if (segment.count == 0) continue;
    const std::int64_t last = segment.first_step + static_cast<std::int64_t>(segment.count) - 1;
    if (!out.empty()) out += ", ";
    out += segment.first_step == last ? fmt::format("{}", last)
                                      : fmt::format("{}-{}", segment.first_step, last);
    if (segments.size() > 1) out += fmt::format(" in segment {}", segment.index);
  }
  return out;
}

/// Whether `segment` has step number `n`.
bool has_step(const SegmentSteps& segment, std::int64_t n) {
  return n >= segment.first_step &&
         n - segment.first_step < static_cast<std::int64_t>(segment.count);
}

}  // namespace

std::vector<std::size_t> parse_step_list(std::string_view spec, const Metrics& metrics,
                                         std::string_view flag) {
  if (metrics.steps.empty()) {
    throw std::invalid_argument(fmt::format("{}: the run has no steps", flag));
  }
  // Without segments (a hand-built Metrics), the steps are one segment.
  std::vector<SegmentSteps> segments = metrics.segments;
  if (segments.empty()) {
    segments.push_back(
        {0, metrics.steps.front().step, 0, metrics.steps.size(), 0, 0, 0, {}, {}, {}});
  }
  std::vector<std::size_t> chosen;
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', pos), spec.size());
    std::string_view item = trimmed(spec.substr(pos, comma - pos));
    pos = comma + 1;
    // SEG:STEP or SEG:FROM-TO: steps of one segment.
    std::optional<int> in_segment;
    if (const std::size_t colon = item.find(':'); colon != std::string_view::npos) {
      const std::int64_t index = parse_step_number(item.substr(0, colon), flag);
      const auto it = std::find_if(segments.begin(), segments.end(),
                                   [&](const SegmentSteps& s) { return s.index == index; });
      if (it == segments.end()) {
        throw std::invalid_argument(fmt::format("{}: '{}': the run has no segment {} (steps {})",
                                                flag, item, index, steps_the_run_has(segments)));
      }
      in_segment = static_cast<int>(it - segments.begin());
      item = item.substr(colon + 1);
    }
    const std::size_t dash = item.find('-');
    const std::int64_t a = parse_step_number(item.substr(0, dash), flag);
    const std::int64_t b =
        dash == std::string_view::npos ? a : parse_step_number(item.substr(dash + 1), flag);
    if (b < a) {
      throw std::invalid_argument(fmt::format("{}: '{}' is an empty range", flag, item));
    }
    for (const std::int64_t n : {a, b}) {
      const bool found = in_segment
                             ? has_step(segments[static_cast<std::size_t>(*in_segment)], n)
                             : std::any_of(segments.begin(), segments.end(),
                                           [&](const SegmentSteps& s) { return has_step(s, n); });
      if (!found) {
        throw std::invalid_argument(
            in_segment ? fmt::format("{}: segment {} has no step {} (steps {})", flag,
                                     segments[static_cast<std::size_t>(*in_segment)].index, n,
                                     steps_the_run_has(segments))
                       : fmt::format("{}: the run has no step {} (steps {})", flag, n,
                                     steps_the_run_has(segments)));
      }
    }
    // A plain number means the last segment that has it: walk the segments
    // from the last, each claiming the part of [a, b] no later one claimed.
    // Step numbers are consecutive within a segment, so each part maps to an
    // index range without walking a huge range number by number.
    std::vector<std::pair<std::int64_t, std::int64_t>> claimed;
    for (std::size_t s = segments.size(); s-- > 0;) {
      if (in_segment && s != static_cast<std::size_t>(*in_segment)) continue;
      const SegmentSteps& segment = segments[s];
      if (segment.count == 0) continue;
      const std::int64_t last = segment.first_step + static_cast<std::int64_t>(segment.count) - 1;
      std::vector<std::pair<std::int64_t, std::int64_t>> parts{
          {std::max(a, segment.first_step), std::min(b, last)}};
      for (const auto& [lo, hi] : claimed) {
        std::vector<std::pair<std::int64_t, std::int64_t>> rest;
        for (const auto& [x, y] : parts) {
          if (x > y) continue;
          if (hi < x || lo > y) {
            rest.emplace_back(x, y);
            continue;
          }
          if (x < lo) rest.emplace_back(x, lo - 1);
          if (hi < y) rest.emplace_back(hi + 1, y);
        }
        parts = std::move(rest);
      }
      for (const auto& [x, y] : parts) {
        if (x > y) continue;
        for (std::int64_t n = x; n <= y; ++n) {
          chosen.push_back(segment.first + static_cast<std::size_t>(n - segment.first_step));
        }
        claimed.emplace_back(x, y);
      }
    }
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

std::vector<std::size_t> median_and_slowest_steps(const Metrics& metrics) {
  const std::size_t n = metrics.steps.size();
  if (n == 0) return {};
  // Among the complete steps (an incomplete one's window says little),
  // unless none is.
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < n; ++k) {
    if (metrics.steps[k].complete) order.push_back(k);
  }
  if (order.empty()) {
    for (std::size_t k = 0; k < n; ++k) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return metrics.steps[a].window_ns() < metrics.steps[b].window_ns();
  });
  const std::size_t median = order[lower_middle_rank(order.size())];
  const std::size_t slowest = order.back();
  std::vector<std::size_t> chosen{median};
  if (slowest != median) chosen.push_back(slowest);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<std::size_t> with_neighbours(const Metrics& metrics,
                                         const std::vector<std::size_t>& indices) {
  const std::size_t n = metrics.steps.size();
  std::vector<std::size_t> out;
  for (const std::size_t k : indices) {
    if (k >= n) continue;
    const int segment = metrics.steps[k].segment;
    if (k > 0 && metrics.steps[k - 1].segment == segment) out.push_back(k - 1);
    out.push_back(k);
    if (k + 1 < n && metrics.steps[k + 1].segment == segment) out.push_back(k + 1);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string step_list_text(const Metrics& metrics, const std::vector<std::size_t>& indices) {
  const bool segmented = metrics.segments.size() > 1;
  std::string out;
  for (std::size_t i = 0; i < indices.size();) {
    // A run of consecutive steps of one segment.
    std::size_t j = i + 1;
    while (j < indices.size() && indices[j] == indices[j - 1] + 1 &&
           metrics.steps[indices[j]].segment == metrics.steps[indices[i]].segment) {
      ++j;
    }
    const StepWindow& first = metrics.steps[indices[i]];
    const StepWindow& last = metrics.steps[indices[j - 1]];
    if (!out.empty()) out += ',';
    if (segmented) out += fmt::format("{}:", first.segment);
    out += first.step == last.step ? fmt::format("{}", first.step)
                                   : fmt::format("{}-{}", first.step, last.step);
    i = j;
  }
  return out;
}

StepSelection StepSelection::parse(std::string_view spec, const Metrics& metrics,
                                   std::string_view flag) {
  if (trimmed(spec).empty() || trimmed(spec) == "all") return StepSelection();
  return of(parse_step_list(spec, metrics, flag), metrics);
}

StepSelection StepSelection::of(const std::vector<std::size_t>& indices, const Metrics& metrics) {
  StepSelection selection;
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

std::vector<std::size_t> StepSelection::indices() const {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < chosen_.size(); ++k) {
    if (chosen_[k]) out.push_back(k);
  }
  return out;
}

}  // namespace pipescope
