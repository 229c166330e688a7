#include "analysis/job_role.h"

#include "analysis/job_kind.h"

namespace pipescope {

namespace {

constexpr std::int32_t kMaxChunk = 1 << 20;

// The chunk suffix of a compute type: "" (none), "3", or "(chunk3)".
// Returns false for any other suffix.
bool parse_chunk(std::string_view rest, JobRole& role) {
  if (rest.empty()) return true;
  if (rest.front() == '(' && rest.back() == ')') {
    rest = rest.substr(1, rest.size() - 2);
    if (!rest.starts_with("chunk")) return false;
    rest.remove_prefix(5);
  }
  if (rest.empty() || rest.size() > 7) return false;
  std::int32_t chunk = 0;
  for (const char c : rest) {
    if (c < '0' || c > '9') return false;
    chunk = chunk * 10 + (c - '0');
  }
  if (chunk > kMaxChunk) return false;
  role.chunk = chunk;
  role.chunked = true;
  return true;
}

}  // namespace

JobRole classify_job_role(std::string_view type) {
  JobRole role;
  std::string_view rest;
  switch (classify_job_type(type)) {
    case JobKind::optimizer:
      role.role = PipelineRole::optimizer;
      return role;
    case JobKind::comm:
      role.role = PipelineRole::comm;
      return role;
    case JobKind::other:
    case JobKind::lr:  // no op of the schedule (see job_role.h)
      return role;
    case JobKind::forward:
      role.role = PipelineRole::forward;
      rest = type.substr(7);
      break;
    case JobKind::backward:
      if (type.starts_with("backward_w")) {
        role.role = PipelineRole::weight;
        role.split_backward = true;
        rest = type.substr(10);
      } else if (type.starts_with("backward_b")) {
        role.role = PipelineRole::backward;
        role.split_backward = true;
        rest = type.substr(10);
      } else {
        role.role = PipelineRole::backward;
        rest = type.substr(8);
      }
      break;
  }
  if (!parse_chunk(rest, role)) return JobRole{};
  return role;
}

std::vector<JobRole> classify_job_roles(const TypeTable& types) {
  std::vector<JobRole> roles(types.size());
  for (TypeId id = 0; id < types.size(); ++id) roles[id] = classify_job_role(types.name(id));
  return roles;
}

std::string_view pipeline_role_name(PipelineRole role) {
  switch (role) {
    case PipelineRole::forward:
      return "forward";
    case PipelineRole::backward:
      return "backward";
    case PipelineRole::weight:
      return "weight";
    case PipelineRole::optimizer:
      return "optimizer";
    case PipelineRole::comm:
      return "comm";
    case PipelineRole::other:
      return "other";
  }
  return "other";
}

}  // namespace pipescope
