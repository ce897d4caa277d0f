// CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D, MATMUL, AVG_POOL2D, MAX_POOL2D (NHWC), as the
// TOSA 1.0 pseudo-code: int8 x int8 -> int32 and int16 x int8 -> int48, zero points
// subtracted before the product, padding contributes nothing, bias added last.
#include <string.h>

#include <type_traits>

#include "isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"

// Operators the example models do not use (or barely), built for size where the file is
// built for speed (-O2 on bare metal): keeps the library under its 32 KiB goal.
#if defined(__GNUC__) && !defined(__clang__)
#define TOSA_CPU_FOR_SIZE __attribute__((optimize("Os")))
#else
#define TOSA_CPU_FOR_SIZE
#endif
// Loops an ISA variant replaces on its hot path, for size there (MVE: depthwise with M = 1,
// int8 average pooling, the int8 CONV2D's per-pixel work: its loop over pixels costs 1-3%).
#if defined(TOSA_CPU_MVE)
#define TOSA_CPU_FALLBACK TOSA_CPU_FOR_SIZE
#else
#define TOSA_CPU_FALLBACK
#endif

namespace tosa_cpu {
namespace {

struct Conv {
  int32_t n, ih, iw, ic, oh, ow, oc, kh, kw, m;
  int32_t pad_top, pad_bottom, pad_left, pad_right, stride_y, stride_x, dil_y, dil_x;
  int32_t izp, wzp;
};

// Output extent of a convolution/pool window along one axis; -1 when not a whole number.
int32_t out_extent(int32_t in, int32_t pad_a, int32_t pad_b, int32_t k, int32_t dil,
                   int32_t stride) {
  const int64_t span = static_cast<int64_t>(in) - 1 + pad_a + pad_b - static_cast<int64_t>(k - 1) * dil;
  if (stride <= 0 || span < 0 || span % stride != 0) return -1;
  return static_cast<int32_t>(span / stride + 1);
}

Error check_types(const OpArgs& op, const Tensor& in, const Tensor& w, const Tensor& bias,
                  const Tensor& out) {
  const char* where = op_name(op.op);
  const bool int8 = in.dtype == DType::kInt8 && out.dtype == DType::kInt32 &&
                    bias.dtype == DType::kInt32;
  const bool int16 = in.dtype == DType::kInt16 && out.dtype == DType::kInt48 &&
                     bias.dtype == DType::kInt48;
  ETHOSU_RT_CHECK_ONE_OF(int8 || int16, static_cast<uint32_t>(in.dtype), Error::kUnsupported,
                         where, "input/bias/output types",
                         "int8/int32/int32 or int16/int48/int48");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(w.dtype), ==, static_cast<uint32_t>(DType::kInt8),
                  Error::kUnsupported, where, "weight type");
  ETHOSU_RT_CHECK(in.rank, ==, 4u, Error::kBadValue, where, "input rank");
  ETHOSU_RT_CHECK(w.rank, ==, 4u, Error::kBadValue, where, "weight rank");
  ETHOSU_RT_CHECK(out.rank, ==, 4u, Error::kBadValue, where, "output rank");
  ETHOSU_RT_CHECK(bias.rank, ==, 1u, Error::kBadValue, where, "bias rank");
  return Error::kOk;
}

Error check_window(const OpArgs& op, const Conv& c) {
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK(c.stride_y, >=, 1, Error::kBadValue, where, "stride_y");
  ETHOSU_RT_CHECK(c.stride_x, >=, 1, Error::kBadValue, where, "stride_x");
  ETHOSU_RT_CHECK(c.dil_y, >=, 1, Error::kBadValue, where, "dilation_y");
  ETHOSU_RT_CHECK(c.dil_x, >=, 1, Error::kBadValue, where, "dilation_x");
  ETHOSU_RT_CHECK(c.pad_top, >=, 0, Error::kBadValue, where, "pad_top");
  ETHOSU_RT_CHECK(c.pad_bottom, >=, 0, Error::kBadValue, where, "pad_bottom");
  ETHOSU_RT_CHECK(c.pad_left, >=, 0, Error::kBadValue, where, "pad_left");
  ETHOSU_RT_CHECK(c.pad_right, >=, 0, Error::kBadValue, where, "pad_right");
  ETHOSU_RT_CHECK(c.oh, ==, out_extent(c.ih, c.pad_top, c.pad_bottom, c.kh, c.dil_y, c.stride_y),
                  Error::kBadValue, where, "output height");
  ETHOSU_RT_CHECK(c.ow, ==, out_extent(c.iw, c.pad_left, c.pad_right, c.kw, c.dil_x, c.stride_x),
                  Error::kBadValue, where, "output width");
  return Error::kOk;
}

void read_window(const int32_t* a, Conv* c) {
  c->pad_top = a[0];
  c->pad_bottom = a[1];
  c->pad_left = a[2];
  c->pad_right = a[3];
  c->stride_y = a[4];
  c->stride_x = a[5];
}

// sum over the input channels of (x - input_zp) * (w - weight_zp) through the ISA's dot
// products (isa.h): int8 in 32 bits, int16 (zero point 0) in 64.
template <typename In>
int64_t channel_dot(const In* x, const int8_t* w, const Conv& c, int32_t len) {
  if constexpr (std::is_same<In, int8_t>::value) {
    return dot8_corrected(dot8(x, w, len), len, c.izp, c.wzp);
  } else {
    return dot16x8(x, w, len, c.wzp);  // check_zp: an int16 input's zero point is 0
  }
}

// One output's accumulator for every output channel from a contiguous input window `x` of
// `len` values laid out like each output channel's weights.
template <typename In>
void conv2d_pixel(const Conv& c, const In* x, int32_t len, const int8_t* w, const Tensor& bias,
                  const Tensor& out, size_t o) {
  const bool bias_bc = bias.shape[0] == 1;
  for (int32_t oc = 0; oc < c.oc; ++oc) {
    const int64_t acc = channel_dot(x, w + static_cast<size_t>(oc) * len, c, len);
    // check_types: int8 -> int32 bias and output, int16 -> int48 (stored as int64).
    if constexpr (std::is_same<In, int8_t>::value) {
      const int32_t* b = static_cast<const int32_t*>(bias.data);
      static_cast<int32_t*>(out.data)[o + oc] = wrap32(acc + b[bias_bc ? 0 : oc]);
    } else {
      const int64_t* b = static_cast<const int64_t*>(bias.data);
      static_cast<int64_t*>(out.data)[o + oc] = wrap48(acc + b[bias_bc ? 0 : oc]);
    }
  }
}

#if defined(TOSA_CPU_MVE) || defined(TOSA_CPU_DSP)
#define TOSA_CPU_CONV_BLOCKED 1
// int8 CONV2D on MVE (DSP): four (two) output channels per pass over the window, each input
// vector loaded once for all their weight rows, and the zero-point terms that do not depend
// on the window folded into the bias once per operator:
//   sum (x - xzp)(w - wzp) + b = xw - wzp * x_sum + (b - xzp * w_sum + n * xzp * wzp),
// all in wrapping 32-bit arithmetic, which is the portable kernel's wrap32 of the same sum.
constexpr int32_t kConvMaxOc = 256;

void conv2d_fold_bias(const Conv& c, int32_t len, const int8_t* w, const Tensor& bias,
                      uint32_t* folded) {
  const int32_t* b = static_cast<const int32_t*>(bias.data);
  for (int32_t oc = 0; oc < c.oc; ++oc, w += len) {
    int32_t ws = 0;
#if defined(TOSA_CPU_MVE)
    for (int32_t i = 0; i < len; i += 16) {
      ws = vaddvaq_s8(ws, vldrbq_z_s8(w + i, vctp8q(static_cast<uint32_t>(len - i))));
    }
#else
    for (int32_t i = 0; i < len; ++i) ws += w[i];
#endif
    folded[oc] = static_cast<uint32_t>(b[bias.shape[0] == 1 ? 0 : oc]) -
                 static_cast<uint32_t>(c.izp) * static_cast<uint32_t>(ws) +
                 static_cast<uint32_t>(len) * static_cast<uint32_t>(c.izp * c.wzp);
  }
}
#endif

#if defined(TOSA_CPU_DSP)
// Two output channels per pass: SMLAD on sign-extended even/odd byte pairs, the input's
// pairs extracted once for both weight rows.
void conv2d_pixel_blocked(const Conv& c, const int8_t* x, int32_t len, const int8_t* w,
                          const uint32_t* folded, int32_t* y) {
  int32_t xs = 0;
  if (c.wzp != 0) {
    for (int32_t i = 0; i < len; ++i) xs += x[i];
  }
  const uint32_t xcorr = static_cast<uint32_t>(c.wzp) * static_cast<uint32_t>(xs);
  const int32_t body = len & ~3;
  int32_t oc = 0;
  for (; oc + 2 <= c.oc; oc += 2, w += 2 * len) {
    int32_t a0 = 0, a1 = 0;
    const int8_t* w1 = w + len;
    for (int32_t i = 0; i < body; i += 4) {
      int32_t xv, v0, v1;
      memcpy(&xv, x + i, 4);
      memcpy(&v0, w + i, 4);
      memcpy(&v1, w1 + i, 4);
      const int16x2_t x02 = __sxtb16(xv), x13 = __sxtb16(ror8(xv));
      a0 = __smlad(x02, __sxtb16(v0), a0);
      a0 = __smlad(x13, __sxtb16(ror8(v0)), a0);
      a1 = __smlad(x02, __sxtb16(v1), a1);
      a1 = __smlad(x13, __sxtb16(ror8(v1)), a1);
    }
    for (int32_t i = body; i < len; ++i) {
      a0 += x[i] * w[i];
      a1 += x[i] * w1[i];
    }
    y[oc] = static_cast<int32_t>(static_cast<uint32_t>(a0) - xcorr + folded[oc]);
    y[oc + 1] = static_cast<int32_t>(static_cast<uint32_t>(a1) - xcorr + folded[oc + 1]);
  }
  if (oc < c.oc) {
    const Dot8 d = dot8(x, w, len);
    y[oc] = static_cast<int32_t>(static_cast<uint32_t>(d.xw) - xcorr + folded[oc]);
  }
}
#endif

#if defined(TOSA_CPU_MVE)
void conv2d_pixel_blocked(const Conv& c, const int8_t* x, int32_t len, const int8_t* w,
                      const uint32_t* folded, int32_t* y) {
  int32_t xs = 0;
  if (c.wzp != 0) {
    for (int32_t i = 0; i < len; i += 16) {
      xs = vaddvaq_s8(xs, vldrbq_z_s8(x + i, vctp8q(static_cast<uint32_t>(len - i))));
    }
  }
  const uint32_t xcorr = static_cast<uint32_t>(c.wzp) * static_cast<uint32_t>(xs);
  int32_t oc = 0;
  for (; oc + 4 <= c.oc; oc += 4, w += 4 * len) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t i = 0; i < len; i += 16) {
      const mve_pred16_t p = vctp8q(static_cast<uint32_t>(len - i));
      const int8x16_t xv = vldrbq_z_s8(x + i, p);
      a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w + i, p));
      a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w + len + i, p));
      a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w + 2 * len + i, p));
      a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w + 3 * len + i, p));
    }
    y[oc] = static_cast<int32_t>(static_cast<uint32_t>(a0) - xcorr + folded[oc]);
    y[oc + 1] = static_cast<int32_t>(static_cast<uint32_t>(a1) - xcorr + folded[oc + 1]);
    y[oc + 2] = static_cast<int32_t>(static_cast<uint32_t>(a2) - xcorr + folded[oc + 2]);
    y[oc + 3] = static_cast<int32_t>(static_cast<uint32_t>(a3) - xcorr + folded[oc + 3]);
  }
  for (; oc < c.oc; ++oc, w += len) {
    int32_t a = 0;
    for (int32_t i = 0; i < len; i += 16) {
      const mve_pred16_t p = vctp8q(static_cast<uint32_t>(len - i));
      a = vmladavaq_s8(a, vldrbq_z_s8(x + i, p), vldrbq_z_s8(w + i, p));
    }
    y[oc] = static_cast<int32_t>(static_cast<uint32_t>(a) - xcorr + folded[oc]);
  }
}
#endif

