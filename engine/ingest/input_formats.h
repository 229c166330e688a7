// The table of input formats, in the manner of a forwarding reader: each
// format says which file names it claims, which first bytes it recognises,
// and which reader turns its files into FileResults. Discovery decides a
// file's format by name first and, for a name no format claims, by sniffing
// its first bytes; ingest runs each format's reader on its files. Adding a
// format is one reader file and one line in input_formats.cc.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "ingest/discovery.h"
#include "ingest/file_result.h"

namespace pipescope {

struct IngestOptions;
class ProgressMeter;

/// Reads `files` (all of one format) into one result per file, in order.
/// May run its own parallel work; never throws for a file's content or I/O.
using FormatReader = std::vector<FileResult> (*)(const std::vector<InputFile>& files,
                                                 const IngestOptions& options,
                                                 ProgressMeter& progress);

struct InputFormatSpec {
  InputFormat format;
  /// For messages: "worker log", ".ivl records".
  std::string_view name;
  /// True when the file name alone says the file is of this format.
  bool (*claims_name)(std::string_view file_name);
  /// True when a file's first bytes (at most kSniffBytes; fewer for a short
  /// file) are of this format.
  bool (*claims_content)(std::string_view first_bytes);
  FormatReader read;
};

/// Bytes read from a file to sniff its format.
inline constexpr std::size_t kSniffBytes = 128;

/// Every format, the fallback (text worker log) last.
std::span<const InputFormatSpec> input_formats();
const InputFormatSpec& input_format_spec(InputFormat format);

/// The format a file name claims, if any.
std::optional<InputFormat> format_by_name(std::string_view file_name);
/// The format of a file whose name claims none, from its first bytes; the
/// fallback when they cannot be read (the reader then reports why).
InputFormat format_by_content(const std::string& path);

}  // namespace pipescope
