#include "records/ivl_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <system_error>

#include "io/file_descriptor.h"
#include "records/crc32c.h"

namespace pipescope::ivl {

namespace {

template <typename... Args>
std::string cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

/// A forward-only window over a file: get(offset, n) makes n bytes at offset
/// available, dropping what lies before offset. Offsets never go backwards.
class Window {
 public:
  // The buffer is not zero-filled: filling megabytes per file cost more than
  // reading small files.
  Window(int fd, std::size_t buffer_bytes)
      : fd_(fd),
        buffer_(std::make_unique_for_overwrite<unsigned char[]>(buffer_bytes)),
        capacity_(buffer_bytes) {}

  /// Pointer to [offset, offset + n), or nullptr when the file ends first.
  /// Throws std::system_error on a read error.
  const unsigned char* get(std::uint64_t offset, std::size_t n) {
    if (offset < start_) throw std::logic_error("ivl window moved backwards");
    if (offset + n <= start_ + size_) return buffer_.get() + (offset - start_);
    // Drop the bytes before offset, then read until n bytes are there.
    const std::uint64_t keep_from = std::min<std::uint64_t>(offset, start_ + size_);
    const std::size_t drop = static_cast<std::size_t>(keep_from - start_);
    std::memmove(buffer_.get(), buffer_.get() + drop, size_ - drop);
    size_ -= drop;
    start_ = keep_from;
    const std::size_t skip = static_cast<std::size_t>(offset - start_);  // only if past the data
    if (skip > 0) {
      // Never happens in practice (callers ask for bytes they have seen), but
      // keep the window consistent: seek is a read-and-discard.
      if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) fail();
      start_ = offset;
      size_ = 0;
    }
    if (capacity_ < n) {
      auto bigger = std::make_unique_for_overwrite<unsigned char[]>(n);
      std::memcpy(bigger.get(), buffer_.get(), size_);
      buffer_ = std::move(bigger);
      capacity_ = n;
    }
    while (size_ < n && !eof_) {
      const ssize_t got = io::read_retrying(fd_, buffer_.get() + size_, capacity_ - size_);
      if (got < 0) fail();
      if (got == 0) eof_ = true;
      size_ += static_cast<std::size_t>(got);
    }
    if (size_ < n) return nullptr;
    return buffer_.get();
  }

  /// Bytes available at offset without reading past what is buffered, after
  /// trying to buffer at least `want` (the end of the file may give fewer).
  std::size_t available(std::uint64_t offset, std::size_t want) {
    if (get(offset, want) != nullptr) return static_cast<std::size_t>(start_ + size_ - offset);
    return start_ + size_ > offset ? static_cast<std::size_t>(start_ + size_ - offset) : 0;
  }
  const unsigned char* at(std::uint64_t offset) const { return buffer_.get() + (offset - start_); }

  bool at_eof() const { return eof_; }
  /// File offset just past the buffered bytes (the file size once at_eof()).
  std::uint64_t end() const { return start_ + size_; }

 private:
  [[noreturn]] void fail() {
    throw std::system_error(errno, std::generic_category(), "read failed");
  }
  int fd_;
  std::unique_ptr<unsigned char[]> buffer_;
  std::size_t capacity_ = 0;
  std::uint64_t start_ = 0;
  std::size_t size_ = 0;
  bool eof_ = false;
};

/// Reads names (u16 length + bytes) from a bounded span.
bool parse_names(const unsigned char* p, std::size_t size, std::uint32_t count,
                 std::vector<std::string>& out, std::string& error) {
  // Each name takes at least 3 bytes (length + one byte): bound the count by
  // the bytes present before reserving anything.
  if (count > kMaxTypes || std::uint64_t{count} * 3 > size) {
    error = cat("type table claims ", count, " names in ", size, " bytes");
    return false;
  }
  out.reserve(out.size() + count);
  std::size_t pos = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (size - pos < 2) {
      error = cat("type name ", i, " runs past its table");
      return false;
    }
    const auto length = load_le<std::uint16_t>(p + pos);
    pos += 2;
    if (length == 0 || length > kMaxTypeNameBytes || length > size - pos) {
      error = cat("type name ", i, " has a bad length (", length, ")");
      return false;
    }
    out.emplace_back(reinterpret_cast<const char*>(p + pos), length);
    pos += length;
  }
  return true;
}