// CONV2D as one dot product per output value: the window (KH x KW x IC, laid out like the
// weights) is used in place when it is contiguous in the input (1 x KW windows inside the
// input), else gathered into a stack buffer with padding taps set to the input zero point,
// which contribute (zp - zp) * w = 0 exactly. Windows larger than the buffer fall back to a
// dot product per kernel tap.
template <typename In>
TOSA_CPU_FALLBACK void conv2d_run(const Conv& c, const In* in, const int8_t* w, const Tensor& bias,
                const Tensor& out) {
  constexpr int32_t kWindow = 640;
  In window[kWindow];
  const int32_t len = c.kh * c.kw * c.ic;
#if defined(TOSA_CPU_CONV_BLOCKED)
  uint32_t folded[std::is_same<In, int8_t>::value ? kConvMaxOc : 1];
  // Folding reads every weight once: worth it from two output pixels on (a fully connected
  // layer, one pixel, keeps the plain dot products).
  const bool blocked = std::is_same<In, int8_t>::value && c.oc <= kConvMaxOc &&
                       static_cast<int64_t>(c.n) * c.oh * c.ow > 1;
  if constexpr (std::is_same<In, int8_t>::value) {
    if (blocked) conv2d_fold_bias(c, len, w, bias, folded);
  }
#endif
  const auto pixel = [&](const In* x, size_t o) {
#if defined(TOSA_CPU_CONV_BLOCKED)
    if constexpr (std::is_same<In, int8_t>::value) {
      if (blocked) {
        conv2d_pixel_blocked(c, x, len, w, folded, static_cast<int32_t*>(out.data) + o);
        return;
      }
    }
#endif
    conv2d_pixel(c, x, len, w, bias, out, o);
  };
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.oc)) {
        const int32_t iy = oy * c.stride_y - c.pad_top;
        const int32_t ix = ox * c.stride_x - c.pad_left;
        const In* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
        const bool inside = iy >= 0 && iy + (c.kh - 1) * c.dil_y < c.ih && ix >= 0 &&
                            ix + (c.kw - 1) * c.dil_x < c.iw;
        if (inside && c.kh == 1 && (c.kw == 1 || c.dil_x == 1)) {
          pixel(image + (static_cast<size_t>(iy) * c.iw + ix) * c.ic, o);
          continue;
        }
        if (len <= kWindow) {
          In* p = window;
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t y = iy + ky * c.dil_y;
            for (int32_t kx = 0; kx < c.kw; ++kx, p += c.ic) {
              const int32_t x = ix + kx * c.dil_x;
              if (y < 0 || y >= c.ih || x < 0 || x >= c.iw) {
                for (int32_t i = 0; i < c.ic; ++i) p[i] = static_cast<In>(c.izp);
              } else {
                memcpy(p, image + (static_cast<size_t>(y) * c.iw + x) * c.ic,
                       sizeof(In) * static_cast<size_t>(c.ic));
              }
            }
          }
          pixel(window, o);
          continue;
        }
        for (int32_t oc = 0; oc < c.oc; ++oc) {  // a large window: a dot product per tap
          int64_t acc = 0;
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t y = iy + ky * c.dil_y;
            if (y < 0 || y >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t x = ix + kx * c.dil_x;
              if (x < 0 || x >= c.iw) continue;
              acc += channel_dot(image + (static_cast<size_t>(y) * c.iw + x) * c.ic,
                                 w + ((static_cast<size_t>(oc) * c.kh + ky) * c.kw + kx) * c.ic,
                                 c, c.ic);
            }
          }
          // Same typed store as conv2d_pixel, through the generic path (rare).
          store(out, o + oc, acc + load(bias, bias.shape[0] == 1 ? 0 : static_cast<size_t>(oc)));
        }
      }
    }
  }
}

