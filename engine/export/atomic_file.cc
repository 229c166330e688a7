#include "export/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

namespace pipescope {

namespace {

// Several writers of one process may target the same folder at once; the
// counter keeps their temporary names apart, the pid keeps processes apart.
std::atomic<unsigned> temp_counter{0};

std::string temp_path_for(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string name = fmt::format(".{}.tmp-{}-{}", p.filename().string(), ::getpid(),
                                       temp_counter.fetch_add(1, std::memory_order_relaxed));
  const auto parent = p.parent_path();
  return parent.empty() ? name : (parent / name).string();
}

}  // namespace

void ensure_output_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec && !std::filesystem::is_directory(path, ec) && !ec) {
    ec = std::make_error_code(std::errc::not_a_directory);
  }
  if (ec) throw std::system_error(ec, "cannot create output folder " + path);
}

AtomicFile::AtomicFile(std::string path, std::size_t block_size)
    : path_(std::move(path)), block_size_(block_size == 0 ? 1 : block_size) {
  temp_path_ = temp_path_for(path_);
  // O_EXCL: never truncate someone else's file that happens to have our name.
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int error = errno;
    temp_path_.clear();  // nothing to remove
    fail(error);
  }
  buffer_.reserve(block_size_);
}

AtomicFile::~AtomicFile() { discard(); }

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::exchange(other.temp_path_, {})),
      fd_(std::exchange(other.fd_, -1)),
      block_size_(other.block_size_),
      buffer_(std::move(other.buffer_)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_path_ = std::exchange(other.temp_path_, {});
    fd_ = std::exchange(other.fd_, -1);
    block_size_ = other.block_size_;
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void AtomicFile::fail(int error) const {
  throw std::system_error(error, std::generic_category(), "cannot write " + path_);
}

void AtomicFile::append(std::string_view bytes) {
  if (buffer_.size() + bytes.size() > block_size_) {
    flush();
    // A piece bigger than a block skips the copy.
    if (bytes.size() >= block_size_) {
      write_all(bytes.data(), bytes.size());
      return;
    }
  }
  buffer_.append(bytes.data(), bytes.data() + bytes.size());
}

void AtomicFile::write_all(const char* data, std::size_t size) {
  if (fd_ < 0) fail(EBADF);
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void AtomicFile::flush() {
  if (buffer_.size() == 0) return;
  write_all(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::commit() {
  flush();
  const int fd = std::exchange(fd_, -1);
  if (fd < 0) fail(EBADF);
  // close() reports delayed write errors (NFS, quotas): check it.
  if (::close(fd) != 0) fail(errno);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail(errno);
  temp_path_.clear();
  buffer_ = fmt::memory_buffer();
}

}  // namespace pipescope
