// The kind of a job, derived from its type name by prefix (the metric
// contract in docs/guide.md, "Metrics").
#pragma once

#include <string_view>

namespace pipescope {

// `lr` comes last so that the older kinds keep their values (the Perfetto
// trace's category ids are JobKind + 1).
enum class JobKind {
  forward,    ///< type begins with "forward"
  backward,   ///< type begins with "backward"
  optimizer,  ///< type begins with "optimizer"
  comm,       ///< type begins with "send" or "recv"
  other,      ///< anything else
  lr,         ///< type begins with "lr" (the learning-rate job that opens a step)
};

JobKind classify_job_type(std::string_view type);
std::string_view job_kind_name(JobKind kind);

/// Whether a type is a receive: it begins with "recv" (a comm job that may
/// open the step of the job it feeds, see the contract).
bool is_receive_type(std::string_view type);

}  // namespace pipescope
