// DEPTHWISE_CONV2D (NHWC, weights [KH, KW, C, M]), as the TOSA 1.0 pseudo-code: int8 x int8
// -> int32 and int16 x int8 -> int48, zero points subtracted before the product, padding
// contributes nothing, bias added last. One loop nest; the ISA enters through the channel
// blocks of depthwise_isa.h.
#include <type_traits>

#include "depthwise_isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"
#include "window.h"

namespace tosa_cpu {
namespace {

// Output channels [begin, C x M) of one pixel in blocks of B (see for_each_block); returns
// the first channel B left. Output channel oc reads input channel oc / M (B has M = 1 or one
// channel a block) and, per tap, weight oc of the tap's C x M. `image`, `y` and `b` are
// typed pointers or Elements cursors.
template <class B, typename In, typename Out, typename Bias>
TOSA_CPU_INLINE int32_t depthwise_blocks(const Conv& c, int32_t begin, In image,
                                         const int8_t* w, const TapWalk& walk,
                                         const typename B::Zp& zp, Out y, Bias b,
                                         bool bias_bc) {
  return for_each_block<B>(begin, c.oc, [&](int32_t c0, int32_t remaining) TOSA_CPU_LAMBDA {
    const auto mask = B::mask(remaining);
    typename B::Acc acc = B::zero();
    for_each_tap(c, walk, image + c0 / c.m, [&](In x, int32_t tap) TOSA_CPU_LAMBDA {
      B::mac(acc, x, w + static_cast<size_t>(tap) * c.oc + c0, zp, mask);
    });
    B::store(y + c0, acc, b + (bias_bc ? 0 : c0), bias_bc, remaining);
  });
}

// The loop nest: output pixels, blocks of B then of Tail (the channels B leaves), taps.
template <class B, class Tail, typename In, typename Out, typename Bias>
TOSA_CPU_INLINE void depthwise_run(const Conv& c, In in, const int8_t* w, Bias b,
                                   bool bias_bc, Out y) {
  const typename B::Zp zp = B::zp(c.izp, c.wzp);
  for_each_pixel(c, in, [&](In image, const Taps& t, size_t o) TOSA_CPU_LAMBDA {
    const TapWalk walk = tap_walk(c, t);
    [[maybe_unused]] const int32_t c0 =
        depthwise_blocks<B>(c, 0, image, w, walk, zp, y + o, b, bias_bc);
    if constexpr (needs_tail<B, Tail>()) {
      depthwise_blocks<Tail>(c, c0, image, w, walk, Tail::zp(c.izp, c.wzp), y + o, b, bias_bc);
    }
  });
}

// int8 with one weight per channel: the ISA's blocks, the portable one for the last channels.
void depthwise_int8(const Conv& c, const Tensor& in, const int8_t* w, const Tensor& bias,
                    const Tensor& out) {
  depthwise_run<DepthwiseBlock, DepthwiseScalar>(
      c, static_cast<const int8_t*>(in.data), w, static_cast<const int32_t*>(bias.data),
      bias.shape[0] == 1, static_cast<int32_t*>(out.data));
}

// Any multiplier M, int8 or int16: one channel at a time, every type through one loop.
TOSA_CPU_FALLBACK void depthwise_any(const Conv& c, const Tensor& in, const int8_t* w,
                                     const Tensor& bias, const Tensor& out) {
  depthwise_run<DepthwiseScalar, DepthwiseScalar>(c, Elements{&in, 0}, w, Elements{&bias, 0},
                                                  bias.shape[0] == 1, Elements{&out, 0});
}

}  // namespace

Error depthwise_conv2d(const OpArgs& op, bool run) {
  Conv c{};
  ETHOSU_RT_TRY(read_conv(op, &c));
  if (!run) return Error::kOk;
  const Tensor &in = op.inputs[0], &bias = op.inputs[2], &out = op.outputs[0];
  const int8_t* w = static_cast<const int8_t*>(op.inputs[1].data);
  if (in.dtype == DType::kInt8 && c.m == 1) {
    depthwise_int8(c, in, w, bias, out);
  } else {
    depthwise_any(c, in, w, bias, out);
  }
  return Error::kOk;
}

}  // namespace tosa_cpu
