#include "source/byte_stream.h"
#include "io/file_descriptor.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include <fmt/core.h>

namespace pipescope {

namespace {

/// Owns a descriptor and reads it, retrying interrupted calls.
class FileDescriptor {
 public:
  explicit FileDescriptor(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileDescriptor() { ::close(fd_); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  std::size_t read_some(char* destination, std::size_t capacity) {
    const ssize_t n = io::read_retrying(fd_, destination, capacity);
    if (n < 0) {
      throw std::system_error(errno, std::generic_category(),
                              fmt::format("cannot read {} at byte {}", path_, offset_));
    }
    offset_ += static_cast<std::uint64_t>(n);
    return static_cast<std::size_t>(n);
  }
  std::uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t offset_ = 0;
};

class PlainStream final : public ByteStream {
 public:
  explicit PlainStream(const std::string& path) : file_(path) {}
  std::size_t read(char* destination, std::size_t capacity) override {
    std::size_t filled = 0;
    while (filled < capacity) {
      const std::size_t n = file_.read_some(destination + filled, capacity - filled);
      if (n == 0) break;
      filled += n;
    }
    return filled;
  }

 private:
  FileDescriptor file_;
};

constexpr std::size_t kCompressedBuffer = std::size_t{1} << 18;

/// gzip (and zlib) streams, including several concatenated gzip members as
/// `cat a.gz b.gz` or pigz produce.
class GzipStream final : public ByteStream {
 public:
  explicit GzipStream(const std::string& path) : file_(path), input_(kCompressedBuffer) {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw std::runtime_error("zlib: cannot initialise");
  }
  ~GzipStream() override { inflateEnd(&z_); }

  std::size_t read(char* destination, std::size_t capacity) override {
    z_.next_out = reinterpret_cast<Bytef*>(destination);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(capacity, UINT32_MAX));
    while (z_.avail_out > 0 && !done_) {
      if (z_.avail_in == 0) {
        const std::size_t n = file_.read_some(input_.data(), input_.size());
        if (n == 0) {
          if (in_member_) fail("truncated gzip data (the file ends inside a compressed block)");
          done_ = true;
          break;
        }
        z_.next_in = reinterpret_cast<Bytef*>(input_.data());
        z_.avail_in = static_cast<uInt>(n);
      }
      in_member_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
        inflateReset(&z_);  // another member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail(fmt::format("corrupt gzip data: {}", z_.msg ? z_.msg : "inflate failed"));
      }
    }
    return capacity - z_.avail_out;
  }

 private:
  void fail(const std::string& what) {
    error_ = fmt::format("{} near compressed byte {}", what, file_.offset() - z_.avail_in);
    done_ = true;
  }

  FileDescriptor file_;
  std::vector<char> input_;
  z_stream z_{};
  bool in_member_ = false;
  bool done_ = false;
};

/// zstd streams (any number of frames).
class ZstdStream final : public ByteStream {
 public:
  explicit ZstdStream(const std::string& path)
      : file_(path), input_(ZSTD_DStreamInSize()), stream_(ZSTD_createDStream()) {
    if (stream_ == nullptr) throw std::runtime_error("zstd: cannot create a stream");
  }
  ~ZstdStream() override { ZSTD_freeDStream(stream_); }

  std::size_t read(char* destination, std::size_t capacity) override {
    ZSTD_outBuffer out{destination, capacity, 0};
    while (out.pos < out.size && !done_) {
      if (in_.pos == in_.size) {
        const std::size_t n = file_.read_some(input_.data(), input_.size());
        if (n == 0) {
          if (frame_open_) fail("truncated zstd data (the file ends inside a frame)");
          done_ = true;
          break;
        }
        in_ = {input_.data(), n, 0};
      }
      const std::size_t rc = ZSTD_decompressStream(stream_, &out, &in_);
      if (ZSTD_isError(rc)) {
        fail(fmt::format("corrupt zstd data: {}", ZSTD_getErrorName(rc)));
        break;
      }
      frame_open_ = rc != 0;  // 0: a frame ended exactly here
    }
    return out.pos;
  }

 private:
  void fail(const std::string& what) {
    error_ = fmt::format("{} near compressed byte {}", what, file_.offset() - (in_.size - in_.pos));
    done_ = true;
  }

  FileDescriptor file_;
  std::vector<char> input_;
  ZSTD_DStream* stream_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool frame_open_ = false;
  bool done_ = false;
};

}  // namespace

Compression compression_of(std::string_view path) {
  if (path.ends_with(".gz")) return Compression::gzip;
  if (path.ends_with(".zst")) return Compression::zstd;
  return Compression::none;
}

std::unique_ptr<ByteStream> open_byte_stream(const std::string& path) {
  switch (compression_of(path)) {
    case Compression::gzip: return std::make_unique<GzipStream>(path);
    case Compression::zstd: return std::make_unique<ZstdStream>(path);
    case Compression::none: break;
  }
  return std::make_unique<PlainStream>(path);
}

}  // namespace pipescope
