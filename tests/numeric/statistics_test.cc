// Every median, quantile and rank definition of numeric/statistics.h: small
// worked cases, ties, values at the ends of int64, and a comparison with a
// brute-force computation from a full sort on random samples.
#include "numeric/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace pipescope {
namespace {

using I = std::vector<std::int64_t>;
using D = std::vector<double>;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

// Copies, so each call sees the sample in the order written.
std::int64_t med_ns(I v) { return median_ns(v); }
double med_exact(I v) { return median_ns_exact(v); }
double med(D v) { return median(v); }
std::int64_t upper(I v) { return upper_middle(v); }
std::int64_t at_rank(I v, std::size_t rank) { return select_rank(v, rank); }

TEST(Statistics, Ranks) {
  // n = 1: every rank is the only value.
  EXPECT_EQ(lower_middle_rank(1), 0u);
  EXPECT_EQ(upper_middle_rank(1), 0u);
  EXPECT_EQ(nearest_rank(1, 0), 0u);
  EXPECT_EQ(nearest_rank(1, 95), 0u);
  EXPECT_EQ(nearest_rank(1, 100), 0u);
  EXPECT_EQ(rounded_rank(1, 10), 0u);
  EXPECT_EQ(rounded_rank(1, 90), 0u);
  EXPECT_EQ(quartile_ranks(1).lower, 0u);
  EXPECT_EQ(quartile_ranks(1).upper, 0u);
  // Odd and even counts.
  EXPECT_EQ(lower_middle_rank(5), 2u);
  EXPECT_EQ(upper_middle_rank(5), 2u);
  EXPECT_EQ(lower_middle_rank(4), 1u);
  EXPECT_EQ(upper_middle_rank(4), 2u);
  // Nearest rank: ⌈p·n/100⌉ − 1, at least 0.
  EXPECT_EQ(nearest_rank(20, 95), 18u);   // 19 values at or below
  EXPECT_EQ(nearest_rank(21, 95), 19u);   // 19.95 -> 20
  EXPECT_EQ(nearest_rank(100, 95), 94u);  // exactly 95
  EXPECT_EQ(nearest_rank(4, 50), 1u);     // the lower middle
  EXPECT_EQ(nearest_rank(5, 50), 2u);
  EXPECT_EQ(nearest_rank(10, 0), 0u);
  EXPECT_EQ(nearest_rank(10, 100), 9u);
  // Rounded position p·(n − 1)/100, ties up.
  EXPECT_EQ(rounded_rank(6, 10), 1u);   // 0.5 -> 1
  EXPECT_EQ(rounded_rank(6, 90), 5u);   // 4.5 -> 5
  EXPECT_EQ(rounded_rank(5, 10), 0u);   // 0.4 -> 0
  EXPECT_EQ(rounded_rank(16, 10), 2u);  // 1.5 -> 2
  EXPECT_EQ(rounded_rank(11, 90), 9u);  // exactly 9
  EXPECT_EQ(rounded_rank(10, 100), 9u);
  EXPECT_EQ(rounded_rank(10, 0), 0u);
  // Quartile fences mirror each other.
  EXPECT_EQ(quartile_ranks(2).lower, 0u);
  EXPECT_EQ(quartile_ranks(2).upper, 1u);
  EXPECT_EQ(quartile_ranks(3).lower, 0u);
  EXPECT_EQ(quartile_ranks(3).upper, 2u);
  EXPECT_EQ(quartile_ranks(8).lower, 2u);
  EXPECT_EQ(quartile_ranks(8).upper, 5u);
  EXPECT_EQ(quartile_ranks(11).lower, 2u);
  EXPECT_EQ(quartile_ranks(11).upper, 8u);
}

TEST(Statistics, SelectRankAndUpperMiddle) {
  EXPECT_EQ(at_rank({7}, 0), 7);
  EXPECT_EQ(at_rank({5, 1, 4, 2, 3}, 0), 1);
  EXPECT_EQ(at_rank({5, 1, 4, 2, 3}, 3), 4);
  EXPECT_EQ(at_rank({kMax, kMin, 0}, 0), kMin);
  EXPECT_EQ(at_rank({kMax, kMin, 0}, 2), kMax);
  D d{0.5, -1.0, 2.0};
  EXPECT_EQ(select_rank(d, 1), 0.5);

  EXPECT_EQ(upper({}), 0);
  EXPECT_EQ(upper({9}), 9);
  EXPECT_EQ(upper({3, 1, 2}), 2);
  EXPECT_EQ(upper({4, 1, 3, 2}), 3);  // the upper of 2 and 3
  EXPECT_EQ(upper({5, 5, 6, 6}), 6);
  EXPECT_EQ(upper({2, 2, 2, 9}), 2);  // ties
  EXPECT_EQ(upper({kMin, kMax}), kMax);
}

TEST(Statistics, SelectRankLeavesThePartition) {
  I v{9, 3, 7, 1, 8, 2, 6, 4, 5};
  EXPECT_EQ(select_rank(v, 4), 5);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_LE(v[i], 5);
  for (std::size_t i = 5; i < v.size(); ++i) EXPECT_GE(v[i], 5);
}

TEST(Statistics, MedianNsRoundsHalfUpInIntegers) {
  EXPECT_EQ(med_ns({}), 0);
  EXPECT_EQ(med_ns({42}), 42);
  EXPECT_EQ(med_ns({3, 1, 2}), 2);
  EXPECT_EQ(med_ns({6, 3}), 5);     // 4.5 -> 5
  EXPECT_EQ(med_ns({4, 2}), 3);     // exact
  EXPECT_EQ(med_ns({-6, -3}), -4);  // −4.5 -> −4 (toward +∞)
  EXPECT_EQ(med_ns({-1, 0}), 0);    // −0.5 -> 0
  EXPECT_EQ(med_ns({1, 4, 2, 3}), 3);
  EXPECT_EQ(med_ns({7, 7, 7, 8}), 7);  // ties
  EXPECT_EQ(med_ns({5, 5, 5, 5}), 5);
  // The ends of int64: no overflow in the sum or the difference.
  EXPECT_EQ(med_ns({kMax, kMax}), kMax);
  EXPECT_EQ(med_ns({kMin, kMin}), kMin);
  EXPECT_EQ(med_ns({kMax - 1, kMax}), kMax);
  EXPECT_EQ(med_ns({kMin, kMin + 1}), kMin + 1);
  EXPECT_EQ(med_ns({kMin, kMax}), 0);  // −0.5 -> 0
  EXPECT_EQ(med_ns({kMin, 0, kMax, 1}), 1);
  EXPECT_EQ(med_ns({kMin, kMax, kMax}), kMax);
}

TEST(Statistics, MedianNsExactKeepsTheHalf) {
  EXPECT_EQ(med_exact({}), 0);
  EXPECT_EQ(med_exact({42}), 42);
  EXPECT_EQ(med_exact({3, 1, 2}), 2);
  EXPECT_EQ(med_exact({6, 3}), 4.5);
  EXPECT_EQ(med_exact({-6, -3}), -4.5);
  EXPECT_EQ(med_exact({-1, 0}), -0.5);
  EXPECT_EQ(med_exact({7, 7, 8, 7}), 7);
  // Exact up to 2^52 ns.
  constexpr std::int64_t big = std::int64_t{1} << 52;
  EXPECT_EQ(med_exact({big - 1, big - 2}), static_cast<double>(big) - 1.5);
  // Beyond, the nearest double; still no overflow.
  EXPECT_EQ(med_exact({kMin, kMax}), -0.5);
  EXPECT_EQ(med_exact({kMax, kMax}), static_cast<double>(kMax));
  EXPECT_EQ(med_exact({kMin, kMin}), static_cast<double>(kMin));
}

TEST(Statistics, MedianOfReals) {
  EXPECT_EQ(med({}), 0);
  EXPECT_EQ(med({0.25}), 0.25);
  EXPECT_EQ(med({0.3, 0.1, 0.2}), 0.2);
  EXPECT_EQ(med({0.1, 0.2}), (0.1 + 0.2) / 2);
  EXPECT_EQ(med({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(med({1.0, 1.0, 1.0, 5.0}), 1.0);
  EXPECT_EQ(med({-2.0, -1.0}), -1.5);
  // No overflow where the sum of the two middles would.
  const double huge = std::numeric_limits<double>::max();
  EXPECT_EQ(med({huge, huge}), huge);
  EXPECT_EQ(med({-huge, huge}), 0);
}

TEST(Statistics, InterpolatedQuantile) {
  EXPECT_EQ(interpolated_quantile(D{}, 0.5), 0);
  EXPECT_EQ(interpolated_quantile(D{7}, 0.25), 7);
  const D s{1, 2, 3, 4};
  EXPECT_EQ(interpolated_quantile(s, 0), 1);
  EXPECT_EQ(interpolated_quantile(s, 1), 4);
  EXPECT_EQ(interpolated_quantile(s, 0.25), 1.75);  // h = 0.75
  EXPECT_EQ(interpolated_quantile(s, 0.75), 3.25);  // h = 2.25
  EXPECT_EQ(interpolated_quantile(s, 0.5), 2.5);
  const D odd{10, 20, 30, 40, 50};
  EXPECT_EQ(interpolated_quantile(odd, 0.25), 20);  // h = 1: a rank
  EXPECT_EQ(interpolated_quantile(odd, 0.75), 40);
  const D ties{5, 5, 5, 9};
  EXPECT_EQ(interpolated_quantile(ties, 0.5), 5);
  EXPECT_EQ(interpolated_quantile(ties, 0.75), 6);  // h = 2.25: 5 + 0.25·4
}

// ---- Brute force: each definition from a full sort, in wider arithmetic ----

std::int64_t brute_median_ns(I v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  if (n % 2 == 1) return v[n / 2];
  const __int128 sum = static_cast<__int128>(v[n / 2 - 1]) + v[n / 2];
  // ⌈sum / 2⌉ with floor division for negative sums.
  __int128 half = sum / 2;
  if (sum % 2 != 0 && sum > 0) ++half;
  return static_cast<std::int64_t>(half);
}

// The smallest rank whose count of values at or below reaches p·n/100.
std::size_t brute_nearest_rank(std::size_t n, unsigned p) {
  for (std::size_t i = 0; i < n; ++i) {
    if ((i + 1) * 100 >= p * n) return i;
  }
  return n - 1;
}

// The rank closest to p·(n − 1)/100, the larger of two equally close.
std::size_t brute_rounded_rank(std::size_t n, unsigned p) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto distance = [&](std::size_t r) {
      const long long d = 100LL * static_cast<long long>(r) - p * static_cast<long long>(n - 1);
      return d < 0 ? -d : d;
    };
    if (distance(i) <= distance(best)) best = i;
  }
  return best;
}

TEST(Statistics, AgreesWithABruteForceSortOnRandomSamples) {
  std::mt19937_64 random(20250101);
  for (int round = 0; round < 3000; ++round) {
    const std::size_t n = 1 + random() % 40;
    // Narrow ranges make ties common; full ranges reach the ends of int64.
    const int shape = round % 3;
    I v(n);
    for (auto& x : v) {
      const auto r = random();
      x = shape == 0   ? static_cast<std::int64_t>(r % 7)
          : shape == 1 ? static_cast<std::int64_t>(r % 2'000'000'000) - 1'000'000'000
                       : static_cast<std::int64_t>(r);
    }
    I sorted = v;
    std::sort(sorted.begin(), sorted.end());
    SCOPED_TRACE(::testing::Message() << "round " << round << ", n " << n);

    EXPECT_EQ(med_ns(v), brute_median_ns(v));
    EXPECT_EQ(upper(v), sorted[n / 2]);
    for (const std::size_t rank : {std::size_t{0}, n / 3, n - 1}) {
      EXPECT_EQ(at_rank(v, rank), sorted[rank]);
    }
    for (const unsigned p : {0u, 10u, 25u, 50u, 90u, 95u, 99u, 100u}) {
      ASSERT_EQ(nearest_rank(n, p), brute_nearest_rank(n, p)) << "p " << p;
      ASSERT_EQ(rounded_rank(n, p), brute_rounded_rank(n, p)) << "p " << p;
    }
    const QuartileRanks q = quartile_ranks(n);
    EXPECT_EQ(q.lower + q.upper, n - 1);
    EXPECT_LE(q.lower, lower_middle_rank(n));
    EXPECT_GE(q.upper, upper_middle_rank(n));
    EXPECT_EQ(upper_middle_rank(n) - lower_middle_rank(n), n % 2 == 0 ? 1u : 0u);

    if (shape != 2) {
      // Below 2^52 the exact median is the double of the true mean.
      const __int128 sum = static_cast<__int128>(sorted[(n - 1) / 2]) + sorted[n / 2];
      EXPECT_EQ(med_exact(v), static_cast<double>(static_cast<std::int64_t>(sum)) / 2);
      // Reals: the same middles from a sort; type 7 at the ranks it hits.
      D d(v.begin(), v.end());
      D ds(sorted.begin(), sorted.end());
      EXPECT_EQ(med(d), (ds[(n - 1) / 2] + ds[n / 2]) / 2);
      EXPECT_EQ(interpolated_quantile(ds, 0.5), med(d));  // integers: exact
      EXPECT_EQ(interpolated_quantile(ds, 0), ds.front());
      EXPECT_EQ(interpolated_quantile(ds, 1), ds.back());
      const double q25 = interpolated_quantile(ds, 0.25);
      const long double h = 0.25L * static_cast<long double>(n - 1);
      const auto lo = static_cast<std::size_t>(h);
      const std::size_t hi = std::min(lo + 1, n - 1);
      const long double want = ds[lo] + (ds[hi] - ds[lo]) * (h - static_cast<long double>(lo));
      EXPECT_NEAR(q25, static_cast<double>(want), 1e-6);
    }
  }
}

}  // namespace
}  // namespace pipescope

namespace pipescope {
namespace {

// A sample split into parts, selected through counts only, gives the rank
// and the median a selection over the whole sample gives: duplicates,
// negatives, the extremes of int64, even and odd counts.
TEST(Statistics, SelectionByCountsAcrossParts) {
  std::vector<std::vector<std::int64_t>> parts = {
      {5, -3, 5, 9, std::numeric_limits<std::int64_t>::max()},
      {},
      {5, 0, -3, std::numeric_limits<std::int64_t>::min() + 1, 12, 7},
      {2}};
  std::vector<std::int64_t> all;
  for (auto& part : parts) {
    std::sort(part.begin(), part.end());
    all.insert(all.end(), part.begin(), part.end());
  }
  const auto count_at_most = [&](std::int64_t x) {
    std::uint64_t n = 0;
    for (const auto& part : parts) {
      n += static_cast<std::uint64_t>(std::upper_bound(part.begin(), part.end(), x) - part.begin());
    }
    return n;
  };
  const std::int64_t lo = *std::min_element(all.begin(), all.end());
  const std::int64_t hi = *std::max_element(all.begin(), all.end());
  for (std::size_t rank = 0; rank < all.size(); ++rank) {
    std::vector<std::int64_t> copy = all;
    EXPECT_EQ(select_rank_by_count(rank, lo, hi, count_at_most), select_rank(copy, rank)) << rank;
  }
  std::vector<std::int64_t> copy = all;
  EXPECT_EQ(median_ns_by_count(all.size(), lo, hi, count_at_most), median_ns(copy));
  parts[3].clear();  // an odd count
  all.erase(std::find(all.begin(), all.end(), 2));
  copy = all;
  EXPECT_EQ(median_ns_by_count(all.size(), lo, hi, count_at_most), median_ns(copy));
  EXPECT_EQ(median_ns_by_count(0, 0, 0, count_at_most), 0);
}

}  // namespace
}  // namespace pipescope
