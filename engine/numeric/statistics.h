// Medians, quantiles and ranks: every definition pipescope's figures use,
// each implemented once. docs/guide.md ("Medians and quantiles", under
// "Metrics") says which figure uses which; a figure picks a definition from
// here and never computes its own.
//
// Two families:
//   ranks    an actual sample value, picked by a 0-based rank into the sorted
//            sample. Integer arithmetic only, for any count; used where the
//            figure must be one of the values (a job count, a step to draw,
//            a fence for outliers) or must not be moved by interpolation.
//   values   the median as the mean of the two middle values, and the
//            interpolated quantile, for figures that summarise a sample.
//            On integer ns the median is computed in integers (no double
//            rounding, no overflow anywhere in int64).
//
// Every function that takes a mutable span reorders it (selection, linear
// time, instead of a full sort: a dense run has millions of durations per
// stage); the value it returns is the one a full sort would give.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace pipescope {

// ---- Ranks (0-based into the ascending sample; n >= 1) ----------------------

/// The lower of the two middle values for an even count, the middle one for an
/// odd count: (n − 1) / 2.
constexpr std::size_t lower_middle_rank(std::size_t n) { return (n - 1) / 2; }

/// The upper of the two middle values for an even count, the middle one for an
/// odd count: n / 2.
constexpr std::size_t upper_middle_rank(std::size_t n) { return n / 2; }

/// Nearest rank: the smallest value with at least percent·n / 100 values at or
/// below it, i.e. rank max(⌈percent·n / 100⌉, 1) − 1. `percent` in [0, 100].
constexpr std::size_t nearest_rank(std::size_t n, unsigned percent) {
  const std::size_t at_or_below = (percent * static_cast<unsigned long long>(n) + 99) / 100;
  return (at_or_below == 0 ? 1 : at_or_below) - 1;
}

/// Rounded position: the value whose rank is closest to the interpolated
/// quantile's position percent·(n − 1) / 100, a tie (x.5) rounding up.
/// `percent` in [0, 100].
constexpr std::size_t rounded_rank(std::size_t n, unsigned percent) {
  return static_cast<std::size_t>((2ULL * percent * (n - 1) + 100) / 200);
}

/// Quartile fences that mirror each other: ranks ⌊n/4⌋ and n − 1 − ⌊n/4⌋ (for
/// n = 2 or 3 the minimum and the maximum).
struct QuartileRanks {
  std::size_t lower = 0;
  std::size_t upper = 0;
};
constexpr QuartileRanks quartile_ranks(std::size_t n) { return {n / 4, n - 1 - n / 4}; }

/// The value of rank `rank` (< values.size()) of the ascending sample;
/// reorders `values` (afterwards no value before that rank is larger, none
/// after it smaller).
std::int64_t select_rank(std::span<std::int64_t> values, std::size_t rank);
std::uint32_t select_rank(std::span<std::uint32_t> values, std::size_t rank);
double select_rank(std::span<double> values, std::size_t rank);

/// select_rank of a sample split into parts that are never brought together
/// (the partitioned analysis: each rank holds its steps' values), known only
/// through count_at_most(x), how many of its values are <= x over every
/// part; `lo` and `hi` are its smallest and largest values (rank < n).
/// Binary search on the value: at most 64 questions, the answer exact.
std::int64_t select_rank_by_count(std::uint64_t rank, std::int64_t lo, std::int64_t hi,
                                  const std::function<std::uint64_t(std::int64_t)>& count_at_most);

/// Many such selections at once, in lockstep: each round asks
/// `count_at_most` once for every query not yet decided ((query index, x)
/// pairs; it answers one count per pair), so a partitioned analysis
/// exchanges once per round, at most 64 rounds, whatever the number of
/// queries. Returns each query's value.
struct RankQuery {
  std::uint64_t rank = 0;
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};
using CountsAtMost = std::function<std::vector<std::uint64_t>(
    std::span<const std::pair<std::size_t, std::int64_t>>)>;
std::vector<std::int64_t> select_ranks_by_count(std::vector<RankQuery> queries,
                                                const CountsAtMost& count_at_most);

/// The median from the two middle values (the same for an odd count):
/// their mean rounded up, as median_ns rounds it.
std::int64_t median_from_middles(std::int64_t low, std::int64_t high);

/// median_ns of such a sample of `n` values (0 when n is 0).
std::int64_t median_ns_by_count(std::uint64_t n, std::int64_t lo, std::int64_t hi,
                                const std::function<std::uint64_t(std::int64_t)>& count_at_most);

/// select_rank(values, upper_middle_rank(n)); 0 when empty.
std::int64_t upper_middle(std::span<std::int64_t> values);

// ---- Values -------------------------------------------------------------------

/// The median of integer ns: the middle value, or for an even count the mean
/// of the two middle values rounded half up (toward +∞: 3 and 6 give 5, −6
/// and −3 give −4). Exact integer arithmetic, no overflow for any int64
/// values; 0 when empty.
std::int64_t median_ns(std::span<std::int64_t> values);

/// The same median of integer ns with the half kept: the mean of the two
/// middle values exactly (3 and 6 give 4.5), as a double (exact while the
/// magnitude is below 2^52 ns, 52 days); 0 when empty. For figures carried as
/// double, such as a replay's predicted step.
double median_ns_exact(std::span<std::int64_t> values);

/// The median of real values (ratios, rates): the middle value, or the mean
/// of the two middle values (std::midpoint: correctly rounded, no overflow);
/// 0 when empty.
double median(std::span<double> values);

/// Linear interpolation between closest ranks (Hyndman and Fan's type 7, the
/// default of R and NumPy) of an ascending sample: with h = q·(n − 1), the
/// value of rank ⌊h⌋ plus (h − ⌊h⌋) of the way to the next one. q in [0, 1];
/// 0 when empty. At q = 0.5 this is the median up to the last bit of a
/// double: figures report the median by median(), this for other quantiles.
double interpolated_quantile(std::span<const double> sorted, double q);

}  // namespace pipescope
