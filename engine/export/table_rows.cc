#include "export/table_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "numeric/statistics.h"

namespace pipescope {

bool ColumnSpread::beyond(double value) const {
  return !std::isnan(value) && std::abs(value - median) > 3 * mad;
}

double ColumnSpread::deviation(double value) const {
  if (std::isnan(value)) return 0;
  const double off = std::abs(value - median);
  if (mad > 0) return off / mad;
  return off > 0 ? std::numeric_limits<double>::infinity() : 0;
}

ColumnSpread column_spread(std::span<const double> column) {
  std::vector<double> values;
  values.reserve(column.size());
  for (const double v : column) {
    if (!std::isnan(v)) values.push_back(v);
  }
  ColumnSpread spread;
  if (values.empty()) return spread;
  spread.median = median(values);
  for (double& v : values) v = std::abs(v - spread.median);
  spread.mad = median(values);
  return spread;
}

RowSelection select_table_rows(std::size_t row_count, std::span<const std::vector<double>> columns,
                               bool all_rows) {
  RowSelection out;
  out.total = row_count;
  if (all_rows || row_count <= kTableRowsInFull) {
    out.rows.resize(row_count);
    for (std::size_t r = 0; r < row_count; ++r) out.rows[r] = r;
    return out;
  }
  std::vector<bool> shown(row_count, false);
  for (std::size_t r = 0; r < kTableHead; ++r) shown[r] = true;
  for (std::size_t r = row_count - kTableTail; r < row_count; ++r) shown[r] = true;
  // Each middle row's largest deviation over the columns, for those beyond.
  std::vector<ColumnSpread> spreads;
  for (const std::vector<double>& column : columns) spreads.push_back(column_spread(column));
  // (deviation in MADs, distance from the median): a MAD of 0 makes every
  // differing value infinitely far, so the distance orders those.
  struct Beyond {
    double mads = 0;
    double off = 0;
    std::size_t row = 0;
  };
  std::vector<Beyond> beyond;
  for (std::size_t r = kTableHead; r + kTableTail < row_count; ++r) {
    Beyond worst{0, 0, r};
    bool any = false;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (r >= columns[c].size() || !spreads[c].beyond(columns[c][r])) continue;
      any = true;
      const double mads = spreads[c].deviation(columns[c][r]);
      const double off = std::abs(columns[c][r] - spreads[c].median);
      if (mads > worst.mads || (mads == worst.mads && off > worst.off)) worst = {mads, off, r};
    }
    if (any) beyond.push_back(worst);
  }
  // The most deviant first; ties: the earlier row.
  std::stable_sort(beyond.begin(), beyond.end(), [](const Beyond& a, const Beyond& b) {
    return a.mads != b.mads ? a.mads > b.mads : a.off > b.off;
  });
  const std::size_t kept = std::min(beyond.size(), kTableOutliersShown);
  for (std::size_t i = 0; i < kept; ++i) shown[beyond[i].row] = true;
  out.outliers = kept;
  out.outliers_left_out = beyond.size() - kept;
  for (std::size_t r = 0; r < row_count; ++r) {
    if (shown[r]) out.rows.push_back(r);
  }
  return out;
}

std::string folded_rows_note(const RowSelection& shown, std::string_view noun,
                             const OptionWords& words) {
  return fmt::format(
      "... {} of {} {} not shown: the first {}, the last {} and {} beyond 3 MADs of their column "
      "are listed{} ({}) ...",
      shown.hidden(), shown.total, noun, kTableHead, kTableTail, shown.outliers,
      shown.outliers_left_out > 0
          ? fmt::format("; {} more beyond 3 MADs are not", shown.outliers_left_out)
          : std::string(),
      words.advice(CallerOption::all_rows));
}

}  // namespace pipescope
