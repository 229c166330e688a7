// Finds the events of a Chrome-trace JSON document (a torch.profiler trace)
// chunk by chunk, without ever holding the document: the tokenizer side of
// the trace readers, in the manner of Perfetto's JSON trace tokenizer. It
// follows only the document's structure (strings, brackets, top-level keys)
// and hands each complete element object of the top-level `traceEvents`
// array (or of a top-level array: the Chrome "array format") to a callback,
// plus the raw text of the few top-level values a reader asks for
// (`baseTimeNanoseconds`, `distributedInfo`). Chunks never line up with
// events: the tokenizer owns the bytes of an unfinished event and carries
// them over to the next chunk.
//
// It never parses an event; a malformed event is the reader's to count. What
// it detects is structural damage (a closing bracket of the wrong kind,
// nesting deeper than kMaxDepth) and a document that ends early: it stops
// there, and every event completed before the damage has been delivered.
//
// Usage:
//   TraceEventTokenizer tok({"baseTimeNanoseconds"}, on_event, on_value);
//   while (read chunk) tok.feed(chunk, n);   // chunk needs kPadding bytes after n
//   tok.finish();
//   if (!tok.error().empty()) report(tok.error_offset(), tok.error());
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pipescope {

class TraceEventTokenizer {
 public:
  /// Readable bytes every fed chunk (and every event view handed out) has
  /// after its end: what simdjson needs to parse a view in place.
  static constexpr std::size_t kPadding = 64;
  /// Nesting deeper than this is taken for damage.
  static constexpr int kMaxDepth = 512;
  /// An event longer than this is skipped unread (counted in oversized()).
  static constexpr std::size_t kDefaultMaxEventBytes = std::size_t{64} << 20;

  /// `event`: one element object of the events array, with its absolute byte
  /// offset; the view is valid during the call and followed by kPadding
  /// readable bytes.
  using EventCallback = std::function<void(std::string_view event, std::uint64_t offset)>;
  /// `value`: the raw JSON text of top-level key `key` (one of `keys`),
  /// at most 1 MiB (a longer value is not delivered).
  using ValueCallback = std::function<void(std::string_view key, std::string_view value)>;

  TraceEventTokenizer(std::vector<std::string> keys, EventCallback on_event,
                      ValueCallback on_value = {},
                      std::size_t max_event_bytes = kDefaultMaxEventBytes);

  /// Replace the callbacks (a reader that batches events per chunk points
  /// them at the chunk's batch).
  void set_on_event(EventCallback on_event) { on_event_ = std::move(on_event); }
  void set_on_value(ValueCallback on_value) { on_value_ = std::move(on_value); }

  /// Scans the next `size` bytes; data[size, size + kPadding) must be
  /// readable. Does nothing after an error.
  void feed(const char* data, std::size_t size);
  /// The end of the input: a document not closed is an error from here on.
  void finish();

  /// Empty, or what is wrong: structural damage or an early end.
  const std::string& error() const { return error_; }
  /// Absolute byte offset of the damage (or of the early end).
  std::uint64_t error_offset() const { return error_offset_; }
  /// Whether the top-level value closed (anything after it is ignored).
  bool complete() const { return done_; }
  /// Events delivered, events skipped for their size.
  std::uint64_t events() const { return events_; }
  std::uint64_t oversized() const { return oversized_; }
  /// Bytes fed so far.
  std::uint64_t bytes() const { return consumed_; }
  /// How the bytes inside the events are scanned: byte by byte (the tests'
  /// reference), 64 at a time with SSE2, or with the widest instructions the
  /// CPU has (AVX2; the default).
  enum class BlockScan : std::uint8_t { off, sse2, best };
  void set_block_scan(BlockScan how) { block_scan_ = how; }

  /// Whether the events array has begun (a reader may stop reading a header
  /// there).
  bool in_events() const { return events_depth_ > 0; }

 private:
  enum class Region : std::uint8_t { none, event, value, skipped };
  void scan(const char* data, std::size_t size);
  /// Inside the events (or any value below the top object's keys), 64 bytes
  /// at a time: strings found with bit masks, only brackets visited. From
  /// data[i]; returns where the byte-wise scan goes on.
  std::size_t scan_blocks(const char* data, std::size_t size, std::size_t i, std::uint64_t base);
  /// scan_blocks with AVX2 and carry-less multiplication, where the CPU has them.
  std::size_t scan_blocks_avx2(const char* data, std::size_t size, std::size_t i,
                               std::uint64_t base);
  /// The brackets of one block (`brackets`: bit k for data[i + k]) visited;
  /// false when the block scan stops at one (`resume`: where the byte-wise
  /// scan goes on, `size` after damage).
  bool visit_brackets(const char* data, std::size_t size, std::size_t i, std::uint64_t base,
                      std::uint64_t brackets, std::size_t& resume);
  bool blocks_allowed() const;
  /// One bracket outside a string at data[i]; false on damage (or a stop).
  bool bracket(const char* data, std::size_t i, char c, std::uint64_t base);
  void fail(std::uint64_t offset, std::string message);
  /// The open region's bytes up to data[end): in place, or appended to the
  /// carried bytes.
  std::string_view region_view(const char* data, std::size_t end);
  void append_carry(const char* data, std::size_t size);
  void close_value(const char* data, std::size_t end);

  std::vector<std::string> keys_;
  EventCallback on_event_;
  ValueCallback on_value_;
  std::size_t max_event_bytes_;

  // Carried bytes of an unfinished region (its beginning, from earlier
  // chunks), with kPadding spare bytes.
  std::vector<char> carry_;
  std::size_t carry_size_ = 0;
  bool region_in_carry_ = false;
  std::uint64_t region_offset_ = 0;  // absolute offset of the open region

  std::uint64_t consumed_ = 0;
  int depth_ = 0;
  std::array<char, kMaxDepth> stack_{};  // '{' or '[' per open level, depth_ of them
  bool in_string_ = false;
  bool escape_ = false;
  bool top_object_ = false;
  bool expect_key_ = false;
  bool key_capture_ = false;
  bool awaiting_value_ = false;
  bool done_ = false;
  BlockScan block_scan_ = BlockScan::best;
  int events_depth_ = 0;  // depth of the events array's elements' parent + 1, or 0
  std::string key_;
  std::string value_key_;
  Region region_ = Region::none;
  std::size_t region_begin_ = 0;  // index into the current chunk (region not carried)
  std::uint64_t events_ = 0;
  std::uint64_t oversized_ = 0;
  std::string error_;
  std::uint64_t error_offset_ = 0;
};

}  // namespace pipescope
