// Test helper: a real write error on demand, even as root. While a
// FileSizeLimit lives, RLIMIT_FSIZE is lowered and SIGXFSZ ignored, so a
// write past the limit fails with EFBIG ("File too large") instead of
// killing the process; both are restored when it goes out of scope.
//
// Usage:
//   testing::FileSizeLimit limit(1 << 20);
//   ASSERT_TRUE(limit.active());
//   EXPECT_THROW(write_big_file(), std::system_error);
#pragma once

#include <signal.h>
#include <sys/resource.h>

namespace pipescope::testing {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    signal_set_ = ::sigaction(SIGXFSZ, &ignore, &previous_) == 0;
    if (!signal_set_ || ::getrlimit(RLIMIT_FSIZE, &saved_) != 0) return;
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    limit_set_ = ::setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() {
    if (limit_set_) ::setrlimit(RLIMIT_FSIZE, &saved_);
    if (signal_set_) ::sigaction(SIGXFSZ, &previous_, nullptr);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

  /// False when the limit could not be set (the test should stop).
  bool active() const { return signal_set_ && limit_set_; }

 private:
  struct sigaction previous_ {};
  rlimit saved_{};
  bool signal_set_ = false;
  bool limit_set_ = false;
};

}  // namespace pipescope::testing