#if defined(TOSA_CPU_MVE)
// Depthwise int8 with one weight per channel (M = 1): 8 channels per step, widened to 16
// bits, zero points subtracted, products of even and odd lanes accumulated in 32 bits.
void depthwise_mve(const Conv& c, const int8_t* in, const int8_t* w, const Tensor& bias,
                   const Tensor& out) {
  const bool bias_bc = bias.shape[0] == 1;
  const int16x8_t izp = vdupq_n_s16(static_cast<int16_t>(c.izp));
  const int16x8_t wzp = vdupq_n_s16(static_cast<int16_t>(c.wzp));
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t iy = oy * c.stride_y - c.pad_top;
        const int32_t ix = ox * c.stride_x - c.pad_left;
        for (int32_t c0 = 0; c0 < c.ic; c0 += 8) {
          const mve_pred16_t p = vctp16q(static_cast<uint32_t>(c.ic - c0));
          int32x4_t even = vdupq_n_s32(0), odd = vdupq_n_s32(0);
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t y = iy + ky * c.dil_y;
            if (y < 0 || y >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t x = ix + kx * c.dil_x;
              if (x < 0 || x >= c.iw) continue;
              const int8_t* ip = in + ((static_cast<size_t>(n) * c.ih + y) * c.iw + x) * c.ic + c0;
              const int8_t* wp = w + (static_cast<size_t>(ky) * c.kw + kx) * c.ic + c0;
              const int16x8_t xv = vsubq_s16(vldrbq_z_s16(ip, p), izp);
              const int16x8_t wv = vsubq_s16(vldrbq_z_s16(wp, p), wzp);
              even = vaddq_s32(even, vmullbq_int_s16(xv, wv));
              odd = vaddq_s32(odd, vmulltq_int_s16(xv, wv));
            }
          }
          if (c0 + 8 <= c.ic) {  // bias added and stored, even and odd lanes interleaved
            const int32_t* b = static_cast<const int32_t*>(bias.data);
            int32x4x2_t acc;
            if (bias_bc) {
              acc.val[0] = vaddq_n_s32(even, b[0]);
              acc.val[1] = vaddq_n_s32(odd, b[0]);
            } else {
              const int32x4x2_t bv = vld2q_s32(b + c0);
              acc.val[0] = vaddq_s32(even, bv.val[0]);
              acc.val[1] = vaddq_s32(odd, bv.val[1]);
            }
            vst2q_s32(static_cast<int32_t*>(out.data) + o + c0, acc);
            continue;
          }
          int32_t e[4], d[4];
          vst1q_s32(e, even);
          vst1q_s32(d, odd);
          for (int32_t j = 0; j < 8 && c0 + j < c.ic; ++j) {
            const size_t oc = static_cast<size_t>(c0 + j);
            const int64_t acc = (j % 2 == 0) ? e[j / 2] : d[j / 2];
            store(out, o + oc, acc + load(bias, bias_bc ? 0 : oc));
          }
        }
      }
    }
  }
}
#endif

#if defined(TOSA_CPU_DSP)
// Depthwise int8 with M = 1 on the DSP extension: 4 channels per word, sign-extended into
// halfword pairs (0, 2) and (1, 3), zero points subtracted in both halves (SSUB16: x - zp
// fits in 16 bits), one SMLABB/SMLATT per channel and tap into 32-bit accumulators. The
// last IC % 4 channels take the scalar loop.
void depthwise_dsp(const Conv& c, const int8_t* in, const int8_t* w, const Tensor& bias,
                   const Tensor& out) {
  const bool bias_bc = bias.shape[0] == 1;
  const int32_t* b = static_cast<const int32_t*>(bias.data);
  int32_t* y = static_cast<int32_t*>(out.data);
  const int32_t izp = static_cast<int32_t>((static_cast<uint32_t>(c.izp) & 0xFFFF) * 0x10001u);
  const int32_t wzp = static_cast<int32_t>((static_cast<uint32_t>(c.wzp) & 0xFFFF) * 0x10001u);
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t iy = oy * c.stride_y - c.pad_top;
        const int32_t ix = ox * c.stride_x - c.pad_left;
        for (int32_t c0 = 0; c0 < c.ic; c0 += 4) {
          const int32_t lanes = c.ic - c0 < 4 ? c.ic - c0 : 4;
          int32_t acc[4] = {0, 0, 0, 0};
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t yy = iy + ky * c.dil_y;
            if (yy < 0 || yy >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t xx = ix + kx * c.dil_x;
              if (xx < 0 || xx >= c.iw) continue;
              const int8_t* ip = image + (static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0;
              const int8_t* wp = w + (static_cast<size_t>(ky) * c.kw + kx) * c.ic + c0;
              if (lanes < 4) {
                for (int32_t j = 0; j < lanes; ++j) acc[j] += (ip[j] - c.izp) * (wp[j] - c.wzp);
                continue;
              }
              int32_t xv, wv;
              memcpy(&xv, ip, 4);
              memcpy(&wv, wp, 4);
              const int16x2_t x02 = __ssub16(__sxtb16(xv), izp);
              const int16x2_t x13 = __ssub16(__sxtb16(ror8(xv)), izp);
              const int16x2_t w02 = __ssub16(__sxtb16(wv), wzp);
              const int16x2_t w13 = __ssub16(__sxtb16(ror8(wv)), wzp);
              acc[0] = __smlabb(x02, w02, acc[0]);
              acc[2] = __smlatt(x02, w02, acc[2]);
              acc[1] = __smlabb(x13, w13, acc[1]);
              acc[3] = __smlatt(x13, w13, acc[3]);
            }
          }
          for (int32_t j = 0; j < lanes; ++j) {
            y[o + c0 + j] = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) +
                                                 static_cast<uint32_t>(b[bias_bc ? 0 : c0 + j]));
          }
        }
      }
    }
  }
}
#endif