/// What parse_header found wrong.
struct HeaderProblem {
  /// Empty: the header is whole and valid.
  std::string message;
  /// The file ends before its header does (empty, or cut inside it): a file
  /// still being written has only not written all of it yet.
  bool incomplete = false;

  bool ok() const { return message.empty(); }
};

/// Verifies and decodes the header.
HeaderProblem parse_header(Window& window, Header& h) {
  const unsigned char* p = window.get(0, sizeof(kMagic));
  if (p == nullptr) {
    if (window.end() == 0) return {"file is empty", true};
    if (std::memcmp(window.at(0), kMagic, static_cast<std::size_t>(window.end())) != 0) {
      return {"not an .ivl file (wrong magic)"};
    }
    return {cat("truncated header (", window.end(), " of ", kFixedHeaderBytes, " bytes)"), true};
  }
  if (std::memcmp(p, kMagic, sizeof(kMagic)) != 0) return {"not an .ivl file (wrong magic)"};
  p = window.get(0, kFixedHeaderBytes);
  if (p == nullptr) {
    return {cat("truncated header (", window.end(), " of ", kFixedHeaderBytes, " bytes)"), true};
  }
  const auto bom = load_le<std::uint32_t>(p + header::kByteOrder);
  h.major = load_le<std::uint16_t>(p + header::kMajor);
  h.minor = load_le<std::uint16_t>(p + header::kMinor);
  if (bom == 0x04030201) {
    return {"big-endian .ivl file: this reader reads little-endian files only"};
  }
  if (bom != kByteOrderMark) return {cat("bad byte-order mark 0x", std::hex, bom)};
  if (h.major > kMajorVersion) {
    return {cat(".ivl format version ", h.major, ".", h.minor, " is newer than this reader (",
                kMajorVersion, ".", kMinorVersion, "); upgrade pipescope to read it")};
  }
  if (h.major == 0) return {"bad format version 0"};
  h.header_bytes = load_le<std::uint32_t>(p + header::kHeaderBytes);
  if (h.header_bytes < kFixedHeaderBytes || h.header_bytes > kMaxHeaderBytes ||
      h.header_bytes % 8 != 0) {
    return {cat("bad header size ", h.header_bytes)};
  }
  p = window.get(0, h.header_bytes);
  if (p == nullptr) {
    return {cat("truncated header (", window.end(), " of ", h.header_bytes, " bytes)"), true};
  }
  std::vector<unsigned char> copy(p, p + h.header_bytes);
  const auto stored_crc = load_le<std::uint32_t>(&copy[header::kHeaderCrc]);
  store_le(&copy[header::kHeaderCrc], std::uint32_t{0});
  if (crc32c(copy.data(), copy.size()) != stored_crc) return {"header checksum mismatch"};
  const auto record_bytes = load_le<std::uint32_t>(p + header::kRecordBytes);
  if (record_bytes != kRecordBytes) {
    return {
        cat("records of ", record_bytes, " bytes are not supported (expected ", kRecordBytes, ")")};
  }
  h.machine = load_le<std::int32_t>(p + header::kMachine);
  h.rank = load_le<std::int32_t>(p + header::kRank);
  h.anchor_realtime_ns = load_le<std::int64_t>(p + header::kAnchorRealtime);
  h.anchor_steady_ns = load_le<std::int64_t>(p + header::kAnchorSteady);
  if (load_le<std::uint32_t>(p + header::kFlags) & kFlagHasFirstStep) {
    h.first_step = load_le<std::int64_t>(p + header::kFirstStep);
  }
  // Extensions: {tag u16, reserved u16, length u32, payload, pad to 8}.
  std::size_t pos = kFixedHeaderBytes;
  while (pos < h.header_bytes) {
    if (h.header_bytes - pos < 8) return {cat("header extension at byte ", pos, " is truncated")};
    const auto tag = load_le<std::uint16_t>(p + pos);
    const auto length = load_le<std::uint32_t>(p + pos + 4);
    pos += 8;
    if (length > h.header_bytes - pos) {
      return {cat("header extension ", tag, " claims ", length, " bytes past the header")};
    }
    const unsigned char* payload = p + pos;
    const auto text = [&] { return std::string(reinterpret_cast<const char*>(payload), length); };
    switch (static_cast<Extension>(tag)) {
      case Extension::end:
        pos = h.header_bytes;
        continue;
      case Extension::producer:
        h.producer = text();
        break;
      case Extension::machine_name:
        h.machine_name = text();
        break;
      case Extension::types: {
        if (length < 4) return {"type table is truncated"};
        std::string error;
        if (!parse_names(payload + 4, length - 4, load_le<std::uint32_t>(payload), h.types,
                         error)) {
          return {error};
        }
        break;
      }
      default:
        break;  // an extension from a newer minor version: skipped
    }
    pos += (length + 7) / 8 * 8;
  }
  return {};
}

