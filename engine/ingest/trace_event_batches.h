// Event batching for the torch trace reader: what one chunk of a trace
// holds as it goes through the reading loop (reading_loop.h). The tokenizer
// cuts each chunk into events, the events of several chunks are parsed side
// by side, and the results are applied in file order, so the outcome is the
// one a single thread would get.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/reading_loop.h"
#include "ingest/torch_trace_event.h"

namespace pipescope {

/// The events that end in one chunk: events wholly in the chunk are views
/// into its bytes; one that began in an earlier chunk is copied (with its
/// padding) into `carried`, so every view has TraceEventTokenizer::kPadding
/// readable bytes after it.
struct EventBatch final : ChunkState {
  struct Event {
    bool carried = false;
    std::size_t begin = 0;
    std::size_t size = 0;
    std::uint64_t offset = 0;
    std::uint64_t ordinal = 0;
  };
  /// A top-level value found before event `before` of the batch.
  struct Value {
    std::size_t before = 0;
    std::string text;
  };

  /// The chunk's bytes (set when the tokenizer is fed them).
  const char* bytes = nullptr;
  std::size_t size = 0;
  std::string carried;
  std::vector<Event> events;
  std::vector<Value> values;
  /// The kept events, in order: launches and plain activities as records,
  /// and for each other event a record of kind none standing for the next
  /// of `parsed`.
  std::vector<PlainRecord> records;
  std::vector<ParsedEvent> parsed;

  /// Records an event the tokenizer found while this batch's bytes were fed.
  void add(std::string_view event, std::uint64_t offset, std::uint64_t ordinal);
  /// Event `i`'s bytes.
  std::string_view view(std::size_t i) const;
  /// Empties the batch for reuse, keeping its memory.
  void clear() override;
};

}  // namespace pipescope
