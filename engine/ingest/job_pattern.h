// `--job-pattern` and `--job-kinds` compiled: the jobs of a Chrome-trace JSON
// whose user annotations are not `PP:` labels (docs/formats.md, "Job
// patterns").
//
// The pattern is an RE2 regular expression (the syntax of Python's `re` less
// lookaround and back-references), searched for anywhere in an annotation's
// name, in time linear in the name's length: a name of megabytes cannot make
// it recurse or backtrack. Named groups: `op` (required), and optional `mb`,
// `stage`, `chunk`; written `(?P<name>...)` or `(?<name>...)`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ingest/pipeline_action.h"

namespace pipescope {

/// A compiled job pattern and its op map. Matching is const and safe from
/// several threads at once.
class JobPattern {
 public:
  /// `kinds` maps op text to stored type ("F=forward,B=backward"); an op that
  /// is already a type name, such as `forward`, maps to itself. Throws
  /// std::invalid_argument naming what is wrong: no `op` group, an unknown
  /// or repeated group, syntax RE2 does not take (lookaround and
  /// back-references by name), any other bad expression, a kind that is no
  /// job type (listing trace_job_types()).
  JobPattern(const std::string& pattern, const std::string& kinds);
  ~JobPattern();
  JobPattern(JobPattern&&) noexcept;
  JobPattern& operator=(JobPattern&&) noexcept;

  /// True when the pattern numbers micro-batches itself (an `mb` group).
  bool has_micro_batch() const;
  /// The action a name stands for: nullopt when the pattern does not match,
  /// its op maps to no type, or a number group holds other than 1-9 digits.
  /// A group that took no part in the match leaves its field -1.
  std::optional<TraceAction> match(std::string_view name) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pipescope
