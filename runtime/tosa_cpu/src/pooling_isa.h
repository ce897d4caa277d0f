// Pooling primitives (pooling.cc): a block of kLanes channels of one output pixel, folded
// over the pixel's taps. AVG_POOL2D and MAX_POOL2D share the loop; a block has
//   kLanes, kPredicated, Mask, mask(remaining)    its lanes (isa.h)
//   kAverage, kMaxTaps             which pool it is, the largest window it sums exactly
//   Pixel pixel(PoolScale)         per-pixel constants (AVG: the tap count's scale)
//   Acc init(pixel), tap(acc, x, mask)  the fold: sum or maximum of the taps' values
//   store(y, acc, pixel, mask, remaining)
//       AVG: y = saturate(apply_scale_32(sum - count * izp, reciprocal of count) + ozp)
// AvgPoolScalar / MaxPoolScalar (one channel, int8 or int16) are every ISA's tail,
// AnyPoolScalar either of them chosen at run time (the portable kernel and every ISA's
// fallback); AvgPoolBlock / MaxPoolBlock the ISA's int8 blocks (the scalar ones where an ISA
// has none).
#ifndef TOSA_CPU_POOLING_ISA_H_
#define TOSA_CPU_POOLING_ISA_H_

#include <limits>

#include "isa.h"
#include "kernels.h"
#include "scale_isa.h"

namespace tosa_cpu {

// The average of one pixel: reciprocal_scale(count) and the zero points' terms.
struct PoolScale {
  int32_t multiplier, shift;
  int32_t offset;  // count * input_zp
  int32_t ozp;
  bool average;  // AVG_POOL2D (the rest is set only then)
};

// Which pool a block is for and the largest window it sums exactly (Average, Maximum; the
// maximum has no per-pixel constants).
template <int32_t kTaps = std::numeric_limits<int32_t>::max()>
struct Average {
  static constexpr bool kAverage = true;
  static constexpr int32_t kMaxTaps = kTaps;
};
struct Maximum {
  static constexpr bool kAverage = false;
  static constexpr int32_t kMaxTaps = std::numeric_limits<int32_t>::max();
  struct Pixel {};
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale&) { return Pixel{}; }
};

// One channel, through a typed pointer or an Elements cursor (int8 or int16).
struct AvgPoolScalar : WholeLanes<1>, Average<> {
  using Acc = uint32_t;  // int32, wrapping
  using Pixel = PoolScale;
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale& ps) { return ps; }
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return 0; }
  template <typename In>
  static TOSA_CPU_INLINE void tap(Acc& acc, In x, Mask) {
    acc += static_cast<Acc>(get(x));
  }
  template <typename Out>
  static TOSA_CPU_INLINE void store(Out y, Acc acc, const Pixel& px, Mask, int32_t) {
    const int32_t value = static_cast<int32_t>(acc - static_cast<uint32_t>(px.offset));
    const int64_t scaled = scale32_single(value, px.multiplier, px.shift);
    put(y, clamp64(scaled + px.ozp, lowest(y), highest(y)));
  }
};

struct MaxPoolScalar : WholeLanes<1>, Maximum {
  using Acc = int32_t;  // every window has a tap (read_pool): the minimum is never stored
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return std::numeric_limits<int32_t>::min(); }
  template <typename In>
  static TOSA_CPU_INLINE void tap(Acc& acc, In x, Mask) {
    const int32_t v = static_cast<int32_t>(get(x));  // int8 or int16
    acc = v > acc ? v : acc;
  }
  template <typename Out>
  static TOSA_CPU_INLINE void store(Out y, Acc acc, const Pixel&, Mask, int32_t) {
    put(y, acc);
  }
};