#if defined(TOSA_CPU_NEON)
// Depthwise int8 with M = 1 on NEON: 8 channels per step, widened to 16 bits with the zero
// points subtracted (x - zp fits in 16 bits), low and high halves multiplied and
// accumulated into 32-bit lanes (SMLAL/SMLAL2), bias added and stored. The last IC % 8
// channels take the scalar loop.
void depthwise_neon(const Conv& c, const int8_t* in, const int8_t* w, const Tensor& bias,
                    const Tensor& out) {
  const bool bias_bc = bias.shape[0] == 1;
  const int32_t* b = static_cast<const int32_t*>(bias.data);
  int32_t* y = static_cast<int32_t*>(out.data);
  const int16x8_t izp = vdupq_n_s16(static_cast<int16_t>(c.izp));
  const int16x8_t wzp = vdupq_n_s16(static_cast<int16_t>(c.wzp));
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t iy = oy * c.stride_y - c.pad_top;
        const int32_t ix = ox * c.stride_x - c.pad_left;
        int32_t c0 = 0;
        for (; c0 + 8 <= c.ic; c0 += 8) {
          int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t yy = iy + ky * c.dil_y;
            if (yy < 0 || yy >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t xx = ix + kx * c.dil_x;
              if (xx < 0 || xx >= c.iw) continue;
              const int8_t* ip = image + (static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0;
              const int8_t* wp = w + (static_cast<size_t>(ky) * c.kw + kx) * c.ic + c0;
              const int16x8_t xv = vsubq_s16(vmovl_s8(vld1_s8(ip)), izp);
              const int16x8_t wv = vsubq_s16(vmovl_s8(vld1_s8(wp)), wzp);
              lo = vmlal_s16(lo, vget_low_s16(xv), vget_low_s16(wv));
              hi = vmlal_high_s16(hi, xv, wv);
            }
          }
          const int32x4_t b0 = bias_bc ? vdupq_n_s32(b[0]) : vld1q_s32(b + c0);
          const int32x4_t b1 = bias_bc ? vdupq_n_s32(b[0]) : vld1q_s32(b + c0 + 4);
          vst1q_s32(y + o + c0, vaddq_s32(lo, b0));
          vst1q_s32(y + o + c0 + 4, vaddq_s32(hi, b1));
        }
        for (; c0 < c.ic; ++c0) {  // the last IC % 8 channels
          int32_t acc = 0;
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t yy = iy + ky * c.dil_y;
            if (yy < 0 || yy >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t xx = ix + kx * c.dil_x;
              if (xx < 0 || xx >= c.iw) continue;
              acc += (image[(static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0] - c.izp) *
                     (w[(static_cast<size_t>(ky) * c.kw + kx) * c.ic + c0] - c.wzp);
            }
          }
          y[o + c0] = static_cast<int32_t>(static_cast<uint32_t>(acc) +
                                           static_cast<uint32_t>(b[bias_bc ? 0 : c0]));
        }
      }
    }
  }
}
#endif

template <typename In>
TOSA_CPU_FALLBACK void depthwise_run(const Conv& c, const In* in, const int8_t* w, const Tensor& bias,
                   const Tensor& out) {
  const bool bias_bc = bias.shape[0] == 1;
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox) {
        const int32_t iy = oy * c.stride_y - c.pad_top;
        const int32_t ix = ox * c.stride_x - c.pad_left;
        for (int32_t ch = 0; ch < c.ic; ++ch) {
          for (int32_t m = 0; m < c.m; ++m, ++o) {
            int64_t acc = 0;
            for (int32_t ky = 0; ky < c.kh; ++ky) {
              const int32_t y = iy + ky * c.dil_y;
              if (y < 0 || y >= c.ih) continue;
              for (int32_t kx = 0; kx < c.kw; ++kx) {
                const int32_t x = ix + kx * c.dil_x;
                if (x < 0 || x >= c.iw) continue;
                const int64_t v =
                    in[((static_cast<size_t>(n) * c.ih + y) * c.iw + x) * c.ic + ch] - c.izp;
                const int64_t wv =
                    w[((static_cast<size_t>(ky) * c.kw + kx) * c.ic + ch) * c.m + m] - c.wzp;
                acc += v * wv;
              }
            }
            const size_t oc = static_cast<size_t>(ch) * c.m + m;
            store(out, o, acc + load(bias, bias_bc ? 0 : oc));
          }
        }
      }
    }
  }
}

template <typename In>
TOSA_CPU_FOR_SIZE void transpose_conv_run(const Conv& c, const In* in, const int8_t* w, const Tensor& bias,
                        const Tensor& out) {
  const bool bias_bc = bias.shape[0] == 1;
  for (size_t o = 0; o < out.elements; ++o) {
    store(out, o, load(bias, bias_bc ? 0 : o % static_cast<size_t>(c.oc)));
  }
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t iy = 0; iy < c.ih; ++iy) {
      for (int32_t ix = 0; ix < c.iw; ++ix) {
        const In* ip = in + ((static_cast<size_t>(n) * c.ih + iy) * c.iw + ix) * c.ic;
        for (int32_t ky = 0; ky < c.kh; ++ky) {
          const int32_t oy = iy * c.stride_y + c.pad_top + ky;
          if (oy < 0 || oy >= c.oh) continue;
          for (int32_t kx = 0; kx < c.kw; ++kx) {
            const int32_t ox = ix * c.stride_x + c.pad_left + kx;
            if (ox < 0 || ox >= c.ow) continue;
            const size_t ob = ((static_cast<size_t>(n) * c.oh + oy) * c.ow + ox) * c.oc;
            for (int32_t oc = 0; oc < c.oc; ++oc) {
              const int8_t* wp = w + ((static_cast<size_t>(oc) * c.kh + ky) * c.kw + kx) * c.ic;
              store(out, ob + oc, load(out, ob + oc) + channel_dot(ip, wp, c, c.ic));
            }
          }
        }
      }
    }
  }
}

Error check_bias(const OpArgs& op, const Tensor& bias, int32_t channels) {
  ETHOSU_RT_CHECK_TRUE(bias.shape[0] == 1 || bias.shape[0] == channels, Error::kBadValue,
                       op_name(op.op), "bias length must be 1 or the output channels");
  return Error::kOk;
}

Error check_zp(const OpArgs& op, DType dtype, int32_t zp) {
  // TOSA: a non-zero zero point only for int8 operands.
  if (dtype != DType::kInt8) {
    ETHOSU_RT_CHECK(zp, ==, 0, Error::kBadValue, op_name(op.op), "zero point of an int16 operand");
  }
  ETHOSU_RT_CHECK(zp, >=, -128, Error::kBadValue, op_name(op.op), "zero point");
  ETHOSU_RT_CHECK(zp, <=, 127, Error::kBadValue, op_name(op.op), "zero point");
  return Error::kOk;
}

}  // namespace

