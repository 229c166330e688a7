// A line-record format read at rest through the reading loop: each file's
// chunks cut into whole lines (line_cutter.h) and given to the format's
// LineRecordParser (input_follower.h), the one parser the format also
// follows a growing file with (follow_line_records). A format of records one
// per line is then one parser and one table row (tests/ingest/
// toy_format_test.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/input_follower.h"
#include "ingest/read_options.h"
#include "ingest/reading_loop.h"

namespace pipescope {

/// Makes a file's parser (its place, the diagnostics it may keep).
using LineParserFactory =
    std::function<std::unique_ptr<LineRecordParser>(const InputFile&, std::size_t max_diagnostics)>;

/// The reading of `files`: what every call of a file's parser returned,
/// gathered into its result in file order (jobs, their types by name, step
/// starts, counts, diagnostics and notes); `stats.bytes` is the bytes read.
/// A line longer than ReadLimits::max_line_bytes is not given to the parser:
/// it is counted (`lines`, `oversized`) and said with its byte offset. The
/// arguments must outlive the reading.
std::unique_ptr<ChunkedFormat> read_line_records(const std::vector<InputFile>& files,
                                                 const ReadOptions& options,
                                                 LineParserFactory make_parser);

}  // namespace pipescope
