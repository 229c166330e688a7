// The .ivl interval record format: constants and the fixed-size record.
//
// An .ivl file is one device's (one rank's) job intervals, written by the
// executor-side timer (timer/job_timer.h), `pipescope simulate --ivl` or
// `pipescope convert`. It is a header followed by blocks; every integer is
// little-endian. docs/formats.md ("The .ivl format") documents it byte by byte:
//
//   header   magic[8] major u16, minor u16, byte-order mark u32, header_bytes u32,
//            header_crc u32, machine i32, rank i32, anchor_realtime_ns i64,
//            anchor_steady_ns i64, first_step i64, flags u32, record_bytes u32,
//            then extensions {tag u16, reserved u16, length u32, payload, pad to 8}
//            up to header_bytes (tag 0 ends the list; unknown tags are skipped).
//   block    magic "IVLB", kind u16, reserved u16, count u32, payload_bytes u32,
//            sequence u32, crc32c u32 (over the 20 bytes before it and the payload),
//            then the payload: `count` 32-byte records, or `count` type names.
//
// A writer appends whole blocks only, so a file cut anywhere (a process killed
// mid-write) keeps every complete block; the reader reports the torn tail.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pipescope::ivl {

/// PNG-style magic: a high byte (catches 7-bit transfers), CR LF and ^Z
/// (catch text-mode newline translation), then LF.
inline constexpr unsigned char kMagic[8] = {0x89, 'I', 'V', 'L', '\r', '\n', 0x1a, '\n'};
/// A reader refuses a newer major version; a newer minor only adds header
/// extensions or block kinds, which an older reader skips.
inline constexpr std::uint16_t kMajorVersion = 1;
inline constexpr std::uint16_t kMinorVersion = 0;
/// Written as a little-endian u32: a reader that sees 0x04030201 is looking
/// at a byte-swapped (big-endian) file.
inline constexpr std::uint32_t kByteOrderMark = 0x01020304;

/// Size of the fixed part of the header; extensions follow.
inline constexpr std::size_t kFixedHeaderBytes = 64;
/// Upper bound of header_bytes a reader accepts (a header is a few KiB).
inline constexpr std::uint32_t kMaxHeaderBytes = 1u << 20;

/// Header field offsets.
namespace header {
inline constexpr std::size_t kMajor = 8;
inline constexpr std::size_t kMinor = 10;
inline constexpr std::size_t kByteOrder = 12;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kHeaderCrc = 20;
inline constexpr std::size_t kMachine = 24;
inline constexpr std::size_t kRank = 28;
inline constexpr std::size_t kAnchorRealtime = 32;
inline constexpr std::size_t kAnchorSteady = 40;
inline constexpr std::size_t kFirstStep = 48;
inline constexpr std::size_t kFlags = 56;
inline constexpr std::size_t kRecordBytes = 60;
}  // namespace header

/// Header flags.
inline constexpr std::uint32_t kFlagHasFirstStep = 1u << 0;

/// Header extension tags.
enum class Extension : std::uint16_t {
  end = 0,
  /// UTF-8 name of the program that wrote the file.
  producer = 1,
  /// The machine's name (`machine3`), may be empty.
  machine_name = 2,
  /// The job type string table: u32 count, then count × (u16 length, bytes).
  types = 3,
};

/// Block header.
inline constexpr unsigned char kBlockMagic[4] = {'I', 'V', 'L', 'B'};
inline constexpr std::size_t kBlockHeaderBytes = 24;
namespace block {
inline constexpr std::size_t kKind = 4;
inline constexpr std::size_t kCount = 8;
inline constexpr std::size_t kPayloadBytes = 12;
inline constexpr std::size_t kSequence = 16;
inline constexpr std::size_t kCrc = 20;
}  // namespace block

enum class BlockKind : std::uint16_t {
  /// count × 32-byte records.
  records = 1,
  /// count × (u16 length, bytes): job type names whose ids continue after
  /// the header's table and earlier type blocks.
  types = 2,
};

/// Bounds a reader enforces before allocating anything a file claims.
inline constexpr std::uint32_t kMaxRecordsPerBlock = 1u << 16;  // 2 MiB of records
inline constexpr std::uint32_t kMaxBlockPayloadBytes = kMaxRecordsPerBlock * 32;
inline constexpr std::uint32_t kMaxTypeNameBytes = 1024;
inline constexpr std::uint32_t kMaxTypes = 1u << 20;

/// One job interval: 32 bytes on disk, in this field order, little-endian.
struct Record {
  /// Wall-clock (CLOCK_REALTIME) nanoseconds since the Unix epoch.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  /// Index into the file's job type table (header table, then type blocks).
  std::uint32_t type = 0;
  std::int32_t micro_batch = 0;
  /// The producer's training step number (-1 when unknown). Analysis derives
  /// steps by the metric contract and only stores this in the file.
  std::int32_t step = 0;
  /// The producer's stream number (order of first use in the timer).
  std::uint32_t stream = 0;
};
inline constexpr std::size_t kRecordBytes = 32;
static_assert(sizeof(Record) == kRecordBytes);

// Little-endian loads and stores at any alignment (memcpy compiles to one
// move; a byte swap is added on big-endian hosts only).
template <typename T>
inline T byte_swap(T value) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  using U = std::conditional_t<sizeof(T) == 2, std::uint16_t,
                               std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
  U u;
  std::memcpy(&u, &value, sizeof(T));
  if constexpr (sizeof(T) == 2) u = __builtin_bswap16(u);
  if constexpr (sizeof(T) == 4) u = __builtin_bswap32(u);
  if constexpr (sizeof(T) == 8) u = __builtin_bswap64(u);
  std::memcpy(&value, &u, sizeof(T));
  return value;
}
template <typename T>
inline T load_le(const void* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) value = byte_swap(value);
  return value;
}
template <typename T>
inline void store_le(void* p, T value) {
  if constexpr (std::endian::native == std::endian::big) value = byte_swap(value);
  std::memcpy(p, &value, sizeof(T));
}

inline void encode_record(const Record& r, unsigned char* out) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &r, kRecordBytes);
  } else {
    store_le(out, r.start_ns);
    store_le(out + 8, r.end_ns);
    store_le(out + 16, r.type);
    store_le(out + 20, r.micro_batch);
    store_le(out + 24, r.step);
    store_le(out + 28, r.stream);
  }
}

inline Record decode_record(const unsigned char* in) {
  Record r;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&r, in, kRecordBytes);
  } else {
    r.start_ns = load_le<std::int64_t>(in);
    r.end_ns = load_le<std::int64_t>(in + 8);
    r.type = load_le<std::uint32_t>(in + 16);
    r.micro_batch = load_le<std::int32_t>(in + 20);
    r.step = load_le<std::int32_t>(in + 24);
    r.stream = load_le<std::uint32_t>(in + 28);
  }
  return r;
}

}  // namespace pipescope::ivl
