// RESCALE, TABLE and MUL: the integer scaling operators, as the TOSA 1.0 pseudo-code.
#include "isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {
namespace {

// RESCALE between signed types, typed loops: rows x channels, multiplier/shift per channel
// (channels = 1 when per tensor).
template <typename In, typename Out, typename Mult>
void rescale_run(const Tensor& in, const Tensor& out, const Mult* m, const int8_t* s,
                 size_t channels, bool scale32, bool double_round, int64_t izp, int64_t ozp) {
  const In* x = static_cast<const In*>(in.data);
  Out* y = static_cast<Out*>(out.data);
  const int64_t lo = type_min(out.dtype), hi = type_max(out.dtype);
  const size_t rows = in.elements / channels;
  for (size_t r = 0; r < rows; ++r, x += channels, y += channels) {
    for (size_t c = 0; c < channels; ++c) {
      const int64_t v = static_cast<int64_t>(x[c]) - izp;
      const int32_t scaled = scale32 ? apply_scale_32(v, m[c], s[c], double_round)
                                     : apply_scale_16(v, m[c], s[c]);
      y[c] = static_cast<Out>(clamp64(scaled + ozp, lo, hi));
    }
  }
}

#if defined(TOSA_CPU_MVE)
// MVE RESCALE (scale32), 4 lanes, exactly apply_scale_32 without 64-bit lanes. With
// P = value * multiplier (multiplier >= 0) and shift S in 2..62:
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
// |value| < 2^(S-1), which does). The vector path runs only where it fits for every value
// of the input type, so every input gives what the portable kernel gives; the rest (int32
// inputs with shifts below 32: not what the lowering emits) take the generic loop.
struct ScaleLanes {
  int32x4_t m, ls, nrs, dmask;
};

// The lanes' scales: 4 channels' (step 1) or the tensor's one (step 0) in every lane.
ScaleLanes scale_lanes(const int32_t* m, const int8_t* s, size_t step, mve_pred16_t p,
                       bool double_round) {
  const int32x4_t sh = step ? vldrbq_z_s32(s, p) : vdupq_n_s32(s[0]);
  ScaleLanes l;
  l.m = step ? vldrwq_z_s32(m, p) : vdupq_n_s32(m[0]);
  l.ls = vmaxq_s32(vsubq_s32(vdupq_n_s32(double_round ? 31 : 32), sh), vdupq_n_s32(0));
  l.nrs = vminq_s32(vsubq_s32(vdupq_n_s32(31), sh), vdupq_n_s32(double_round ? 0 : -1));
  l.dmask = double_round ? vdupq_m_n_s32(vdupq_n_s32(0), -1, vcmpgtq_n_s32(sh, 31))
                         : vdupq_n_s32(0);
  return l;
}

template <typename T>
int32x4_t load_lanes(const T* x, mve_pred16_t p) {
  if constexpr (sizeof(T) == 1) return vldrbq_z_s32(reinterpret_cast<const int8_t*>(x), p);
  else if constexpr (sizeof(T) == 2) return vldrhq_z_s32(reinterpret_cast<const int16_t*>(x), p);
  else return vldrwq_z_s32(reinterpret_cast<const int32_t*>(x), p);
}

template <typename T>
void store_lanes(T* y, int32x4_t v, mve_pred16_t p) {
  if constexpr (sizeof(T) == 1) vstrbq_p_s32(reinterpret_cast<int8_t*>(y), v, p);
  else if constexpr (sizeof(T) == 2) vstrhq_p_s32(reinterpret_cast<int16_t*>(y), v, p);
  else vstrwq_p_s32(reinterpret_cast<int32_t*>(y), v, p);
}

struct ScaleRun {
  const int32_t* m;  // multipliers and shifts of lane 0; per tensor, `step` is 0
  const int8_t* s;
  size_t step;
  bool double_round;
  int32_t izp, ozp;
};

// `count` vectors of the lanes `p` from element `offset` on, `stride` elements apart, all
// with the lanes' scales. The output's range is applied by a saturating shift left and back
// (int8: by 24, int16: by 16), which keeps the loop's vectors in MVE's 8 registers.
template <typename In, typename Out, bool kDouble>
void rescale_vectors(const void* in, void* out, size_t offset, size_t count, size_t stride,
                     mve_pred16_t p, const ScaleRun& r) {
  const In* x = static_cast<const In*>(in) + offset;
  Out* y = static_cast<Out*>(out) + offset;
  const ScaleLanes l = scale_lanes(r.m, r.s, r.step, p, kDouble);
  const int32_t izp = r.izp, ozp = r.ozp;
  constexpr int kNarrow = 32 - 8 * static_cast<int>(sizeof(Out));
  for (size_t i = 0; i < count; ++i, x += stride, y += stride) {
    const int32x4_t v = vsubq_n_s32(load_lanes(x, p), izp);
    const int32x4_t a = vshlq_s32(v, l.ls);
    int32x4_t t = kDouble
                      ? vaddq_s32(vqrdmulhq_s32(a, l.m), vandq_s32(vshrq_n_s32(v, 31), l.dmask))
                      : vqdmulhq_s32(a, l.m);
    t = vqaddq_n_s32(vrshlq_s32(t, l.nrs), ozp);
    if constexpr (kNarrow > 0) t = vshrq_n_s32(vqshlq_n_s32(t, kNarrow), kNarrow);
    store_lanes(y, t, p);
  }
}

using RescaleVectors = void (*)(const void*, void*, size_t, size_t, size_t, mve_pred16_t,
                                const ScaleRun&);

// The MVE path for signed int8/int16/int32 -> int8/int32 with scale32 (`run` is
// rescale_vectors of the pair); false when it does not apply: an int32 input with a zero
// point (value could overflow), or value << ls could overflow for some value of the input
// type (int32 inputs with a shift below 32, int8/int16 with very small shifts; outside the
// spec's range of value, where the generic loop gives the portable kernel's result).
bool rescale_mve(RescaleVectors run, const Tensor& in, const Tensor& out, const int32_t* m,
                 const int8_t* s, size_t channels, bool double_round, int64_t izp,
                 int64_t ozp) {
  if (in.dtype == DType::kInt32 && izp != 0) return false;
  int32_t min_shift = 62;
  for (size_t c = 0; c < channels; ++c) min_shift = s[c] < min_shift ? s[c] : min_shift;
  // Does value << ls fit for every value of the input type?
  const int32_t ls = (double_round ? 31 : 32) - min_shift;
  const int64_t vmin = type_min(in.dtype) - izp, vmax = type_max(in.dtype) - izp;
  if (ls > 0 && (in.dtype == DType::kInt32 || vmin < -(1ll << (31 - ls)) ||
                 vmax >= (1ll << (31 - ls)))) {
    return false;
  }
  ScaleRun r{m, s, channels == 1 ? 0u : 1u, double_round, static_cast<int32_t>(izp),
             static_cast<int32_t>(ozp)};
  if (channels == 1) {  // per tensor: the tensor as one row
    const size_t n = in.elements;
    run(in.data, out.data, 0, n / 4, 4, vctp32q(4), r);
    if (n % 4) run(in.data, out.data, n / 4 * 4, 1, 4, vctp32q(n % 4), r);
    return true;
  }
  const size_t rows = in.elements / channels;
  for (size_t c0 = 0; c0 < channels; c0 += 4) {  // 4 channels at a time, down the rows
    r.m = m + c0;
    r.s = s + c0;
    run(in.data, out.data, c0, rows, channels, vctp32q(static_cast<uint32_t>(channels - c0)), r);
  }
  return true;
}
#endif

#if defined(TOSA_CPU_DSP)
// DSP RESCALE (scale32): the MVE formulation above one value at a time, with a 32 x 32 -> 64
// multiply (SMULL) instead of apply_scale_32's 64-bit product and 64-bit variable shift,
// the rounding shift overflow-free as (t >> k) + ((t >> (k - 1)) & 1), QADD for the output
// zero point and SSAT for the output range. Same rule for where it runs: value << ls must
// fit for every value of the input type (false otherwise: the generic loop).
template <typename In, typename Out>
bool rescale_dsp(const Tensor& in, const Tensor& out, const int32_t* m, const int8_t* s,
                 size_t channels, bool double_round, int64_t izp, int64_t ozp) {
  if (in.dtype == DType::kInt32 && izp != 0) return false;
  const int32_t base = double_round ? 31 : 32;
  int32_t min_shift = 62;
  for (size_t c = 0; c < channels; ++c) min_shift = s[c] < min_shift ? s[c] : min_shift;
  const int32_t max_ls = base - min_shift;
  const int64_t vmin = type_min(in.dtype) - izp, vmax = type_max(in.dtype) - izp;
  if (max_ls > 0 && (in.dtype == DType::kInt32 || vmin < -(1ll << (31 - max_ls)) ||
                     vmax >= (1ll << (31 - max_ls)))) {
    return false;
  }
  const In* x = static_cast<const In*>(in.data);
  Out* y = static_cast<Out*>(out.data);
  const size_t rows = in.elements / channels;
  const int32_t zi = static_cast<int32_t>(izp), zo = static_cast<int32_t>(ozp);
  for (size_t c = 0; c < channels; ++c) {  // per channel: its scale, down the rows
    const int32_t shift = s[c], ls = base - shift > 0 ? base - shift : 0;
    const int32_t k = shift - 31 > (double_round ? 0 : 1) ? shift - 31 : (double_round ? 0 : 1);
    const int64_t mult = m[c];
    const int32_t sign_mask = double_round && shift > 31 ? -1 : 0;
    for (size_t r = 0, i = c; r < rows; ++r, i += channels) {
      const int32_t v = static_cast<int32_t>(x[i]) - zi;
      const int64_t p = static_cast<int32_t>(static_cast<uint32_t>(v) << ls) * mult;
      int32_t t = double_round ? static_cast<int32_t>((p + (1ll << 30)) >> 31) + ((v >> 31) & sign_mask)
                               : static_cast<int32_t>(p >> 31);
      if (k > 0) t = (t >> k) + ((t >> (k - 1)) & 1);
      t = __qadd(t, zo);
      if constexpr (sizeof(Out) == 1) t = __ssat(t, 8);
      if constexpr (sizeof(Out) == 2) t = __ssat(t, 16);
      y[i] = static_cast<Out>(t);
    }
  }
  return true;
}
#endif

#if defined(TOSA_CPU_NEON)
// NEON RESCALE (scale32): the MVE formulation above (vqdmulh/vqrdmulh, vrshl; AArch64's
// SRSHL rounds without overflow as MVE's does), 4 lanes, with the same rule for where it
// runs. NEON has no predication: the channels past the last whole vector of 4 (per channel)
// or the elements past it (per tensor) take apply_scale_32 one value at a time. The output
// range is applied by saturating adds and narrows (SQADD, SQXTN).
template <typename T>
inline int32x4_t neon_load4(const T* x) {
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
inline void neon_store4(T* y, int32x4_t v) {
  if constexpr (sizeof(T) == 1) {
    const int16x4_t h = vqmovn_s32(v);
    const int8x8_t b = vqmovn_s16(vcombine_s16(h, h));
    vst1_lane_s32(reinterpret_cast<int32_t*>(static_cast<void*>(y)), vreinterpret_s32_s8(b), 0);
  } else {
    vst1q_s32(reinterpret_cast<int32_t*>(y), v);
  }
}

template <typename In, typename Out>
bool rescale_neon(const Tensor& in, const Tensor& out, const int32_t* m, const int8_t* s,
                  size_t channels, bool double_round, int64_t izp, int64_t ozp) {
  if (in.dtype == DType::kInt32 && izp != 0) return false;
  const int32_t base = double_round ? 31 : 32;
  int32_t min_shift = 62;
  for (size_t c = 0; c < channels; ++c) min_shift = s[c] < min_shift ? s[c] : min_shift;
  const int32_t max_ls = base - min_shift;
  const int64_t vmin = type_min(in.dtype) - izp, vmax = type_max(in.dtype) - izp;
  if (max_ls > 0 && (in.dtype == DType::kInt32 || vmin < -(1ll << (31 - max_ls)) ||
                     vmax >= (1ll << (31 - max_ls)))) {
    return false;
  }
  const In* x = static_cast<const In*>(in.data);
  Out* y = static_cast<Out*>(out.data);
  const int64_t lo = type_min(out.dtype), hi = type_max(out.dtype);
  const size_t rows = in.elements / channels;
  const int32x4_t zi = vdupq_n_s32(static_cast<int32_t>(izp));
  const int32x4_t zo = vdupq_n_s32(static_cast<int32_t>(ozp));
  // Per tensor: the tensor as one row of 4-lane vectors; per channel: 4 channels at a time
  // down blocks of 32 rows (the block stays in the data cache across the channel groups).
  const size_t count = channels == 1 ? in.elements / 4 : rows;
  const size_t stride = channels == 1 ? 4 : channels;
  const size_t groups = channels == 1 ? 1 : channels / 4;
  const size_t block = channels == 1 ? count : 32;
  for (size_t r0 = 0; r0 < count; r0 += block) {
    const size_t r1 = r0 + block < count ? r0 + block : count;
    for (size_t g = 0; g < groups; ++g) {
      const size_t c0 = 4 * g;
      int32x4_t sh, mult;
      if (channels == 1) {
        sh = vdupq_n_s32(s[0]);
        mult = vdupq_n_s32(m[0]);
      } else {
        const int32_t s4[4] = {s[c0], s[c0 + 1], s[c0 + 2], s[c0 + 3]};
        sh = vld1q_s32(s4);
        mult = vld1q_s32(m + c0);
      }
      const int32x4_t ls = vmaxq_s32(vsubq_s32(vdupq_n_s32(base), sh), vdupq_n_s32(0));
      const int32x4_t nrs =
          vminq_s32(vsubq_s32(vdupq_n_s32(31), sh), vdupq_n_s32(double_round ? 0 : -1));
      const int32x4_t dmask =
          double_round ? vreinterpretq_s32_u32(vcgtq_s32(sh, vdupq_n_s32(31))) : vdupq_n_s32(0);
      const In* xi = x + c0 + r0 * stride;
      Out* yi = y + c0 + r0 * stride;
      for (size_t i = r0; i < r1; ++i, xi += stride, yi += stride) {
        const int32x4_t v = vsubq_s32(neon_load4(xi), zi);
        const int32x4_t a = vshlq_s32(v, ls);
        const int32x4_t t =
            double_round
                ? vaddq_s32(vqrdmulhq_s32(a, mult), vandq_s32(vshrq_n_s32(v, 31), dmask))
                : vqdmulhq_s32(a, mult);
        neon_store4(yi, vqaddq_s32(vrshlq_s32(t, nrs), zo));
      }
    }
  }
  // What the vectors left: the last elements (per tensor) or channels (per channel).
  const size_t c_first = channels == 1 ? 0 : channels / 4 * 4;
  const size_t r_first = channels == 1 ? count * 4 : 0;
  for (size_t i = r_first; i < (channels == 1 ? in.elements : rows); ++i) {
    for (size_t c = c_first; c < channels; ++c) {
      const size_t at = channels == 1 ? i : i * channels + c;
      const int32_t scaled =
          apply_scale_32(static_cast<int64_t>(x[at]) - izp, m[c], s[c], double_round);
      y[at] = static_cast<Out>(clamp64(scaled + ozp, lo, hi));
    }
  }
  return true;
}
#endif

// The typed loop for the pairs the lowering emits (conv/matmul accumulators to activations,
// activations to int32 for elementwise arithmetic); false for any other, which the generic
// loop handles.
bool rescale_fast(const Tensor& in, const Tensor& out, const Tensor& mult, const Tensor& shift,
                  size_t channels, bool scale32, bool double_round, int64_t izp, int64_t ozp) {
  const int8_t* s = static_cast<const int8_t*>(shift.data);
  const int32_t* m32 = static_cast<const int32_t*>(mult.data);
  const auto pair = [&](DType a, DType b) { return in.dtype == a && out.dtype == b; };
#if defined(TOSA_CPU_MVE)
  if (scale32) {
    RescaleVectors vectors =
        pair(DType::kInt32, DType::kInt8)
            ? (double_round ? rescale_vectors<int32_t, int8_t, true>
                            : rescale_vectors<int32_t, int8_t, false>)
        : pair(DType::kInt8, DType::kInt32)
            ? (double_round ? rescale_vectors<int8_t, int32_t, true>
                            : rescale_vectors<int8_t, int32_t, false>)
        : pair(DType::kInt16, DType::kInt32)
            ? (double_round ? rescale_vectors<int16_t, int32_t, true>
                            : rescale_vectors<int16_t, int32_t, false>)
            : nullptr;
    if (vectors && rescale_mve(vectors, in, out, m32, s, channels, double_round, izp, ozp)) {
      return true;
    }
  }
#endif
#if defined(TOSA_CPU_DSP)
  if (scale32 &&
      ((pair(DType::kInt32, DType::kInt8) &&
        rescale_dsp<int32_t, int8_t>(in, out, m32, s, channels, double_round, izp, ozp)) ||
       (pair(DType::kInt8, DType::kInt32) &&
        rescale_dsp<int8_t, int32_t>(in, out, m32, s, channels, double_round, izp, ozp)) ||
       (pair(DType::kInt16, DType::kInt32) &&
        rescale_dsp<int16_t, int32_t>(in, out, m32, s, channels, double_round, izp, ozp)))) {
    return true;
  }
#endif
#if defined(TOSA_CPU_NEON)
  if (scale32 &&
      ((pair(DType::kInt32, DType::kInt8) &&
        rescale_neon<int32_t, int8_t>(in, out, m32, s, channels, double_round, izp, ozp)) ||
       (pair(DType::kInt8, DType::kInt32) &&
        rescale_neon<int8_t, int32_t>(in, out, m32, s, channels, double_round, izp, ozp)) ||
       (pair(DType::kInt16, DType::kInt32) &&
        rescale_neon<int16_t, int32_t>(in, out, m32, s, channels, double_round, izp, ozp)))) {
    return true;
  }
#endif
  if (!scale32) {
    if (!pair(DType::kInt48, DType::kInt16)) return false;
    rescale_run<int64_t, int16_t>(in, out, static_cast<const int16_t*>(mult.data), s, channels,
                                  false, false, izp, ozp);
  } else if (pair(DType::kInt32, DType::kInt16)) {
    rescale_run<int32_t, int16_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt32, DType::kInt32)) {
    rescale_run<int32_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
#if !defined(TOSA_CPU_MVE)  // MVE: rescale_mve above; what it declines takes the generic loop
  } else if (pair(DType::kInt32, DType::kInt8)) {
    rescale_run<int32_t, int8_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt8, DType::kInt32)) {
    rescale_run<int8_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt16, DType::kInt32)) {
    rescale_run<int16_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
#endif
  } else {
    return false;
  }
  return true;
}

}  // namespace

