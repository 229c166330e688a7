// Imports .ivl record files (records/ivl_format.h) into the model: the
// binary counterpart of scanning a worker log. A file's records become one
// Device's jobs; what was wrong with the file (bad header, corrupt blocks, a
// torn tail, records that make no sense) becomes diagnostics with byte
// offsets and counts in InputStats, never an exception.
//
// For an .ivl input, InputStats counts records: `lines` = records read,
// `matched` = jobs accepted, `malformed` = records rejected (end before
// start, undefined type id); `oversized` is 0. Job::job_id is the record's
// index in the file and Job::line its 1-based ordinal.
//
// Usage:
//   ImportedRecords r = import_ivl_file(input);        // one file
//   Run run = scan_mixed_inputs(inputs, scan_options); // text logs and .ivl together
#pragma once

#include <optional>
#include <vector>

#include "model/run.h"
#include "scan/log_scanner.h"
#include "source/discovery.h"

namespace pipescope {

struct ImportedRecords {
  /// Place (from discovery) and jobs in file order, types indexing `types`.
  Device device;
  InputStats stats;
  /// The first `max_diagnostics` problems, in file order.
  std::vector<Diagnostic> diagnostics;
  TypeTable types;
  /// The header's first step, when it has one.
  std::optional<std::int64_t> first_step;
};

/// Reads one .ivl file. Never throws for file content or I/O problems.
ImportedRecords import_ivl_file(const InputFile& input, std::size_t max_diagnostics = 5);

/// True when some input is an .ivl file.
bool has_ivl_inputs(const std::vector<InputFile>& inputs);

/// scan_worker_logs() for inputs that include .ivl files: the worker logs go
/// through the text pipeline, the .ivl files are imported in parallel (one
/// task per file), and the results are merged in input order into one
/// finalized Run (one type table; first step = the smallest of all inputs).
Run scan_mixed_inputs(const std::vector<InputFile>& inputs, const ScanOptions& options);

}  // namespace pipescope
