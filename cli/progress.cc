#include "progress.h"

#include <fmt/core.h>
#include <unistd.h>

namespace pipescope::cli {

namespace {
std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return fmt::format("{:.1f} {}", bytes, units[unit]);
}
}  // namespace

ProgressLine::ProgressLine(std::FILE* stream, bool force)
    : stream_(stream),
      enabled_(force || ::isatty(::fileno(stream)) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressLine::update(const IngestProgress& progress) {
  const auto now = std::chrono::steady_clock::now();
  if (!enabled_ || now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double percent =
      progress.bytes_total ? 100.0 * progress.bytes_done / progress.bytes_total : 100.0;
  fmt::print(stream_, "\r\033[Kscanning {} / {} ({:.0f}%), {}/{} files, {}/s",
             human_bytes(progress.bytes_done), human_bytes(progress.bytes_total), percent,
             progress.files_done, progress.files_total,
             human_bytes(seconds > 0 ? progress.bytes_done / seconds : 0));
  std::fflush(stream_);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (drawn_) {
    fmt::print(stream_, "\r\033[K");
    std::fflush(stream_);
    drawn_ = false;
  }
}

}  // namespace pipescope::cli