// Attrs: scale32 rounding_mode per_channel input_zp output_zp input_unsigned output_unsigned.
Error rescale(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 7));
  const Tensor &in = op.inputs[0], &mult = op.inputs[1], &shift = op.inputs[2], &out = op.outputs[0];
  const char* where = "RESCALE";
  const bool scale32 = op.attrs[0] != 0, double_round = op.attrs[1] == 3;
  const bool per_channel = op.attrs[2] != 0;
  const int64_t izp = op.attrs[3], ozp = op.attrs[4];
  const bool in_unsigned = op.attrs[5] != 0, out_unsigned = op.attrs[6] != 0;
  ETHOSU_RT_CHECK_ONE_OF(in.dtype != DType::kBool, static_cast<uint32_t>(in.dtype),
                         Error::kUnsupported, where, "input type", "int8, int16, int32, int48");
  ETHOSU_RT_CHECK_ONE_OF(out.dtype == DType::kInt8 || out.dtype == DType::kInt16 ||
                             out.dtype == DType::kInt32,
                         static_cast<uint32_t>(out.dtype), Error::kUnsupported, where,
                         "output type", "int8, int16, int32");
  ETHOSU_RT_CHECK_TRUE(same_shape(in, out), Error::kBadValue, where,
                       "input and output shapes must match");
  ETHOSU_RT_CHECK_TRUE(!(scale32 && in.dtype == DType::kInt48), Error::kBadValue, where,
                       "an int48 input must use scale32 = false");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(mult.dtype), ==,
                  static_cast<uint32_t>(scale32 ? DType::kInt32 : DType::kInt16),
                  Error::kBadValue, where, "multiplier type");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(shift.dtype), ==, static_cast<uint32_t>(DType::kInt8),
                  Error::kBadValue, where, "shift type");
  const size_t channels =
      per_channel ? static_cast<size_t>(in.rank ? in.shape[in.rank - 1] : 1) : 1;
  ETHOSU_RT_CHECK(mult.elements, ==, channels, Error::kBadValue, where, "multiplier length");
  ETHOSU_RT_CHECK(shift.elements, ==, channels, Error::kBadValue, where, "shift length");
  ETHOSU_RT_CHECK_TRUE(mult.data != nullptr && shift.data != nullptr, Error::kUnsupported, where,
                       "multiplier and shift must be constants");
  for (size_t c = 0; c < channels; ++c) {
    ETHOSU_RT_CHECK(load(mult, c), >=, 0, Error::kBadValue, where, "multiplier");
    ETHOSU_RT_CHECK(load(shift, c), >=, 2, Error::kBadValue, where, "shift");
    ETHOSU_RT_CHECK(load(shift, c), <=, 62, Error::kBadValue, where, "shift");
  }
  if (!run) return Error::kOk;
  if (!in_unsigned && !out_unsigned &&
      rescale_fast(in, out, mult, shift, channels, scale32, double_round, izp, ozp)) {
    return Error::kOk;
  }
  const int64_t lo = out_unsigned ? 0 : type_min(out.dtype);
  const int64_t hi = out_unsigned ? 2 * type_max(out.dtype) + 1 : type_max(out.dtype);
  const uint64_t in_mask = (1ull << (8 * dtype_size(in.dtype) - 1) << 1) - 1;
  for (size_t i = 0; i < in.elements; ++i) {
    int64_t value = load(in, i);
    if (in_unsigned) value = static_cast<int64_t>(static_cast<uint64_t>(value) & in_mask);
    value -= izp;
    const size_t c = per_channel ? i % channels : 0;
    const int32_t m = static_cast<int32_t>(load(mult, c));
    const int32_t s = static_cast<int32_t>(load(shift, c));
    const int64_t result = scale32 ? apply_scale_32(value, m, s, double_round)
                                   : apply_scale_16(value, m, s);
    store(out, i, clamp64(result + ozp, lo, hi));
  }
  return Error::kOk;
}