Error conv2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 10));
  const Tensor &in = op.inputs[0], &w = op.inputs[1], &bias = op.inputs[2], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_types(op, in, w, bias, out));
  Conv c{};
  c.n = in.shape[0]; c.ih = in.shape[1]; c.iw = in.shape[2]; c.ic = in.shape[3];
  c.oc = w.shape[0]; c.kh = w.shape[1]; c.kw = w.shape[2];
  c.oh = out.shape[1]; c.ow = out.shape[2];
  read_window(op.attrs, &c);
  c.dil_y = op.attrs[6]; c.dil_x = op.attrs[7]; c.izp = op.attrs[8]; c.wzp = op.attrs[9];
  ETHOSU_RT_CHECK(w.shape[3], ==, c.ic, Error::kBadValue, "CONV2D", "weight input channels");
  ETHOSU_RT_CHECK(out.shape[0], ==, c.n, Error::kBadValue, "CONV2D", "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c.oc, Error::kBadValue, "CONV2D", "output channels");
  ETHOSU_RT_TRY(check_bias(op, bias, c.oc));
  ETHOSU_RT_TRY(check_window(op, c));
  ETHOSU_RT_TRY(check_zp(op, in.dtype, c.izp));
  ETHOSU_RT_TRY(check_zp(op, w.dtype, c.wzp));
  if (!run) return Error::kOk;
  const int8_t* wp = static_cast<const int8_t*>(w.data);
  if (in.dtype == DType::kInt8) {
    conv2d_run(c, static_cast<const int8_t*>(in.data), wp, bias, out);
  } else {
    conv2d_run(c, static_cast<const int16_t*>(in.data), wp, bias, out);
  }
  return Error::kOk;
}

Error depthwise_conv2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 10));
  const Tensor &in = op.inputs[0], &w = op.inputs[1], &bias = op.inputs[2], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_types(op, in, w, bias, out));
  Conv c{};
  c.n = in.shape[0]; c.ih = in.shape[1]; c.iw = in.shape[2]; c.ic = in.shape[3];
  c.kh = w.shape[0]; c.kw = w.shape[1]; c.m = w.shape[3];
  c.oh = out.shape[1]; c.ow = out.shape[2]; c.oc = c.ic * c.m;
  read_window(op.attrs, &c);
  c.dil_y = op.attrs[6]; c.dil_x = op.attrs[7]; c.izp = op.attrs[8]; c.wzp = op.attrs[9];
  ETHOSU_RT_CHECK(w.shape[2], ==, c.ic, Error::kBadValue, "DEPTHWISE_CONV2D", "weight channels");
  ETHOSU_RT_CHECK(out.shape[0], ==, c.n, Error::kBadValue, "DEPTHWISE_CONV2D", "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c.oc, Error::kBadValue, "DEPTHWISE_CONV2D",
                  "output channels (C x M)");
  ETHOSU_RT_TRY(check_bias(op, bias, c.oc));
  ETHOSU_RT_TRY(check_window(op, c));
  ETHOSU_RT_TRY(check_zp(op, in.dtype, c.izp));
  ETHOSU_RT_TRY(check_zp(op, w.dtype, c.wzp));
  if (!run) return Error::kOk;
  const int8_t* wp = static_cast<const int8_t*>(w.data);
  if (in.dtype == DType::kInt8) {
#if defined(TOSA_CPU_MVE)
    if (c.m == 1) {
      depthwise_mve(c, static_cast<const int8_t*>(in.data), wp, bias, out);
      return Error::kOk;
    }
#elif defined(TOSA_CPU_DSP)
    if (c.m == 1) {
      depthwise_dsp(c, static_cast<const int8_t*>(in.data), wp, bias, out);
      return Error::kOk;
    }
#elif defined(TOSA_CPU_NEON)
    if (c.m == 1) {
      depthwise_neon(c, static_cast<const int8_t*>(in.data), wp, bias, out);
      return Error::kOk;
    }
#endif
    depthwise_run(c, static_cast<const int8_t*>(in.data), wp, bias, out);
  } else {
    depthwise_run(c, static_cast<const int16_t*>(in.data), wp, bias, out);
  }
  return Error::kOk;
}

TOSA_CPU_FOR_SIZE Error transpose_conv2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 8));
  const Tensor &in = op.inputs[0], &w = op.inputs[1], &bias = op.inputs[2], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_types(op, in, w, bias, out));
  Conv c{};
  c.n = in.shape[0]; c.ih = in.shape[1]; c.iw = in.shape[2]; c.ic = in.shape[3];
  c.oc = w.shape[0]; c.kh = w.shape[1]; c.kw = w.shape[2];
  c.oh = out.shape[1]; c.ow = out.shape[2];
  read_window(op.attrs, &c);  // out_pad top, bottom, left, right; stride
  c.izp = op.attrs[6]; c.wzp = op.attrs[7];
  const char* where = "TRANSPOSE_CONV2D";
  ETHOSU_RT_CHECK(w.shape[3], ==, c.ic, Error::kBadValue, where, "weight input channels");
  ETHOSU_RT_CHECK(out.shape[0], ==, c.n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c.oc, Error::kBadValue, where, "output channels");
  ETHOSU_RT_CHECK(c.stride_y, >=, 1, Error::kBadValue, where, "stride_y");
  ETHOSU_RT_CHECK(c.stride_x, >=, 1, Error::kBadValue, where, "stride_x");
  ETHOSU_RT_CHECK(static_cast<int64_t>(c.oh), ==,
                  static_cast<int64_t>(c.ih - 1) * c.stride_y + c.pad_top + c.pad_bottom + c.kh,
                  Error::kBadValue, where, "output height");
  ETHOSU_RT_CHECK(static_cast<int64_t>(c.ow), ==,
                  static_cast<int64_t>(c.iw - 1) * c.stride_x + c.pad_left + c.pad_right + c.kw,
                  Error::kBadValue, where, "output width");
  ETHOSU_RT_TRY(check_bias(op, bias, c.oc));
  ETHOSU_RT_TRY(check_zp(op, in.dtype, c.izp));
  ETHOSU_RT_TRY(check_zp(op, w.dtype, c.wzp));
  if (!run) return Error::kOk;
  const int8_t* wp = static_cast<const int8_t*>(w.data);
  if (in.dtype == DType::kInt8) {
    transpose_conv_run(c, static_cast<const int8_t*>(in.data), wp, bias, out);
  } else {
    transpose_conv_run(c, static_cast<const int16_t*>(in.data), wp, bias, out);
  }
  return Error::kOk;
}

