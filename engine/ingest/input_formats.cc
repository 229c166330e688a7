#include "ingest/input_formats.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>

#include "ingest/dygraph_reader.h"
#include "ingest/ivl_import.h"
#include "ingest/text_log_reader.h"
#include "ingest/torch_trace_reader.h"
#include "io/file_descriptor.h"
#include "records/ivl_format.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

bool ivl_name(std::string_view name) { return name.size() > 4 && name.ends_with(".ivl"); }

bool ivl_content(std::string_view bytes) {
  return bytes.size() >= sizeof(ivl::kMagic) &&
         std::memcmp(bytes.data(), ivl::kMagic, sizeof(ivl::kMagic)) == 0;
}

bool worker_log_name(std::string_view name) { return worker_log_rank(name) >= 0; }

bool dygraph_name(std::string_view name) {
  return dygraph_record_rank(name) >= 0 || is_dygraph_concatenation(name);
}

// Any bytes can be scanned as text: the fallback, so it claims everything.
bool any_content(std::string_view) { return true; }

// The fallback (text) last: sniffing tries the formats in this order.
constexpr InputFormatSpec kFormats[] = {
    {InputFormat::ivl, ".ivl records", ivl_name, ivl_content, read_ivl_files},
    {InputFormat::paddle_dygraph, "Paddle dygraph pipeline records", dygraph_name,
     looks_like_dygraph_records, read_dygraph_records},
    {InputFormat::torch_trace, "PyTorch profiler trace", torch_trace_name, trace_json_content,
     read_torch_traces},
    {InputFormat::worker_log, "worker log", worker_log_name, any_content, read_text_logs},
};

}  // namespace

std::span<const InputFormatSpec> input_formats() { return kFormats; }

const InputFormatSpec& input_format_spec(InputFormat format) {
  return *std::find_if(std::begin(kFormats), std::end(kFormats),
                       [format](const InputFormatSpec& f) { return f.format == format; });
}

std::optional<InputFormat> format_by_name(std::string_view file_name) {
  for (const InputFormatSpec& f : kFormats) {
    if (f.claims_name(file_name)) return f.format;
  }
  return std::nullopt;
}

InputFormat format_by_content(const std::string& path) {
  char bytes[kSniffBytes];
  std::size_t size = 0;
  if (compression_of(path) != Compression::none) {
    // A compressed file is sniffed by its first decompressed bytes.
    try {
      const auto stream = open_byte_stream(path);
      while (size < sizeof bytes) {
        const std::size_t n = stream->read(bytes + size, sizeof bytes - size);
        if (n == 0) break;
        size += n;
      }
    } catch (const std::exception&) {
      size = 0;
    }
  } else {
    const io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
    if (fd.valid()) io::pread_full(fd.get(), bytes, sizeof bytes, 0, &size);
  }
  const std::string_view first(bytes, size);
  for (const InputFormatSpec& f : kFormats) {
    if (f.claims_content(first)) return f.format;
  }
  return kFormats[std::size(kFormats) - 1].format;
}

}  // namespace pipescope
