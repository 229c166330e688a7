// CRC-32C (Castagnoli, the iSCSI/ext4 polynomial 0x1EDC6F41, reflected), the
// checksum of .ivl headers and blocks. Uses the SSE4.2 crc32 instruction when
// the CPU has it (about 8 bytes per 3 cycles, so checking a block costs less
// than reading it), else a slicing-by-8 table.
//
// Usage:
//   std::uint32_t crc = crc32c(data, size);           // one buffer
//   crc = crc32c_extend(crc, more, more_size);        // continued over more bytes
#pragma once

#include <cstddef>
#include <cstdint>

namespace pipescope::ivl {

/// CRC-32C of `size` bytes continuing from `crc` (the value returned for the
/// bytes before them; 0 for none).
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);

/// CRC-32C of one buffer. crc32c("123456789", 9) == 0xE3069283.
inline std::uint32_t crc32c(const void* data, std::size_t size) {
  return crc32c_extend(0, data, size);
}

/// The portable table version (used when the CPU lacks SSE4.2; exposed so
/// the tests compare both).
std::uint32_t crc32c_extend_portable(std::uint32_t crc, const void* data, std::size_t size);

}  // namespace pipescope::ivl
