// `pipescope diff A B`: two runs side by side, without a verdict. Compares
// the overall figures, each device (matched by global index), each step
// (matched by position: the k-th step of A with the k-th of B, since step
// numbers may start elsewhere), job kinds and types (count and mean job
// duration, when the source has durations) and the pipeline schedule (name,
// P, M, V, whether the order matched the canonical one). A figure a source
// does not carry is shown as "n/a" (text) or null (JSON), and a schedule no
// source analysed reads "schedule not analysed".
#pragma once

#include <string>

#include "compare/run_figures.h"
#include "export/table_rows.h"

namespace pipescope {

/// Aligned text for a terminal. With more than 20 steps, the first 10 and
/// the last 5 step rows are listed; a device table of more than 64 rows is
/// folded as the text report folds its tables (export/table_rows.h: the first
/// 16, the last 8 and the rows beyond 3 MADs of A, B or the change).
/// `listing.all` lists every row; the notes of the rows left out say how in
/// `listing.words` (CallerOption::all_rows).
std::string format_diff_text(const RunFigures& a, const RunFigures& b,
                             const RowListing& listing = {});

/// A JSON document, schema "pipescope.diff/1" (docs/guide.md, "pipescope diff").
std::string format_diff_json(const RunFigures& a, const RunFigures& b);

}  // namespace pipescope
