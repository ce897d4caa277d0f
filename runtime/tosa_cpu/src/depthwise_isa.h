// Depthwise-convolution primitives (depthwise.cc): a block of kLanes channels of one output
// pixel, accumulated over the window's taps. Every block type has
//   kLanes, kPredicated, Mask, mask(remaining)   its lanes (isa.h: WholeLanes, PredicatedLanes)
//   Acc, Zp                its accumulators and zero points
//   zp(izp, wzp), zero()
//   mac(acc, x, w, zp, mask)   acc[j] += (x[j] - izp) * (w[j] - wzp) for one tap
//   store(y, acc, b, bias_bc, remaining)   y[j] = acc[j] + bias (b[0] when bias_bc, else b[j])
// DepthwiseScalar (one channel of any multiplier M, through a typed pointer or an Elements
// cursor: int8 or int16, int32 or int48) is the portable block and every ISA's tail;
// DepthwiseBlock is the ISA's int8 block for M = 1.
#ifndef TOSA_CPU_DEPTHWISE_ISA_H_
#define TOSA_CPU_DEPTHWISE_ISA_H_

#include "isa.h"
#include "kernels.h"

namespace tosa_cpu {

struct DepthwiseScalar : WholeLanes<1> {
  using Acc = int64_t;  // stored wrapped to the output type (int32 or int48)
  struct Zp {
    int32_t x, w;
  };
  static TOSA_CPU_INLINE Zp zp(int32_t izp, int32_t wzp) { return Zp{izp, wzp}; }
  static TOSA_CPU_INLINE Acc zero() { return 0; }
  template <typename In>
  static TOSA_CPU_INLINE void mac(Acc& acc, In x, const int8_t* w, const Zp& zp, Mask) {
    acc += static_cast<int32_t>(get(x) - zp.x) * (w[0] - zp.w);  // |x - zp| * 255 < 2^31
  }
  template <typename Out, typename Bias>
  static TOSA_CPU_INLINE void store(Out y, Acc acc, Bias b, bool, int32_t) {
    put(y, acc + get(b));
  }
};

#if defined(TOSA_CPU_MVE) || defined(TOSA_CPU_NEON)
// MVE and NEON: 8 channels widened to 16 bits with the zero points subtracted (x - zp fits
// in 16 bits), products accumulated in two vectors of 32-bit lanes.
struct Widened16x8 {
  struct Acc {
    int32x4_t a, b;
  };
  struct Zp {
    int16x8_t x, w;
  };
  static TOSA_CPU_INLINE Zp zp(int32_t izp, int32_t wzp) {
    return Zp{vdupq_n_s16(static_cast<int16_t>(izp)), vdupq_n_s16(static_cast<int16_t>(wzp))};
  }
  static TOSA_CPU_INLINE Acc zero() { return Acc{vdupq_n_s32(0), vdupq_n_s32(0)}; }
};
#endif

#if defined(TOSA_CPU_MVE)
// Products of even and odd lanes accumulated (VMULLB/VMULLT); stored with their bias
// interleaved (VST2).
struct DepthwiseBlock : PredicatedLanes<8>, Widened16x8 {
  static TOSA_CPU_INLINE void mac(Acc& acc, const int8_t* x, const int8_t* w, const Zp& zp,
                                  Mask p) {
    const int16x8_t xv = vsubq_s16(vldrbq_z_s16(x, p), zp.x);
    const int16x8_t wv = vsubq_s16(vldrbq_z_s16(w, p), zp.w);
    acc.a = vaddq_s32(acc.a, vmullbq_int_s16(xv, wv));  // even lanes
    acc.b = vaddq_s32(acc.b, vmulltq_int_s16(xv, wv));  // odd lanes
  }
  static TOSA_CPU_INLINE void store(int32_t* y, const Acc& acc, const int32_t* b, bool bias_bc,
                                    int32_t remaining) {
    if (remaining >= 8) {
      int32x4x2_t v;
      if (bias_bc) {
        v.val[0] = vaddq_n_s32(acc.a, b[0]);
        v.val[1] = vaddq_n_s32(acc.b, b[0]);
      } else {
        const int32x4x2_t bv = vld2q_s32(b);
        v.val[0] = vaddq_s32(acc.a, bv.val[0]);
        v.val[1] = vaddq_s32(acc.b, bv.val[1]);
      }
      vst2q_s32(y, v);
      return;
    }
    int32_t e[4], d[4];
    vst1q_s32(e, acc.a);
    vst1q_s32(d, acc.b);
    for (int32_t j = 0; j < remaining; ++j) {
      const uint32_t a = static_cast<uint32_t>(j % 2 == 0 ? e[j / 2] : d[j / 2]);
      y[j] = static_cast<int32_t>(a + static_cast<uint32_t>(b[bias_bc ? 0 : j]));
    }
  }
};
#elif defined(TOSA_CPU_DSP)
// 4 channels a word, sign-extended into halfword pairs (0, 2) and (1, 3), zero points
// subtracted in both halves (SSUB16: x - zp fits in 16 bits), one SMLABB/SMLATT per channel.
struct DepthwiseBlock : WholeLanes<4> {
  struct Acc {
    int32_t a0, a1, a2, a3;
  };
  struct Zp {
    int32_t x, w;  // the zero point in both halfwords
  };
  static TOSA_CPU_INLINE Zp zp(int32_t izp, int32_t wzp) {
    return Zp{static_cast<int32_t>((static_cast<uint32_t>(izp) & 0xFFFF) * 0x10001u),
              static_cast<int32_t>((static_cast<uint32_t>(wzp) & 0xFFFF) * 0x10001u)};
  }
  static TOSA_CPU_INLINE Acc zero() { return Acc{0, 0, 0, 0}; }
  static TOSA_CPU_INLINE void mac(Acc& acc, const int8_t* x, const int8_t* w, const Zp& zp, Mask) {
    const int32_t xv = load_word(x), wv = load_word(w);
    const int16x2_t x02 = __ssub16(__sxtb16(xv), zp.x);
    const int16x2_t x13 = __ssub16(__sxtb16(ror8(xv)), zp.x);
    const int16x2_t w02 = __ssub16(__sxtb16(wv), zp.w);
    const int16x2_t w13 = __ssub16(__sxtb16(ror8(wv)), zp.w);
    acc.a0 = __smlabb(x02, w02, acc.a0);
    acc.a2 = __smlatt(x02, w02, acc.a2);
    acc.a1 = __smlabb(x13, w13, acc.a1);
    acc.a3 = __smlatt(x13, w13, acc.a3);
  }
  static TOSA_CPU_INLINE void store(int32_t* y, const Acc& acc, const int32_t* b, bool bias_bc,
                                    int32_t) {
    const int32_t a[4] = {acc.a0, acc.a1, acc.a2, acc.a3};
    for (int32_t j = 0; j < 4; ++j) {
      y[j] = static_cast<int32_t>(static_cast<uint32_t>(a[j]) +
                                  static_cast<uint32_t>(b[bias_bc ? 0 : j]));
    }
  }
};
#elif defined(TOSA_CPU_NEON)
// Low and high halves multiplied and accumulated (SMLAL/SMLAL2).
struct DepthwiseBlock : WholeLanes<8>, Widened16x8 {
  static TOSA_CPU_INLINE void mac(Acc& acc, const int8_t* x, const int8_t* w, const Zp& zp, Mask) {
    const int16x8_t xv = vsubq_s16(vmovl_s8(vld1_s8(x)), zp.x);
    const int16x8_t wv = vsubq_s16(vmovl_s8(vld1_s8(w)), zp.w);
    acc.a = vmlal_s16(acc.a, vget_low_s16(xv), vget_low_s16(wv));  // channels 0-3
    acc.b = vmlal_high_s16(acc.b, xv, wv);                          // channels 4-7
  }
  static TOSA_CPU_INLINE void store(int32_t* y, const Acc& acc, const int32_t* b, bool bias_bc,
                                    int32_t) {
    const int32x4_t b0 = bias_bc ? vdupq_n_s32(b[0]) : vld1q_s32(b);
    const int32x4_t b1 = bias_bc ? vdupq_n_s32(b[0]) : vld1q_s32(b + 4);
    vst1q_s32(y, vaddq_s32(acc.a, b0));
    vst1q_s32(y + 4, vaddq_s32(acc.b, b1));
  }
};
#else
using DepthwiseBlock = DepthwiseScalar;
#endif

}  // namespace tosa_cpu

#endif  // TOSA_CPU_DEPTHWISE_ISA_H_
