// Operator numbers of a CPU graph: the TOSA Op numbers of tosa.fbs (TOSA 1.0), and the
// attribute words each operator carries (pipeline/cpu/graph_format.py ATTRS; docs/artifacts.md).
#ifndef TOSA_CPU_OPS_H_
#define TOSA_CPU_OPS_H_

#include <stdint.h>

namespace tosa_cpu {

enum Op : uint32_t {
  kArgmax = 1,
  kAvgPool2d = 2,
  kConv2d = 3,
  kDepthwiseConv2d = 5,
  kMatmul = 7,
  kMaxPool2d = 8,
  kTransposeConv2d = 10,
  kClamp = 11,
  kAdd = 15,
  kArithmeticRightShift = 16,
  kBitwiseAnd = 17,
  kBitwiseOr = 18,
  kBitwiseXor = 19,
  kIntdiv = 20,
  kLogicalAnd = 21,
  kLogicalLeftShift = 22,
  kLogicalRightShift = 23,
  kLogicalOr = 24,
  kLogicalXor = 25,
  kMaximum = 26,
  kMinimum = 27,
  kMul = 28,
  kSub = 30,
  kTable = 31,
  kAbs = 32,
  kBitwiseNot = 33,
  kClz = 35,
  kLogicalNot = 40,
  kNegate = 41,
  kSelect = 45,
  kEqual = 46,
  kGreater = 47,
  kGreaterEqual = 48,
  kReduceAll = 49,
  kReduceAny = 50,
  kReduceMax = 51,
  kReduceMin = 52,
  kReduceSum = 54,
  kConcat = 55,
  kPad = 56,
  kReshape = 57,
  kReverse = 58,
  kSlice = 59,
  kTile = 60,
  kTranspose = 61,
  kGather = 62,
  kScatter = 63,
  kResize = 64,
  kCast = 65,
  kRescale = 66,
  kIdentity = 68,
};

// "CONV2D", ...; "UNKNOWN" for a number the library does not run.
const char* op_name(uint32_t op);

}  // namespace tosa_cpu

#endif  // TOSA_CPU_OPS_H_
