// RESCALE, TABLE and MUL: the integer scaling operators, as the TOSA 1.0 pseudo-code.
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

// The typed loop for the pairs the lowering emits (conv/matmul accumulators to activations,
// activations to int32 for elementwise arithmetic); false for any other, which the generic
// loop handles.
bool rescale_fast(const Tensor& in, const Tensor& out, const Tensor& mult, const Tensor& shift,
                  size_t channels, bool scale32, bool double_round, int64_t izp, int64_t ozp) {
  const int8_t* s = static_cast<const int8_t*>(shift.data);
  const int32_t* m32 = static_cast<const int32_t*>(mult.data);
  const auto pair = [&](DType a, DType b) { return in.dtype == a && out.dtype == b; };
  if (!scale32) {
    if (!pair(DType::kInt48, DType::kInt16)) return false;
    rescale_run<int64_t, int16_t>(in, out, static_cast<const int16_t*>(mult.data), s, channels,
                                  false, false, izp, ozp);
  } else if (pair(DType::kInt32, DType::kInt8)) {
    rescale_run<int32_t, int8_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt32, DType::kInt16)) {
    rescale_run<int32_t, int16_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt32, DType::kInt32)) {
    rescale_run<int32_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt8, DType::kInt32)) {
    rescale_run<int8_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
  } else if (pair(DType::kInt16, DType::kInt32)) {
    rescale_run<int16_t, int32_t>(in, out, m32, s, channels, true, double_round, izp, ozp);
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
