// A CPU graph (the ".tcg" file written by pipeline/cpu/graph_format.py) and the kernels that
// run it: every operator of the TOSA 1.0 integer profile our lowering emits, bit-exact with
// the TOSA reference model.
//
//   tosa_cpu::Graph graph;
//   ETHOSU_RT_TRY(graph.open(blob, blob_size));      // blob 8-byte aligned, checked whole
//   // graph.arena_bytes(): the arena the static memory plan needs (also in the file header)
//   ETHOSU_RT_TRY(graph.bind(arena, arena_size));     // arena 16-byte aligned, >= arena_bytes()
//   tosa_cpu::Tensor in;
//   ETHOSU_RT_TRY(graph.input(0, &in));               // in.data points into the arena
//   memcpy(in.data, input, in.bytes);
//   ETHOSU_RT_TRY(graph.run());
//   ETHOSU_RT_TRY(graph.output(0, &out));
//
// No heap, exceptions or RTTI: the Graph holds pointers into the caller's blob and arena.
// open() validates every record, offset, operand count, type, shape and attribute of every
// operator before anything runs, so run() cannot read or write out of bounds.
#ifndef TOSA_CPU_GRAPH_H_
#define TOSA_CPU_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/error.h"

namespace tosa_cpu {

using ethosu_rt::Error;

constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kMaxRank = 6;
constexpr size_t kArenaAlignment = 16;
constexpr size_t kBlobAlignment = 8;

// TOSA DType numbers. int48 is stored as int64 (8 bytes, sign-extended).
enum class DType : uint32_t { kBool = 1, kInt8 = 3, kInt16 = 4, kInt32 = 5, kInt48 = 6 };

// Bytes per element of `dtype` in memory (int48: 8); 0 for an unknown type.
size_t dtype_size(DType dtype);
// "int8", "int48", ...; "unknown" for others.
const char* dtype_name(DType dtype);

// The kernel variant this library was built with: "mve", "dsp", "neon" or "portable"
// (runtime/tosa_cpu/src/isa.h; CMake -DTOSA_CPU_KERNELS=portable forces the last).
const char* kernel_variant();

// A tensor of the graph: its type and shape, and where its data is (null before bind()
// for tensors in the arena).
struct Tensor {
  DType dtype;
  uint32_t rank;
  int32_t shape[kMaxRank];
  size_t elements;
  size_t bytes;
  void* data;
};

class Graph {
 public:
  // Parses and validates `blob` (the whole .tcg file). The blob must stay alive and
  // unchanged while the graph is used.
  Error open(const void* blob, size_t size);

  // Bytes of arena the memory plan needs; 0 before open().
  size_t arena_bytes() const;
  size_t num_inputs() const;
  size_t num_outputs() const;
  size_t num_ops() const;
  // The TOSA Op number of operator `index` (ops.h names it), 0 when out of range.
  uint32_t op_code(size_t index) const;

  // Uses `arena` (kArenaAlignment-aligned, at least arena_bytes()) for every activation.
  Error bind(void* arena, size_t size);

  // Graph input / output `index` (data set once an arena is bound).
  Error input(size_t index, Tensor* tensor) const;
  Error output(size_t index, Tensor* tensor) const;

  // Runs every operator in order; needs bind().
  Error run();
  // Runs operators [first, first + count) only (segment runs, finding a differing op);
  // their inputs must already hold their values.
  Error run_ops(size_t first, size_t count);
  // The tensors operator `index` writes: output `which` of it (for per-op debugging).
  Error op_output(size_t index, size_t which, Tensor* tensor) const;

 private:
  struct Header;
  const uint8_t* blob_ = nullptr;
  size_t size_ = 0;
  uint8_t* arena_ = nullptr;
  const uint32_t* header_ = nullptr;

  friend struct OpReader;
};

}  // namespace tosa_cpu

#endif  // TOSA_CPU_GRAPH_H_