Error table(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 2, 1, 0));
  const Tensor &in = op.inputs[0], &tab = op.inputs[1], &out = op.outputs[0];
  const char* where = "TABLE";
  const bool int8 = in.dtype == DType::kInt8 && tab.dtype == DType::kInt8 &&
                    out.dtype == DType::kInt8 && tab.elements == 256;
  const bool int16 = in.dtype == DType::kInt16 && tab.dtype == DType::kInt16 &&
                     out.dtype == DType::kInt32 && tab.elements == 513;
  ETHOSU_RT_CHECK_ONE_OF(int8 || int16, static_cast<uint32_t>(in.dtype), Error::kUnsupported,
                         where, "input/table/output types",
                         "int8/int8[256]/int8 or int16/int16[513]/int32");
  ETHOSU_RT_CHECK_TRUE(same_shape(in, out), Error::kBadValue, where,
                       "input and output shapes must match");
  if (!run) return Error::kOk;
  if (int8) {
    const int8_t* t = static_cast<const int8_t*>(tab.data);
    const int8_t* x = static_cast<const int8_t*>(in.data);
    int8_t* y = static_cast<int8_t*>(out.data);
    for (size_t i = 0; i < in.elements; ++i) y[i] = t[x[i] + 128];
    return Error::kOk;
  }
  for (size_t i = 0; i < in.elements; ++i) {
    const int32_t v = static_cast<int32_t>(load(in, i)) + 32768;
    const int32_t index = v >> 7, fraction = v & 0x7F;
    const int32_t base = static_cast<int32_t>(load(tab, static_cast<size_t>(index)));
    const int32_t next = static_cast<int32_t>(load(tab, static_cast<size_t>(index) + 1));
    store(out, i, static_cast<int64_t>(base) * 128 + (next - base) * fraction);
  }
  return Error::kOk;
}

