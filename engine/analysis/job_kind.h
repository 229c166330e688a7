// The kind of a job, derived from its type name by prefix (the metric
// contract in docs/guide.md, "Metrics").
#pragma once

#include <string_view>

namespace pipescope {

enum class JobKind {
  forward,    ///< type begins with "forward"
  backward,   ///< type begins with "backward"
  optimizer,  ///< type begins with "optimizer"
  comm,       ///< type begins with "send" or "recv"
  other,      ///< anything else
};

JobKind classify_job_type(std::string_view type);
std::string_view job_kind_name(JobKind kind);

}  // namespace pipescope
