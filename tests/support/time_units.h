// Time units of the tests' hand-made runs, in ns (the engine's unit). One
// definition for every test file: the sanitizer builds compile several test
// files as one (a unity build), where two files' constants of the same name
// would clash.
#pragma once

#include <cstdint>

namespace pipescope::testing {

inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr std::int64_t kSecond = 1'000'000'000;

}  // namespace pipescope::testing
