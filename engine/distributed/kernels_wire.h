// The byte encoding of a rank's GPU activities (model/gpu_activity.h:
// RankKernels), as a read file's result carries them to rank 0 when the run
// is gathered there (run_transfer.h): every field, so that the kernel view
// rank 0 computes is the one a single process computes. Pure: no MPI here.
#pragma once

#include "distributed/wire.h"
#include "model/gpu_activity.h"

namespace pipescope::distributed {

void put_rank_kernels(ByteWriter& w, const RankKernels& kernels);
/// What put_rank_kernels wrote. Throws WireError.
RankKernels get_rank_kernels(ByteReader& r);

}  // namespace pipescope::distributed