/// What a block header says, when it is plausible.
struct BlockInfo {
  std::uint16_t kind = 0;
  std::uint32_t count = 0;
  std::uint32_t payload_bytes = 0;
};

bool plausible_block(const unsigned char* h, BlockInfo& b) {
  if (std::memcmp(h, kBlockMagic, sizeof(kBlockMagic)) != 0) return false;
  b.kind = load_le<std::uint16_t>(h + block::kKind);
  b.count = load_le<std::uint32_t>(h + block::kCount);
  b.payload_bytes = load_le<std::uint32_t>(h + block::kPayloadBytes);
  if (b.payload_bytes > kMaxBlockPayloadBytes) return false;
  if (b.kind == static_cast<std::uint16_t>(BlockKind::records)) {
    return b.count <= kMaxRecordsPerBlock &&
           std::uint64_t{b.count} * kRecordBytes == b.payload_bytes;
  }
  return true;
}

bool checksum_ok(const unsigned char* h, std::uint32_t payload_bytes) {
  std::uint32_t crc = crc32c(h, block::kCrc);
  crc = crc32c_extend(crc, h + kBlockHeaderBytes, payload_bytes);
  return crc == load_le<std::uint32_t>(h + block::kCrc);
}

class BlockReader {
 public:
  BlockReader(Window& window, const ReadCallbacks& callbacks, ReadResult& result)
      : window_(window), callbacks_(callbacks), result_(result) {}

  void run(std::uint64_t pos) { run(pos, result_.header.types); }

  /// From `pos`, with the type table defined before it; ends at the end of
  /// the file or at a torn tail (end_ says where).
  void run(std::uint64_t pos, std::vector<std::string> types) {
    types_ = std::move(types);
    end_ = pos;
    for (;;) {
      end_ = pos;
      if (pos >= stop_at_) return;
      const unsigned char* h = window_.get(pos, kBlockHeaderBytes);
      if (h == nullptr) {
        const std::uint64_t left = window_.end() - pos;
        if (left > 0) torn(pos, left, "the file ends inside a block header");
        return;
      }
      BlockInfo b;
      if (!plausible_block(h, b)) {
        const bool magic = std::memcmp(h, kBlockMagic, sizeof(kBlockMagic)) == 0;
        if (!resync(pos, magic ? ProblemKind::corrupt_block : ProblemKind::junk,
                    magic ? "block header has impossible fields" : "bytes that are not a block")) {
          return;
        }
        pos = next_;
        continue;
      }
      const std::size_t size = kBlockHeaderBytes + b.payload_bytes;
      h = window_.get(pos, size);
      if (h == nullptr) {
        // Either the last block is torn, or this block's size field is
        // corrupt: only a valid block further on tells them apart.
        const std::uint64_t left = window_.end() - pos;
        if (find_block(pos + 1)) {
          skip(ProblemKind::corrupt_block, pos, next_ - pos,
               "block size runs past the end of the file; skipped to the next valid block");
          pos = next_;
          continue;
        }
        torn(pos, left, "the file ends inside a block");
        return;
      }
      if (!checksum_ok(h, b.payload_bytes)) {
        if (!resync(pos, ProblemKind::corrupt_block, "block checksum mismatch")) return;
        pos = next_;
        continue;
      }
      deliver(pos, h, b);
      pos += size;
    }
  }

