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
  for (const std::string_view mark : {kOverlapMark, kJoinedMark}) {
    if (!type.ends_with(mark)) continue;
    role = classify_job_role(type.substr(0, type.size() - mark.size()));
    if (role.role != PipelineRole::forward && role.role != PipelineRole::backward) return {};
    role.overlap = true;
    role.joined = mark == kJoinedMark;
    return role;
  }
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
        // Paddle's VPP with split_backward names the weight half that also
        // runs the sharding reduce backward_w{c}_reduce.
        if (rest.ends_with("_reduce")) rest.remove_suffix(7);
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
  // Paddle's 1F1B with enable_backward_forward_overlap logs its warm-up
  // forwards and cool-down backwards whole (`forward`, `backward`) and cuts
  // the steady phase's into `forward(chunkK)` / `backward(chunkK)` pieces
  // (_split_program_for_overlapping): beside a whole type of the same role
  // those are pieces of one op of chunk 0, not model chunks (an interleaved
  // run logs no compute type without its chunk).
  bool whole[2] = {false, false};
  for (TypeId id = 0; id < types.size(); ++id) {
    const JobRole& r = roles[id];
    if (!r.chunked && !r.split_backward && !r.overlap &&
        (r.role == PipelineRole::forward || r.role == PipelineRole::backward)) {
      whole[r.role == PipelineRole::forward ? 0 : 1] = true;
    }
  }
  if (!whole[0] && !whole[1]) return roles;
  for (TypeId id = 0; id < types.size(); ++id) {
    JobRole& r = roles[id];
    const std::string_view name = types.name(id);
    if (!r.chunked || r.split_backward || r.overlap || !name.ends_with(")") ||
        (r.role != PipelineRole::forward && r.role != PipelineRole::backward) ||
        !whole[r.role == PipelineRole::forward ? 0 : 1]) {
      continue;
    }
    r.piece = r.chunk;
    r.chunk = 0;
    r.chunked = false;
  }
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
