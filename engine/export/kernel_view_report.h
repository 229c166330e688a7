// The kernel view as text (`pipescope analyze` on PyTorch traces): one line
// per rank, compute / transfer / wait / idle over the complete steps and who
// it waited on most, then the run's totals and one sentence saying how much
// of the bubble is waiting inside NCCL, and on whom.
#pragma once

#include <cstdio>
#include <string>

#include "analysis/kernel_view.h"
#include "export/table_rows.h"

namespace pipescope {

/// The sentence: "Of the 31.2% bubble, 12.0 points are NCCL kernels waiting
/// for their peers (most on rank 3), 8.1 transferring and 11.1 idle." Empty
/// when the view is unavailable.
std::string kernel_view_sentence(const KernelView& view);

/// Writes the section to `out` (nothing when unavailable). With more than 32
/// ranks, the 16 with the largest bubble are listed, unless `listing.all`
/// (the note of the others says how, in `listing.words`). Does not flush
/// `out`.
void write_kernel_view_text(const KernelView& view, std::FILE* out, const RowListing& listing = {});

}  // namespace pipescope
