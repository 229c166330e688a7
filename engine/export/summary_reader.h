// Reads a summary.json (summary_json.h) back into the figures it was written
// from (summary_figures.h), with simdjson. Schema "pipescope.summary/1" and
// any 1.N minor version are accepted.
//
// What a field's absence means:
//   - the contract's figures `check` and `diff` cannot do without (jobs,
//     first_step, bubble_ratio, total_window_ns, devices[] and steps[] with
//     their figures, and type, kind and jobs of a job_types[] entry) are
//     required;
//   - every other field takes its default when absent or not of its type
//     (summaries written before the field existed, or by hand), and a
//     section that is not there (say "schedule") stays unset. An entry of an
//     array that is not an object is an error.
//
// Errors (all thrown as InputError, message starting with the source):
//   - the file cannot be read, or is not valid JSON (simdjson's message);
//   - no "schema" string: "not a pipescope summary";
//   - another schema or major version: "summary schema 'X' is not supported
//     (this pipescope reads pipescope.summary/1)";
//   - a required field missing or of the wrong type: names the field.
#pragma once

#include <string>
#include <string_view>

#include "export/summary_figures.h"

namespace pipescope {

/// Parses the summary at `path`.
SummaryFigures read_summary_figures(const std::string& path);

/// Parses summary text; `source` labels errors.
SummaryFigures parse_summary_figures(std::string_view json, const std::string& source);

}  // namespace pipescope
