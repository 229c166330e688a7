#include "source/change_notifier.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <thread>

namespace pipescope {

ChangeNotifier::ChangeNotifier() : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {}

ChangeNotifier::~ChangeNotifier() {
  if (fd_ >= 0) ::close(fd_);
}

void ChangeNotifier::watch(const std::string& path) {
  if (fd_ < 0 || watched_.count(path) > 0) return;
  constexpr std::uint32_t kMask = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB |
                                  IN_DELETE_SELF | IN_MOVE_SELF;
  if (::inotify_add_watch(fd_, path.c_str(), kMask) >= 0) watched_.insert(path);
}

bool ChangeNotifier::wait(std::chrono::milliseconds timeout) {
  if (fd_ < 0) {
    std::this_thread::sleep_for(timeout);
    return false;
  }
  pollfd p{fd_, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (ready <= 0) return false;  // timeout, or a signal
  // Drain the events: which file changed does not matter, every followed
  // file is looked at.
  alignas(inotify_event) std::array<char, 4096> buffer{};
  while (::read(fd_, buffer.data(), buffer.size()) > 0) {
  }
  return true;
}

}  // namespace pipescope
