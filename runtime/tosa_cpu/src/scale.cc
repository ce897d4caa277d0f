// RESCALE, as the TOSA 1.0 pseudo-code. The type pairs the lowering emits run one typed loop
// nest whose ISA enters through the blocks of scale_isa.h (MVE/NEON 4 lanes, DSP and
// portable one value); every other pair (unsigned, int48 with scale32, ...) takes the
// generic loop of the spec, value by value.
#include <type_traits>

#include "kernels.h"
#include "scale_isa.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {
namespace {

struct ScaleRun {
  const void* in;
  void* out;
  const void* m;  // int32 multipliers (scale32) or int16 (scale16)
  const int8_t* s;
  bool per_channel, double_round;
  int32_t izp, ozp;
};

// Channel groups [c0, c1) of B::kLanes channels (the last one partial where B is
// predicated), each down `count` rows `stride` elements apart from element `offset` + its
// first channel on, with its channels' scales (per tensor: the tensor's). Per tensor the
// tensor is one row of `count` blocks: stride B::kLanes, one group.
template <class B, typename In, typename Out, bool kDouble>
void rescale_groups(const ScaleRun& r, size_t offset, size_t count, size_t stride, size_t c0,
                    size_t c1) {
  // The run in registers (the stores to y could alias r); the rounding mode is kDouble where
  // B has a loop per mode.
  const In* const in = static_cast<const In*>(r.in) + offset;
  Out* const out = static_cast<Out*>(r.out) + offset;
  const void* const m = r.m;
  const int8_t* const s = r.s;
  const bool per_channel = r.per_channel;
  const bool double_round = B::kFixedRounding ? kDouble : r.double_round;
  const int32_t izp = r.izp, ozp = r.ozp;
  const auto group = [&](size_t c) TOSA_CPU_LAMBDA {
    const In* x = in + c;
    Out* y = out + c;
    // One group a call: the caller's [c0, c1) is the group.
    const size_t lanes = B::kCallPerGroup ? c1 - c : c1 - c < B::kLanes ? c1 - c : B::kLanes;
    const typename B::Mask p = B::mask(static_cast<int32_t>(lanes));
    const typename B::Scale l = B::scale(m, s, c, per_channel, p, double_round);
    for (size_t n = count; n > 0; --n, x += stride, y += stride) {
      B::template apply<In, Out, kDouble>(x, y, l, izp, ozp, p);
    }
  };
  if constexpr (B::kCallPerGroup) {
    group(c0);  // rescale_columns calls for one group at a time
  } else {
    for (size_t c = c0; c < c1; c += B::kLanes) group(c);
  }
}

using Groups = void (*)(const ScaleRun&, size_t, size_t, size_t, size_t, size_t);

// A type pair's loops: `body` for groups of `lanes` channels, `tail` for the channels (per
// tensor: values) whole groups leave, one at a time (a predicated block takes its partial
// group itself).
struct Columns {
  Groups body, tail;
  size_t lanes;
  bool predicated;
  bool call_per_group;  // body takes one group a call (else all of them)
  size_t row_block;     // rows the groups go down before the next rows
};

template <class B, typename In, typename Out>
Groups groups(bool double_round) {
  if constexpr (B::kFixedRounding) {
    if (double_round) return rescale_groups<B, In, Out, true>;
  }
  return rescale_groups<B, In, Out, false>;
}

template <class B, typename In, typename Out>
Columns columns(bool double_round) {
  Columns f{groups<B, In, Out>(double_round), nullptr,         B::kLanes,
            B::kPredicated,                     B::kCallPerGroup, B::kRowBlock};
  if constexpr (B::kLanes > 1 && !B::kPredicated) {
    f.tail = groups<ScaleScalar<true>, In, Out>(double_round);
  }
  return f;
}

// The loop nest: per tensor, the tensor is one row of blocks with the tensor's scale; per
// channel, blocks of `row_block` rows, in each the channel groups go down the rows with their
// channels' scales.
void rescale_columns(const Columns& f, const ScaleRun& r, size_t elements, size_t channels) {
  const size_t lanes = f.lanes;
  if (!r.per_channel) {
    const size_t whole = elements / lanes * lanes;
    if (whole > 0) f.body(r, 0, elements / lanes, lanes, 0, lanes);
    if (whole < elements && f.predicated) {
      f.body(r, whole, 1, lanes, 0, elements - whole);
    } else if (whole < elements) {
      f.tail(r, whole, elements - whole, 1, 0, 1);
    }
    return;
  }
  const size_t rows = elements / channels;
  const size_t whole = f.predicated ? channels : channels / lanes * lanes;
  for (size_t r0 = 0; r0 < rows; r0 += f.row_block) {
    const size_t count = rows - r0 < f.row_block ? rows - r0 : f.row_block;
    const size_t step = f.call_per_group ? lanes : whole;
    for (size_t c0 = 0; c0 < whole; c0 += step) {
      f.body(r, r0 * channels, count, channels, c0, c0 + step < whole ? c0 + step : whole);
    }
    if (whole < channels) f.tail(r, r0 * channels, count, channels, whole, channels);
  }
}

// Whether the ISA's blocks compute every value of the input type exactly (scale_isa.h):
// value << max(base - shift, 0) fits in 32 bits for every value - not for int32 inputs with a
// shift below 32 (nor with a zero point: value could overflow), nor int8/int16 with very
// small shifts; outside the spec's range of value, where the portable kernel's result is the
// one to give.
bool isa_blocks_fit(DType in, int64_t izp, const int8_t* s, size_t channels, bool double_round) {
  if (in == DType::kInt32 && izp != 0) return false;
  int32_t min_shift = 62;
  for (size_t c = 0; c < channels; ++c) min_shift = s[c] < min_shift ? s[c] : min_shift;
  const int32_t ls = (double_round ? 31 : 32) - min_shift;
  const int64_t vmin = type_min(in) - izp, vmax = type_max(in) - izp;
  return ls <= 0 || (in != DType::kInt32 && vmin >= -(1ll << (31 - ls)) &&
                     vmax < (1ll << (31 - ls)));
}

// The typed loop's functions for the pairs the lowering emits (conv/matmul accumulators to
// activations, activations to int32 for elementwise arithmetic); `body` null for any other
// pair.
Columns typed_columns(DType in, DType out, const int8_t* s, size_t channels, bool scale32,
                      bool double_round, int64_t izp) {
  const auto pair = [&](DType a, DType b) { return in == a && out == b; };
  if (!scale32) {
    return pair(DType::kInt48, DType::kInt16) ? columns<ScaleScalar<false>, int64_t, int16_t>(false)
                                              : Columns{};
  }
  constexpr bool kIsa = !std::is_same<ScaleBlock, ScaleScalar<true>>::value;
  const bool activation = pair(DType::kInt32, DType::kInt8) || pair(DType::kInt8, DType::kInt32) ||
                          pair(DType::kInt16, DType::kInt32);
  if (kIsa && activation && isa_blocks_fit(in, izp, s, channels, double_round)) {
    if (pair(DType::kInt32, DType::kInt8)) {
      return columns<ScaleBlock, int32_t, int8_t>(double_round);
    }
    if (pair(DType::kInt8, DType::kInt32)) {
      return columns<ScaleBlock, int8_t, int32_t>(double_round);
    }
    return columns<ScaleBlock, int16_t, int32_t>(double_round);
  }
  if (pair(DType::kInt32, DType::kInt16)) {
    return columns<ScaleScalar<true>, int32_t, int16_t>(double_round);
  }
  if (pair(DType::kInt32, DType::kInt32)) {
    return columns<ScaleScalar<true>, int32_t, int32_t>(double_round);
  }
  if constexpr (kScaleScalarFallback) {  // where the ISA's blocks decline
    if (pair(DType::kInt32, DType::kInt8)) {
      return columns<ScaleScalar<true>, int32_t, int8_t>(double_round);
    }
    if (pair(DType::kInt8, DType::kInt32)) {
      return columns<ScaleScalar<true>, int8_t, int32_t>(double_round);
    }
    if (pair(DType::kInt16, DType::kInt32)) {
      return columns<ScaleScalar<true>, int16_t, int32_t>(double_round);
    }
  }
  return Columns{};
}

}  // namespace

// Attrs: scale32 rounding_mode per_channel input_zp output_zp input_unsigned output_unsigned.
Error rescale(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 7));
  const Tensor &in = op.inputs[0], &mult = op.inputs[1], &shift = op.inputs[2];
  const Tensor& out = op.outputs[0];
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
  const int8_t* s = static_cast<const int8_t*>(shift.data);
  if (!in_unsigned && !out_unsigned) {
    const Columns f = typed_columns(in.dtype, out.dtype, s, channels, scale32, double_round, izp);
    if (f.body) {
      const ScaleRun r{in.data,      out.data,     mult.data,
                       s,            channels != 1, double_round,
                       static_cast<int32_t>(izp), static_cast<int32_t>(ozp)};
      rescale_columns(f, r, in.elements, channels);
      return Error::kOk;
    }
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
    const int32_t sh = static_cast<int32_t>(load(shift, c));
    const int64_t result = scale32 ? apply_scale_32(value, m, sh, double_round)
                                   : apply_scale_16(value, m, sh);
    store(out, i, clamp64(result + ozp, lo, hi));
  }
  return Error::kOk;
}

}  // namespace tosa_cpu
