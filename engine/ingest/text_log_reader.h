// The reader of text worker logs: files are cut into byte ranges by one
// serial stage, ranges are read and scanned (scan/chunk_scanner.h) in
// parallel, and a serial in-order stage turns chunk results into jobs with
// exact file line numbers. Compressed files and pipes, which cannot be
// split, are read each on one task beside the range pipeline. At most a
// fixed number of chunks is in flight, so memory depends on the number of
// jobs found, never on the size of the files.
#pragma once

#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"

namespace pipescope {

struct IngestOptions;
class ProgressMeter;

/// The format table's reader for worker logs: one result per file, in order.
/// A file that cannot be opened or read is recorded in its InputStats::error
/// and diagnostics; the other files are still read.
std::vector<FileResult> read_text_logs(const std::vector<InputFile>& files,
                                       const IngestOptions& options, ProgressMeter& progress);

}  // namespace pipescope