namespace {

// int8 MATMUL through the ISA's dot product: B's column is gathered into a contiguous
// chunk (on the stack) and reused for every row of A.
void matmul_int8(const Tensor& a, const Tensor& b, const Tensor& out, int32_t n, int32_t h,
                 int32_t c, int32_t w, int32_t azp, int32_t bzp) {
  constexpr int32_t kChunk = 256;
  int8_t column[kChunk];
  const int8_t* ap = static_cast<const int8_t*>(a.data);
  const int8_t* bp = static_cast<const int8_t*>(b.data);
  for (int32_t in = 0; in < n; ++in) {
    for (int32_t x = 0; x < w; ++x) {
      for (int32_t y = 0; y < h; ++y) {
        store(out, (static_cast<size_t>(in) * h + y) * w + x, 0);
      }
      for (int32_t k0 = 0; k0 < c; k0 += kChunk) {
        const int32_t len = c - k0 < kChunk ? c - k0 : kChunk;
        for (int32_t k = 0; k < len; ++k) {
          column[k] = bp[(static_cast<size_t>(in) * c + k0 + k) * w + x];
        }
        for (int32_t y = 0; y < h; ++y) {
          const int8_t* row = ap + (static_cast<size_t>(in) * h + y) * c + k0;
          const size_t o = (static_cast<size_t>(in) * h + y) * w + x;
          store(out, o, load(out, o) + dot8_corrected(dot8(row, column, len), len, azp, bzp));
        }
      }
    }
  }
}

}  // namespace

Error matmul(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 2, 1, 2));
  const Tensor &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const char* where = "MATMUL";
  const bool int8 = a.dtype == DType::kInt8 && b.dtype == DType::kInt8 && out.dtype == DType::kInt32;
  const bool int16 = a.dtype == DType::kInt16 && b.dtype == DType::kInt16 &&
                     out.dtype == DType::kInt48;
  ETHOSU_RT_CHECK_ONE_OF(int8 || int16, static_cast<uint32_t>(a.dtype), Error::kUnsupported, where,
                         "A/B/output types", "int8/int8/int32 or int16/int16/int48");
  ETHOSU_RT_CHECK(a.rank, ==, 3u, Error::kBadValue, where, "A rank");
  ETHOSU_RT_CHECK(b.rank, ==, 3u, Error::kBadValue, where, "B rank");
  ETHOSU_RT_CHECK(out.rank, ==, 3u, Error::kBadValue, where, "output rank");
  const int32_t n = a.shape[0], h = a.shape[1], c = a.shape[2], w = b.shape[2];
  ETHOSU_RT_CHECK(b.shape[0], ==, n, Error::kBadValue, where, "B batch");
  ETHOSU_RT_CHECK(b.shape[1], ==, c, Error::kBadValue, where, "B rows (A columns)");
  ETHOSU_RT_CHECK(out.shape[0], ==, n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[1], ==, h, Error::kBadValue, where, "output rows");
  ETHOSU_RT_CHECK(out.shape[2], ==, w, Error::kBadValue, where, "output columns");
  const int32_t azp = op.attrs[0], bzp = op.attrs[1];
  ETHOSU_RT_TRY(check_zp(op, a.dtype, azp));
  ETHOSU_RT_TRY(check_zp(op, b.dtype, bzp));
  if (!run) return Error::kOk;
  if (int8) {
    matmul_int8(a, b, out, n, h, c, w, azp, bzp);
    return Error::kOk;
  }
  size_t o = 0;
  for (int32_t in = 0; in < n; ++in) {
    for (int32_t y = 0; y < h; ++y) {
      for (int32_t x = 0; x < w; ++x, ++o) {
        int64_t acc = 0;
        for (int32_t k = 0; k < c; ++k) {
          const int64_t av = load(a, (static_cast<size_t>(in) * h + y) * c + k) - azp;
          const int64_t bv = load(b, (static_cast<size_t>(in) * c + k) * w + x) - bzp;
          acc += av * bv;
        }
        store(out, o, acc);
      }
    }
  }
  return Error::kOk;
}

namespace {

TOSA_CPU_FOR_SIZE Error pool_shapes(const OpArgs& op, Conv* c) {
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK_ONE_OF(in.dtype == DType::kInt8 || in.dtype == DType::kInt16,
                         static_cast<uint32_t>(in.dtype), Error::kUnsupported, where,
                         "input type", "int8 (3) or int16 (4)");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(in.dtype),
                  Error::kBadValue, where, "output type");
  ETHOSU_RT_CHECK(in.rank, ==, 4u, Error::kBadValue, where, "input rank");
  ETHOSU_RT_CHECK(out.rank, ==, 4u, Error::kBadValue, where, "output rank");
  c->n = in.shape[0]; c->ih = in.shape[1]; c->iw = in.shape[2]; c->ic = in.shape[3];
  c->oh = out.shape[1]; c->ow = out.shape[2];
  c->kh = op.attrs[0]; c->kw = op.attrs[1];
  c->stride_y = op.attrs[2]; c->stride_x = op.attrs[3];
  c->pad_top = op.attrs[4]; c->pad_bottom = op.attrs[5];
  c->pad_left = op.attrs[6]; c->pad_right = op.attrs[7];
  c->dil_y = c->dil_x = 1;
  ETHOSU_RT_CHECK(c->kh, >=, 1, Error::kBadValue, where, "kernel_y");
  ETHOSU_RT_CHECK(c->kw, >=, 1, Error::kBadValue, where, "kernel_x");
  ETHOSU_RT_CHECK(out.shape[0], ==, c->n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c->ic, Error::kBadValue, where, "output channels");
  // TOSA: padding smaller than the kernel, so no window is all padding.
  ETHOSU_RT_CHECK(c->pad_top, <, c->kh, Error::kBadValue, where, "pad_top");
  ETHOSU_RT_CHECK(c->pad_bottom, <, c->kh, Error::kBadValue, where, "pad_bottom");
  ETHOSU_RT_CHECK(c->pad_left, <, c->kw, Error::kBadValue, where, "pad_left");
  ETHOSU_RT_CHECK(c->pad_right, <, c->kw, Error::kBadValue, where, "pad_right");
  return check_window(op, *c);
}

#if defined(TOSA_CPU_MVE)
// int8 AVG_POOL2D on MVE: 4 channels per vector summed over the window's valid taps, the
// input zero point taken off once (count * zp), then apply_scale_32 (single rounding) of the
// pixel's reciprocal_scale(count) as the MVE RESCALE computes it: reciprocal_scale's shift
// is 30 + k with count <= 2^k, so acc << max(32 - shift, 0) stays below 255 * 4.
void avg_pool_mve(const Conv& c, const int8_t* in, int8_t* out, int32_t izp, int32_t ozp) {
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      const int32_t y0 = oy * c.stride_y - c.pad_top;
      const int32_t ya = y0 < 0 ? 0 : y0, yb = y0 + c.kh < c.ih ? y0 + c.kh : c.ih;
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t x0 = ox * c.stride_x - c.pad_left;
        const int32_t xa = x0 < 0 ? 0 : x0, xb = x0 + c.kw < c.iw ? x0 + c.kw : c.iw;
        const int32_t count = (yb - ya) * (xb - xa);
        int32_t multiplier, shift;
        reciprocal_scale(static_cast<uint32_t>(count), &multiplier, &shift);
        const int32x4_t ls = vdupq_n_s32(32 - shift > 0 ? 32 - shift : 0);
        const int32x4_t nrs = vdupq_n_s32(31 - shift < -1 ? 31 - shift : -1);
        for (int32_t c0 = 0; c0 < c.ic; c0 += 4) {
          const mve_pred16_t p = vctp32q(static_cast<uint32_t>(c.ic - c0));
          int32x4_t acc = vdupq_n_s32(0);
          for (int32_t yy = ya; yy < yb; ++yy) {
            const int8_t* row = image + static_cast<size_t>(yy) * c.iw * c.ic + c0;
            for (int32_t xx = xa; xx < xb; ++xx) {
              acc = vaddq_s32(acc, vldrbq_z_s32(row + static_cast<size_t>(xx) * c.ic, p));
            }
          }
          acc = vsubq_n_s32(acc, count * izp);
          int32x4_t t = vqdmulhq_s32(vshlq_s32(acc, ls), vdupq_n_s32(multiplier));
          t = vqaddq_n_s32(vrshlq_s32(t, nrs), ozp);
          vstrbq_p_s32(out + o + c0, vshrq_n_s32(vqshlq_n_s32(t, 24), 24), p);
        }
      }
    }
  }
}
#endif

