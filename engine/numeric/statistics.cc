#include "numeric/statistics.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

namespace pipescope {

namespace {

template <typename T>
T select(std::span<T> values, std::size_t rank) {
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(rank);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

/// The two middle values of `values` (the middle one twice for an odd count);
/// values non-empty. One selection, then the smallest value after it.
template <typename T>
std::pair<T, T> middles(std::span<T> values) {
  const std::size_t n = values.size();
  const std::size_t lower = lower_middle_rank(n);
  const T low = select(values, lower);
  if (n % 2 == 1) return {low, low};
  return {low,
          *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lower) + 1, values.end())};
}

/// upper − lower (lower <= upper) without overflow: the difference of any two
/// int64 fits in uint64.
std::uint64_t distance(std::int64_t lower, std::int64_t upper) {
  return static_cast<std::uint64_t>(upper) - static_cast<std::uint64_t>(lower);
}

}  // namespace

std::int64_t select_rank(std::span<std::int64_t> values, std::size_t rank) {
  return select(values, rank);
}

std::uint32_t select_rank(std::span<std::uint32_t> values, std::size_t rank) {
  return select(values, rank);
}
double select_rank(std::span<double> values, std::size_t rank) { return select(values, rank); }

std::vector<std::int64_t> select_ranks_by_count(std::vector<RankQuery> queries,
                                                const CountsAtMost& count_at_most) {
  // Each query: the smallest x in [lo, hi] with more than `rank` values at
  // or below it, by bisection; every unfinished query asks in the same round.
  std::vector<std::pair<std::size_t, std::int64_t>> asked;
  for (;;) {
    asked.clear();
    for (std::size_t q = 0; q < queries.size(); ++q) {
      const RankQuery& query = queries[q];
      if (query.lo < query.hi) {
        asked.emplace_back(q,
                           query.lo + static_cast<std::int64_t>(distance(query.lo, query.hi) / 2));
      }
    }
    if (asked.empty()) break;
    const std::vector<std::uint64_t> counts = count_at_most(asked);
    for (std::size_t i = 0; i < asked.size(); ++i) {
      RankQuery& query = queries[asked[i].first];
      const std::int64_t mid = asked[i].second;
      if (counts.at(i) > query.rank) {
        query.hi = mid;
      } else {
        query.lo = mid + 1;
      }
    }
  }
  std::vector<std::int64_t> out;
  out.reserve(queries.size());
  for (const RankQuery& query : queries) out.push_back(query.lo);
  return out;
}

std::int64_t select_rank_by_count(std::uint64_t rank, std::int64_t lo, std::int64_t hi,
                                  const std::function<std::uint64_t(std::int64_t)>& count_at_most) {
  return select_ranks_by_count({{rank, lo, hi}},
                               [&](std::span<const std::pair<std::size_t, std::int64_t>> asked) {
                                 return std::vector<std::uint64_t>{count_at_most(asked[0].second)};
                               })
      .front();
}

std::int64_t median_from_middles(std::int64_t low, std::int64_t high) {
  const std::uint64_t d = distance(low, high);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + d / 2 + d % 2);
}

std::int64_t median_ns_by_count(std::uint64_t n, std::int64_t lo, std::int64_t hi,
                                const std::function<std::uint64_t(std::int64_t)>& count_at_most) {
  if (n == 0) return 0;
  const std::int64_t low = select_rank_by_count(lower_middle_rank(n), lo, hi, count_at_most);
  const std::int64_t high =
      n % 2 == 1 ? low : select_rank_by_count(upper_middle_rank(n), lo, hi, count_at_most);
  return median_from_middles(low, high);
}

std::int64_t upper_middle(std::span<std::int64_t> values) {
  return values.empty() ? 0 : select(values, upper_middle_rank(values.size()));
}

std::int64_t median_ns(std::span<std::int64_t> values) {
  if (values.empty()) return 0;
  const auto [low, high] = middles(values);
  const std::uint64_t d = distance(low, high);
  // ⌈d / 2⌉ written so that d + 1 cannot wrap; the sum lies in [low, high],
  // so it fits in int64 and the unsigned addition is exact.
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + d / 2 + d % 2);
}

double median_ns_exact(std::span<std::int64_t> values) {
  if (values.empty()) return 0;
  const auto [low, high] = middles(values);
  const std::uint64_t d = distance(low, high);
  const auto floor = static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + d / 2);
  return static_cast<double>(floor) + (d % 2 == 1 ? 0.5 : 0.0);
}

double median(std::span<double> values) {
  if (values.empty()) return 0;
  const auto [low, high] = middles(values);
  return std::midpoint(low, high);
}

double interpolated_quantile(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(position));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (position - static_cast<double>(lo));
}

}  // namespace pipescope