// Either of the two, chosen at run time: one loop serves both pools and every type (the
// fallback, built for size).
struct AnyPoolScalar : WholeLanes<1> {
  struct Acc {
    AvgPoolScalar::Acc sum;
    MaxPoolScalar::Acc max;
    bool average;
  };
  using Pixel = PoolScale;
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale& ps) { return ps; }
  static TOSA_CPU_INLINE Acc init(const Pixel& px) {
    return Acc{AvgPoolScalar::init(px), MaxPoolScalar::init(MaxPoolScalar::Pixel{}), px.average};
  }
  template <typename In>
  static TOSA_CPU_INLINE void tap(Acc& acc, In x, Mask m) {
    if (acc.average) {
      AvgPoolScalar::tap(acc.sum, x, m);
    } else {
      MaxPoolScalar::tap(acc.max, x, m);
    }
  }
  template <typename Out>
  static TOSA_CPU_INLINE void store(Out y, const Acc& acc, const Pixel& px, Mask m, int32_t r) {
    if (acc.average) {
      AvgPoolScalar::store(y, acc.sum, px, m, r);
    } else {
      MaxPoolScalar::store(y, acc.max, MaxPoolScalar::Pixel{}, m, r);
    }
  }
};

#if defined(TOSA_CPU_MVE)
// 4 channels a vector summed in 32-bit lanes, the input zero point taken off once (count *
// zp), then the scale as the MVE RESCALE applies it (scale_isa.h; reciprocal_scale's shift
// is 30 + k with count <= 2^k, so sum << max(32 - shift, 0) stays below 255 * 4).
struct AvgPoolBlock : PredicatedLanes<4>, Average<> {
  using Acc = int32x4_t;
  struct Pixel {
    Scale32 l;
    int32_t offset, ozp;
  };
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale& ps) {
    return Pixel{scale32_uniform(ps.multiplier, ps.shift, false), ps.offset, ps.ozp};
  }
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return vdupq_n_s32(0); }
  static TOSA_CPU_INLINE void tap(Acc& acc, const int8_t* x, Mask p) {
    acc = vaddq_s32(acc, vldrbq_z_s32(x, p));
  }
  static TOSA_CPU_INLINE void store(int8_t* y, Acc acc, const Pixel& px, Mask p, int32_t) {
    const int32x4_t t = scale32_round<false>(vsubq_n_s32(acc, px.offset), px.l);
    store_s32x4(y, saturate_s32x4<int8_t>(vqaddq_n_s32(t, px.ozp)), p);
  }
};

// MAX_POOL2D has no MVE block: the example models do not use it, and the generic loop keeps
// the library under its 32 KiB goal (a block would be MaxPoolBlock's NEON one with
// vctp8q-predicated loads and stores, about 450 bytes).
using MaxPoolBlock = MaxPoolScalar;
#elif defined(TOSA_CPU_DSP)
// Windows of at most 256 taps: 4 channels a word summed as halfword pairs (SXTAB16 of
// channels 0, 2 and, rotated, 1, 3; 256 int8 values sum inside int16), then per channel the
// DSP RESCALE's arithmetic (scale_isa.h: single rounding, sum << max(32 - shift, 0) fits as
// |sum| <= 255 * count), QADD of the output zero point and SSAT to int8.
struct AvgPoolBlock : WholeLanes<4>, Average<256> {
  struct Acc {
    int16x2_t s02, s13;
  };
  struct Pixel {
    Scale32 l;
    int32_t offset, ozp;
  };
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale& ps) {
    return Pixel{scale32_make(ps.multiplier, ps.shift, false), ps.offset, ps.ozp};
  }
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return Acc{0, 0}; }
  static TOSA_CPU_INLINE void tap(Acc& acc, const int8_t* x, Mask) {
    const int32_t word = load_word(x);
    acc.s02 = __sxtab16(acc.s02, word);
    acc.s13 = __sxtab16(acc.s13, ror8(word));
  }
  static TOSA_CPU_INLINE void store(int8_t* y, Acc acc, const Pixel& px, Mask, int32_t) {
    const int32_t sum[4] = {static_cast<int16_t>(acc.s02 & 0xFFFF),
                            static_cast<int16_t>(acc.s13 & 0xFFFF),
                            static_cast<int16_t>(static_cast<uint32_t>(acc.s02) >> 16),
                            static_cast<int16_t>(static_cast<uint32_t>(acc.s13) >> 16)};
    for (int32_t j = 0; j < 4; ++j) {
      const int32_t t = scale32_round<false>(sum[j] - px.offset, px.l);
      y[j] = static_cast<int8_t>(saturate_s32<int8_t>(__qadd(t, px.ozp)));
    }
  }
};

