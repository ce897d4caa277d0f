// Scaling primitives: RESCALE (scale.cc) and the average pools' division (pooling_isa.h).
//
// apply_scale_32 without its 64-bit product per value. With P = value * multiplier
// (multiplier >= 0) and shift S in 2..62:
//   single rounding: floor((P + 2^(S-1)) / 2^S)
//     = vrshl(vqdmulh(value << ls, multiplier), -rs), ls = max(32 - S, 0), rs = max(S - 31, 1):
//     vqdmulh(a, m) = floor(2am / 2^32) exactly (no saturation: m >= 0), and for S >= 32
//     2^(S-1) is a multiple of 2^31, so floor((floor(P / 2^31) + 2^(S-32)) / 2^(S-31)) is the
//     same value; for S <= 31 the value is pre-shifted so that one extra bit is rounded by the
//     vrshl. vrshl by -k is (t + 2^(k-1)) >> k without overflow (Arm pseudo-code).
//   double rounding, S > 31: floor((P + 2^(S-1) + sign * 2^30) / 2^S)
//     = vrshl(floor((P + sign * 2^30) / 2^31), -(S - 31)), and
//     floor((P - 2^30) / 2^31) = floor((P + 2^30) / 2^31) - 1, so the first stage is
//     vqrdmulh(value, m) + (value >> 31); for S <= 31 double rounding is single rounding,
//     here vqrdmulh(value << (31 - S), m) with no right shift.
// The pre-shift is exact whenever value << ls fits in 32 bits (the spec requires
// |value| < 2^(S-1), which does); scale.cc runs these lanes only where it fits for every
// value of the input type, so every input gives what the portable kernel gives.
// MVE and NEON compute it 4 lanes at a time; DSP one value at a time with SMULL (32 x 32 ->
// 64), the rounding shift overflow-free as (t >> k) + ((t >> (k - 1)) & 1), QADD and SSAT.
//
// A RESCALE block (ScaleBlock: the ISA's, for scale32; ScaleScalar<kScale32>: portable,
// both multiplier widths) has
//   kLanes, kPredicated, Mask, mask(remaining)    its lanes (isa.h)
//   Scale scale(m, s, channel, per_channel, mask, double_round)
//       the lanes' multipliers and shifts: channels channel.. (per channel) or the tensor's
//   apply<In, Out, kDouble>(x, y, scale, izp, ozp, mask)
//       y = saturate<Out>(apply_scale(x - izp) + ozp) for the block's lanes
//   kRowBlock, kFixedRounding, kCallPerGroup   how scale.cc's loops run it (ScalePolicy)
// and kScaleScalarFallback says whether the pairs the ISA's blocks decline take the portable
// typed loop (true) or the generic one (MVE: code size).
#ifndef TOSA_CPU_SCALE_ISA_H_
#define TOSA_CPU_SCALE_ISA_H_

#include <limits>
#include <type_traits>

#include "isa.h"
#include "kernels.h"

