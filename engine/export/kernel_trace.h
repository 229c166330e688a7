// The kernel view as a Chrome trace (`trace.json` of `analyze` on PyTorch
// traces without job labels), for the Perfetto UI: a "Steps" process with the
// step windows, then one process per machine with, per rank, a "compute"
// track (its compute activities merged) and "NCCL" tracks on which each
// communication kernel is two slices: its wait (until the peer that started
// last, named in the slice) and its transfer. NCCL kernels that overlap (on
// several streams) are spread over extra NCCL tracks, since viewers mis-nest
// slices that overlap on one track. Times on the view's clock (machine 0's
// when offsets were applied), microseconds with three decimals from time zero
// at the first step window (otherData.origin_ns). Deterministic.
#pragma once

#include <string>
#include <vector>

#include "analysis/kernel_view.h"
#include "model/gpu_activity.h"

namespace pipescope {

/// Writes the trace of `view`, computed from `ranks`, to `path` atomically.
/// The folder must exist. Throws std::system_error on I/O failure.
void write_kernel_trace(const std::vector<RankKernels>& ranks, const KernelView& view,
                        const std::string& path);

}  // namespace pipescope