 private:
  void deliver(std::uint64_t pos, const unsigned char* h, const BlockInfo& b) {
    ++result_.blocks;
    const unsigned char* payload = h + kBlockHeaderBytes;
    switch (static_cast<BlockKind>(b.kind)) {
      case BlockKind::records: {
        result_.records += b.count;
        if (callbacks_.on_records) {
          RecordBlock block;
          block.payload = payload;
          block.count = b.count;
          block.offset = pos;
          block.types = &types_;
          callbacks_.on_records(block);
        }
        return;
      }
      case BlockKind::types: {
        std::string error;
        if (types_.size() + b.count > kMaxTypes ||
            !parse_names(payload, b.payload_bytes, b.count, types_, error)) {
          // The checksum matched, so the writer wrote it this way: report it.
          problem(ProblemKind::corrupt_block, pos, kBlockHeaderBytes + b.payload_bytes,
                  cat("bad type block: ", error.empty() ? "too many types" : error));
          ++result_.corrupt_blocks;
        }
        return;
      }
    }
    --result_.blocks;
    skip(ProblemKind::unknown_block, pos, kBlockHeaderBytes + b.payload_bytes,
         cat("block of unknown kind ", b.kind, " (newer format minor version?) skipped"));
  }

  /// Reports [from, next valid block) as skipped; false when no valid block
  /// follows (the rest of the file is reported and the read ends).
  bool resync(std::uint64_t from, ProblemKind kind, const std::string& what) {
    if (find_block(from + 1)) {
      skip(kind, from, next_ - from, cat(what, "; skipped ", next_ - from, " bytes"));
      return true;
    }
    const std::uint64_t left = window_.end() - from;
    skip(kind, from, left, cat(what, "; no valid block follows (", left, " bytes ignored)"));
    end_ = window_.end();  // ignored: a later read goes on after them
    return false;
  }

  /// Finds the first offset >= from holding a block whose checksum verifies;
  /// sets next_. Scans with memchr-speed search for the block magic.
  bool find_block(std::uint64_t from) {
    std::uint64_t q = from;
    for (;;) {
      const std::size_t avail = window_.available(q, kBlockHeaderBytes);
      if (avail < kBlockHeaderBytes) return false;
      const unsigned char* base = window_.at(q);
      const auto* hit = static_cast<const unsigned char*>(
          ::memmem(base, avail, kBlockMagic, sizeof(kBlockMagic)));
      if (hit == nullptr) {
        q += avail - (sizeof(kBlockMagic) - 1);
        if (window_.at_eof() && q + kBlockHeaderBytes > window_.end()) return false;
        continue;
      }
      const std::uint64_t candidate = q + static_cast<std::uint64_t>(hit - base);
      const unsigned char* h = window_.get(candidate, kBlockHeaderBytes);
      BlockInfo b;
      if (h != nullptr && plausible_block(h, b)) {
        h = window_.get(candidate, kBlockHeaderBytes + b.payload_bytes);
        if (h != nullptr && checksum_ok(h, b.payload_bytes)) {
          next_ = candidate;
          return true;
        }
      }
      q = candidate + 1;
    }
  }

  void skip(ProblemKind kind, std::uint64_t offset, std::uint64_t bytes, std::string message) {
    if (kind == ProblemKind::corrupt_block) ++result_.corrupt_blocks;
    result_.skipped_bytes += bytes;
    problem(kind, offset, bytes, std::move(message));
  }

  void torn(std::uint64_t offset, std::uint64_t bytes, const char* what) {
    result_.torn_offset = offset;
    problem(ProblemKind::torn_tail, offset, bytes,
            cat("torn tail: ", what, " (", bytes, " bytes from byte offset ", offset,
                " ignored; the writer was stopped mid-write or is still writing)"));
  }

  void problem(ProblemKind kind, std::uint64_t offset, std::uint64_t bytes, std::string message) {
    ++result_.problems;
    if (callbacks_.on_problem) callbacks_.on_problem({kind, offset, bytes, std::move(message)});
  }

  Window& window_;
  const ReadCallbacks& callbacks_;
  ReadResult& result_;
  std::uint64_t next_ = 0;

 public:
  std::vector<std::string> types_;
  /// Where the last run stopped: the end of the file, or a torn tail.
  std::uint64_t end_ = 0;
  /// No block that begins here or later is read.
  std::uint64_t stop_at_ = std::numeric_limits<std::uint64_t>::max();
};

