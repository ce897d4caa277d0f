// Element access, shape helpers, the TOSA scaling helpers and the kernel table.
#include <string.h>

#include "isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {

const char* kernel_variant() { return isa_variant(); }

int64_t load(const Tensor& t, size_t i) {
  const uint8_t* p = static_cast<const uint8_t*>(t.data);
  switch (t.dtype) {
    case DType::kBool: return p[i] != 0;
    case DType::kInt8: return static_cast<int8_t>(p[i]);
    case DType::kInt16: { int16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    case DType::kInt32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kInt48: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
  }
  return 0;
}

// Stores the low bits of `value` (two's complement wrap, as a cast in the spec).
void store(const Tensor& t, size_t i, int64_t value) {
  uint8_t* p = static_cast<uint8_t*>(t.data);
  const uint64_t bits = static_cast<uint64_t>(value);
  switch (t.dtype) {
    case DType::kBool: p[i] = value != 0; break;
    case DType::kInt8: p[i] = static_cast<uint8_t>(bits); break;
    case DType::kInt16: { const uint16_t v = static_cast<uint16_t>(bits); memcpy(p + 2 * i, &v, 2); break; }
    case DType::kInt32: { const uint32_t v = static_cast<uint32_t>(bits); memcpy(p + 4 * i, &v, 4); break; }
    case DType::kInt48: {
      // Sign-extend from bit 47: int48 arithmetic wraps at 48 bits.
      const int64_t v = static_cast<int64_t>(bits << 16) >> 16;
      memcpy(p + 8 * i, &v, 8);
      break;
    }
  }
}

int64_t type_min(DType dtype) {
  switch (dtype) {
    case DType::kBool: return 0;
    case DType::kInt8: return -128;
    case DType::kInt16: return -32768;
    case DType::kInt32: return -2147483647ll - 1;
    case DType::kInt48: return -(1ll << 47);
  }
  return 0;
}

int64_t type_max(DType dtype) {
  switch (dtype) {
    case DType::kBool: return 1;
    case DType::kInt8: return 127;
    case DType::kInt16: return 32767;
    case DType::kInt32: return 2147483647ll;
    case DType::kInt48: return (1ll << 47) - 1;
  }
  return 0;
}

bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.rank != b.rank) return false;
  for (uint32_t i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

void strides(const Tensor& t, size_t* out, bool broadcast) {
  size_t stride = 1;
  for (uint32_t i = t.rank; i-- > 0;) {
    out[i] = (broadcast && t.shape[i] == 1) ? 0 : stride;
    stride *= static_cast<size_t>(t.shape[i]);
  }
}

bool next_index(int32_t* index, const int32_t* shape, uint32_t rank) {
  for (uint32_t i = rank; i-- > 0;) {
    if (++index[i] < shape[i]) return true;
    index[i] = 0;
  }
  return false;
}

void reciprocal_scale(uint32_t value, int32_t* multiplier, int32_t* shift) {
  const uint32_t m1 = value - 1;
  const int32_t k = m1 == 0 ? 0 : 32 - __builtin_clz(m1);
  const int64_t numerator = ((1ll << 30) + 1) << k;
  *multiplier = static_cast<int32_t>(numerator / value);
  *shift = 30 + k;
}

Error check_counts(const OpArgs& op, uint32_t inputs, uint32_t outputs, uint32_t attrs) {
  ETHOSU_RT_CHECK(op.n_inputs, ==, inputs, Error::kBadValue, op_name(op.op), "operand count");
  ETHOSU_RT_CHECK(op.n_outputs, ==, outputs, Error::kBadValue, op_name(op.op), "result count");
  ETHOSU_RT_CHECK(op.n_attrs, ==, attrs, Error::kBadValue, op_name(op.op), "attr count");
  return Error::kOk;
}

namespace {

struct Entry {
  uint32_t op;
  Kernel kernel;
  const char* name;
};

constexpr Entry kKernels[] = {
    {kArgmax, argmax, "ARGMAX"},
    {kAvgPool2d, avg_pool2d, "AVG_POOL2D"},
    {kConv2d, conv2d, "CONV2D"},
    {kDepthwiseConv2d, depthwise_conv2d, "DEPTHWISE_CONV2D"},
    {kMatmul, matmul, "MATMUL"},
    {kMaxPool2d, max_pool2d, "MAX_POOL2D"},
    {kTransposeConv2d, transpose_conv2d, "TRANSPOSE_CONV2D"},
    {kClamp, clamp, "CLAMP"},
    {kAdd, binary, "ADD"},
    {kArithmeticRightShift, binary, "ARITHMETIC_RIGHT_SHIFT"},
    {kBitwiseAnd, binary, "BITWISE_AND"},
    {kBitwiseOr, binary, "BITWISE_OR"},
    {kBitwiseXor, binary, "BITWISE_XOR"},
    {kIntdiv, binary, "INTDIV"},
    {kLogicalAnd, binary, "LOGICAL_AND"},
    {kLogicalLeftShift, binary, "LOGICAL_LEFT_SHIFT"},
    {kLogicalRightShift, binary, "LOGICAL_RIGHT_SHIFT"},
    {kLogicalOr, binary, "LOGICAL_OR"},
    {kLogicalXor, binary, "LOGICAL_XOR"},
    {kMaximum, binary, "MAXIMUM"},
    {kMinimum, binary, "MINIMUM"},
    {kMul, mul, "MUL"},
    {kSub, binary, "SUB"},
    {kTable, table, "TABLE"},
    {kAbs, unary, "ABS"},
    {kBitwiseNot, unary, "BITWISE_NOT"},
    {kClz, unary, "CLZ"},
    {kLogicalNot, unary, "LOGICAL_NOT"},
    {kNegate, unary, "NEGATE"},
    {kSelect, select, "SELECT"},
    {kEqual, binary, "EQUAL"},
    {kGreater, binary, "GREATER"},
    {kGreaterEqual, binary, "GREATER_EQUAL"},
    {kReduceAll, reduce, "REDUCE_ALL"},
    {kReduceAny, reduce, "REDUCE_ANY"},
    {kReduceMax, reduce, "REDUCE_MAX"},
    {kReduceMin, reduce, "REDUCE_MIN"},
    {kReduceSum, reduce, "REDUCE_SUM"},
    {kConcat, concat, "CONCAT"},
    {kPad, pad, "PAD"},
    {kReshape, reshape, "RESHAPE"},
    {kReverse, reverse, "REVERSE"},
    {kSlice, slice, "SLICE"},
    {kTile, tile, "TILE"},
    {kTranspose, transpose, "TRANSPOSE"},
    {kGather, gather, "GATHER"},
    {kScatter, scatter, "SCATTER"},
    {kResize, resize, "RESIZE"},
    {kCast, unary, "CAST"},
    {kRescale, rescale, "RESCALE"},
    {kIdentity, unary, "IDENTITY"},
};

}  // namespace

Kernel find_kernel(uint32_t op) {
  for (const Entry& e : kKernels) {
    if (e.op == op) return e.kernel;
  }
  return nullptr;
}

const char* op_name(uint32_t op) {
  for (const Entry& e : kKernels) {
    if (e.op == op) return e.name;
  }
  return "UNKNOWN";
}

}  // namespace tosa_cpu
