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
    : path_(std::move(path)), max_bytes_(std::max<std::uint64_t>(max_bytes, 1)) {}

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
  if (seen_ && (st.st_dev != dev_ || st.st_ino != inode_ || size < offset_ ||
                !tail_unchanged(fd.get()))) {
    out.restarted = true;
    offset_ = 0;
    tail_.clear();
  }
  seen_ = true;
  dev_ = st.st_dev;
  inode_ = st.st_ino;
  if (size <= offset_) return out;
  std::string bytes(std::min(size - offset_, max_bytes_), '\0');
  const ssize_t n = io::pread_full(fd.get(), bytes.data(), bytes.size(), offset_);
  if (n < 0) {
    out.error = std::strerror(errno);
    return out;
  }
  const auto got = static_cast<std::size_t>(n);  // short: it shrank, the next look sees it
  bytes.resize(got);
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

bool FileFollower::tail_unchanged(int fd) const {
  if (tail_.empty()) return true;
  std::string now(tail_.size(), '\0');
  const ssize_t n = io::pread_full(fd, now.data(), now.size(), offset_ - tail_.size());
  return n == static_cast<ssize_t>(now.size()) && now == tail_;
}

}  // namespace pipescope
