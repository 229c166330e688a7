// What the reader of Nsight Systems exports (nsys_reader.h) is told beyond
// every reader's options (read_options.h).
#pragma once

#include <string>

namespace pipescope {

/// The NVTX range names that are steps by default: torch's profiler and
/// `emit_nvtx` write `ProfilerStep#N` (emit_nvtx appends ", op_id = ..." or
/// ", seq = ...").
inline constexpr const char* kDefaultNsysStepRange = "ProfilerStep#([0-9]+)(?:, .*)?";

struct NsysOptions {
  /// An RE2 expression an NVTX range's whole name must match to be step N:
  /// its group named `step`, else its first group, is N. Empty: the
  /// default above. Megatron-LM's --nvtx-ranges write no numbered
  /// iteration range: a run without step ranges is one window.
  std::string step_range;
};

}  // namespace pipescope
