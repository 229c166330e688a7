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
#include "ingest/read_options.h"
#include "records/ivl_reader.h"

namespace pipescope {

class ProgressMeter;

/// Reads one .ivl file. Never throws for file content or I/O problems.
FileResult import_ivl_file(const InputFile& input, std::size_t max_diagnostics = 5);

/// An .ivl file still being written, read as it grows (`pipescope watch`):
/// each call converts the whole blocks appended since the last one, exactly
/// as import_ivl_file() converts a whole file (a block being written waits
/// for the next call; a header still incomplete is no problem yet).
class IvlFollowImport {
 public:
  explicit IvlFollowImport(InputFile input);
  /// The new records: `device.jobs` (job ids and lines go on from the last
  /// call), `types` (the file's table so far, ids as in every earlier call),
  /// the header's step start with the call that read it, and the problems
  /// found. Only `stats.lines` (records read now) and `stats.matched` count.
  /// `max_bytes`: at most this much of the file is read in one call.
  FileResult read_more(std::uint64_t max_bytes = std::uint64_t{64} << 20,
                       std::size_t max_diagnostics = 5);
  /// First byte not yet read (the header's end once it was read).
  std::uint64_t offset() const { return position_.offset; }

 private:
  InputFile input_;
  ivl::ReadPosition position_;
  TypeTable types_;
  std::vector<TypeId> type_map_;
  std::uint64_t ordinal_ = 0;
};

/// The format table's reader: one task per file, in parallel.
std::vector<FileResult> read_ivl_files(const std::vector<InputFile>& files,
                                       const ReadOptions& options, ProgressMeter& progress);

}  // namespace pipescope