#if defined(TOSA_CPU_NEON)
// int8 AVG_POOL2D on NEON: the MVE kernel's arithmetic, 8 channels per step (two 4-lane
// 32-bit sums widened from the int8 taps, SADDW/SADDW2), the rounding of the NEON RESCALE
// and saturating narrows to int8; the last IC % 8 channels take apply_scale_32 directly.
void avg_pool_neon(const Conv& c, const int8_t* in, int8_t* out, int32_t izp, int32_t ozp) {
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      const int32_t y0 = oy * c.stride_y - c.pad_top;
      const int32_t ya = y0 < 0 ? 0 : y0, yb = y0 + c.kh < c.ih ? y0 + c.kh : c.ih;
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t x0 = ox * c.stride_x - c.pad_left;
        const int32_t xa = x0 < 0 ? 0 : x0, xb = x0 + c.kw < c.iw ? x0 + c.kw : c.iw;
        const int32_t count = (yb - ya) * (xb - xa);
        int32_t multiplier, shift;
        reciprocal_scale(static_cast<uint32_t>(count), &multiplier, &shift);
        const int32x4_t ls = vdupq_n_s32(32 - shift > 0 ? 32 - shift : 0);
        const int32x4_t nrs = vdupq_n_s32(31 - shift < -1 ? 31 - shift : -1);
        const int32x4_t mult = vdupq_n_s32(multiplier), zo = vdupq_n_s32(ozp);
        const int32x4_t off = vdupq_n_s32(count * izp);
        int32_t c0 = 0;
        for (; c0 + 8 <= c.ic; c0 += 8) {
          int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);
          for (int32_t yy = ya; yy < yb; ++yy) {
            const int8_t* row = image + static_cast<size_t>(yy) * c.iw * c.ic + c0;
            for (int32_t xx = xa; xx < xb; ++xx) {
              const int16x8_t v = vmovl_s8(vld1_s8(row + static_cast<size_t>(xx) * c.ic));
              lo = vaddw_s16(lo, vget_low_s16(v));
              hi = vaddw_high_s16(hi, v);
            }
          }
          lo = vrshlq_s32(vqdmulhq_s32(vshlq_s32(vsubq_s32(lo, off), ls), mult), nrs);
          hi = vrshlq_s32(vqdmulhq_s32(vshlq_s32(vsubq_s32(hi, off), ls), mult), nrs);
          const int16x8_t h = vcombine_s16(vqmovn_s32(vqaddq_s32(lo, zo)),
                                           vqmovn_s32(vqaddq_s32(hi, zo)));
          vst1_s8(out + o + c0, vqmovn_s16(h));
        }
        for (; c0 < c.ic; ++c0) {  // the last IC % 8 channels
          int32_t acc = 0;
          for (int32_t yy = ya; yy < yb; ++yy) {
            for (int32_t xx = xa; xx < xb; ++xx) {
              acc += image[(static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0];
            }
          }
          const int64_t scaled = apply_scale_32(acc - count * izp, multiplier, shift, false);
          out[o + c0] = static_cast<int8_t>(clamp64(scaled + ozp, -128, 127));
        }
      }
    }
  }
}

// int8 MAX_POOL2D on NEON: 16 channels per step (SMAX over the window's valid taps), the
// last IC % 16 channels one at a time.
void max_pool_neon(const Conv& c, const int8_t* in, int8_t* out) {
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      const int32_t y0 = oy * c.stride_y - c.pad_top;
      const int32_t ya = y0 < 0 ? 0 : y0, yb = y0 + c.kh < c.ih ? y0 + c.kh : c.ih;
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t x0 = ox * c.stride_x - c.pad_left;
        const int32_t xa = x0 < 0 ? 0 : x0, xb = x0 + c.kw < c.iw ? x0 + c.kw : c.iw;
        int32_t c0 = 0;
        for (; c0 + 16 <= c.ic; c0 += 16) {
          int8x16_t m = vdupq_n_s8(-128);
          for (int32_t yy = ya; yy < yb; ++yy) {
            const int8_t* row = image + static_cast<size_t>(yy) * c.iw * c.ic + c0;
            for (int32_t xx = xa; xx < xb; ++xx) {
              m = vmaxq_s8(m, vld1q_s8(row + static_cast<size_t>(xx) * c.ic));
            }
          }
          vst1q_s8(out + o + c0, m);
        }
        for (; c0 < c.ic; ++c0) {
          int8_t m = -128;
          for (int32_t yy = ya; yy < yb; ++yy) {
            for (int32_t xx = xa; xx < xb; ++xx) {
              const int8_t v = image[(static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0];
              m = v > m ? v : m;
            }
          }
          out[o + c0] = m;
        }
      }
    }
  }
}
#endif

