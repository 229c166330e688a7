// Which rows of a long table a report prints. A table of more than
// kTableRowsInFull rows shows its first kTableHead and last kTableTail rows
// and the rows that stand out: a value beyond 3 MADs (median absolute
// deviations) of its column's median, |x - median| > 3 * MAD, so a device
// whose utilization or a file whose malformed count differs from the rest is
// never left out. At most kTableOutliersShown such rows are added, the most
// deviant first (in MADs, then by distance from the median: where the MAD is
// 0 every differing value is beyond); the note counts the others. The text
// report and `diff` fold their tables this way; the caller's option
// (CallerOption::all_rows) prints them all.
//
// Usage:
//   std::vector<std::vector<double>> columns = {utilization, busy};  // one value per row
//   RowSelection shown = select_table_rows(n, columns, options.all_rows);
//   for (std::size_t r : shown.rows) print(r);
//   if (shown.hidden() > 0) print(folded_rows_note(shown, "devices", words));
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/option_words.h"

namespace pipescope {

inline constexpr std::size_t kTableRowsInFull = 64;
inline constexpr std::size_t kTableHead = 16;
inline constexpr std::size_t kTableTail = 8;
inline constexpr std::size_t kTableOutliersShown = 40;

struct RowSelection {
  /// The rows to print, ascending.
  std::vector<std::size_t> rows;
  /// Rows of the table.
  std::size_t total = 0;
  /// Rows shown only because a value lies beyond 3 MADs of its column.
  std::size_t outliers = 0;
  /// Rows beyond 3 MADs left out (more than kTableOutliersShown of them).
  std::size_t outliers_left_out = 0;

  std::size_t hidden() const { return total - rows.size(); }
};

/// True when `value` lies beyond 3 MADs of the median of `column` (NaN values
/// are no value and never beyond).
struct ColumnSpread {
  double median = 0;
  double mad = 0;
  bool beyond(double value) const;
  /// |value - median| in MADs (infinite when the MAD is 0 and value differs).
  double deviation(double value) const;
};

/// The median and MAD of a column's values, NaN left out.
ColumnSpread column_spread(std::span<const double> column);

/// The rows of a table of `row_count` rows to print; `columns` holds each
/// numeric column's value per row (NaN: none). `all_rows` prints every row.
RowSelection select_table_rows(std::size_t row_count, std::span<const std::vector<double>> columns,
                               bool all_rows);

/// Whether a report's tables list every row (`all`), and the words their
/// notes of the rows left out say how to list them with (the advice of
/// CallerOption::all_rows). `words` is never null.
struct RowListing {
  bool all = false;
  const OptionWords* words = OptionWords::engine().get();
};

/// "... 1000 of 1024 devices not shown: the first 16, the last 8 and 2 beyond
/// 3 MADs of their column are listed (--all-rows lists every one) ...", the
/// clause in parentheses the advice of CallerOption::all_rows in `words`.
std::string folded_rows_note(const RowSelection& shown, std::string_view noun,
                             const OptionWords& words = *OptionWords::engine());

}  // namespace pipescope
