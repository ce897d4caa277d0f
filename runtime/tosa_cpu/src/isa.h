// The instruction-set variants of the hot inner loops, chosen at build time from the
// compiler's target macros (the toolchain's -mcpu/-march, i.e. the target's cpu and isa):
//   MVE (Helium, arm_mve.h)     Cortex-M52/M55/M85 with MVE
//   DSP (ACLE SIMD32 intrinsics) Cortex-M4/M7/M33/M35P/M55 without MVE
//   NEON (arm_neon.h)           AArch64 (Cortex-A)
//   portable C++                every other CPU, or TOSA_CPU_PORTABLE (CMake
//                               -DTOSA_CPU_KERNELS=portable) to compare against.
// Every variant computes exactly the integer sums of the portable one.
#ifndef TOSA_CPU_ISA_H_
#define TOSA_CPU_ISA_H_

#include <stdint.h>
#include <string.h>

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

namespace tosa_cpu {

// The sums a zero-point corrected int8 dot product needs:
//   sum (x - xzp)(w - wzp) = xw - wzp * x_sum - xzp * w_sum + n * xzp * wzp.
struct Dot8 {
  int32_t xw;
  int32_t x_sum;
  int32_t w_sum;
};

inline int32_t dot8_corrected(const Dot8& d, int32_t n, int32_t xzp, int32_t wzp) {
  return d.xw - wzp * d.x_sum - xzp * d.w_sum + n * xzp * wzp;
}

inline Dot8 dot8_portable(const int8_t* x, const int8_t* w, int32_t n) {
  Dot8 d{0, 0, 0};
  for (int32_t i = 0; i < n; ++i) {
    d.xw += x[i] * w[i];
    d.x_sum += x[i];
    d.w_sum += w[i];
  }
  return d;
}

#if defined(TOSA_CPU_DSP)
// Rotate right by 8 (one ROR; GCC 12's arm_acle.h has no __ror).
inline int32_t ror8(int32_t v) {
  const uint32_t u = static_cast<uint32_t>(v);
  return static_cast<int32_t>((u >> 8) | (u << 24));
}
#endif

inline Dot8 dot8(const int8_t* x, const int8_t* w, int32_t n) {
#if defined(TOSA_CPU_MVE)
  int32_t xw = 0, xs = 0, ws = 0;
  for (int32_t i = 0; i < n; i += 16) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n - i));
    const int8x16_t a = vldrbq_z_s8(x + i, p);  // lanes past n read as 0
    const int8x16_t b = vldrbq_z_s8(w + i, p);
    xw = vmladavaq_s8(xw, a, b);
    xs = vaddvaq_s8(xs, a);
    ws = vaddvaq_s8(ws, b);
  }
  return Dot8{xw, xs, ws};
#elif defined(TOSA_CPU_DSP)
  int32_t xw = 0, xs = 0, ws = 0;
  const int32_t ones = 0x00010001;
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    int32_t a, b;
    memcpy(&a, x + i, 4);
    memcpy(&b, w + i, 4);
    const int16x2_t a02 = __sxtb16(a), a13 = __sxtb16(ror8(a));
    const int16x2_t b02 = __sxtb16(b), b13 = __sxtb16(ror8(b));
    xw = __smlad(a02, b02, xw);
    xw = __smlad(a13, b13, xw);
    xs = __smlad(a02, ones, __smlad(a13, ones, xs));
    ws = __smlad(b02, ones, __smlad(b13, ones, ws));
  }
  const Dot8 tail = dot8_portable(x + i, w + i, n - i);
  return Dot8{xw + tail.xw, xs + tail.x_sum, ws + tail.w_sum};
#elif defined(TOSA_CPU_NEON)
  int32x4_t xw = vdupq_n_s32(0), xs = vdupq_n_s32(0), ws = vdupq_n_s32(0);
  int32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const int8x16_t a = vld1q_s8(x + i), b = vld1q_s8(w + i);
    xw = vpadalq_s16(xw, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    xw = vpadalq_s16(xw, vmull_high_s8(a, b));
    xs = vpadalq_s16(xs, vpaddlq_s8(a));
    ws = vpadalq_s16(ws, vpaddlq_s8(b));
  }
  const Dot8 tail = dot8_portable(x + i, w + i, n - i);
  return Dot8{vaddvq_s32(xw) + tail.xw, vaddvq_s32(xs) + tail.x_sum,
              vaddvq_s32(ws) + tail.w_sum};
#else
  return dot8_portable(x, w, n);
#endif
}

// sum x * (w - wzp) for int16 activations and int8 weights (a16w8; int16 zero points are 0
// in TOSA), in 64 bits: the int48 accumulator.
inline int64_t dot16x8(const int16_t* x, const int8_t* w, int32_t n, int32_t wzp) {
#if defined(TOSA_CPU_MVE)
  int64_t acc = 0;
  const int16x8_t zp = vdupq_n_s16(static_cast<int16_t>(wzp));
  for (int32_t i = 0; i < n; i += 8) {
    const mve_pred16_t p = vctp16q(static_cast<uint32_t>(n - i));
    const int16x8_t a = vldrhq_z_s16(x + i, p);  // lanes past n read as 0
    const int16x8_t b = vsubq_s16(vldrbq_z_s16(w + i, p), zp);
    acc = vmlaldavaq_s16(acc, a, b);
  }
  return acc;
#else
  int64_t acc = 0;
  for (int32_t i = 0; i < n; ++i) acc += static_cast<int64_t>(x[i]) * (w[i] - wzp);
  return acc;
#endif
}

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

}  // namespace tosa_cpu

#endif  // TOSA_CPU_ISA_H_
