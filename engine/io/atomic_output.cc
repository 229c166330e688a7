#include "io/atomic_output.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

namespace pipescope::io {

namespace {

// Several writers of one process may target the same folder at once; the
// counter keeps their temporary names apart, the pid keeps processes apart.
std::atomic<unsigned> temp_counter{0};

std::string temp_path_for(const std::string& path) {
  const std::filesystem::path p(path);
  std::string name = ".";
  name += p.filename().string();
  name += ".tmp-";
  name += std::to_string(::getpid());
  name += '-';
  name += std::to_string(temp_counter.fetch_add(1, std::memory_order_relaxed));
  const auto parent = p.parent_path();
  return parent.empty() ? name : (parent / name).string();
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool is_atomic_temp_name(std::string_view filename) {
  // Built by temp_path_for: "." NAME ".tmp-" PID "-" COUNTER, NAME not empty.
  const std::size_t marker = filename.rfind(".tmp-");
  if (filename.size() < 2 || filename.front() != '.' || marker == std::string_view::npos ||
      marker < 2) {
    return false;
  }
  const std::string_view numbers = filename.substr(marker + 5);
  const std::size_t dash = numbers.find('-');
  return dash != std::string_view::npos && all_digits(numbers.substr(0, dash)) &&
         all_digits(numbers.substr(dash + 1));
}

std::size_t remove_stale_temp_files(const std::string& folder) {
  std::size_t removed = 0;
  std::error_code ec;
  std::filesystem::directory_iterator it(folder, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_atomic_temp_name(name)) continue;
    const std::string_view numbers = std::string_view(name).substr(name.rfind(".tmp-") + 5);
    const std::string_view pid_text = numbers.substr(0, numbers.find('-'));
    if (pid_text.size() > 9) continue;
    const long pid = std::stol(std::string(pid_text));
    // ESRCH: no such process. EPERM (another user's live process) keeps it.
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 ||
        errno != ESRCH) {
      continue;
    }
    std::error_code removing;
    if (std::filesystem::remove(it->path(), removing)) ++removed;
  }
  return removed;
}

void write_file_atomically(const std::string& path, std::string_view text) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) ensure_output_dir(parent.string());
  AtomicOutput output(path);
  output.write(text.data(), text.size());
  output.commit();
}

void ensure_output_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!ec && !std::filesystem::is_directory(path, ec) && !ec) {
    ec = std::make_error_code(std::errc::not_a_directory);
  }
  if (ec) throw std::system_error(ec, "cannot create output folder " + path);
  // What a killed run left here is cleared by the next one.
  remove_stale_temp_files(path);
}

AtomicOutput::AtomicOutput(std::string path) : path_(std::move(path)) {
  temp_path_ = temp_path_for(path_);
  fd_ = FileDescriptor::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (!fd_.valid()) {
    const int error = errno;
    temp_path_.clear();  // nothing to remove
    fail(error);
  }
}

AtomicOutput::AtomicOutput(AtomicOutput&& other) noexcept
    : path_(std::move(other.path_)),
      temp_path_(std::exchange(other.temp_path_, {})),
      fd_(std::move(other.fd_)) {}

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& other) noexcept {
  if (this != &other) {
    discard();
    path_ = std::move(other.path_);
    temp_path_ = std::exchange(other.temp_path_, {});
    fd_ = std::move(other.fd_);
  }
  return *this;
}

void AtomicOutput::discard() noexcept {
  fd_.reset();
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  temp_path_.clear();
}

void AtomicOutput::fail(int error) const {
  throw std::system_error(error, std::generic_category(), "cannot write " + path_);
}

void AtomicOutput::write(const void* data, std::size_t size) {
  if (!fd_.valid()) fail(EBADF);
  if (const int error = write_all(fd_.get(), data, size); error != 0) fail(error);
}

void AtomicOutput::close_descriptor() {
  if (fd_.valid()) {
    if (const int error = fd_.close(); error != 0) fail(error);
  }
}

void AtomicOutput::commit() {
  if (temp_path_.empty()) fail(EBADF);
  close_descriptor();
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail(errno);
  temp_path_.clear();
}

}  // namespace pipescope::io
