#include "source/range_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "io/file_descriptor.h"

namespace pipescope {

namespace {
constexpr std::uint64_t kLeadBytes = 4096;
/// First read past a range's end, to finish its last line.
constexpr std::size_t kReadOnStep = 1024;

const char* find_newline(const char* begin, const char* end) {
  return static_cast<const char*>(std::memchr(begin, '\n', static_cast<std::size_t>(end - begin)));
}
const char* find_last_newline(const char* begin, const char* end) {
  return static_cast<const char*>(memrchr(begin, '\n', static_cast<std::size_t>(end - begin)));
}
}  // namespace

bool readable_in_ranges(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

RangeFile::RangeFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw std::system_error(error, std::generic_category(), "cannot stat " + path_);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::system_error(EINVAL, std::generic_category(), path_ + " is not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

RangeFile::~RangeFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t RangeFile::read_at(char* destination, std::size_t length, std::uint64_t offset) const {
  std::size_t filled = 0;
  if (io::pread_full(fd_, destination, length, offset, &filled) < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "cannot read " + path_ + " at byte " + std::to_string(offset + filled));
  }
  return filled;
}

void RangeFile::read_lines(std::uint64_t begin, std::uint64_t end, const ReadLimits& limits,
                           ChunkBuffer& buffer, LineChunk& chunk) const {
  chunk.text = {};
  chunk.skipped_before.clear();
  chunk.skipped_after.reset();
  chunk.end_of_file = false;
  // A range never exceeds the buffer's chunk size: the tail of the buffer
  // must stay free for finishing (or measuring) the last line.
  end = std::min({end, size_, begin + buffer.chunk_bytes()});
  chunk.file_offset = begin;
  if (begin >= end) return;

  // Read from the page before `begin` (aligned, and it holds byte begin-1,
  // which says whether a line starts at `begin`) to `end`.
  const std::uint64_t lead = std::min(begin, kLeadBytes);
  const std::uint64_t read_begin = begin - lead;
  char* const data = buffer.read_area() - lead;  // data[i] is file byte read_begin + i
  const std::size_t max_line = std::max<std::size_t>(limits.max_line_bytes, 1);
  const std::size_t capacity = static_cast<std::size_t>(lead) + buffer.read_capacity();
  std::size_t filled = read_at(data, static_cast<std::size_t>(lead + (end - begin)), read_begin);
  const char* const range_end = data + std::min<std::size_t>(filled, lead + (end - begin));
  if (range_end <= data + lead) return;  // the file shrank since it was opened

  // The first line starting in the range: at `begin` itself, or after the
  // first newline in [begin-1, end-1).
  const char* first;
  if (begin == 0) {
    first = data;
  } else {
    const char* newline = find_newline(data + lead - 1, range_end - 1);
    if (newline == nullptr) return;  // inside a line owned by an earlier range
    first = newline + 1;
  }
  // The last line starting in the range, and the end of that line.
  const char* last = first;
  if (const char* nl = find_last_newline(first, range_end - 1)) last = nl + 1;
  const std::size_t last_offset = static_cast<std::size_t>(last - data);

  const char* line_end = find_newline(last, data + filled);
  // Read on, just far enough to see whether the last line ends within the
  // limit, in steps that start small and double: a line is usually far
  // shorter than the limit, and every byte read is copied.
  std::size_t step = kReadOnStep;
  while (line_end == nullptr && filled < capacity && read_begin + filled < size_ &&
         filled - last_offset <= max_line) {
    const std::size_t want =
        std::min({capacity, last_offset + max_line + 1, filled + step}) - filled;
    const std::size_t got = read_at(data + filled, want, read_begin + filled);
    if (got == 0) break;
    line_end = find_newline(data + filled, data + filled + got);
    filled += got;
    step *= 2;
  }

  if (line_end != nullptr && static_cast<std::size_t>(line_end - last) <= max_line) {
    chunk.text = std::string_view(first, static_cast<std::size_t>(line_end + 1 - first));
  } else if (line_end == nullptr && read_begin + filled >= size_ &&
             filled - last_offset <= max_line) {
    chunk.text = std::string_view(first, static_cast<std::size_t>(data + filled - first));
    chunk.end_of_file = true;  // the file's last line, without '\n'
  } else {
    // The last line is over the limit: keep the lines before it, and measure
    // it by reading on through the tail of the buffer, which no kept line uses.
    chunk.text = std::string_view(first, static_cast<std::size_t>(last - first));
    SkippedLine skipped{read_begin + last_offset, 0, true};
    // Whether the skipped bytes hold limits.watched, across the pieces they
    // are read in (the seam of two pieces searched with the earlier tail).
    const std::string_view watched = limits.watched;
    std::string seam;
    const auto watch = [&](std::string_view bytes) {
      if (watched.empty() || skipped.held_watched) return;
      seam.append(bytes.substr(0, std::min(bytes.size(), watched.size() - 1)));
      if (seam.find(watched) != std::string::npos ||
          bytes.find(watched) != std::string_view::npos) {
        skipped.held_watched = true;
        return;
      }
      seam.assign(bytes.substr(bytes.size() - std::min(bytes.size(), watched.size() - 1)));
    };
    if (line_end != nullptr) {
      skipped.length = static_cast<std::uint64_t>(line_end - last);
      watch(std::string_view(last, static_cast<std::size_t>(line_end - last)));
    } else {
      std::uint64_t offset = read_begin + filled;
      skipped.length = filled - last_offset;
      watch(std::string_view(last, static_cast<std::size_t>(data + filled - last)));
      char* const scratch = buffer.read_area() + buffer.chunk_bytes();
      const std::size_t scratch_size = buffer.read_capacity() - buffer.chunk_bytes();
      while (true) {
        const std::size_t got = read_at(scratch, scratch_size, offset);
        if (got == 0) {
          skipped.has_newline = false;
          break;
        }
        if (const char* nl = find_newline(scratch, scratch + got)) {
          skipped.length += static_cast<std::uint64_t>(nl - scratch);
          watch(std::string_view(scratch, static_cast<std::size_t>(nl - scratch)));
          break;
        }
        skipped.length += got;
        watch(std::string_view(scratch, got));
        offset += got;
      }
    }
    chunk.skipped_after = skipped;
    chunk.end_of_file = !skipped.has_newline;
  }
  chunk.file_offset = read_begin + static_cast<std::uint64_t>(first - data);
}

}  // namespace pipescope
