// Dot-product primitives of CONV2D, TRANSPOSE_CONV2D and MATMUL (conv.cc, matmul.cc), one
// definition per ISA (isa.h), each computing exactly the portable one's integer sums:
//   dot8(x, w, n)              sum xw, sum x, sum w of n int8 pairs (Dot8)
//   dot16x8(x, w, n, wzp)      sum x * (w - wzp), int16 x int8 in 64 bits
//   sum8(x, n)                 sum x of n int8 values
//   dot8_rows<K>(x, w, n, acc) acc[j] = sum x * w[j * n + ...]: K weight rows against one
//                              input, each input vector loaded once for all K rows
//   kDotRows                   the K worth using (MVE 4, DSP 2; 0: no row-blocked path)
#ifndef TOSA_CPU_DOT_ISA_H_
#define TOSA_CPU_DOT_ISA_H_

#include "isa.h"

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

// acc[j] += sum x[i] * w[j * stride + i] over i in [begin, n): the portable row-blocked
// product, and the scalar tail of the DSP one.
template <int K>
TOSA_CPU_INLINE void dot8_rows_portable(const int8_t* x, const int8_t* w, int32_t stride,
                                        int32_t begin, int32_t n, int32_t* acc) {
  for (int32_t i = begin; i < n; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j) acc[j] += x[i] * w[j * stride + i];
  }
}

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
    const int32_t a = load_word(x + i), b = load_word(w + i);
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

TOSA_CPU_INLINE int32_t sum8(const int8_t* x, int32_t n) {
  int32_t s = 0;
#if defined(TOSA_CPU_MVE)
  for (int32_t i = 0; i < n; i += 16) {
    s = vaddvaq_s8(s, vldrbq_z_s8(x + i, vctp8q(static_cast<uint32_t>(n - i))));
  }
#else
  for (int32_t i = 0; i < n; ++i) s += x[i];
#endif
  return s;
}

#if defined(TOSA_CPU_MVE)
constexpr int kDotRows = 4;

template <int K>
TOSA_CPU_INLINE void dot8_rows(const int8_t* x, const int8_t* w, int32_t n, int32_t* acc) {
  int32_t a[K] = {};
  for (int32_t i = 0; i < n; i += 16) {
    const mve_pred16_t p = vctp8q(static_cast<uint32_t>(n - i));
    const int8x16_t xv = vldrbq_z_s8(x + i, p);  // lanes past n read as 0
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j) a[j] = vmladavaq_s8(a[j], xv, vldrbq_z_s8(w + j * n + i, p));
  }
#pragma GCC unroll 4
  for (int j = 0; j < K; ++j) acc[j] = a[j];
}
#elif defined(TOSA_CPU_DSP)
constexpr int kDotRows = 2;

// SMLAD on sign-extended even/odd byte pairs, the input's pairs extracted once for all rows.
template <int K>
TOSA_CPU_INLINE void dot8_rows(const int8_t* x, const int8_t* w, int32_t n, int32_t* acc) {
  int32_t a[K] = {};
  const int32_t body = n & ~3;
  for (int32_t i = 0; i < body; i += 4) {
    const int32_t xv = load_word(x + i);
    const int16x2_t x02 = __sxtb16(xv), x13 = __sxtb16(ror8(xv));
#pragma GCC unroll 4
    for (int j = 0; j < K; ++j) {
      const int32_t wv = load_word(w + j * n + i);
      a[j] = __smlad(x02, __sxtb16(wv), a[j]);
      a[j] = __smlad(x13, __sxtb16(ror8(wv)), a[j]);
    }
  }
  dot8_rows_portable<K>(x, w, n, body, n, a);
#pragma GCC unroll 4
  for (int j = 0; j < K; ++j) acc[j] = a[j];
}
#else
constexpr int kDotRows = 0;  // one dot8 per output channel (the blocked path is not built)

template <int K>
TOSA_CPU_INLINE void dot8_rows(const int8_t* x, const int8_t* w, int32_t n, int32_t* acc) {
#pragma GCC unroll 4
  for (int j = 0; j < K; ++j) acc[j] = 0;
  dot8_rows_portable<K>(x, w, n, 0, n, acc);
}
#endif

}  // namespace tosa_cpu

#endif  // TOSA_CPU_DOT_ISA_H_
