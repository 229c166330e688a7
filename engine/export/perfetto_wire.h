// The protobuf wire format, by hand, for the packets trace.pftrace repeats
// once or twice per job (perfetto_trace.cc): varints, tags and fixed64
// values written forward into a caller's buffer, in the bytes libprotobuf
// writes for the same fields (minimal varints; negative int32/int64 as ten
// bytes; fields in field-number order, which the caller keeps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pipescope::wire {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

/// The longest varint (a negative int64).
inline constexpr std::size_t kMaxVarintBytes = 10;

/// Bytes of `v` as a varint.
inline std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline char* put_varint(char* out, std::uint64_t v) {
  while (v >= 0x80) {
    *out++ = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<char>(v);
  return out;
}

/// A field's key: its number and wire type.
inline constexpr std::uint64_t tag(std::uint32_t field, WireType type) {
  return (std::uint64_t{field} << 3) | type;
}

inline char* put_tag(char* out, std::uint32_t field, WireType type) {
  return put_varint(out, tag(field, type));
}

/// A fixed64 value, little-endian.
inline char* put_fixed64(char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out + 8;
}

inline char* put_bytes(char* out, const char* data, std::size_t size) {
  std::memcpy(out, data, size);
  return out + size;
}

}  // namespace pipescope::wire
