// Reads .ivl files (records/ivl_format.h) and recovers everything a crash or
// a bad disk left readable.
//
// Never allocates what a file merely claims: header and block sizes, counts
// and string lengths are checked against fixed bounds and against the bytes
// actually present before anything is reserved. Problems are reported, never
// thrown:
//   - an unusable header (empty file, wrong magic, truncated, checksum
//     mismatch, newer major version, foreign byte order): nothing is read;
//   - a corrupt block (checksum mismatch or impossible fields): reported with
//     its byte offset and skipped; the reader resynchronises on the next
//     block magic whose checksum verifies, so the blocks after it are read;
//   - a torn tail (the file ends inside a block: the writer was killed, or is
//     still writing): reported with its byte offset and ignored;
//   - bytes that are no block at all: reported and skipped;
//   - a block kind from a newer minor version: skipped.
//
// Usage:
//   ivl::ReadCallbacks cb;
//   cb.on_records = [&](const ivl::RecordBlock& block) {
//     for (std::uint32_t i = 0; i < block.count; ++i) use(block.record(i), block.types);
//   };
//   cb.on_problem = [&](const ivl::Problem& p) { warn(p.offset, p.message); };
//   ivl::ReadResult result = ivl::read_file("rank3.ivl", cb);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "records/ivl_format.h"

namespace pipescope::ivl {

/// The decoded header.
struct Header {
  std::uint16_t major = 0;
  std::uint16_t minor = 0;
  std::uint32_t header_bytes = 0;
  std::int32_t machine = 0;
  std::int32_t rank = 0;
  std::string machine_name;
  std::string producer;
  std::int64_t anchor_realtime_ns = 0;
  std::int64_t anchor_steady_ns = 0;
  std::optional<std::int64_t> first_step;
  /// The header's job type table (type blocks add more while reading).
  std::vector<std::string> types;
};

enum class ProblemKind {
  /// The file cannot be opened or read (errno message).
  io,
  /// The header is unusable; no record is read.
  header,
  /// A block with a checksum mismatch or impossible fields; skipped.
  corrupt_block,
  /// The file ends inside a block; the partial block is ignored.
  torn_tail,
  /// Bytes between blocks that are not a block; skipped.
  junk,
  /// A block kind this reader does not know (newer minor version); skipped.
  unknown_block,
};

struct Problem {
  ProblemKind kind = ProblemKind::io;
  /// Byte offset in the file where the problem starts.
  std::uint64_t offset = 0;
  /// Bytes affected (skipped or ignored); 0 when not applicable.
  std::uint64_t bytes = 0;
  std::string message;
};

/// One verified block of records, valid during the callback.
struct RecordBlock {
  /// count × kRecordBytes little-endian bytes (any alignment).
  const unsigned char* payload = nullptr;
  std::uint32_t count = 0;
  /// Byte offset of the block header in the file.
  std::uint64_t offset = 0;
  /// The type table as defined so far (header table plus type blocks).
  const std::vector<std::string>* types = nullptr;

  Record record(std::uint32_t i) const { return decode_record(payload + i * kRecordBytes); }
};

struct ReadCallbacks {
  /// Called once, after the header is verified.
  std::function<void(const Header&)> on_header;
  std::function<void(const RecordBlock&)> on_records;
  /// Every problem, in file order.
  std::function<void(const Problem&)> on_problem;
};

struct ReadResult {
  /// False when the file could not be opened or its header is unusable.
  bool header_ok = false;
  Header header;
  /// Bytes of the file looked at (its size when the header was usable).
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
  std::uint64_t records = 0;
  std::uint64_t corrupt_blocks = 0;
  /// Bytes skipped as corrupt blocks, junk or unknown blocks.
  std::uint64_t skipped_bytes = 0;
  /// Where the torn tail starts, when the file ends inside a block.
  std::optional<std::uint64_t> torn_offset;
  std::uint64_t problems = 0;
};

/// Reads `path` block by block. Never throws for file content or I/O
/// problems (they go to on_problem and the result); exceptions thrown by the
/// callbacks propagate.
ReadResult read_file(const std::string& path, const ReadCallbacks& callbacks);

/// Where a read of a file that is still being written stopped (`pipescope
/// watch`): the next read goes on from here.
struct ReadPosition {
  /// The header, once read whole (until then nothing else is read).
  std::optional<Header> header;
  /// First byte not yet read: the start of a block still being written, or
  /// the end of the file.
  std::uint64_t offset = 0;
  /// The type table as defined so far (header table plus type blocks).
  std::vector<std::string> types;
};

/// Reads what was appended to `path` since `position` and moves it past the
/// last complete block: the header first (while it is incomplete or the file
/// is empty, nothing is read and nothing reported), then the blocks, exactly
/// as read_file() reads them, except that a block cut off by the end of the
/// file is not a problem: it is where the next read begins. The caller
/// notices a truncated or replaced file (and starts from a fresh position).
/// Never throws for file content or I/O problems.
/// `max_bytes`: blocks that begin this far past position.offset wait for the
/// next read.
ReadResult read_more(const std::string& path, ReadPosition& position,
                     const ReadCallbacks& callbacks,
                     std::uint64_t max_bytes = std::uint64_t{64} << 20);

/// Reads only the header of `path`: the header, or nullopt with `error` set
/// to a one-line reason (used by discovery to place a file).
std::optional<Header> read_header(const std::string& path, std::string& error);

}  // namespace pipescope::ivl
