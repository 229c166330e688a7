// The reader of text worker logs: files are cut into byte ranges by one
// serial stage, ranges are read and scanned (scan/chunk_scanner.h) in
// parallel, and a serial in-order stage turns chunk results into jobs with
// exact file line numbers. Compressed files and pipes, which cannot be
// split, are read each on one task beside the range pipeline. At most a
// fixed number of chunks is in flight, so memory depends on the number of
// jobs found, never on the size of the files.
//
// The one format with its own loop instead of the reading loop
// (reading_loop.h), which reads a file in order and pushes its chunks to one
// tokenizer: a regular log here is read by every thread at once, each range
// with pread(2) into the start of one reused buffer in 256 KiB blocks scanned
// while still in cache, and a range owns the lines that begin in it, so no
// serial stage ever touches the bytes. Pushed through the reading loop, one
// large log would be read by one thread and every byte would pass its serial
// tokenize stage: the scan would be bounded by one core where it now uses
// all of them.
#pragma once

#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"
#include "ingest/read_options.h"
#include "ingest/text_log_options.h"

namespace pipescope {

class ProgressMeter;

/// The format table's reader for worker logs: one result per file, in order.
/// A file that cannot be opened or read is recorded in its InputStats::error
/// and diagnostics; the other files are still read.
std::vector<FileResult> read_text_logs(const std::vector<InputFile>& files, const ReadOptions& read,
                                       const TextLogOptions& logs, ProgressMeter& progress);

}  // namespace pipescope