// Attrs: shift (int32 inputs only; rounds the 64-bit product right by it).
Error mul(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 2, 1, 1));
  const Tensor &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const char* where = "MUL";
  const int32_t shift = op.attrs[0];
  ETHOSU_RT_CHECK_ONE_OF(a.dtype == DType::kInt8 || a.dtype == DType::kInt16 ||
                             a.dtype == DType::kInt32,
                         static_cast<uint32_t>(a.dtype), Error::kUnsupported, where,
                         "input type", "int8, int16, int32");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(b.dtype), ==, static_cast<uint32_t>(a.dtype),
                  Error::kBadValue, where, "second input type");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(DType::kInt32),
                  Error::kBadValue, where, "output type");
  ETHOSU_RT_CHECK(shift, >=, 0, Error::kBadValue, where, "shift");
  ETHOSU_RT_CHECK(shift, <=, 63, Error::kBadValue, where, "shift");
  if (a.dtype != DType::kInt32) {
    ETHOSU_RT_CHECK(shift, ==, 0, Error::kBadValue, where, "shift of int8/int16 inputs");
  }
  ETHOSU_RT_TRY(check_broadcast(op, a, out));
  ETHOSU_RT_TRY(check_broadcast(op, b, out));
  if (!run) return Error::kOk;
  broadcast3(a, b, out, out, [&](size_t ia, size_t ib, size_t, size_t o) {
    const int64_t product = load(a, ia) * load(b, ib);
    if (shift > 0) {
      store(out, o, (product + (static_cast<int64_t>(1) << (shift - 1))) >> shift);
    } else {
      store(out, o, product);
    }
  });
  return Error::kOk;
}

}  // namespace tosa_cpu
