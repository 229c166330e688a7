// Reads a summary.json written by `pipescope analyze` back into RunFigures,
// with simdjson. Schema "pipescope.summary/1" (and any 1.x minor version) is
// accepted; fields a newer writer adds are used when present ("schedule",
// job_types[].total_ns) and ignored otherwise.
//
// Errors (all thrown as InputError, message starting with the path):
//   - the file cannot be read, or is not valid JSON (simdjson's message);
//   - no "schema" string: "not a pipescope summary";
//   - another schema or major version: "summary schema 'X' is not supported
//     (this pipescope reads pipescope.summary/1)";
//   - a required field missing or of the wrong type: names the field.
#pragma once

#include <string>
#include <string_view>

#include "compare/run_figures.h"

namespace pipescope {

/// The schema this reader understands (major version 1).
inline constexpr std::string_view kSummarySchema = "pipescope.summary/1";

/// Parses the summary at `path`.
RunFigures read_summary_json(const std::string& path);

/// Parses summary text (for tests); `source` labels errors and the result.
RunFigures parse_summary_json(std::string_view json, const std::string& source);

}  // namespace pipescope
