// splitmix64: the simulator's deterministic random numbers, a stream
// (SplitMix) and a hash of one number (mix). Same seed, same output, on every
// machine: the simulated runs and their expected figures depend on it.
#pragma once

#include <cstdint>

namespace pipescope::sim {

/// A small deterministic random source (splitmix64).
class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (n > 0); the tiny modulo bias does not matter here.
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

/// The splitmix64 hash of x: SplitMix(x).next(), for a number derived from
/// several others without keeping a stream.
inline std::uint64_t mix(std::uint64_t x) { return SplitMix(x).next(); }

}  // namespace pipescope::sim
