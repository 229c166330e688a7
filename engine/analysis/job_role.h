// The pipeline role of a job type: which op of a pipeline schedule it is
// (forward, backward or weight-gradient) and of which model chunk. The metric
// contract's JobKind only looks at prefixes; schedule analysis also needs the
// chunk of interleaved types and the B/W split of zero-bubble schedules.
//
//   forward, forward0, forward(chunk1)        -> forward, chunk 0 / 0 / 1
//   backward, backward1, backward(chunk0)     -> backward
//   backward_b, backward_b1                   -> backward (ZB input gradient)
//   backward_w, backward_w(chunk1)            -> weight   (ZB weight gradient)
//   optimizer*, send*/recv*                   -> optimizer, comm
//   lr*                                       -> other (not compute: the
//                                                learning-rate job is no op
//                                                of the schedule)
//   anything else (backward_w1_reduce, ...)   -> other
//
// A compute type may end in a mark of PyTorch's overlapped F+B action
// (model/job.h kOverlapMark, kJoinedMark): `forward1(overlap)`,
// `backward0(overlap)` (timed apart from the action's kernels) or
// `forward1(F+B)`, `backward0(F+B)` (one job: the trace shows no boundary).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/run.h"

namespace pipescope {

enum class PipelineRole : std::uint8_t {
  forward,    ///< F
  backward,   ///< B: a whole backward, or ZB's input-gradient half
  weight,     ///< W: ZB's weight-gradient half (type begins with "backward_w")
  optimizer,  ///< the optimizer step
  comm,       ///< send/recv
  other,      ///< anything else, including a compute type with an unknown suffix
};

struct JobRole {
  PipelineRole role = PipelineRole::other;
  /// Model chunk (virtual stage) of an F/B/W type; 0 for a type without one.
  std::int32_t chunk = 0;
  /// True when the type named its chunk explicitly (forward1, forward(chunk1)).
  bool chunked = false;
  /// True for backward_b/backward_w (the zero-bubble split).
  bool split_backward = false;
  /// Piece K of one forward or backward that Paddle's backward-forward
  /// overlap (Pipeline1F1BPass, enable_backward_forward_overlap) cut into
  /// `forward(chunkK)` / `backward(chunkK)` programs: a run that logs these
  /// beside whole `forward` / `backward` jobs runs one model chunk, and the
  /// pieces of a micro-batch are one op (chunk 0). -1 for every other type.
  std::int32_t piece = -1;
  /// An op of an overlapped F+B action (PyTorch's OVERLAP_F_B, a type marked
  /// `(overlap)` or `(F+B)`): torch's runtime runs its forward, then its
  /// backward, and sends both outputs after the action (_add_send_recv puts
  /// the sends after it), so the forward's output leaves when the backward
  /// ends.
  bool overlap = false;
  /// `(F+B)`: the trace shows no boundary between the action's two ops, so
  /// both jobs hold the whole action's interval (one F+B job), and neither
  /// is the duration of its op alone.
  bool joined = false;

  bool compute() const {
    return role == PipelineRole::forward || role == PipelineRole::backward ||
           role == PipelineRole::weight;
  }
};

/// Classifies one type name (see the table above).
JobRole classify_job_role(std::string_view type);

/// classify_job_role for every type of the run, indexed by TypeId.
std::vector<JobRole> classify_job_roles(const TypeTable& types);

/// "forward", "backward", "weight", "optimizer", "comm", "other".
std::string_view pipeline_role_name(PipelineRole role);

}  // namespace pipescope
