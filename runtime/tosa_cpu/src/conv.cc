// CONV2D and TRANSPOSE_CONV2D (NHWC), as the TOSA 1.0 pseudo-code: int8 x int8 -> int32 and
// int16 x int8 -> int48, zero points subtracted before the product, padding contributes
// nothing, bias added last. The ISA enters through the dot products of dot_isa.h.
#include <string.h>

#include <type_traits>

#include "dot_isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"
#include "window.h"

namespace tosa_cpu {
namespace {

// sum over the input channels of (x - input_zp) * (w - weight_zp): int8 in 32 bits (wrapping),
// int16 (zero point 0) in 64. Inlined where it is the hot loop (conv2d_pixel); the rare
// paths (large windows, TRANSPOSE_CONV2D) share one out-of-line copy.
template <typename In>
TOSA_CPU_INLINE typename Accumulator<In>::Acc channel_dot_inline(const In* x, const int8_t* w,
                                                                 const Conv& c, int32_t len) {
  if constexpr (std::is_same<In, int8_t>::value) {
    return static_cast<uint32_t>(dot8_corrected(dot8(x, w, len), len, c.izp, c.wzp));
  } else {
    return dot16x8(x, w, len, c.wzp);  // check_zp: an int16 input's zero point is 0
  }
}

template <typename In>
__attribute__((noinline)) typename Accumulator<In>::Acc channel_dot(const In* x, const int8_t* w,
                                                                    const Conv& c, int32_t len) {
  return channel_dot_inline(x, w, c, len);
}

// One output's accumulator for every output channel from a contiguous input window `x` of
// `len` values laid out like each output channel's weights.
template <typename In>
void conv2d_pixel(const Conv& c, const In* x, int32_t len, const int8_t* w, const Tensor& bias,
                  typename Accumulator<In>::Out* y) {
  using A = Accumulator<In>;
  const auto* b = static_cast<const typename A::Out*>(bias.data);
  const bool bias_bc = bias.shape[0] == 1;
  for (int32_t oc = 0; oc < c.oc; ++oc) {
    y[oc] = A::finish(channel_dot_inline(x, w + static_cast<size_t>(oc) * len, c, len),
                      b[bias_bc ? 0 : oc]);
  }
}

// int8 CONV2D where the ISA has a row-blocked dot product (dot_isa.h: MVE four output
// channels per pass over the window, DSP two). A different algorithm from conv2d_pixel, not
// a copy of it: each input vector is loaded once for kDotRows weight rows, and the
// zero-point terms that do not depend on the window are folded into the bias once per
// operator:
//   sum (x - xzp)(w - wzp) + b = xw - wzp * x_sum + (b - xzp * w_sum + n * xzp * wzp),
// all in wrapping 32-bit arithmetic, which is the portable kernel's wrap32 of the same sum.
// (Templates on K = kDotRows only so that a variant without the path builds none of it.)
constexpr int32_t kConvMaxOc = 256;

template <int K = kDotRows>
void conv2d_fold_bias(const Conv& c, int32_t len, const int8_t* w, const Tensor& bias,
                      uint32_t* folded) {
  const int32_t* b = static_cast<const int32_t*>(bias.data);
  for (int32_t oc = 0; oc < c.oc; ++oc, w += len) {
    folded[oc] = static_cast<uint32_t>(b[bias.shape[0] == 1 ? 0 : oc]) -
                 static_cast<uint32_t>(c.izp) * static_cast<uint32_t>(sum8(w, len)) +
                 static_cast<uint32_t>(len) * static_cast<uint32_t>(c.izp * c.wzp);
  }
}

template <int K = kDotRows>
void conv2d_pixel_rows(const Conv& c, const int8_t* x, int32_t len, const int8_t* w,
                       const uint32_t* folded, int32_t* y) {
  const uint32_t xcorr =
      c.wzp != 0 ? static_cast<uint32_t>(c.wzp) * static_cast<uint32_t>(sum8(x, len)) : 0u;
  int32_t acc[K];
  int32_t oc = 0;
  const auto put = [&](int32_t j) TOSA_CPU_LAMBDA {
    y[oc + j] = static_cast<int32_t>(static_cast<uint32_t>(acc[j]) - xcorr + folded[oc + j]);
  };
  for (; oc + K <= c.oc; oc += K, w += K * len) {
    dot8_rows<K>(x, w, len, acc);
#pragma GCC unroll 4
    for (int32_t j = 0; j < K; ++j) put(j);
  }
  for (; oc < c.oc; ++oc, w += len) {
    dot8_rows<1>(x, w, len, acc);
    put(0);
  }
}

// CONV2D as one dot product per output value: the window (KH x KW x IC, laid out like the
// weights) is used in place when it is contiguous in the input (1 x KW windows inside the
// input), else gathered into a stack buffer with padding taps set to the input zero point,
// which contribute (zp - zp) * w = 0 exactly. Windows larger than the buffer fall back to a
// dot product per kernel tap.
template <typename In>
TOSA_CPU_FALLBACK void conv2d_run(const Conv& c, const In* in, const int8_t* w,
                                  const Tensor& bias, const Tensor& out) {
  using A = Accumulator<In>;
  constexpr int32_t kWindow = 640;
  In window[kWindow];
  const int32_t len = c.kh * c.kw * c.ic;
  constexpr bool kRows = kDotRows > 0 && std::is_same<In, int8_t>::value;
  uint32_t folded[kRows ? kConvMaxOc : 1];
  // Folding reads every weight once: worth it from two output pixels on (a fully connected
  // layer, one pixel, keeps the plain dot products).
  const bool rows = kRows && c.oc <= kConvMaxOc && static_cast<int64_t>(c.n) * c.oh * c.ow > 1;
  if constexpr (kRows) {
    if (rows) conv2d_fold_bias(c, len, w, bias, folded);
  }
  typename A::Out* y = static_cast<typename A::Out*>(out.data);
  const auto pixel = [&](const In* x, size_t o) {
    if constexpr (kRows) {
      if (rows) return conv2d_pixel_rows(c, x, len, w, folded, y + o);
    }
    conv2d_pixel(c, x, len, w, bias, y + o);
  };
  for_each_pixel(c, in, [&](const In* image, const Taps& t, size_t o) TOSA_CPU_LAMBDA {
    const bool inside = t.ky0 == 0 && t.ky1 == c.kh && t.kx0 == 0 && t.kx1 == c.kw;
    if (inside && c.kh == 1 && (c.kw == 1 || c.dil_x == 1)) {
      return pixel(image + (static_cast<size_t>(t.iy) * c.iw + t.ix) * c.ic, o);
    }
    if (len <= kWindow) {
      In* p = window;
      for (int32_t ky = 0; ky < c.kh; ++ky) {
        const int32_t y0 = t.iy + ky * c.dil_y;
        for (int32_t kx = 0; kx < c.kw; ++kx, p += c.ic) {
          const int32_t x0 = t.ix + kx * c.dil_x;
          if (y0 < 0 || y0 >= c.ih || x0 < 0 || x0 >= c.iw) {
            for (int32_t i = 0; i < c.ic; ++i) p[i] = static_cast<In>(c.izp);
          } else {
            memcpy(p, image + (static_cast<size_t>(y0) * c.iw + x0) * c.ic,
                   sizeof(In) * static_cast<size_t>(c.ic));
          }
        }
      }
      return pixel(window, o);
    }
    // A large window: a dot product per output channel and tap (rare).
    const auto* b = static_cast<const typename A::Out*>(bias.data);
    for (int32_t oc = 0; oc < c.oc; ++oc) {
      typename A::Acc acc = 0;
      for_each_tap(c, tap_walk(c, t), image, [&](const In* x, int32_t tap) TOSA_CPU_LAMBDA {
        acc += channel_dot(x, w + (static_cast<size_t>(oc) * c.kh * c.kw + tap) * c.ic, c, c.ic);
      });
      y[o + oc] = A::finish(acc, b[bias.shape[0] == 1 ? 0 : oc]);
    }
  });
}

// TRANSPOSE_CONV2D: every input pixel scatters its products into the output pixels its
// kernel covers, on top of the bias.
template <typename In>
TOSA_CPU_FOR_SIZE void transpose_conv_run(const Conv& c, const In* in, const int8_t* w,
                                          const Tensor& bias, const Tensor& out) {
  using A = Accumulator<In>;
  const auto* b = static_cast<const typename A::Out*>(bias.data);
  typename A::Out* y = static_cast<typename A::Out*>(out.data);
  const bool bias_bc = bias.shape[0] == 1;
  for (size_t o = 0; o < out.elements; ++o) {
    y[o] = A::finish(0, b[bias_bc ? 0 : o % static_cast<size_t>(c.oc)]);
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
              y[ob + oc] = A::finish(channel_dot(ip, wp, c, c.ic),
                                     static_cast<typename A::Out>(y[ob + oc]));
            }
          }
        }
      }
    }
  }
}

}  // namespace