void report(const ReadCallbacks& callbacks, ReadResult& result, ProblemKind kind,
            std::string message) {
  ++result.problems;
  if (callbacks.on_problem) callbacks.on_problem({kind, 0, 0, std::move(message)});
}

}  // namespace

ReadResult read_file(const std::string& path, const ReadCallbacks& callbacks) {
  ReadResult result;
  io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
  if (fd.get() < 0) {
    report(callbacks, result, ProblemKind::io, cat("cannot open: ", std::strerror(errno)));
    return result;
  }
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  // Large reads (up to 4 MiB) keep the read(2) cost per byte low; a small
  // file gets a buffer of its size. The window grows for a larger block.
  struct stat st {};
  const std::size_t file_bytes = ::fstat(fd.get(), &st) == 0 && st.st_size > 0
                                     ? static_cast<std::size_t>(st.st_size)
                                     : std::size_t{0};
  Window window(fd.get(), std::clamp(file_bytes + 1, std::size_t{64} << 10, std::size_t{4} << 20));
  try {
    const HeaderProblem problem = parse_header(window, result.header);
    if (!problem.ok()) {
      result.bytes = window.end();
      report(callbacks, result, ProblemKind::header, problem.message);
      return result;
    }
    result.header_ok = true;
    if (callbacks.on_header) callbacks.on_header(result.header);
    BlockReader(window, callbacks, result).run(result.header.header_bytes);
    result.bytes = window.end();
  } catch (const std::system_error& e) {
    result.bytes = window.end();
    report(callbacks, result, ProblemKind::io,
           cat("read error near byte offset ", window.end(), ": ", e.code().message()));
  }
  return result;
}

ReadResult read_more(const std::string& path, ReadPosition& position,
                     const ReadCallbacks& callbacks, std::uint64_t max_bytes) {
  ReadResult result;
  io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
  if (fd.get() < 0) {
    report(callbacks, result, ProblemKind::io, cat("cannot open: ", std::strerror(errno)));
    return result;
  }
  // Small: a look reads what was appended since the last (the window grows
  // for a larger block), and a large buffer freed at every look would stay
  // resident in the allocator.
  Window window(fd.get(), std::size_t{64} << 10);
  // A torn tail is where the next read begins: not a problem while writing.
  ReadCallbacks quiet = callbacks;
  quiet.on_problem = [&](const Problem& p) {
    if (p.kind != ProblemKind::torn_tail && callbacks.on_problem) callbacks.on_problem(p);
  };
  try {
    if (!position.header) {
      Header header;
      const HeaderProblem problem = parse_header(window, header);
      if (!problem.ok()) {
        // Still being written: wait for the rest; anything else is final.
        result.bytes = window.end();
        if (!problem.incomplete) report(callbacks, result, ProblemKind::header, problem.message);
        return result;
      }
      result.header = header;
      position.types = header.types;
      position.offset = header.header_bytes;
      position.header = std::move(header);
      if (callbacks.on_header) callbacks.on_header(*position.header);
    } else {
      result.header = *position.header;
    }
    result.header_ok = true;
    BlockReader reader(window, quiet, result);
    reader.stop_at_ = position.offset + std::max<std::uint64_t>(max_bytes, 1);
    reader.run(position.offset, std::move(position.types));
    position.offset = reader.end_;
    position.types = std::move(reader.types_);
    result.bytes = window.end();
  } catch (const std::system_error& e) {
    result.bytes = window.end();
    report(callbacks, result, ProblemKind::io,
           cat("read error near byte offset ", window.end(), ": ", e.code().message()));
  }
  return result;
}

std::optional<Header> read_header(const std::string& path, std::string& error) {
  io::FileDescriptor fd = io::FileDescriptor::open(path.c_str(), O_RDONLY);
  if (fd.get() < 0) {
    error = cat("cannot open: ", std::strerror(errno));
    return std::nullopt;
  }
  Window window(fd.get(), std::size_t{64} << 10);  // headers are small
  Header header;
  try {
    error = parse_header(window, header).message;
  } catch (const std::system_error& e) {
    error = cat("read error: ", e.code().message());
  }
  if (!error.empty()) return std::nullopt;
  return header;
}

}  // namespace pipescope::ivl
