// Elementwise operators: binary (with broadcasting), unary, CLAMP, SELECT, MUL and TABLE, as
// TOSA 1.0. The residual int32 ADD/SUB through the blocks of elementwise_isa.h.
#include <string.h>

#include "elementwise_isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {

Error check_broadcast(const OpArgs& op, const Tensor& in, const Tensor& out) {
  ETHOSU_RT_CHECK(in.rank, ==, out.rank, Error::kBadValue, op_name(op.op), "operand rank");
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_CHECK_TRUE(in.shape[d] == out.shape[d] || in.shape[d] == 1, Error::kBadValue,
                         op_name(op.op), "operand dimension must equal the output's or be 1");
  }
  return Error::kOk;
}

namespace {

bool is_int(DType d) { return d == DType::kInt8 || d == DType::kInt16 || d == DType::kInt32; }

int64_t wrap(DType d, int64_t v) {
  const unsigned bits = 8 * static_cast<unsigned>(dtype_size(d));
  const uint64_t u = static_cast<uint64_t>(v) << (64 - bits);
  return static_cast<int64_t>(u) >> (64 - bits);
}

// Output type of a binary op for inputs of type `in`.
DType binary_out(uint32_t op, DType in) {
  switch (op) {
    case kEqual:
    case kGreater:
    case kGreaterEqual: return DType::kBool;
    default: return in;
  }
}

bool binary_types_ok(uint32_t op, DType in) {
  switch (op) {
    case kLogicalAnd:
    case kLogicalOr:
    case kLogicalXor: return in == DType::kBool;
    case kAdd:
    case kSub:
    case kIntdiv:
    case kMaximum:
    case kMinimum:
    case kEqual:
    case kGreater:
    case kGreaterEqual: return in == DType::kInt32 || in == DType::kInt8 || in == DType::kInt16;
    default: return is_int(in);
  }
}

// int32 ADD/SUB of same-shape tensors, wrapping (TOSA's int32 ADD/SUB wrap): blocks of B from
// `begin`; returns the first value B left.
template <class B>
TOSA_CPU_INLINE size_t add_sub32_blocks(size_t begin, const int32_t* a, const int32_t* b,
                                        int32_t* y, size_t n, bool sub) {
  return for_each_block<B>(begin, n, [&](size_t i, size_t remaining) TOSA_CPU_LAMBDA {
    const typename B::Mask mask = B::mask(remaining);
    const typename B::V x = B::load(a + i, mask), z = B::load(b + i, mask);
    B::store(y + i, sub ? B::sub(x, z) : B::add(x, z), mask);
  });
}

void add_sub32(const int32_t* a, const int32_t* b, int32_t* y, size_t n, bool sub) {
  const size_t i = add_sub32_blocks<Int32Block>(0, a, b, y, n, sub);
  if constexpr (needs_tail<Int32Block, Int32Scalar>()) {
    add_sub32_blocks<Int32Scalar>(i, a, b, y, n, sub);
  }
}

}  // namespace

Error binary(const OpArgs& op, bool run) {
  const uint32_t attrs = op.op == kArithmeticRightShift ? 1 : 0;
  ETHOSU_RT_TRY(check_counts(op, 2, 1, attrs));
  const Tensor &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK_ONE_OF(binary_types_ok(op.op, a.dtype), static_cast<uint32_t>(a.dtype),
                         Error::kUnsupported, where, "input type",
                         "int8/int16/int32 (bool for logical operators)");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(b.dtype), ==, static_cast<uint32_t>(a.dtype),
                  Error::kBadValue, where, "second input type");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==,
                  static_cast<uint32_t>(binary_out(op.op, a.dtype)), Error::kBadValue, where,
                  "output type");
  ETHOSU_RT_TRY(check_broadcast(op, a, out));
  ETHOSU_RT_TRY(check_broadcast(op, b, out));
  if (!run) return Error::kOk;
  const uint32_t code = op.op;
  if ((code == kAdd || code == kSub) && a.dtype == DType::kInt32 && same_shape(a, out) &&
      same_shape(b, out)) {  // the residual ADDs: no broadcast, int32, wrapping
    add_sub32(static_cast<const int32_t*>(a.data), static_cast<const int32_t*>(b.data),
              static_cast<int32_t*>(out.data), out.elements, code == kSub);
    return Error::kOk;
  }
  const bool round = attrs != 0 && op.attrs[0] != 0;
  const int bits = 8 * static_cast<int>(dtype_size(a.dtype));
  Error error = Error::kOk;
  broadcast3(a, b, out, out, [&](size_t ia, size_t ib, size_t, size_t o) {
    const int64_t x = load(a, ia), y = load(b, ib);
    int64_t r = 0;
    switch (code) {
      case kAdd: r = wrap(a.dtype, x + y); break;
      case kSub: r = wrap(a.dtype, x - y); break;
      case kMaximum: r = x > y ? x : y; break;
      case kMinimum: r = x < y ? x : y; break;
      case kBitwiseAnd: r = x & y; break;
      case kBitwiseOr: r = x | y; break;
      case kBitwiseXor: r = x ^ y; break;
      case kLogicalAnd: r = x && y; break;
      case kLogicalOr: r = x || y; break;
      case kLogicalXor: r = (x != 0) != (y != 0); break;
      case kEqual: r = x == y; break;
      case kGreater: r = x > y; break;
      case kGreaterEqual: r = x >= y; break;
      case kIntdiv:
        if (y == 0) {
          error = Error::kBadValue;
          return;
        }
        r = wrap(a.dtype, x / y);  // C++ truncates toward zero, as TOSA's INTDIV
        break;
      case kLogicalLeftShift:
      case kLogicalRightShift:
      case kArithmeticRightShift: {
        if (y < 0 || y >= bits) {
          error = Error::kBadValue;
          return;
        }
        if (code == kLogicalLeftShift) {
          r = wrap(a.dtype, static_cast<int64_t>(static_cast<uint64_t>(x) << y));
        } else if (code == kLogicalRightShift) {
          const uint64_t mask = (bits == 64) ? ~0ull : ((1ull << bits) - 1);
          r = wrap(a.dtype, static_cast<int64_t>((static_cast<uint64_t>(x) & mask) >> y));
        } else {
          r = x >> y;
          if (round && y > 0 && ((x >> (y - 1)) & 1) != 0) r += 1;
        }
        break;
      }
      default: break;
    }
    store(out, o, r);
  });
  ETHOSU_RT_CHECK_TRUE(ok(error), Error::kBadValue, where,
                       "operand values must hold no zero divisor and no shift outside the type");
  return Error::kOk;
}

