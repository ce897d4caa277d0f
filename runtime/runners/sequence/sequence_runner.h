// Runs a sequence artifact (ethosu_rt/sequence.h): NPU segments through the platform's NPU
// path (the NpuSegments seam below: Linux direct drive or the Cortex-M core driver), CPU
// segments through the TOSA kernel library (CpuModel), with every border tensor in one
// caller-supplied arena.
//
//   ethosu_rt::SequenceRunner runner;
//   ETHOSU_RT_TRY(runner.open(artifact, size));           // every segment checked
//   ETHOSU_RT_TRY(runner.bind(arena, arena_size));        // >= runner.arena_bytes()
//   ETHOSU_RT_TRY(runner.set_input(0, data, bytes));      // torch layout, io_meta dtype
//   ETHOSU_RT_TRY(runner.run(npu));                       // npu: an NpuSegments
//   ETHOSU_RT_TRY(runner.get_output(0, out, bytes));
//
// Arena layout: each border tensor at a 16-byte aligned offset (in the sequence's tensor
// order), then one CPU arena shared by the CPU segments (they run one after another, and
// each one's outputs are copied to their border tensors before the next starts). No heap,
// exceptions or RTTI.
#ifndef ETHOSU_RT_SEQUENCE_RUNNER_H_
#define ETHOSU_RT_SEQUENCE_RUNNER_H_

#include <stddef.h>
#include <stdint.h>

#include "cpu_model.h"
#include "ethosu_rt/error.h"
#include "ethosu_rt/io.h"
#include "ethosu_rt/sequence.h"

namespace ethosu_rt {

// The platform's NPU, one prepared network per NPU segment (`segment` is its index in the
// sequence).
class NpuSegments {
 public:
  virtual Error prepare(size_t segment, const Model& model) = 0;
  virtual const Regions& regions(size_t segment) const = 0;
  virtual Error invoke(size_t segment) = 0;

 protected:
  ~NpuSegments() = default;
};

class SequenceRunner {
 public:
  Error open(const void* artifact, size_t size);
  const Sequence& sequence() const { return sequence_; }
  size_t arena_bytes() const { return arena_bytes_; }
  size_t num_inputs() const { return sequence_.num_inputs; }
  size_t num_outputs() const { return sequence_.num_outputs; }

  // The application's view of graph input/output `index` (io_meta).
  Error input_info(size_t index, TensorInfo* info) const;
  Error output_info(size_t index, TensorInfo* info) const;

  Error bind(void* arena, size_t size);
  // Prepares every NPU segment on `npu` (once, before the first run).
  Error prepare(NpuSegments& npu);
  Error set_input(size_t index, const void* src, size_t len);
  // Runs the segments in order; `npu` must have been prepared.
  Error run(NpuSegments& npu);
  Error get_output(size_t index, void* dst, size_t len) const;

 private:
  Error run_cpu(size_t segment);
  Error run_npu(NpuSegments& npu, size_t segment);

  Sequence sequence_{};
  CpuModel cpu_[kMaxSegments];
  size_t offsets_[kMaxSequenceTensors] = {};
  size_t cpu_arena_offset_ = 0;
  size_t cpu_arena_bytes_ = 0;
  size_t arena_bytes_ = 0;
  uint8_t* arena_ = nullptr;
};

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_SEQUENCE_RUNNER_H_
