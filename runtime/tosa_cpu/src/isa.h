// The instruction-set variant of the kernels, chosen at build time from the compiler's target
// macros (the toolchain's -mcpu/-march, i.e. the target's cpu and isa):
//   MVE (Helium, arm_mve.h)      Cortex-M52/M55/M85 with MVE
//   DSP (ACLE SIMD32 intrinsics) Cortex-M4/M7/M33/M35P/M55 without MVE
//   NEON (arm_neon.h)            AArch64 (Cortex-A)
//   portable C++                 every other CPU, or TOSA_CPU_PORTABLE (CMake
//                                -DTOSA_CPU_KERNELS=portable) to compare against.
// Every variant computes exactly the integer results of the portable one.
//
// The kernels' loops are written once (conv.cc, depthwise.cc, pooling.cc, scale.cc, ...); an
// ISA enters only through the primitives of the per-family headers (dot_isa.h,
// depthwise_isa.h, pooling_isa.h, scale_isa.h, elementwise_isa.h), which this header's
// helpers serve: the lanes a block declares, the lane loop over blocks of channels and, on
// MVE, predicated loads and stores of 32-bit lanes.
#ifndef TOSA_CPU_ISA_H_
#define TOSA_CPU_ISA_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#if !defined(TOSA_CPU_PORTABLE) && defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TOSA_CPU_MVE 1
#include <arm_mve.h>
#elif !defined(TOSA_CPU_PORTABLE) && defined(__ARM_FEATURE_SIMD32) && !defined(__aarch64__)
#define TOSA_CPU_DSP 1
#include <arm_acle.h>
#elif !defined(TOSA_CPU_PORTABLE) && defined(__aarch64__) && defined(__ARM_NEON)
#define TOSA_CPU_NEON 1
#include <arm_neon.h>
#endif

// Primitives and loop nests are inlined into the kernel function that instantiates them, so
// that function's optimisation level (below) applies to its loops and a block's
// accumulators stay in registers.
// TOSA_CPU_LAMBDA does the same for a loop body given to a loop helper: [&](...)
// TOSA_CPU_LAMBDA { ... }.
#if defined(__GNUC__)
#define TOSA_CPU_INLINE inline __attribute__((always_inline))
#define TOSA_CPU_LAMBDA __attribute__((always_inline))
#else
#define TOSA_CPU_INLINE inline
#define TOSA_CPU_LAMBDA
#endif

// The convolution family's files are built for speed (-O2) on bare metal, the rest -Os.
// TOSA_CPU_FOR_SIZE: operators the example models do not use (or barely), built for size
// there: keeps the library under its 32 KiB goal.
#if defined(__GNUC__) && !defined(__clang__)
#define TOSA_CPU_FOR_SIZE __attribute__((optimize("Os")))
#else
#define TOSA_CPU_FOR_SIZE
#endif
// TOSA_CPU_FALLBACK: loops an ISA variant replaces on its hot path, for size there (MVE:
// depthwise with M > 1 or int16, the pools it has no block for (int16, MAX_POOL2D), the int8
// CONV2D's per-pixel work: its loop over pixels costs 1-3%).
#if defined(TOSA_CPU_MVE)
#define TOSA_CPU_FALLBACK TOSA_CPU_FOR_SIZE
#else
#define TOSA_CPU_FALLBACK
#endif

