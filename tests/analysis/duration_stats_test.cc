// duration_stats: count, total, mean, the interpolated median (the one
// definition check, diff and the reports share), the nearest-rank p95 and
// the maximum, against a plain sort on every size from 1 to 300 (with ties).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "analysis/bottleneck.h"

namespace pipescope {
namespace {

std::int64_t nearest_rank(const std::vector<std::int64_t>& sorted, std::uint64_t percent) {
  const std::uint64_t r = (percent * sorted.size() + 99) / 100;
  return sorted[std::max<std::uint64_t>(r, 1) - 1];
}

/// The mean of the two middle values (the middle one for an odd count),
/// rounded half up.
std::int64_t interpolated_median(const std::vector<std::int64_t>& sorted) {
  const std::size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  const std::int64_t sum = sorted[n / 2 - 1] + sorted[n / 2];
  return sum / 2 + sum % 2;
}

TEST(DurationStats, EqualsTheSortedDefinitionOnEverySize) {
  std::mt19937_64 random(7);
  for (std::size_t n = 1; n <= 300; ++n) {
    std::vector<std::int64_t> values(n);
    // Few distinct values for small ranges: many ties.
    const std::int64_t range = n % 3 == 0 ? 5 : 1'000'000;
    for (auto& v : values) v = static_cast<std::int64_t>(random() % range);
    std::vector<std::int64_t> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    std::int64_t total = 0;
    for (const std::int64_t v : sorted) total += v;

    const DurationStats s = duration_stats(values);
    EXPECT_EQ(s.count, n);
    EXPECT_EQ(s.total_ns, total);
    EXPECT_EQ(s.mean_ns, total / static_cast<std::int64_t>(n));
    EXPECT_EQ(s.median_ns, interpolated_median(sorted)) << n;
    EXPECT_EQ(s.p95_ns, nearest_rank(sorted, 95)) << n;
    EXPECT_EQ(s.max_ns, sorted.back()) << n;

    // The 32-bit lists give the same figures (find_bottleneck's narrow path).
    std::vector<std::uint32_t> narrow(values.begin(), values.end());
    std::shuffle(narrow.begin(), narrow.end(), random);
    const DurationStats t = duration_stats(narrow);
    EXPECT_EQ(t.count, s.count);
    EXPECT_EQ(t.total_ns, s.total_ns);
    EXPECT_EQ(t.mean_ns, s.mean_ns);
    EXPECT_EQ(t.median_ns, s.median_ns) << n;
    EXPECT_EQ(t.p95_ns, s.p95_ns) << n;
    EXPECT_EQ(t.max_ns, s.max_ns) << n;
  }
  // Near the top of the 32-bit range: totals and middles are summed in 64 bits.
  std::vector<std::uint32_t> high = {UINT32_MAX, UINT32_MAX - 1};
  EXPECT_EQ(duration_stats(high).total_ns, std::int64_t{2} * UINT32_MAX - 1);
  EXPECT_EQ(duration_stats(high).median_ns, std::int64_t{UINT32_MAX});  // .5 rounded up
  EXPECT_EQ(duration_stats(high).max_ns, std::int64_t{UINT32_MAX});
  std::vector<std::int64_t> none;
  const DurationStats empty = duration_stats(none);
  EXPECT_EQ(empty.count, 0u);
  EXPECT_EQ(empty.max_ns, 0);
  std::vector<std::int64_t> two = {10, 13};
  EXPECT_EQ(duration_stats(two).median_ns, 12);  // 11.5 rounded half up
}

}  // namespace
}  // namespace pipescope