namespace tosa_cpu {

// The formula's shifts for a multiplier's shift S: ls = max(32 - S, 0) and rs = max(S - 31, 1)
// (double rounding: max(31 - S, 0) and max(S - 31, 0), and `sign`: S > 31, value >> 31 added).
struct ScaleShifts {
  int32_t ls, rs;
  bool sign;
};

TOSA_CPU_INLINE ScaleShifts scale_shifts(int32_t shift, bool double_round) {
  const int32_t base = double_round ? 31 : 32, min_rs = double_round ? 0 : 1;
  return ScaleShifts{base - shift > 0 ? base - shift : 0, shift - 31 > min_rs ? shift - 31 : min_rs,
                     double_round && shift > 31};
}

// How scale.cc's loops run a block:
//   kRowBlock       rows a group of channels goes down before the next group (NEON: 32, so
//                   the block stays in the data cache; elsewhere all rows)
//   kFixedRounding  true: a loop per rounding mode (apply's kDouble), call-free; false: one
//                   loop, the Scale carries the mode
//   kCallPerGroup   whether the loops over a group's rows are called once a group (MVE: the
//                   vectors, pointers and zero points of one group fill the registers; a loop
//                   over the groups around them spills) or once for all groups
template <size_t kRows = SIZE_MAX, bool kPerRounding = true, bool kPerGroup = false>
struct ScalePolicy {
  static constexpr size_t kRowBlock = kRows;
  static constexpr bool kFixedRounding = kPerRounding;
  static constexpr bool kCallPerGroup = kPerGroup;
};

// Whether the portable block's loops are compiled per rounding mode (the rounding a
// constant): in the portable build, where they are the hot path; with an ISA they are its
// fallback and tails, one loop for both modes (size).
#if defined(TOSA_CPU_MVE) || defined(TOSA_CPU_DSP) || defined(TOSA_CPU_NEON)
constexpr bool kScaleScalarPerRounding = false;
#else
constexpr bool kScaleScalarPerRounding = true;
#endif

template <bool kScale32>
struct ScaleScalar : WholeLanes<1>, ScalePolicy<SIZE_MAX, kScaleScalarPerRounding> {
  using Mult = typename std::conditional<kScale32, int32_t, int16_t>::type;
  struct Scale {
    int32_t m, s;
    bool double_round;
  };
  static TOSA_CPU_INLINE Scale scale(const void* m, const int8_t* s, size_t channel,
                                     bool per_channel, Mask, bool double_round) {
    const size_t at = per_channel ? channel : 0;
    return Scale{static_cast<const Mult*>(m)[at], s[at], double_round};
  }
  template <typename In, typename Out, bool kDouble>
  static TOSA_CPU_INLINE void apply(const In* x, Out* y, const Scale& l, int32_t izp,
                                    int32_t ozp, Mask) {
    const int64_t v = static_cast<int64_t>(x[0]) - izp;
    const bool double_round = kFixedRounding ? kDouble : l.double_round;
    const int32_t scaled = kScale32 ? apply_scale_32(v, l.m, l.s, double_round)
                                    : apply_scale_16(v, l.m, l.s);
    y[0] = static_cast<Out>(clamp64(static_cast<int64_t>(scaled) + ozp,
                                    std::numeric_limits<Out>::min(),
                                    std::numeric_limits<Out>::max()));
  }
};

#if defined(TOSA_CPU_MVE) || defined(TOSA_CPU_NEON)
// The formula's lanes: m, ls, nrs = -rs, and where double rounding adds value >> 31
// (S > 31). MVE and NEON name these intrinsics alike.
struct Scale32 {
  int32x4_t m, ls, nrs, dmask;
};

TOSA_CPU_INLINE Scale32 scale32_make(int32x4_t m, int32x4_t sh, bool double_round) {
  Scale32 l;
  l.m = m;
  l.ls = vmaxq_s32(vsubq_s32(vdupq_n_s32(double_round ? 31 : 32), sh), vdupq_n_s32(0));
  l.nrs = vminq_s32(vsubq_s32(vdupq_n_s32(31), sh), vdupq_n_s32(double_round ? 0 : -1));
#if defined(TOSA_CPU_MVE)
  l.dmask = double_round ? vdupq_m_n_s32(vdupq_n_s32(0), -1, vcmpgtq_n_s32(sh, 31))
                         : vdupq_n_s32(0);
#else
  l.dmask = double_round ? vreinterpretq_s32_u32(vcgtq_s32(sh, vdupq_n_s32(31)))
                         : vdupq_n_s32(0);
#endif
  return l;
}

// One multiplier and shift in every lane.
TOSA_CPU_INLINE Scale32 scale32_uniform(int32_t m, int32_t shift, bool double_round) {
  const ScaleShifts sh = scale_shifts(shift, double_round);
  return Scale32{vdupq_n_s32(m), vdupq_n_s32(sh.ls), vdupq_n_s32(-sh.rs),
                 vdupq_n_s32(sh.sign ? -1 : 0)};
}

// apply_scale_32(v, m, S, kDouble) in every lane.
template <bool kDouble>
TOSA_CPU_INLINE int32x4_t scale32_round(int32x4_t v, const Scale32& l) {
  const int32x4_t a = vshlq_s32(v, l.ls);
  const int32x4_t t = kDouble
                          ? vaddq_s32(vqrdmulhq_s32(a, l.m), vandq_s32(vshrq_n_s32(v, 31), l.dmask))
                          : vqdmulhq_s32(a, l.m);
  return vrshlq_s32(t, l.nrs);
}
#endif

#if defined(TOSA_CPU_MVE)
constexpr bool kScaleScalarFallback = false;

struct ScaleBlock : PredicatedLanes<4>, ScalePolicy<SIZE_MAX, true, true> {
  using Scale = Scale32;
  // Out of line: one copy serves every RESCALE column function (code size).
  static __attribute__((noinline)) Scale scale(const void* m, const int8_t* s, size_t channel,
                                               bool per_channel, Mask p, bool double_round) {
    const int32_t* m32 = static_cast<const int32_t*>(m);
    return scale32_make(per_channel ? vldrwq_z_s32(m32 + channel, p) : vdupq_n_s32(m32[0]),
                        per_channel ? vldrbq_z_s32(s + channel, p) : vdupq_n_s32(s[0]),
                        double_round);
  }
  template <typename In, typename Out, bool kDouble>
  static TOSA_CPU_INLINE void apply(const In* x, Out* y, const Scale& l, int32_t izp,
                                    int32_t ozp, Mask p) {
    const int32x4_t t = scale32_round<kDouble>(vsubq_n_s32(load_s32x4(x, p), izp), l);
    store_s32x4(y, saturate_s32x4<Out>(vqaddq_n_s32(t, ozp)), p);
  }
};
#elif defined(TOSA_CPU_NEON)
// NEON has no predication: whole blocks of 4; the output range by saturating narrows.
constexpr bool kScaleScalarFallback = true;

struct ScaleBlock : WholeLanes<4>, ScalePolicy<32> {
  using Scale = Scale32;
  static TOSA_CPU_INLINE Scale scale(const void* m, const int8_t* s, size_t channel,
                                     bool per_channel, Mask, bool double_round) {
    const int32_t* m32 = static_cast<const int32_t*>(m);
    if (!per_channel) return scale32_uniform(m32[0], s[0], double_round);
    const int32_t s4[4] = {s[channel], s[channel + 1], s[channel + 2], s[channel + 3]};
    return scale32_make(vld1q_s32(m32 + channel), vld1q_s32(s4), double_round);
  }
  template <typename T>
  static TOSA_CPU_INLINE int32x4_t load(const T* x) {
    if constexpr (sizeof(T) == 1) {
      int32_t word;
      memcpy(&word, x, 4);
      return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(word)))));
    } else if constexpr (sizeof(T) == 2) {
      return vmovl_s16(vld1_s16(reinterpret_cast<const int16_t*>(x)));
    } else {
      return vld1q_s32(reinterpret_cast<const int32_t*>(x));
    }
  }
  template <typename T>
  static TOSA_CPU_INLINE void store(T* y, int32x4_t v) {
    if constexpr (sizeof(T) == 1) {
      const int16x4_t h = vqmovn_s32(v);
      const int8x8_t b = vqmovn_s16(vcombine_s16(h, h));
      vst1_lane_s32(reinterpret_cast<int32_t*>(static_cast<void*>(y)), vreinterpret_s32_s8(b), 0);
    } else {
      vst1q_s32(reinterpret_cast<int32_t*>(y), v);
    }
  }
  template <typename In, typename Out, bool kDouble>
  static TOSA_CPU_INLINE void apply(const In* x, Out* y, const Scale& l, int32_t izp,
                                    int32_t ozp, Mask) {
    const int32x4_t t = scale32_round<kDouble>(vsubq_s32(load(x), vdupq_n_s32(izp)), l);
    store(y, vqaddq_s32(t, vdupq_n_s32(ozp)));
  }
};
#elif defined(TOSA_CPU_DSP)
struct Scale32 {
  int32_t ls, k, m, sign_mask;
};

