#include "ingest/trace_event_batches.h"

#include <tbb/parallel_pipeline.h>

#include <algorithm>
#include <system_error>

#include "ingest/trace_event_tokenizer.h"
#include "source/byte_stream.h"

namespace pipescope {

namespace {

/// Chunks the tokenizer cuts at once, at most: bounds memory at this many
/// chunks however large the file.
constexpr std::size_t kBatchesInFlight = 4;

}  // namespace

void EventBatch::add(std::string_view event, std::uint64_t offset, std::uint64_t ordinal) {
  const char* data = buffer.data();
  if (event.data() >= data && event.data() + event.size() <= data + size) {
    events.push_back(
        {false, static_cast<std::size_t>(event.data() - data), event.size(), offset, ordinal});
    return;
  }
  events.push_back({true, carried.size(), event.size(), offset, ordinal});
  carried.append(event);
  carried.append(TraceEventTokenizer::kPadding, ' ');
}

std::string_view EventBatch::view(std::size_t i) const {
  const Event& e = events[i];
  return {(e.carried ? carried.data() : buffer.data()) + e.begin, e.size};
}

void EventBatch::clear() {
  size = 0;
  carried.clear();
  events.clear();
  values.clear();
  records.clear();
  parsed.clear();
}

EventBatch* BatchPool::take(std::size_t chunk) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    all_.push_back(std::make_unique<EventBatch>());
    all_.back()->buffer.resize(chunk + TraceEventTokenizer::kPadding);
    return all_.back().get();
  }
  EventBatch* batch = free_.back();
  free_.pop_back();
  return batch;
}

void BatchPool::give_back(EventBatch* batch) {
  batch->clear();
  std::lock_guard lock(mutex_);
  free_.push_back(batch);
}

std::optional<std::string> read_event_batches(ByteStream& stream, TraceEventTokenizer& tokenizer,
                                              std::size_t chunk, BatchPool& pool,
                                              const std::function<void(EventBatch&)>& parse,
                                              const std::function<void(EventBatch&)>& apply) {
  std::optional<std::string> read_error;
  EventBatch* filling = nullptr;  // the batch the tokenizer's callbacks write to
  tokenizer.set_on_event([&](std::string_view event, std::uint64_t offset) {
    filling->add(event, offset, tokenizer.events());
  });
  tokenizer.set_on_value([&](std::string_view, std::string_view value) {
    filling->values.push_back({filling->events.size(), std::string(value)});
  });
  bool stop = false;
  tbb::parallel_pipeline(kBatchesInFlight,
                         tbb::make_filter<void, EventBatch*>(
                             tbb::filter_mode::serial_in_order,
                             [&](tbb::flow_control& fc) -> EventBatch* {
                               if (stop) {
                                 fc.stop();
                                 return nullptr;
                               }
                               EventBatch* batch = pool.take(chunk);
                               try {
                                 const std::size_t n = stream.read(batch->buffer.data(), chunk);
                                 if (n == 0) {
                                   pool.give_back(batch);
                                   fc.stop();
                                   return nullptr;
                                 }
                                 std::fill_n(batch->buffer.data() + n,
                                             TraceEventTokenizer::kPadding, ' ');
                                 batch->size = n;
                                 filling = batch;
                                 tokenizer.feed(batch->buffer.data(), n);
                                 filling = nullptr;
                                 stop = !tokenizer.error().empty();
                               } catch (const std::system_error& e) {
                                 read_error = e.what();
                                 stop = true;
                               }
                               return batch;
                             }) &
                             tbb::make_filter<EventBatch*, EventBatch*>(tbb::filter_mode::parallel,
                                                                        [&](EventBatch* batch) {
                                                                          parse(*batch);
                                                                          return batch;
                                                                        }) &
                             tbb::make_filter<EventBatch*, void>(tbb::filter_mode::serial_in_order,
                                                                 [&](EventBatch* batch) {
                                                                   apply(*batch);
                                                                   pool.give_back(batch);
                                                                 }));
  tokenizer.set_on_event({});
  tokenizer.set_on_value({});
  return read_error;
}

}  // namespace pipescope
