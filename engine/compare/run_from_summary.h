// A summary.json as the figures `check` and `diff` compare: the export
// layer's reader (export/summary_reader.h, which says what is required and
// every error) with the path as the run's source.
#pragma once

#include <string>
#include <string_view>

#include "compare/run_figures.h"

namespace pipescope {

/// Parses the summary at `path`. Throws InputError.
RunFigures read_summary_json(const std::string& path);

/// Parses summary text (for tests); `source` labels errors and the result.
RunFigures parse_summary_json(std::string_view json, const std::string& source);

}  // namespace pipescope