TOSA_CPU_INLINE Scale32 scale32_make(int32_t m, int32_t shift, bool double_round) {
  const ScaleShifts sh = scale_shifts(shift, double_round);
  return Scale32{sh.ls, sh.rs, m, sh.sign ? -1 : 0};
}

// apply_scale_32(v, m, S, kDouble).
template <bool kDouble>
TOSA_CPU_INLINE int32_t scale32_round(int32_t v, const Scale32& l) {
  const int64_t p =
      static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v) << l.ls)) * l.m;
  int32_t t = kDouble ? static_cast<int32_t>((p + (1ll << 30)) >> 31) + ((v >> 31) & l.sign_mask)
                      : static_cast<int32_t>(p >> 31);
  if (!kDouble || l.k > 0) {
    const int32_t half = t >> (l.k - 1);  // (t >> k) + ((t >> (k - 1)) & 1)
    t = (half >> 1) + (half & 1);
  }
  return t;
}

// Saturated to the range of T (SSAT).
template <typename T>
TOSA_CPU_INLINE int32_t saturate_s32(int32_t t) {
  if constexpr (sizeof(T) == 1) t = __ssat(t, 8);
  if constexpr (sizeof(T) == 2) t = __ssat(t, 16);
  return t;
}

constexpr bool kScaleScalarFallback = true;

struct ScaleBlock : WholeLanes<1>, ScalePolicy<> {
  using Scale = Scale32;
  static TOSA_CPU_INLINE Scale scale(const void* m, const int8_t* s, size_t channel,
                                     bool per_channel, Mask, bool double_round) {
    const size_t at = per_channel ? channel : 0;
    return scale32_make(static_cast<const int32_t*>(m)[at], s[at], double_round);
  }
  template <typename In, typename Out, bool kDouble>
  static TOSA_CPU_INLINE void apply(const In* x, Out* y, const Scale& l, int32_t izp,
                                    int32_t ozp, Mask) {
    const int32_t t = scale32_round<kDouble>(static_cast<int32_t>(x[0]) - izp, l);
    y[0] = static_cast<Out>(saturate_s32<Out>(__qadd(t, ozp)));
  }
};
#else
constexpr bool kScaleScalarFallback = true;
using ScaleBlock = ScaleScalar<true>;
#endif

// apply_scale_32(value, m, shift, false) where value << max(32 - shift, 0) fits in 32 bits
// (the average pools: scale.cc's derivation): DSP by its SMULL formula, the rest directly.
TOSA_CPU_INLINE int32_t scale32_single(int32_t value, int32_t m, int32_t shift) {
#if defined(TOSA_CPU_DSP)
  return scale32_round<false>(value, scale32_make(m, shift, false));
#else
  return apply_scale_32(value, m, shift, false);
#endif
}

}  // namespace tosa_cpu

#endif  // TOSA_CPU_SCALE_ISA_H_
