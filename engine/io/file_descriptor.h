// Move-only owner of a POSIX file descriptor, and the system-call loops every
// reader and writer needs (EINTR retries, short reads and writes), in one
// place. fmt-free and exception-free, so the executor-side timer can use it
// too: failures come back as errno values and each caller words its message.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace pipescope::io {

class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  /// open(2) with O_CLOEXEC added; check valid() (errno tells why not).
  static FileDescriptor open(const char* path, int flags, mode_t mode = 0);

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  /// Closes now; returns 0 or the errno of close(2), which reports delayed
  /// write errors (NFS, quotas) that writers must not ignore.
  int close();
  /// Closes (ignoring errors) and takes `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// read(2), retried on EINTR: bytes read (0 at end of file), or -1 with errno.
ssize_t read_retrying(int fd, void* buffer, std::size_t size);

/// pread(2) until `size` bytes or end of file, retried on EINTR: bytes read,
/// or -1 with errno (bytes read before the error are in `buffer`, and
/// `*done`, when given, says how many).
ssize_t pread_full(int fd, void* buffer, std::size_t size, std::uint64_t offset,
                   std::size_t* done = nullptr);

/// write(2) until every byte is written, retried on EINTR and after short
/// writes: 0, or the errno of the failure.
int write_all(int fd, const void* data, std::size_t size);

}  // namespace pipescope::io
