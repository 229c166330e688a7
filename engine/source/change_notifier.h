// Waits for something to change under a set of paths (`pipescope watch`):
// inotify where the kernel has it (files modified, created, moved in,
// truncated), else a plain sleep, so the caller's polling does the work.
// Either way wait() returns by the timeout, and early on a signal (EINTR).
//
//   ChangeNotifier notifier;
//   notifier.watch("logs");            // folders and files; repeatable
//   notifier.wait(std::chrono::seconds(1));
#pragma once

#include <chrono>
#include <set>
#include <string>

namespace pipescope {

class ChangeNotifier {
 public:
  ChangeNotifier();
  ~ChangeNotifier();
  ChangeNotifier(const ChangeNotifier&) = delete;
  ChangeNotifier& operator=(const ChangeNotifier&) = delete;

  /// Whether inotify is in use (else wait() only sleeps).
  bool uses_inotify() const { return fd_ >= 0; }
  /// Adds a folder or file to watch (once; ignored when it cannot be watched).
  void watch(const std::string& path);
  /// Returns true when a change was seen, false at the timeout or on a
  /// signal.
  bool wait(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::set<std::string> watched_;
};

}  // namespace pipescope
