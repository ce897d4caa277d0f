// A CPU artifact (pipeline/stages/cpu_graph.py; docs/artifacts.md#cpu-artifact) opened for the
// runners: the kernel library's graph plus the io_meta records that say how the application
// holds each input and output (torch's layout, quantization).
//
//   ethosu_rt::CpuModel model;
//   ETHOSU_RT_TRY(model.open(artifact, size));          // blocks, graph and IO all checked
//   ETHOSU_RT_TRY(model.bind(arena, arena_size));       // >= model.arena_bytes()
//   ETHOSU_RT_TRY(model.set_input(0, data, bytes));     // torch layout, the io_meta dtype
//   ETHOSU_RT_TRY(model.run());
//   ETHOSU_RT_TRY(model.get_output(0, out, bytes));
//
// No heap, exceptions or RTTI: everything points into the caller's artifact and arena.
#ifndef ETHOSU_RT_CPU_MODEL_H_
#define ETHOSU_RT_CPU_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"
#include "tosa_cpu/graph.h"

namespace ethosu_rt {

// Block names of a CPU artifact, in order.
constexpr const char* kCpuBlockNames[] = {"cpu_graph", "io_meta", "cpu_end_stream"};

class CpuModel {
 public:
  // Parses the blocks, opens the graph and checks that each io_meta record describes the
  // graph's input/output of the same index (element count and element size).
  Error open(const void* artifact, size_t size);

  size_t arena_bytes() const { return graph_.arena_bytes(); }
  size_t num_inputs() const { return graph_.num_inputs(); }
  size_t num_outputs() const { return graph_.num_outputs(); }
  tosa_cpu::Graph& graph() { return graph_; }

  // The application's view of input/output `index` (name, dtype, layout, shape, scale, zp).
  Error input_info(size_t index, TensorInfo* info) const;
  Error output_info(size_t index, TensorInfo* info) const;

  // Checks `size` against arena_bytes() (the static plan) before binding it.
  Error bind(void* arena, size_t size);

  // Copies input `index` from the application (torch layout, `len` == tensor_bytes) into
  // the graph, transposing NCHW to NHWC where io_meta says so.
  Error set_input(size_t index, const void* src, size_t len);
  Error run() { return graph_.run(); }
  // Copies output `index` back in the application's layout.
  Error get_output(size_t index, void* dst, size_t len) const;

 private:
  Error info(bool output, size_t index, TensorInfo* info) const;

  tosa_cpu::Graph graph_;
  const uint8_t* meta_records_ = nullptr;
};

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_CPU_MODEL_H_
