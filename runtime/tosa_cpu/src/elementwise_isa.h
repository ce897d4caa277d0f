// Elementwise primitives (elementwise.cc): blocks of int32 lanes with wrapping arithmetic.
//   kLanes, kPredicated, Mask, mask(remaining)   its lanes (isa.h)
//   V load(x, mask), store(y, v, mask), add(a, b), sub(a, b)
// Int32Scalar (one value) is the portable block and every ISA's tail; Int32Block the ISA's.
#ifndef TOSA_CPU_ELEMENTWISE_ISA_H_
#define TOSA_CPU_ELEMENTWISE_ISA_H_

#include "isa.h"

namespace tosa_cpu {

struct Int32Scalar : WholeLanes<1> {
  using V = uint32_t;
  static TOSA_CPU_INLINE V load(const int32_t* x, Mask) { return static_cast<uint32_t>(x[0]); }
  static TOSA_CPU_INLINE void store(int32_t* y, V v, Mask) { y[0] = static_cast<int32_t>(v); }
  static TOSA_CPU_INLINE V add(V a, V b) { return a + b; }
  static TOSA_CPU_INLINE V sub(V a, V b) { return a - b; }
};

#if defined(TOSA_CPU_MVE)
struct Int32Block : PredicatedLanes<4> {
  using V = int32x4_t;
  static TOSA_CPU_INLINE V load(const int32_t* x, Mask p) { return vldrwq_z_s32(x, p); }
  static TOSA_CPU_INLINE void store(int32_t* y, V v, Mask p) { vstrwq_p_s32(y, v, p); }
  static TOSA_CPU_INLINE V add(V a, V b) { return vaddq_s32(a, b); }
  static TOSA_CPU_INLINE V sub(V a, V b) { return vsubq_s32(a, b); }
};
#else
using Int32Block = Int32Scalar;
#endif

}  // namespace tosa_cpu

#endif  // TOSA_CPU_ELEMENTWISE_ISA_H_
