#include "analysis/job_kind.h"

namespace pipescope {

JobKind classify_job_type(std::string_view type) {
  if (type.starts_with("forward")) return JobKind::forward;
  if (type.starts_with("backward")) return JobKind::backward;
  if (type.starts_with("optimizer")) return JobKind::optimizer;
  if (type.starts_with("send") || type.starts_with("recv")) return JobKind::comm;
  if (type.starts_with("lr")) return JobKind::lr;
  return JobKind::other;
}

std::string_view job_kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::forward:
      return "forward";
    case JobKind::backward:
      return "backward";
    case JobKind::optimizer:
      return "optimizer";
    case JobKind::comm:
      return "comm";
    case JobKind::other:
      return "other";
    case JobKind::lr:
      return "lr";
  }
  return "other";
}

bool is_receive_type(std::string_view type) { return type.starts_with("recv"); }

}  // namespace pipescope
