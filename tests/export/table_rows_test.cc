// Long tables: which rows a report prints (export/table_rows.h), checked
// against a plain computation of the rule written here: the first 16, the
// last 8 and every row with a value beyond 3 MADs of its column's median.
#include "export/table_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

namespace pipescope {
namespace {

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// The median by a full sort (the mean of the two middle values).
double sorted_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The rows the rule shows, computed without the code under test.
std::set<std::size_t> expected_rows(std::size_t n,
                                    const std::vector<std::vector<double>>& columns) {
  std::set<std::size_t> rows;
  if (n <= 64) {
    for (std::size_t r = 0; r < n; ++r) rows.insert(r);
    return rows;
  }
  for (std::size_t r = 0; r < 16; ++r) rows.insert(r);
  for (std::size_t r = n - 8; r < n; ++r) rows.insert(r);
  for (const std::vector<double>& column : columns) {
    std::vector<double> values;
    for (const double v : column) {
      if (!std::isnan(v)) values.push_back(v);
    }
    const double med = sorted_median(values);
    std::vector<double> off;
    for (const double v : values) off.push_back(std::fabs(v - med));
    const double mad = sorted_median(off);
    for (std::size_t r = 0; r < n; ++r) {
      if (!std::isnan(column[r]) && std::fabs(column[r] - med) > 3 * mad) rows.insert(r);
    }
  }
  return rows;
}

TEST(TableRows, ShortTablesAndAllRowsShowEveryRow) {
  const std::vector<std::vector<double>> columns = {std::vector<double>(64, 1.0)};
  EXPECT_EQ(select_table_rows(64, columns, false).rows.size(), 64u);
  EXPECT_EQ(select_table_rows(64, columns, false).hidden(), 0u);
  const std::vector<std::vector<double>> long_columns = {std::vector<double>(1000, 1.0)};
  const RowSelection all = select_table_rows(1000, long_columns, true);
  ASSERT_EQ(all.rows.size(), 1000u);
  EXPECT_EQ(all.rows[999], 999u);
  EXPECT_EQ(all.hidden(), 0u);
}

TEST(TableRows, FirstLastAndBeyondThreeMadsMatchAPlainComputation) {
  std::mt19937_64 random(7);
  int checked = 0;
  for (int round = 0; round < 50; ++round) {
    const std::size_t n = 65 + random() % 150;
    // Uniform noise has no value beyond 3 MADs (3 MADs: 3/4 of its range);
    // heavier tails would: one round in 50 has 30% of its rows far out.
    std::uniform_real_distribution<double> uniform(95.0, 105.0);
    std::normal_distribution<double> normal(100.0, 5.0);
    const bool heavy = round % 10 == 0;
    const auto noise = [&](std::mt19937_64& g) { return heavy ? normal(g) : uniform(g); };
    std::vector<std::vector<double>> columns(3, std::vector<double>(n));
    for (std::size_t r = 0; r < n; ++r) {
      columns[0][r] = noise(random);
      columns[1][r] = std::round(noise(random));
      // A column with holes (no value) and mostly equal values.
      columns[2][r] = r % 5 == 0 ? kNone : (random() % 50 == 0 ? 7.0 : 0.0);
    }
    // A few planted outliers, one in the head (shown anyway).
    columns[0][n / 2] = 300;
    columns[1][n / 3] = -50;
    columns[0][3] = 1000;
    const std::set<std::size_t> expected = expected_rows(n, columns);
    const RowSelection shown = select_table_rows(n, columns, false);
    if (expected.size() > 16u + 8u + 40u) {
      // Past the cap: 40 of them, each one the rule shows.
      EXPECT_EQ(shown.rows.size(), 64u);
      for (const std::size_t r : shown.rows) EXPECT_EQ(expected.count(r), 1u) << r;
      EXPECT_EQ(shown.outliers_left_out, expected.size() - 64);
      continue;
    }
    EXPECT_EQ(std::set<std::size_t>(shown.rows.begin(), shown.rows.end()), expected)
        << "round " << round;
    EXPECT_TRUE(std::is_sorted(shown.rows.begin(), shown.rows.end()));
    EXPECT_EQ(shown.total, n);
    EXPECT_EQ(shown.outliers, expected.size() - 24);
    EXPECT_EQ(shown.outliers_left_out, 0u);
    EXPECT_TRUE(std::count(shown.rows.begin(), shown.rows.end(), n / 2) == 1);
    ++checked;
  }
  EXPECT_GE(checked, 40) << "most rounds stay under the cap";
}

TEST(TableRows, AZeroMadShowsEveryRowThatDiffers) {
  // 100 equal rows but three: the MAD is 0, so those three stand out.
  std::vector<std::vector<double>> columns = {std::vector<double>(100, 51.0)};
  columns[0][40] = 50;
  columns[0][41] = 52;
  columns[0][70] = 0;
  const RowSelection shown = select_table_rows(100, columns, false);
  EXPECT_EQ(shown.outliers, 3u);
  EXPECT_EQ(shown.rows.size(), 27u);
  for (const std::size_t r : {40u, 41u, 70u}) {
    EXPECT_TRUE(std::binary_search(shown.rows.begin(), shown.rows.end(), r)) << r;
  }
  EXPECT_EQ(shown.hidden(), 73u);
}

TEST(TableRows, AtMostFortyOutliersTheMostDeviantFirst) {
  // 200 rows: 100 at 0, the middle ones at growing distances beyond 3 MADs.
  const std::size_t n = 200;
  std::vector<std::vector<double>> columns = {std::vector<double>(n, 0.0)};
  for (std::size_t r = 30; r < 90; ++r) columns[0][r] = static_cast<double>(r);  // 60 outliers
  const RowSelection shown = select_table_rows(n, columns, false);
  EXPECT_EQ(shown.outliers, 40u);
  EXPECT_EQ(shown.outliers_left_out, 20u);
  // The 40 farthest from the median (0) are rows 50-89.
  for (std::size_t r = 50; r < 90; ++r) {
    EXPECT_TRUE(std::binary_search(shown.rows.begin(), shown.rows.end(), r)) << r;
  }
  EXPECT_FALSE(std::binary_search(shown.rows.begin(), shown.rows.end(), std::size_t{49}));
  EXPECT_NE(folded_rows_note(shown, "devices").find("20 more beyond 3 MADs are not"),
            std::string::npos);
}

TEST(TableRows, TheNoteSaysWhatWasLeftOutAndHowToSeeIt) {
  const std::vector<std::vector<double>> columns = {std::vector<double>(1024, 1.0)};
  const RowSelection shown = select_table_rows(1024, columns, false);
  EXPECT_EQ(folded_rows_note(shown, "devices"),
            "... 1000 of 1024 devices not shown: the first 16, the last 8 and 0 beyond 3 MADs of "
            "their column are listed (all rows can be listed) ...");
  // In the caller's words.
  OptionWords flags;
  flags.set(CallerOption::all_rows, "--all-rows", "--all-rows lists every one");
  EXPECT_EQ(folded_rows_note(shown, "devices", flags),
            "... 1000 of 1024 devices not shown: the first 16, the last 8 and 0 beyond 3 MADs of "
            "their column are listed (--all-rows lists every one) ...");
}

}  // namespace
}  // namespace pipescope
