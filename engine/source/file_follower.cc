#include "source/file_follower.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "io/file_descriptor.h"

namespace pipescope {

FileFollower::FileFollower(std::string path, std::uint64_t max_bytes)
    : path_(std::move(path)),
      max_bytes_(std::max<std::uint64_t>(max_bytes, 1)),
      compression_(compression_of(path_)) {}

FileFollower::~FileFollower() = default;
FileFollower::FileFollower(FileFollower&&) noexcept = default;
FileFollower& FileFollower::operator=(FileFollower&&) noexcept = default;

FollowedBytes FileFollower::poll() {
  FollowedBytes out;
  io::FileDescriptor fd = io::FileDescriptor::open(path_.c_str(), O_RDONLY);
  if (!fd.valid()) {
    out.error = std::strerror(errno);
    return out;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    out.error = std::strerror(errno);
    return out;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (seen_ &&
      (st.st_dev != dev_ || st.st_ino != inode_ || size < offset_ || !tail_unchanged(fd.get()))) {
    out.restarted = true;
    offset_ = 0;
    tail_.clear();
    decoder_.reset();
    partial_.clear();
    corrupt_.clear();
  }
  seen_ = true;
  dev_ = st.st_dev;
  inode_ = st.st_ino;
  if (!corrupt_.empty()) {
    out.error = corrupt_;
    out.corrupt = true;
    return out;
  }
  if (size <= offset_) return out;
  std::string bytes(std::min(size - offset_, max_bytes_), '\0');
  const ssize_t n = io::pread_full(fd.get(), bytes.data(), bytes.size(), offset_);
  if (n < 0) {
    out.error = std::strerror(errno);
    return out;
  }
  const auto got = static_cast<std::size_t>(n);  // short: it shrank, the next look sees it
  bytes.resize(got);
  if (compression_ != Compression::none) {
    decode(bytes, out);
    return out;
  }
  const std::size_t last_newline = bytes.rfind('\n');
  if (last_newline == std::string::npos) {
    out.pending = got;
    return out;
  }
  out.pending = got - (last_newline + 1);
  bytes.resize(last_newline + 1);
  offset_ += bytes.size();
  tail_.assign(bytes, bytes.size() - std::min(bytes.size(), kTailBytes), std::string::npos);
  out.lines = std::move(bytes);
  return out;
}

void FileFollower::decode(std::string_view bytes, FollowedBytes& out) {
  if (!decoder_) decoder_ = StreamDecoder::create(compression_);
  offset_ += bytes.size();
  tail_ = (tail_ + std::string(bytes.substr(bytes.size() - std::min(bytes.size(), kTailBytes))));
  tail_.erase(0, tail_.size() - std::min(tail_.size(), kTailBytes));
  std::string text = std::move(partial_);
  partial_.clear();
  constexpr std::size_t kStep = std::size_t{256} << 10;
  std::string_view in = bytes;
  while (!in.empty() || decoder_->output_pending()) {
    const std::size_t at = text.size();
    text.resize(at + kStep);
    const std::size_t n = decoder_->decode(in, text.data() + at, kStep);
    text.resize(at + n);
    if (!decoder_->error().empty()) {
      corrupt_ = decoder_->error() + " near compressed byte " + std::to_string(offset_ - in.size());
      out.error = corrupt_;
      out.corrupt = true;
      break;
    }
    if (n == 0 && !decoder_->output_pending()) break;
  }
  const std::size_t last_newline = text.rfind('\n');
  if (last_newline == std::string::npos) {
    partial_ = std::move(text);
  } else {
    partial_.assign(text, last_newline + 1, std::string::npos);
    text.resize(last_newline + 1);
    out.lines = std::move(text);
  }
  out.pending = partial_.size();
}

bool FileFollower::tail_unchanged(int fd) const {
  if (tail_.empty()) return true;
  std::string now(tail_.size(), '\0');
  const ssize_t n = io::pread_full(fd, now.data(), now.size(), offset_ - tail_.size());
  return n == static_cast<ssize_t>(now.size()) && now == tail_;
}

}  // namespace pipescope
