// Event batching for the torch trace reader: a file is cut into chunks, each
// chunk's events are parsed side by side with other chunks', and the results
// are applied in file order, so the outcome is the one a single thread would
// get. Memory is bounded by a few chunks however large the file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/torch_trace_event.h"

namespace pipescope {

class ByteStream;
class TraceEventTokenizer;

/// One chunk of the file and the events that end in it: events wholly in
/// the chunk are views into `buffer`; one that began in an earlier chunk is
/// copied (with its padding) into `carried`, so every view has
/// TraceEventTokenizer::kPadding readable bytes after it.
struct EventBatch {
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

  std::vector<char> buffer;  // chunk bytes + kPadding, sized by BatchPool::take
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
  /// Empties the batch for reuse; the buffer is kept.
  void clear();
};

/// Batches kept for reuse, so that a file's chunks reuse the same few
/// buffers instead of faulting in fresh pages for every chunk. Thread-safe.
class BatchPool {
 public:
  /// A batch whose buffer holds `chunk` bytes (and the padding).
  EventBatch* take(std::size_t chunk);
  /// Returns a batch taken from this pool, cleared.
  void give_back(EventBatch* batch);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<EventBatch>> all_;
  std::vector<EventBatch*> free_;
};

/// Reads `stream` to its end (or to the tokenizer's first error) through
/// `tokenizer`, in `chunk`-byte batches, in a oneTBB pipeline: the tokenizer
/// cuts each chunk into events on one thread (it must see the bytes in
/// order), `parse` fills batch.records and batch.parsed for several batches
/// at once on any thread, and `apply` receives the batches one at a time in
/// file order. The top-level values the tokenizer was asked for land in
/// batch.values. Returns the message of a read that failed
/// (std::system_error), after every batch before it was applied; nullopt
/// when the stream was read to its end. The tokenizer's callbacks are
/// cleared on return.
std::optional<std::string> read_event_batches(ByteStream& stream, TraceEventTokenizer& tokenizer,
                                              std::size_t chunk, BatchPool& pool,
                                              const std::function<void(EventBatch&)>& parse,
                                              const std::function<void(EventBatch&)>& apply);

}  // namespace pipescope
