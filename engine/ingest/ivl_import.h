// The reader of .ivl record files (records/ivl_format.h): the binary
// counterpart of scanning a worker log. A file's records become one
// FileResult; what was wrong with the file (bad header, corrupt blocks, a
// torn tail, records that make no sense) becomes diagnostics with byte
// offsets and counts in InputStats, never an exception.
//
// For an .ivl input, InputStats counts records: `lines` = records read,
// `matched` = jobs accepted, `malformed` = records rejected (end before
// start, undefined type id); `oversized` is 0. Job::job_id is the record's
// index in the file and Job::line its 1-based ordinal. The file's type table
// is the header's, used or not.
//
// Usage:
//   FileResult r = import_ivl_file(input);   // one file
#pragma once

#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"

namespace pipescope {

struct IngestOptions;
class ProgressMeter;

/// Reads one .ivl file. Never throws for file content or I/O problems.
FileResult import_ivl_file(const InputFile& input, std::size_t max_diagnostics = 5);

/// The format table's reader: one task per file, in parallel.
std::vector<FileResult> read_ivl_files(const std::vector<InputFile>& files,
                                       const IngestOptions& options, ProgressMeter& progress);

}  // namespace pipescope
