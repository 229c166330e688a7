// The one place per-file results become a Run: a single process's ingest, and
// rank 0 of `analyze --mpi` with the results every rank sent, both call it, so
// the Run does not depend on who read which file.
#pragma once

#include <vector>

#include "ingest/file_result.h"
#include "model/run.h"

namespace pipescope {

/// Builds the Run from `files` in global input order: devices, inputs and
/// diagnostics in that order; one type table whose ids are given in that
/// order (each file's names in its own order); first step = the smallest any
/// file has; jobs sorted (Run::finalize). Consumes `files`.
Run merge_file_results(std::vector<FileResult>&& files);

}  // namespace pipescope