namespace tosa_cpu {

// Name of the variant this library was built with: "mve", "dsp", "neon" or "portable".
inline const char* isa_variant() {
#if defined(TOSA_CPU_MVE)
  return "mve";
#elif defined(TOSA_CPU_DSP)
  return "dsp";
#elif defined(TOSA_CPU_NEON)
  return "neon";
#else
  return "portable";
#endif
}

// What a block type says about its lanes (every block derives from one of these):
//   kLanes       values a block (channels, elements)
//   kPredicated  whether it also takes a partial last block
//   Mask         which lanes are live, mask(remaining) (remaining: values left, >= 1)
// WholeLanes<N>: whole blocks only (the one-wide portable block does what they leave).
template <int32_t N>
struct WholeLanes {
  static constexpr int32_t kLanes = N;
  static constexpr bool kPredicated = false;
  using Mask = int32_t;
  static TOSA_CPU_INLINE Mask mask(int32_t remaining) { return remaining; }
};

#if defined(TOSA_CPU_MVE)
// N lanes of a 128-bit vector (16: 8-bit, 8: 16-bit, 4: 32-bit lanes), the last block
// tail-predicated (VCTP).
template <int32_t N>
struct PredicatedLanes {
  static constexpr int32_t kLanes = N;
  static constexpr bool kPredicated = true;
  using Mask = mve_pred16_t;
  static TOSA_CPU_INLINE Mask mask(int32_t remaining) {
    const uint32_t r = static_cast<uint32_t>(remaining);
    if constexpr (N == 16) return vctp8q(r);
    else if constexpr (N == 8) return vctp16q(r);
    else return vctp32q(r);
  }
};
#endif

// The lane loop: f(i, remaining) for blocks of B::kLanes values from `begin` while a block
// fits in `end` (a predicated block, B::kPredicated, also takes the last partial block;
// `remaining` = end - i says which of its lanes are live). Returns where it stopped: the
// first value a narrower block (the portable one) still has to do.
template <class B, typename Index, class F>
TOSA_CPU_INLINE Index for_each_block(Index begin, Index end, F f) {
  Index i = begin;
  for (; B::kPredicated ? i < end : i + B::kLanes <= end; i += B::kLanes) f(i, end - i);
  return i;
}

// Whether a one-wide Tail block has values left after B's blocks: B is neither predicated
// nor Tail itself (the portable build).
template <class B, class Tail>
constexpr bool needs_tail() {
  return !B::kPredicated && !std::is_same<B, Tail>::value;
}

#if defined(TOSA_CPU_DSP)
// Rotate right by 8 (one ROR; GCC 12's arm_acle.h has no __ror).
TOSA_CPU_INLINE int32_t ror8(int32_t v) {
  const uint32_t u = static_cast<uint32_t>(v);
  return static_cast<int32_t>((u >> 8) | (u << 24));
}

// Four bytes at any alignment as one word.
TOSA_CPU_INLINE int32_t load_word(const void* p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}
#endif

#if defined(TOSA_CPU_MVE)
// Four 32-bit lanes from int8/int16/int32 values (sign-extended), lanes outside `p` read as
// 0; and the stores of lanes `p` to int8/int16/int32 values (their low bits).
template <typename T>
TOSA_CPU_INLINE int32x4_t load_s32x4(const T* x, mve_pred16_t p) {
  if constexpr (sizeof(T) == 1) return vldrbq_z_s32(reinterpret_cast<const int8_t*>(x), p);
  else if constexpr (sizeof(T) == 2) return vldrhq_z_s32(reinterpret_cast<const int16_t*>(x), p);
  else return vldrwq_z_s32(reinterpret_cast<const int32_t*>(x), p);
}

template <typename T>
TOSA_CPU_INLINE void store_s32x4(T* y, int32x4_t v, mve_pred16_t p) {
  if constexpr (sizeof(T) == 1) vstrbq_p_s32(reinterpret_cast<int8_t*>(y), v, p);
  else if constexpr (sizeof(T) == 2) vstrhq_p_s32(reinterpret_cast<int16_t*>(y), v, p);
  else vstrwq_p_s32(reinterpret_cast<int32_t*>(y), v, p);
}

// Lanes saturated to the range of T: a saturating shift left and back (int8: by 24, int16:
// by 16), which keeps a loop's vectors in MVE's 8 registers (no clamp vectors).
template <typename T>
TOSA_CPU_INLINE int32x4_t saturate_s32x4(int32x4_t v) {
  constexpr int kNarrow = 32 - 8 * static_cast<int>(sizeof(T));
  if constexpr (kNarrow > 0) v = vshrq_n_s32(vqshlq_n_s32(v, kNarrow), kNarrow);
  return v;
}
#endif

}  // namespace tosa_cpu

#endif  // TOSA_CPU_ISA_H_
