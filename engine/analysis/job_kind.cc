#include "analysis/job_kind.h"

namespace pipescope {

JobKind classify_job_type(std::string_view type) {
  if (type.starts_with("forward")) return JobKind::forward;
  if (type.starts_with("backward")) return JobKind::backward;
  if (type.starts_with("optimizer")) return JobKind::optimizer;
  if (type.starts_with("send") || type.starts_with("recv")) return JobKind::comm;
  return JobKind::other;
}

std::string_view job_kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::forward: return "forward";
    case JobKind::backward: return "backward";
    case JobKind::optimizer: return "optimizer";
    case JobKind::comm: return "comm";
    case JobKind::other: return "other";
  }
  return "other";
}

}  // namespace pipescope
