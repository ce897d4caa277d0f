// What the window operators share (conv.cc, depthwise.cc, pooling.cc; NHWC): their shapes
// and attributes read and checked, and the two loops every one of them walks - the output
// pixels, and a pixel's kernel taps that fall inside the input.
#ifndef TOSA_CPU_WINDOW_H_
#define TOSA_CPU_WINDOW_H_

#include <stddef.h>
#include <stdint.h>

#include "isa.h"
#include "kernels.h"

namespace tosa_cpu {

struct Conv {
  int32_t n, ih, iw, ic, oh, ow, oc, kh, kw, m;
  int32_t pad_top, pad_bottom, pad_left, pad_right, stride_y, stride_x, dil_y, dil_x;
  int32_t izp, wzp;
};

// CONV2D, DEPTHWISE_CONV2D, TRANSPOSE_CONV2D: operand counts and types, shapes, bias length,
// zero points and (but for TRANSPOSE_CONV2D, whose output extent differs) the window; `c`
// filled in. Weights are [OC, KH, KW, IC], or [KH, KW, C, M] for DEPTHWISE_CONV2D.
Error read_conv(const OpArgs& op, Conv* c);
// AVG_POOL2D, MAX_POOL2D: the input/output types and shapes, kernel, stride and padding.
Error read_pool(const OpArgs& op, Conv* c);
// TOSA: a non-zero zero point only for int8 operands, and within int8.
Error check_zp(const OpArgs& op, DType dtype, int32_t zp);

// The kernel taps of one output pixel whose input row / column falls inside the input:
// ky in [ky0, ky1), kx in [kx0, kx1); at input row iy + ky * dil_y, column ix + kx * dil_x.
struct Taps {
  int32_t iy, ix, ky0, ky1, kx0, kx1;
  size_t step_x, step_y;  // input offsets from a tap to the next in a row, and down a row
  int32_t count() const { return (ky1 - ky0) * (kx1 - kx0); }
};

// How for_each_tap walks a pixel's taps inside the input: computed once a pixel (tap_walk)
// for all its channel blocks, which then only step.
struct TapWalk {
  size_t first;       // input offset (in the pixel's image) of the first tap
  int32_t first_tap;  // its index, ky0 * KW + kx0
  int32_t rows, width;
  size_t step_x, step_y;
};

// Taps t in [first, end) with 0 <= i0 + t * dil < in, of k taps.
TOSA_CPU_INLINE int32_t first_tap(int32_t i0, int32_t dil) {
  return i0 >= 0 ? 0 : (dil - 1 - i0) / dil;
}
TOSA_CPU_INLINE int32_t end_tap(int32_t i0, int32_t k, int32_t dil, int32_t in) {
  return i0 + (k - 1) * dil < in ? k : (in - i0 + dil - 1) / dil;
}

// The output pixels in order: f(image, taps, o), with `image` the pixel's batch of the input
// `in` (a pointer, or an Elements cursor) and `o` the offset of its first output value (`c.oc`
// values a pixel).
template <typename In, class F>
TOSA_CPU_INLINE void for_each_pixel(const Conv& c, In in, F f) {
  Taps t;
  t.step_x = static_cast<size_t>(c.dil_x) * c.ic;
  t.step_y = static_cast<size_t>(c.dil_y) * c.iw * c.ic;
  size_t o = 0;
  for (int32_t n = 0; n < c.n; ++n) {
    const In image = in + static_cast<size_t>(n) * c.ih * c.iw * c.ic;
    for (int32_t oy = 0; oy < c.oh; ++oy) {
      t.iy = oy * c.stride_y - c.pad_top;
      t.ky0 = first_tap(t.iy, c.dil_y);
      t.ky1 = end_tap(t.iy, c.kh, c.dil_y, c.ih);
      for (int32_t ox = 0; ox < c.ow; ++ox, o += static_cast<size_t>(c.oc)) {
        t.ix = ox * c.stride_x - c.pad_left;
        t.kx0 = first_tap(t.ix, c.dil_x);
        t.kx1 = end_tap(t.ix, c.kw, c.dil_x, c.iw);
        f(image, t, o);
      }
    }
  }
}

TOSA_CPU_INLINE TapWalk tap_walk(const Conv& c, const Taps& t) {
  const size_t y = static_cast<size_t>(t.iy + t.ky0 * c.dil_y);
  return TapWalk{(y * c.iw + t.ix + t.kx0 * c.dil_x) * c.ic, t.ky0 * c.kw + t.kx0, t.ky1 - t.ky0,
                 t.kx1 - t.kx0, t.step_x, t.step_y};
}

// A pixel's taps inside the input: f(x + the tap's input offset, tap index ky * KW + kx), x a
// pointer (or Elements cursor) into the pixel's image. Both step from tap to tap (no multiply
// a tap); the loops count taps down (no bounds to hold; MVE runs them as low-overhead loops).
template <typename P, class F>
TOSA_CPU_INLINE void for_each_tap(const Conv& c, const TapWalk& w, P x, F f) {
  P row = x + w.first;
  int32_t row_tap = w.first_tap;
  for (int32_t rows = w.rows; rows > 0; --rows, row = row + w.step_y, row_tap += c.kw) {
    P at = row;
    int32_t tap = row_tap;
    for (int32_t n = w.width; n > 0; --n, at = at + w.step_x, ++tap) f(at, tap);
  }
}

// The accumulator of a convolution's input type: int8 -> int32 (wrapping; kept unsigned),
// int16 -> int48 (in 64 bits); and the output value, its bias added.
template <typename In>
struct Accumulator {
  using Acc = uint32_t;
  using Out = int32_t;
  static Out finish(Acc acc, int32_t bias) {
    return static_cast<int32_t>(acc + static_cast<uint32_t>(bias));
  }
};
template <>
struct Accumulator<int16_t> {
  using Acc = int64_t;
  using Out = int64_t;
  static Out finish(Acc acc, int64_t bias) { return wrap48(acc + bias); }
};

}  // namespace tosa_cpu

#endif  // TOSA_CPU_WINDOW_H_
