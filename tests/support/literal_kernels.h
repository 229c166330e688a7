// The literal search's kernels this machine runs, and the environment
// variable that forces one (LiteralSetSearch::kKernelVariable), so that a
// test can run every kernel on the same inputs.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "scan/literal_set_search.h"

namespace pipescope::testing {

/// Portable first, then avx2 and vbmi where this CPU runs them.
inline std::vector<LiteralSetSearch::Kernel> machine_kernels() {
  std::vector<LiteralSetSearch::Kernel> out;
  for (const auto kernel : {LiteralSetSearch::Kernel::portable, LiteralSetSearch::Kernel::avx2,
                            LiteralSetSearch::Kernel::vbmi}) {
    if (LiteralSetSearch::runs(kernel)) out.push_back(kernel);
  }
  return out;
}

/// Sets $PIPESCOPE_LITERAL_SEARCH for its lifetime (unset: nullptr), and
/// puts back what was there.
class ForcedKernel {
 public:
  explicit ForcedKernel(const char* value) {
    if (const char* before = std::getenv(LiteralSetSearch::kKernelVariable)) before_ = before;
    set(value);
  }
  explicit ForcedKernel(LiteralSetSearch::Kernel kernel)
      : ForcedKernel(LiteralSetSearch::name(kernel)) {}
  ~ForcedKernel() { set(before_ ? before_->c_str() : nullptr); }
  ForcedKernel(const ForcedKernel&) = delete;
  ForcedKernel& operator=(const ForcedKernel&) = delete;

 private:
  static void set(const char* value) {
    if (value == nullptr) {
      ::unsetenv(LiteralSetSearch::kKernelVariable);
    } else {
      ::setenv(LiteralSetSearch::kKernelVariable, value, 1);
    }
  }
  std::optional<std::string> before_;
};

}  // namespace pipescope::testing