// 4 channels a word, the bytewise maximum as SSUB8 (GE flags where a >= b) and SEL.
struct MaxPoolBlock : WholeLanes<4>, Maximum {
  using Acc = uint32_t;
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return 0x80808080u; }
  static TOSA_CPU_INLINE void tap(Acc& acc, const int8_t* x, Mask) {
    uint32_t word;
    memcpy(&word, x, 4);
    __ssub8(static_cast<int8x4_t>(word), static_cast<int8x4_t>(acc));
    acc = __sel(word, acc);
  }
  static TOSA_CPU_INLINE void store(int8_t* y, Acc acc, const Pixel&, Mask, int32_t) {
    memcpy(y, &acc, 4);
  }
};
#elif defined(TOSA_CPU_NEON)
// 8 channels a step: two 4-lane 32-bit sums widened from the int8 taps (SADDW/SADDW2), the
// NEON RESCALE's rounding (scale_isa.h) and saturating narrows to int8.
struct AvgPoolBlock : WholeLanes<8>, Average<> {
  struct Acc {
    int32x4_t lo, hi;
  };
  struct Pixel {
    Scale32 l;
    int32x4_t offset, ozp;
  };
  static TOSA_CPU_INLINE Pixel pixel(const PoolScale& ps) {
    return Pixel{scale32_uniform(ps.multiplier, ps.shift, false), vdupq_n_s32(ps.offset),
                 vdupq_n_s32(ps.ozp)};
  }
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return Acc{vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static TOSA_CPU_INLINE void tap(Acc& acc, const int8_t* x, Mask) {
    const int16x8_t v = vmovl_s8(vld1_s8(x));
    acc.lo = vaddw_s16(acc.lo, vget_low_s16(v));
    acc.hi = vaddw_high_s16(acc.hi, v);
  }
  static TOSA_CPU_INLINE void store(int8_t* y, const Acc& acc, const Pixel& px, Mask, int32_t) {
    const int32x4_t lo = scale32_round<false>(vsubq_s32(acc.lo, px.offset), px.l);
    const int32x4_t hi = scale32_round<false>(vsubq_s32(acc.hi, px.offset), px.l);
    const int16x8_t h = vcombine_s16(vqmovn_s32(vqaddq_s32(lo, px.ozp)),
                                     vqmovn_s32(vqaddq_s32(hi, px.ozp)));
    vst1_s8(y, vqmovn_s16(h));
  }
};

// 16 channels a step (SMAX).
struct MaxPoolBlock : WholeLanes<16>, Maximum {
  using Acc = int8x16_t;
  static TOSA_CPU_INLINE Acc init(const Pixel&) { return vdupq_n_s8(-128); }
  static TOSA_CPU_INLINE void tap(Acc& acc, const int8_t* x, Mask) {
    acc = vmaxq_s8(acc, vld1q_s8(x));
  }
  static TOSA_CPU_INLINE void store(int8_t* y, Acc acc, const Pixel&, Mask, int32_t) {
    vst1q_s8(y, acc);
  }
};
#else
using AvgPoolBlock = AvgPoolScalar;
using MaxPoolBlock = MaxPoolScalar;
#endif

}  // namespace tosa_cpu

#endif  // TOSA_CPU_POOLING_ISA_H_
