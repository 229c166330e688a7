#include "ingest/trace_event_batches.h"

#include "ingest/trace_event_tokenizer.h"

namespace pipescope {

static_assert(ReadChunk::kPadding >= TraceEventTokenizer::kPadding,
              "the loop's chunks carry the padding the tokenizer's views promise");

void EventBatch::add(std::string_view event, std::uint64_t offset, std::uint64_t ordinal) {
  if (event.data() >= bytes && event.data() + event.size() <= bytes + size) {
    events.push_back(
        {false, static_cast<std::size_t>(event.data() - bytes), event.size(), offset, ordinal});
    return;
  }
  events.push_back({true, carried.size(), event.size(), offset, ordinal});
  carried.append(event);
  carried.append(TraceEventTokenizer::kPadding, ' ');
}

std::string_view EventBatch::view(std::size_t i) const {
  const Event& e = events[i];
  return {(e.carried ? carried.data() : bytes) + e.begin, e.size};
}

void EventBatch::clear() {
  bytes = nullptr;
  size = 0;
  carried.clear();
  events.clear();
  values.clear();
  records.clear();
  parsed.clear();
}

}  // namespace pipescope
