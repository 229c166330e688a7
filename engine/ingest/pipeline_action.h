// The job vocabulary of profiler-trace annotations: the grammar of
// torch.distributed.pipelining's `PP:` action labels, and the one list of the
// job types a trace may name (the labels' types, and the types a
// `--job-kinds` entry or a job pattern's `op` may stand for).
//
//  - `PP:<stage><op><mb>` with op F forward, B backward, I backward_b,
//    W backward_w, SEND_F/RECV_F/SEND_B/RECV_B send_forward ... recv_backward;
//    UNSHARD/RESHARD/REDUCE_GRAD take no micro-batch (unshard, reshard,
//    reduce_grad). `(0F1;1B0)OVERLAP_F_B` is both jobs, in that order (the
//    trace reader times them apart by their kernels, else as one F+B job).
//  - Stage and micro-batch are at most 9 digits each, so they always fit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

/// One job named by a trace annotation.
struct TraceAction {
  /// The stored type without its chunk: one of trace_job_types().
  std::string type;
  /// Pipeline stage (global), or -1 when the label has none.
  std::int64_t stage = -1;
  /// Chunk given directly (a pattern's `chunk` group), or -1.
  std::int64_t chunk = -1;
  /// Micro-batch, or -1 when the label has none.
  std::int64_t micro_batch = -1;
};

/// Parses the action of a `PP:` label (without the prefix): one action, or
/// the two of an OVERLAP_F_B pair. Empty for text that is not an action
/// (never a partial result).
std::vector<TraceAction> parse_pipeline_action(std::string_view label);

/// A label's stage or micro-batch: 1-9 decimal digits (a leading '-' is
/// taken, as labels have always been read), which then fit. False for
/// anything else, leaving `value` unspecified.
bool parse_label_number(std::string_view text, std::int64_t& value);

/// Every job type a trace annotation may stand for, in documentation order:
/// the `PP:` labels' eleven and `optimizer`.
std::span<const std::string_view> trace_job_types();
/// True for a member of trace_job_types().
bool is_trace_job_type(std::string_view type);
/// trace_job_types() as a sentence's list: "forward, backward, ... and reduce_grad".
std::string trace_job_type_list();

}  // namespace pipescope