#if defined(TOSA_CPU_DSP)
// int8 AVG_POOL2D on the DSP extension, windows of at most 256 taps: 4 channels per word
// summed as halfword pairs (SXTAB16 of channels 0, 2 and, rotated, 1, 3; 256 int8 values
// sum inside int16), then per channel the DSP RESCALE's arithmetic for reciprocal_scale's
// shift 30 + k (single rounding, value << max(32 - shift, 0) fits: |value| <= 255 * count),
// QADD of the output zero point and SSAT to int8. The last IC % 4 channels sum one at a time.
void avg_pool_dsp(const Conv& c, const int8_t* in, int8_t* out, int32_t izp, int32_t ozp) {
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      const int32_t y0 = oy * c.stride_y - c.pad_top;
      const int32_t ya = y0 < 0 ? 0 : y0, yb = y0 + c.kh < c.ih ? y0 + c.kh : c.ih;
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t x0 = ox * c.stride_x - c.pad_left;
        const int32_t xa = x0 < 0 ? 0 : x0, xb = x0 + c.kw < c.iw ? x0 + c.kw : c.iw;
        const int32_t count = (yb - ya) * (xb - xa);
        int32_t multiplier, shift;
        reciprocal_scale(static_cast<uint32_t>(count), &multiplier, &shift);
        const int32_t ls = 32 - shift > 0 ? 32 - shift : 0;
        const int32_t k = shift - 31 > 1 ? shift - 31 : 1;
        const int32_t off = count * izp;
        for (int32_t c0 = 0; c0 < c.ic; c0 += 4) {
          const int32_t lanes = c.ic - c0 < 4 ? c.ic - c0 : 4;
          int32_t sum[4] = {0, 0, 0, 0};
          if (lanes == 4) {
            int16x2_t s02 = 0, s13 = 0;
            for (int32_t yy = ya; yy < yb; ++yy) {
              const int8_t* row = image + static_cast<size_t>(yy) * c.iw * c.ic + c0;
              for (int32_t xx = xa; xx < xb; ++xx) {
                int32_t word;
                memcpy(&word, row + static_cast<size_t>(xx) * c.ic, 4);
                s02 = __sxtab16(s02, word);
                s13 = __sxtab16(s13, ror8(word));
              }
            }
            sum[0] = static_cast<int16_t>(s02 & 0xFFFF);
            sum[2] = static_cast<int16_t>(static_cast<uint32_t>(s02) >> 16);
            sum[1] = static_cast<int16_t>(s13 & 0xFFFF);
            sum[3] = static_cast<int16_t>(static_cast<uint32_t>(s13) >> 16);
          } else {
            for (int32_t yy = ya; yy < yb; ++yy) {
              for (int32_t xx = xa; xx < xb; ++xx) {
                const int8_t* px = image + (static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0;
                for (int32_t j = 0; j < lanes; ++j) sum[j] += px[j];
              }
            }
          }
          for (int32_t j = 0; j < lanes; ++j) {
            const int32_t v = sum[j] - off;
            const int64_t p = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v) << ls)) * multiplier;
            int32_t t = static_cast<int32_t>(p >> 31);
            t = (t >> k) + ((t >> (k - 1)) & 1);
            out[o + c0 + j] = static_cast<int8_t>(__ssat(__qadd(t, ozp), 8));
          }
        }
      }
    }
  }
}

// int8 MAX_POOL2D on the DSP extension: 4 channels per word, the bytewise maximum as SSUB8
// (GE flags where a >= b) and SEL; the last IC % 4 channels one at a time.
void max_pool_dsp(const Conv& c, const int8_t* in, int8_t* out) {
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const int8_t* image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      const int32_t y0 = oy * c.stride_y - c.pad_top;
      const int32_t ya = y0 < 0 ? 0 : y0, yb = y0 + c.kh < c.ih ? y0 + c.kh : c.ih;
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.ic)) {
        const int32_t x0 = ox * c.stride_x - c.pad_left;
        const int32_t xa = x0 < 0 ? 0 : x0, xb = x0 + c.kw < c.iw ? x0 + c.kw : c.iw;
        int32_t c0 = 0;
        for (; c0 + 4 <= c.ic; c0 += 4) {
          uint32_t m = 0x80808080u;
          for (int32_t yy = ya; yy < yb; ++yy) {
            const int8_t* row = image + static_cast<size_t>(yy) * c.iw * c.ic + c0;
            for (int32_t xx = xa; xx < xb; ++xx) {
              uint32_t word;
              memcpy(&word, row + static_cast<size_t>(xx) * c.ic, 4);
              __ssub8(static_cast<int8x4_t>(word), static_cast<int8x4_t>(m));
              m = __sel(word, m);
            }
          }
          memcpy(out + o + c0, &m, 4);
        }
        for (; c0 < c.ic; ++c0) {
          int8_t m = -128;
          for (int32_t yy = ya; yy < yb; ++yy) {
            for (int32_t xx = xa; xx < xb; ++xx) {
              const int8_t v = image[(static_cast<size_t>(yy) * c.iw + xx) * c.ic + c0];
              m = v > m ? v : m;
            }
          }
          out[o + c0] = m;
        }
      }
    }
  }
}
#endif

}  // namespace

TOSA_CPU_FALLBACK Error avg_pool2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 10));
  Conv c{};
  ETHOSU_RT_TRY(pool_shapes(op, &c));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const int32_t izp = op.attrs[8], ozp = op.attrs[9];
  ETHOSU_RT_TRY(check_zp(op, in.dtype, izp));
  ETHOSU_RT_TRY(check_zp(op, out.dtype, ozp));
  if (!run) return Error::kOk;
#if defined(TOSA_CPU_MVE)
  if (in.dtype == DType::kInt8) {
    avg_pool_mve(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data), izp,
                 ozp);
    return Error::kOk;
  }
#elif defined(TOSA_CPU_DSP)
  if (in.dtype == DType::kInt8 && c.kh * c.kw <= 256) {
    avg_pool_dsp(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data), izp,
                 ozp);
    return Error::kOk;
  }
#elif defined(TOSA_CPU_NEON)
  if (in.dtype == DType::kInt8) {
    avg_pool_neon(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data), izp,
                  ozp);
    return Error::kOk;
  }
#endif
  const int64_t lo = type_min(out.dtype), hi = type_max(out.dtype);
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox) {
        for (int32_t ch = 0; ch < c.ic; ++ch, ++o) {
          int64_t acc = 0;
          uint32_t count = 0;
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t y = oy * c.stride_y - c.pad_top + ky;
            if (y < 0 || y >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t x = ox * c.stride_x - c.pad_left + kx;
              if (x < 0 || x >= c.iw) continue;
              ++count;
              acc += load(in, ((static_cast<size_t>(n) * c.ih + y) * c.iw + x) * c.ic + ch) - izp;
            }
          }
          int32_t multiplier, shift;
          reciprocal_scale(count, &multiplier, &shift);
          const int64_t scaled = apply_scale_32(static_cast<int32_t>(acc), multiplier, shift, false);
          store(out, o, clamp64(scaled + ozp, lo, hi));
        }
      }
    }
  }
  return Error::kOk;
}

TOSA_CPU_FOR_SIZE Error max_pool2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 8));
  Conv c{};
  ETHOSU_RT_TRY(pool_shapes(op, &c));
  if (!run) return Error::kOk;
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
#if defined(TOSA_CPU_NEON)
  if (in.dtype == DType::kInt8) {
    max_pool_neon(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data));
    return Error::kOk;
  }
#elif defined(TOSA_CPU_DSP)
  if (in.dtype == DType::kInt8) {
    max_pool_dsp(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data));
    return Error::kOk;
  }
#endif
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      for (int32_t ox = 0; ox < c.ow; ++ox) {
        for (int32_t ch = 0; ch < c.ic; ++ch, ++o) {
          int64_t acc = type_min(in.dtype);
          for (int32_t ky = 0; ky < c.kh; ++ky) {
            const int32_t y = oy * c.stride_y - c.pad_top + ky;
            if (y < 0 || y >= c.ih) continue;
            for (int32_t kx = 0; kx < c.kw; ++kx) {
              const int32_t x = ox * c.stride_x - c.pad_left + kx;
              if (x < 0 || x >= c.iw) continue;
              const int64_t v = load(in, ((static_cast<size_t>(n) * c.ih + y) * c.iw + x) * c.ic + ch);
              if (v > acc) acc = v;
            }
          }
          store(out, o, acc);
        }
      }
    }
  }
  return Error::kOk;
}

}  // namespace tosa_cpu