Error unary(const OpArgs& op, bool run) {
  const uint32_t attrs = op.op == kNegate ? 2 : 0;
  ETHOSU_RT_TRY(check_counts(op, 1, 1, attrs));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK_TRUE(same_shape(in, out), Error::kBadValue, where,
                       "input and output shapes must match");
  switch (op.op) {
    case kCast:
      ETHOSU_RT_CHECK_ONE_OF(in.dtype != DType::kInt48 && out.dtype != DType::kInt48,
                             static_cast<uint32_t>(in.dtype), Error::kUnsupported, where,
                             "input/output types", "bool, int8, int16, int32");
      break;
    case kLogicalNot:
      ETHOSU_RT_CHECK(static_cast<uint32_t>(in.dtype), ==, static_cast<uint32_t>(DType::kBool),
                      Error::kUnsupported, where, "input type");
      break;
    case kIdentity: break;
    default:
      ETHOSU_RT_CHECK_ONE_OF(is_int(in.dtype), static_cast<uint32_t>(in.dtype),
                             Error::kUnsupported, where, "input type", "int8, int16, int32");
  }
  if (op.op != kCast) {
    ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(in.dtype),
                    Error::kBadValue, where, "output type");
  }
  if (!run) return Error::kOk;
  if (op.op == kIdentity) {
    memmove(out.data, in.data, in.bytes);
    return Error::kOk;
  }
  const int64_t lo = type_min(out.dtype), hi = type_max(out.dtype);
  for (size_t i = 0; i < in.elements; ++i) {
    const int64_t x = load(in, i);
    int64_t r = 0;
    switch (op.op) {
      case kAbs: r = wrap(in.dtype, x < 0 ? -x : x); break;
      case kBitwiseNot: r = ~x; break;
      case kLogicalNot: r = !x; break;
      case kClz: {
        const uint32_t u = static_cast<uint32_t>(x) & static_cast<uint32_t>(
            (8 * dtype_size(in.dtype) >= 32) ? 0xFFFFFFFFu : ((1u << (8 * dtype_size(in.dtype))) - 1));
        const int width = 8 * static_cast<int>(dtype_size(in.dtype));
        r = u == 0 ? width : __builtin_clz(u) - (32 - width);
        break;
      }
      case kNegate: r = clamp64(-(x - op.attrs[0]) + op.attrs[1], lo, hi); break;
      case kCast: r = out.dtype == DType::kBool ? (x != 0) : x; break;
      default: break;
    }
    store(out, i, r);
  }
  return Error::kOk;
}

// Attrs: min max (in the input type's range).
Error clamp(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 2));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_CHECK_ONE_OF(is_int(in.dtype), static_cast<uint32_t>(in.dtype), Error::kUnsupported,
                         "CLAMP", "input type", "int8, int16, int32");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(in.dtype),
                  Error::kBadValue, "CLAMP", "output type");
  ETHOSU_RT_CHECK_TRUE(same_shape(in, out), Error::kBadValue, "CLAMP",
                       "input and output shapes must match");
  const int64_t lo = op.attrs[0], hi = op.attrs[1];
  ETHOSU_RT_CHECK(lo, <=, hi, Error::kBadValue, "CLAMP", "min_val (<= max_val)");
  if (!run) return Error::kOk;
  for (size_t i = 0; i < in.elements; ++i) store(out, i, clamp64(load(in, i), lo, hi));
  return Error::kOk;
}

Error select(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 0));
  const Tensor &c = op.inputs[0], &a = op.inputs[1], &b = op.inputs[2], &out = op.outputs[0];
  ETHOSU_RT_CHECK(static_cast<uint32_t>(c.dtype), ==, static_cast<uint32_t>(DType::kBool),
                  Error::kBadValue, "SELECT", "condition type");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(a.dtype), ==, static_cast<uint32_t>(out.dtype),
                  Error::kBadValue, "SELECT", "first value type");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(b.dtype), ==, static_cast<uint32_t>(out.dtype),
                  Error::kBadValue, "SELECT", "second value type");
  ETHOSU_RT_TRY(check_broadcast(op, c, out));
  ETHOSU_RT_TRY(check_broadcast(op, a, out));
  ETHOSU_RT_TRY(check_broadcast(op, b, out));
  if (!run) return Error::kOk;
  broadcast3(c, a, b, out, [&](size_t ic, size_t ia, size_t ib, size_t o) {
    store(out, o, load(c, ic) ? load(a, ia) : load(b, ib));
  });
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
