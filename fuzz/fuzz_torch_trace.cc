// Fuzzes the Chrome-trace tokenizer (ingest/trace_event_tokenizer.h) and the
// PyTorch profiler trace reader (ingest/torch_trace_reader.h). The first byte
// picks a chunk size: the events found chunk by chunk must equal those found
// in one piece (else abort), and the reader, with the `PP:` labels and with a
// job pattern, must take any bytes without crashing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "ingest/discovery.h"
#include "ingest/ingest.h"
#include "ingest/job_pattern.h"
#include "ingest/torch_trace_reader.h"
#include "ingest/trace_event_tokenizer.h"
#include "model/errors.h"

namespace {

using pipescope::TraceEventTokenizer;

std::vector<std::string> events_of(std::string_view doc, std::size_t chunk, std::string& error) {
  std::vector<std::string> events;
  TraceEventTokenizer tok({"baseTimeNanoseconds", "distributedInfo"},
                          [&](std::string_view e, std::uint64_t) { events.emplace_back(e); });
  std::string piece;
  for (std::size_t i = 0; i < doc.size(); i += chunk) {
    const std::size_t n = std::min(chunk, doc.size() - i);
    piece.assign(doc.substr(i, n));
    piece.append(TraceEventTokenizer::kPadding, ' ');
    tok.feed(piece.data(), n);
  }
  tok.finish();
  error = tok.error();
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pipescope::fuzz::Cursor cursor(data, size);
  const std::size_t chunk = 1 + cursor.byte() % 64;
  const bool pattern = chunk % 2 == 0;
  const std::string_view doc = cursor.rest();
  std::string whole_error, chunked_error;
  const auto whole = events_of(doc, doc.size() + 1, whole_error);
  const auto chunked = events_of(doc, chunk, chunked_error);
  if (whole != chunked || whole_error != chunked_error) std::abort();

  static pipescope::fuzz::ScratchFile scratch(".pt.trace.json");
  pipescope::InputFile input;
  input.path = scratch.write(cursor.data(), cursor.size());
  input.format = pipescope::InputFormat::torch_trace;
  pipescope::IngestOptions options;
  // Compiled once, as the command line compiles it once for every file.
  static const auto compiled =
      std::make_shared<const pipescope::JobPattern>("(?P<op>forward|backward)(?P<mb>\\d*)", "");
  if (pattern) options.job_pattern = compiled;
  try {
    const pipescope::FileResult r = pipescope::read_torch_trace(input, options, options);
    if (r.stats.matched != r.device.jobs.size()) std::abort();
  } catch (const pipescope::InputError&) {
    // A pattern without mb meeting a trace without steps: the one refusal.
  }
  return 0;
}
