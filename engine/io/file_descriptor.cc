#include "io/file_descriptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace pipescope::io {

FileDescriptor FileDescriptor::open(const char* path, int flags, mode_t mode) {
  return FileDescriptor(::open(path, flags | O_CLOEXEC, mode));
}

int FileDescriptor::close() {
  const int fd = std::exchange(fd_, -1);
  if (fd < 0) return EBADF;
  return ::close(fd) == 0 ? 0 : errno;
}

void FileDescriptor::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

ssize_t read_retrying(int fd, void* buffer, std::size_t size) {
  while (true) {
    const ssize_t n = ::read(fd, buffer, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

ssize_t pread_full(int fd, void* buffer, std::size_t size, std::uint64_t offset,
                   std::size_t* done) {
  std::size_t filled = 0;
  auto* bytes = static_cast<char*>(buffer);
  while (filled < size) {
    const ssize_t n =
        ::pread(fd, bytes + filled, size - filled, static_cast<off_t>(offset + filled));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (done) *done = filled;
      return -1;
    }
    filled += static_cast<std::size_t>(n);
  }
  if (done) *done = filled;
  return static_cast<ssize_t>(filled);
}

int write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace pipescope::io
