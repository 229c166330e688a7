#include "source/byte_stream.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "io/file_descriptor.h"

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
class GzipDecoder final : public StreamDecoder {
 public:
  GzipDecoder() {
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw std::runtime_error("zlib: cannot initialise");
  }
  ~GzipDecoder() override { inflateEnd(&z_); }
  GzipDecoder(const GzipDecoder&) = delete;
  GzipDecoder& operator=(const GzipDecoder&) = delete;
  const char* name() const override { return "gzip"; }

  std::size_t decode(std::string_view& in, char* out, std::size_t capacity) override {
    if (!error_.empty()) return 0;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT32_MAX));
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<std::size_t>(capacity, UINT32_MAX));
    const uInt out_size = z_.avail_out;
    const uInt in_size = z_.avail_in;
    while (z_.avail_out > 0) {
      const uInt in_before = z_.avail_in;
      const uInt out_before = z_.avail_out;
      if (in_before > 0) inside_ = true;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        inside_ = false;
        inflateReset(&z_);  // another member may follow
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        error_ = fmt::format("corrupt gzip data: {}", z_.msg ? z_.msg : "inflate failed");
        break;
      }
      if (z_.avail_in == in_before && z_.avail_out == out_before) break;  // needs more input
    }
    in.remove_prefix(in_size - z_.avail_in);
    output_pending_ = z_.avail_out == 0;
    return out_size - z_.avail_out;
  }

 private:
  z_stream z_{};
};

class ZstdDecoder final : public StreamDecoder {
 public:
  ZstdDecoder() : stream_(ZSTD_createDStream()) {
    if (stream_ == nullptr) throw std::runtime_error("zstd: cannot create a stream");
  }
  ~ZstdDecoder() override { ZSTD_freeDStream(stream_); }
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;
  const char* name() const override { return "zstd"; }

  std::size_t decode(std::string_view& in, char* out, std::size_t capacity) override {
    if (!error_.empty()) return 0;
    ZSTD_inBuffer input{in.data(), in.size(), 0};
    ZSTD_outBuffer output{out, capacity, 0};
    while (output.pos < output.size) {
      const std::size_t in_before = input.pos;
      const std::size_t out_before = output.pos;
      const std::size_t rc = ZSTD_decompressStream(stream_, &output, &input);
      if (ZSTD_isError(rc)) {
        error_ = fmt::format("corrupt zstd data: {}", ZSTD_getErrorName(rc));
        break;
      }
      if (input.pos == in_before && output.pos == out_before) break;  // needs more input
      inside_ = rc != 0;  // 0: a frame ended exactly here
    }
    in.remove_prefix(input.pos);
    output_pending_ = output.pos == output.size;
    return output.pos;
  }

 private:
  ZSTD_DStream* stream_;
};

/// A compressed file read through its decoder.
class CompressedStream final : public ByteStream {
 public:
  CompressedStream(const std::string& path, Compression compression)
      : file_(path), input_(kCompressedBuffer), decoder_(StreamDecoder::create(compression)) {}

  std::size_t read(char* destination, std::size_t capacity) override {
    std::size_t filled = 0;
    while (filled < capacity && !done_) {
      if (in_.empty() && !decoder_->output_pending()) {
        const std::size_t n = file_.read_some(input_.data(), input_.size());
        if (n == 0) {
          if (decoder_->inside()) {
            fail(std::string(decoder_->name() == std::string_view("gzip")
                                 ? "truncated gzip data (the file ends inside a compressed block)"
                                 : "truncated zstd data (the file ends inside a frame)"));
          }
          done_ = true;
          break;
        }
        in_ = std::string_view(input_.data(), n);
      }
      filled += decoder_->decode(in_, destination + filled, capacity - filled);
      if (!decoder_->error().empty()) fail(decoder_->error());
    }
    return filled;
  }

 private:
  void fail(const std::string& what) {
    error_ = fmt::format("{} near compressed byte {}", what, file_.offset() - in_.size());
    done_ = true;
  }

  FileDescriptor file_;
  std::vector<char> input_;
  std::unique_ptr<StreamDecoder> decoder_;
  std::string_view in_;
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
    case Compression::gzip:
    case Compression::zstd:
      return std::make_unique<CompressedStream>(path, compression_of(path));
    case Compression::none:
      break;
  }
  return std::make_unique<PlainStream>(path);
}

std::unique_ptr<StreamDecoder> StreamDecoder::create(Compression compression) {
  if (compression == Compression::zstd) return std::make_unique<ZstdDecoder>();
  return std::make_unique<GzipDecoder>();
}

}  // namespace pipescope
