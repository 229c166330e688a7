// Helpers shared by the libFuzzer targets: a scratch file that readers taking
// a path can open (rewritten for every input), and a cursor that takes
// parameters (chunk sizes, modes) from the front of the fuzzer's input.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pipescope::fuzz {

/// A file under $TMPDIR (tmpfs in practice) that lives as long as the fuzzer.
/// `suffix` matters to readers that pick a decoder by name (.gz, .zst).
class ScratchFile {
 public:
  explicit ScratchFile(std::string_view suffix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/pipescope-fuzz-XXXXXX";
    pattern += suffix;
    fd_ = ::mkstemps(pattern.data(), static_cast<int>(suffix.size()));
    if (fd_ < 0) std::abort();
    path_ = pattern;
  }
  ~ScratchFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  /// Replaces the file's content with `data`; returns the path to open.
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_ = -1;
  std::string path_;
};

/// Takes bytes from the front of the input; yields 0 when it runs out.
class Cursor {
 public:
  Cursor(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | (byte() << 8)); }
  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::string_view rest() const {
    return {reinterpret_cast<const char*>(data_), size_};
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

}  // namespace pipescope::fuzz
