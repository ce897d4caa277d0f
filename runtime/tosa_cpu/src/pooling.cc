// AVG_POOL2D and MAX_POOL2D (NHWC), as the TOSA 1.0 pseudo-code: the window's taps inside
// the input (padding counts for neither), the average divided by their count with
// reciprocal_scale and apply_scale_32. One loop nest for both; the ISA enters through the
// channel blocks of pooling_isa.h.
#include <type_traits>

#include "kernels.h"
#include "pooling_isa.h"
#include "tosa_cpu/ops.h"
#include "window.h"

namespace tosa_cpu {
namespace {

// Channels [begin, C) of one pixel in blocks of B (see for_each_block); returns the first
// channel B left. `image` and `y` are typed pointers or Elements cursors.
template <class B, typename In, typename Out>
TOSA_CPU_INLINE int32_t pool_blocks(const Conv& c, int32_t begin, In image, const TapWalk& walk,
                                    const typename B::Pixel& px, Out y) {
  return for_each_block<B>(begin, c.ic, [&](int32_t c0, int32_t remaining) TOSA_CPU_LAMBDA {
    const auto mask = B::mask(remaining);
    typename B::Acc acc = B::init(px);
    for_each_tap(c, walk, image + c0, [&](In x, int32_t) TOSA_CPU_LAMBDA { B::tap(acc, x, mask); });
    B::store(y + c0, acc, px, mask, remaining);
  });
}

// The loop nest: output pixels, blocks of B then of Tail (the channels B leaves), taps.
template <class B, class Tail, typename In, typename Out>
TOSA_CPU_INLINE void pool_run(const Conv& c, In in, Out out, bool average, int32_t izp,
                              int32_t ozp) {
  for_each_pixel(c, in, [&](In image, const Taps& t, size_t o) TOSA_CPU_LAMBDA {
    PoolScale ps{0, 0, 0, 0, average};
    if (average) {
      const int32_t count = t.count();
      reciprocal_scale(static_cast<uint32_t>(count), &ps.multiplier, &ps.shift);
      ps.offset = count * izp;
      ps.ozp = ozp;
    }
    const TapWalk walk = tap_walk(c, t);
    [[maybe_unused]] const int32_t c0 = pool_blocks<B>(c, 0, image, walk, B::pixel(ps), out + o);
    if constexpr (needs_tail<B, Tail>()) {
      pool_blocks<Tail>(c, c0, image, walk, Tail::pixel(ps), out + o);
    }
  });
}

// int8 on the ISA's blocks, the portable one for the last channels.
template <class B, class Tail>
void pool_int8(const Conv& c, const Tensor& in, const Tensor& out, int32_t izp, int32_t ozp) {
  pool_run<B, Tail>(c, static_cast<const int8_t*>(in.data), static_cast<int8_t*>(out.data),
                    B::kAverage, izp, ozp);
}

// Either pool, every type, through one loop.
TOSA_CPU_FALLBACK void pool_any(const Conv& c, const Tensor& in, const Tensor& out, bool average,
                                int32_t izp, int32_t ozp) {
  pool_run<AnyPoolScalar, AnyPoolScalar>(c, Elements{&in, 0}, Elements{&out, 0}, average, izp,
                                         ozp);
}

// int8 through the ISA's blocks where the ISA has them and they apply, the rest through
// pool_any.
template <class B, class Scalar>
void pool(const Conv& c, const Tensor& in, const Tensor& out, int32_t izp, int32_t ozp) {
  constexpr bool kIsaBlock = !std::is_same<B, Scalar>::value;
  if (kIsaBlock && in.dtype == DType::kInt8 && c.kh * c.kw <= B::kMaxTaps) {
    pool_int8<B, Scalar>(c, in, out, izp, ozp);
  } else {
    pool_any(c, in, out, B::kAverage, izp, ozp);
  }
}

}  // namespace

// Attrs: kernel (y x) stride (y x) pad (top bottom left right) input_zp output_zp.
Error avg_pool2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 10));
  Conv c{};
  ETHOSU_RT_TRY(read_pool(op, &c));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const int32_t izp = op.attrs[8], ozp = op.attrs[9];
  ETHOSU_RT_TRY(check_zp(op, in.dtype, izp));
  ETHOSU_RT_TRY(check_zp(op, out.dtype, ozp));
  if (run) pool<AvgPoolBlock, AvgPoolScalar>(c, in, out, izp, ozp);
  return Error::kOk;
}

// Attrs: kernel (y x) stride (y x) pad (top bottom left right).
Error max_pool2d(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 8));
  Conv c{};
  ETHOSU_RT_TRY(read_pool(op, &c));
  if (run) pool<MaxPoolBlock, MaxPoolScalar>(c, op.inputs[0], op.outputs[0], 0, 0);
  return Error::kOk;
}

}  // namespace tosa_cpu
