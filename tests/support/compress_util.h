// gzip and zstd compression of test data, to build compressed worker logs.
#pragma once

#include <zlib.h>
#include <zstd.h>

#include <string>
#include <string_view>

namespace pipescope::testing {

/// One gzip member holding `data`.
inline std::string gzip(std::string_view data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip wrapper
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

/// One zstd frame holding `data`.
inline std::string zstd(std::string_view data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3));
  return out;
}

}  // namespace pipescope::testing
