// What the CPU can run, asked once, for the scanner's hand-picked SIMD
// copies. Chosen at run time by a plain branch rather than by ifunc
// (target_clones): an ifunc resolver runs before the sanitizer runtimes
// have started, which crashes ThreadSanitizer builds at load.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#define PIPESCOPE_X86_DISPATCH 1
#else
#define PIPESCOPE_X86_DISPATCH 0
#endif

namespace pipescope {

#if PIPESCOPE_X86_DISPATCH
/// True when the CPU runs AVX2 code.
inline bool cpu_has_avx2() {
  static const bool avx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
  return avx2;
}

/// True when the CPU runs AVX-512 code with the byte permutes of VBMI.
inline bool cpu_has_avx512_vbmi() {
  static const bool vbmi = (__builtin_cpu_init(), __builtin_cpu_supports("avx512f") &&
                                                      __builtin_cpu_supports("avx512bw") &&
                                                      __builtin_cpu_supports("avx512vbmi"));
  return vbmi;
}
#endif

}  // namespace pipescope