namespace {

// CONV2D and TRANSPOSE_CONV2D: operands read and checked, then f(c, input, weights, bias,
// output) with the input typed int8 or int16.
template <class F>
Error conv_kernel(const OpArgs& op, bool run, F f) {
  Conv c{};
  ETHOSU_RT_TRY(read_conv(op, &c));
  if (!run) return Error::kOk;
  const Tensor &in = op.inputs[0], &bias = op.inputs[2], &out = op.outputs[0];
  const int8_t* w = static_cast<const int8_t*>(op.inputs[1].data);
  if (in.dtype == DType::kInt8) {
    f(c, static_cast<const int8_t*>(in.data), w, bias, out);
  } else {
    f(c, static_cast<const int16_t*>(in.data), w, bias, out);
  }
  return Error::kOk;
}

}  // namespace

Error conv2d(const OpArgs& op, bool run) {
  return conv_kernel(op, run, [](const Conv& c, auto in, const int8_t* w, const Tensor& bias,
                                 const Tensor& out) { conv2d_run(c, in, w, bias, out); });
}

TOSA_CPU_FOR_SIZE Error transpose_conv2d(const OpArgs& op, bool run) {
  return conv_kernel(op, run, [](const Conv& c, auto in, const int8_t* w, const Tensor& bias,
                                 const Tensor& out) { transpose_conv_run(c, in, w, bias, out); });
}

}  // namespace tosa_cpu
