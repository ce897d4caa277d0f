// Internal: what a kernel sees of its operator, and the kernels.
//
// Every kernel is `Error kernel(const OpArgs& op, bool run)`: it first checks its operand
// count, types, shapes and attributes (open() calls it with run=false for every operator),
// then, with run=true, computes. A kernel reads and writes only through the Tensor views,
// whose sizes the graph has checked against the blob and the arena.
#ifndef TOSA_CPU_KERNELS_H_
#define TOSA_CPU_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#include "ethosu_rt/check.h"
#include "tosa_cpu/graph.h"

namespace tosa_cpu {

struct OpArgs {
  uint32_t op;
  uint32_t index;  // position in the graph, for messages
  uint32_t n_inputs;
  uint32_t n_outputs;
  uint32_t n_attrs;
  const int32_t* attrs;
  const Tensor* inputs;   // n_inputs views
  const Tensor* outputs;  // n_outputs views
};

using Kernel = Error (*)(const OpArgs& op, bool run);

// The kernel of `op`, nullptr when the library has none.
Kernel find_kernel(uint32_t op);

// Element access for kernels that are not on the hot path.
int64_t load(const Tensor& t, size_t i);
void store(const Tensor& t, size_t i, int64_t value);
// Smallest / largest value of an integer type (bool: 0 / 1).
int64_t type_min(DType dtype);
int64_t type_max(DType dtype);

// A tensor's elements as a pointer-like cursor, read and written with load() and store():
// where a loop nest takes one in place of a typed pointer, a single instantiation serves
// every element type (the fallbacks that are built for size).
struct Elements {
  const Tensor* t;
  size_t i;
  Elements operator+(size_t k) const { return Elements{t, i + k}; }
};
// Element access of the portable blocks, through a typed pointer or a cursor: the value,
// storing one (the low bits of `v`; int48 sign-extended from bit 47), the type's range.
template <typename T>
inline int64_t get(const T* p) { return *p; }
inline int64_t get(Elements e) {  // int8, the common case, without a call
  return e.t->dtype == DType::kInt8 ? static_cast<const int8_t*>(e.t->data)[e.i] : load(*e.t, e.i);
}
template <typename T>
inline void put(T* p, int64_t v) { *p = static_cast<T>(v); }
inline void put(Elements e, int64_t v) { store(*e.t, e.i, v); }
template <typename T>
inline int64_t lowest(T*) {
  return std::numeric_limits<typename std::remove_const<T>::type>::min();
}
inline int64_t lowest(Elements e) { return type_min(e.t->dtype); }
template <typename T>
inline int64_t highest(T*) {
  return std::numeric_limits<typename std::remove_const<T>::type>::max();
}
inline int64_t highest(Elements e) { return type_max(e.t->dtype); }
inline int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// Shape helpers.
bool same_shape(const Tensor& a, const Tensor& b);
// Row-major strides of `t`, broadcasting dims of size 1 to stride 0 when `broadcast`.
void strides(const Tensor& t, size_t* out, bool broadcast);
// Advances a row-major multi-index over `shape`; false after the last one.
bool next_index(int32_t* index, const int32_t* shape, uint32_t rank);

// Checks that `in` broadcasts to `out` (same rank; each dim equal or 1).
Error check_broadcast(const OpArgs& op, const Tensor& in, const Tensor& out);

// Calls f(i0, i1, i2, o) for every output element, with the element offsets of up to three
// inputs broadcast to `out` (pass `out` itself for an unused input).
template <typename F>
void broadcast3(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& out, F f) {
  size_t sa[kMaxRank], sb[kMaxRank], sc[kMaxRank];
  strides(a, sa, true);
  strides(b, sb, true);
  strides(c, sc, true);
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0};
  size_t ia = 0, ib = 0, ic = 0;
  for (size_t o = 0; o < out.elements; ++o) {
    f(ia, ib, ic, o);
    // Advance the innermost dimension, carrying outward; offsets follow incrementally.
    for (uint32_t d = out.rank; d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      ic += sc[d];
      if (++index[d] < out.shape[d]) break;
      ia -= sa[d] * static_cast<size_t>(out.shape[d]);
      ib -= sb[d] * static_cast<size_t>(out.shape[d]);
      ic -= sc[d] * static_cast<size_t>(out.shape[d]);
      index[d] = 0;
    }
  }
}

// TOSA helpers (spec pseudo-code).
// apply_scale_32: value * multiplier, rounded right shift; with double_round a shift above
// 31 rounds twice (at bit 31, then at the final position), as the spec does.
inline int32_t apply_scale_32(int64_t value, int32_t multiplier, int32_t shift,
                              bool double_round) {
  int64_t round = static_cast<int64_t>(1) << (shift - 1);
  if (double_round && shift > 31) {
    round += value >= 0 ? (1ll << 30) : -(1ll << 30);
  }
  return static_cast<int32_t>((value * multiplier + round) >> shift);
}

inline int32_t apply_scale_16(int64_t value, int32_t multiplier, int32_t shift) {
  const int64_t round = static_cast<int64_t>(1) << (shift - 1);
  return static_cast<int32_t>((value * multiplier + round) >> shift);
}

// The low 48 bits of `v`, sign-extended: how an int48 accumulator wraps.
inline int64_t wrap48(int64_t v) {
  return static_cast<int64_t>(static_cast<uint64_t>(v) << 16) >> 16;
}

// The low 32 bits of `v` as int32 (two's complement wrap).
inline int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
void reciprocal_scale(uint32_t value, int32_t* multiplier, int32_t* shift);

// Checks shared by kernels.
Error check_counts(const OpArgs& op, uint32_t inputs, uint32_t outputs, uint32_t attrs);

// Kernels by family: conv.cc, depthwise.cc, matmul.cc, pooling.cc, scale.cc, elementwise.cc,
// data.cc.
Error conv2d(const OpArgs& op, bool run);
Error depthwise_conv2d(const OpArgs& op, bool run);
Error transpose_conv2d(const OpArgs& op, bool run);
Error matmul(const OpArgs& op, bool run);
Error avg_pool2d(const OpArgs& op, bool run);
Error max_pool2d(const OpArgs& op, bool run);
Error rescale(const OpArgs& op, bool run);
Error table(const OpArgs& op, bool run);
Error mul(const OpArgs& op, bool run);
Error binary(const OpArgs& op, bool run);  // ADD SUB MIN MAX bitwise logical shifts compare INTDIV
Error unary(const OpArgs& op, bool run);   // ABS BITWISE_NOT CLZ LOGICAL_NOT NEGATE CAST IDENTITY
Error clamp(const OpArgs& op, bool run);
Error select(const OpArgs& op, bool run);
Error reduce(const OpArgs& op, bool run);
Error argmax(const OpArgs& op, bool run);
Error concat(const OpArgs& op, bool run);
Error pad(const OpArgs& op, bool run);
Error reshape(const OpArgs& op, bool run);
Error reverse(const OpArgs& op, bool run);
Error slice(const OpArgs& op, bool run);
Error tile(const OpArgs& op, bool run);
Error transpose(const OpArgs& op, bool run);
Error gather(const OpArgs& op, bool run);
Error scatter(const OpArgs& op, bool run);
Error resize(const OpArgs& op, bool run);

}  // namespace tosa_cpu

#endif  // TOSA_CPU_KERNELS_H_
