#include "sequence_runner.h"

#include <string.h>

#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

size_t align16(size_t n) { return (n + 15u) & ~size_t{15}; }

}  // namespace

Error SequenceRunner::open(const void* artifact, size_t size) {
  ETHOSU_RT_TRY(parse_sequence(artifact, size, &sequence_));
  size_t offset = 0;
  for (size_t i = 0; i < sequence_.num_tensors; ++i) {
    offsets_[i] = offset;
    offset += align16(sequence_.tensors[i].bytes);
  }
  cpu_arena_offset_ = offset;
  cpu_arena_bytes_ = 0;
  for (size_t k = 0; k < sequence_.num_segments; ++k) {
    const Segment& seg = sequence_.segments[k];
    if (seg.kind != SegmentKind::kCpu) {
      continue;
    }
    CpuModel& cpu = cpu_[k];
    ETHOSU_RT_TRY(cpu.open(seg.artifact.data, seg.artifact.size));
    ETHOSU_RT_CHECK(cpu.num_inputs(), ==, seg.num_inputs, Error::kBadValue, "cpu_segment",
                    "input count (the sequence record's)");
    ETHOSU_RT_CHECK(cpu.num_outputs(), ==, seg.num_outputs, Error::kBadValue, "cpu_segment",
                    "output count (the sequence record's)");
    TensorInfo info;
    for (size_t i = 0; i < seg.num_inputs + seg.num_outputs; ++i) {
      const bool output = i >= seg.num_inputs;
      const size_t index = output ? i - seg.num_inputs : i;
      ETHOSU_RT_TRY(output ? cpu.output_info(index, &info) : cpu.input_info(index, &info));
      const SequenceTensor& t = sequence_.tensors[output ? seg.outputs[index] : seg.inputs[index]];
      ETHOSU_RT_CHECK(info.tensor_bytes, ==, t.bytes, Error::kBadValue, t.name,
                      "CPU segment IO bytes (the border tensor's)");
    }
    if (cpu.arena_bytes() > cpu_arena_bytes_) {
      cpu_arena_bytes_ = cpu.arena_bytes();
    }
  }
  arena_bytes_ = cpu_arena_offset_ + align16(cpu_arena_bytes_);
  return Error::kOk;
}

Error SequenceRunner::input_info(size_t index, TensorInfo* info) const {
  ETHOSU_RT_CHECK(index, <, sequence_.num_inputs, Error::kBadArgument, "sequence",
                  "input index (the input count)");
  return decode_io_meta(sequence_.meta_records + index * kIoMetaRecordBytes, false, index, info);
}

Error SequenceRunner::output_info(size_t index, TensorInfo* info) const {
  ETHOSU_RT_CHECK(index, <, sequence_.num_outputs, Error::kBadArgument, "sequence",
                  "output index (the output count)");
  return decode_io_meta(
      sequence_.meta_records + (sequence_.num_inputs + index) * kIoMetaRecordBytes, true, index,
      info);
}

Error SequenceRunner::bind(void* arena, size_t size) {
  ETHOSU_RT_CHECK(reinterpret_cast<uintptr_t>(arena) % 16u, ==, uintptr_t{0}, Error::kMisaligned,
                  "sequence", "arena address % 16");
  ETHOSU_RT_CHECK(size, >=, arena_bytes_, Error::kBadArgument, "sequence",
                  "arena bytes (the border tensors + the largest CPU segment's arena)");
  arena_ = static_cast<uint8_t*>(arena);
  for (size_t k = 0; k < sequence_.num_segments; ++k) {
    if (sequence_.segments[k].kind == SegmentKind::kCpu) {
      ETHOSU_RT_TRY(cpu_[k].bind(arena_ + cpu_arena_offset_, cpu_arena_bytes_));
    }
  }
  return Error::kOk;
}

Error SequenceRunner::prepare(NpuSegments& npu) {
  for (size_t k = 0; k < sequence_.num_segments; ++k) {
    if (sequence_.segments[k].kind == SegmentKind::kNpu) {
      ETHOSU_RT_TRY(npu.prepare(k, sequence_.segments[k].npu));
    }
  }
  return Error::kOk;
}

Error SequenceRunner::set_input(size_t index, const void* src, size_t len) {
  ETHOSU_RT_CHECK_TRUE(arena_ != nullptr, Error::kBadArgument, "sequence",
                       "bind() must come before set_input()");
  TensorInfo info;
  ETHOSU_RT_TRY(input_info(index, &info));
  ETHOSU_RT_CHECK(len, ==, info.tensor_bytes, Error::kBadArgument, info.name, "input bytes");
  return to_npu_order(info, src, arena_ + offsets_[index], len);
}

Error SequenceRunner::get_output(size_t index, void* dst, size_t len) const {
  TensorInfo info;
  ETHOSU_RT_TRY(output_info(index, &info));
  ETHOSU_RT_CHECK(len, ==, info.tensor_bytes, Error::kBadArgument, info.name, "output bytes");
  return from_npu_order(info, arena_ + offsets_[sequence_.num_inputs + index], dst, len);
}

// Border tensors hold the TOSA graph's layout, which is the kernel graph's: raw copies.
Error SequenceRunner::run_cpu(size_t segment) {
  const Segment& seg = sequence_.segments[segment];
  tosa_cpu::Graph& graph = cpu_[segment].graph();
  tosa_cpu::Tensor t;
  for (size_t i = 0; i < seg.num_inputs; ++i) {
    ETHOSU_RT_TRY(graph.input(i, &t));
    memcpy(t.data, arena_ + offsets_[seg.inputs[i]], t.bytes);
  }
  ETHOSU_RT_TRY(graph.run());
  for (size_t i = 0; i < seg.num_outputs; ++i) {
    ETHOSU_RT_TRY(graph.output(i, &t));
    memcpy(arena_ + offsets_[seg.outputs[i]], t.data, t.bytes);
  }
  return Error::kOk;
}

Error SequenceRunner::run_npu(NpuSegments& npu, size_t segment) {
  const Segment& seg = sequence_.segments[segment];
  for (size_t i = 0; i < seg.num_inputs; ++i) {
    const SequenceTensor& t = sequence_.tensors[seg.inputs[i]];
    ETHOSU_RT_TRY(copy_input(seg.npu, npu.regions(segment), i, arena_ + offsets_[seg.inputs[i]],
                             t.bytes));
  }
  ETHOSU_RT_TRY(npu.invoke(segment));
  for (size_t i = 0; i < seg.num_outputs; ++i) {
    const SequenceTensor& t = sequence_.tensors[seg.outputs[i]];
    ETHOSU_RT_TRY(copy_output(seg.npu, npu.regions(segment), i,
                              arena_ + offsets_[seg.outputs[i]], t.bytes));
  }
  return Error::kOk;
}

Error SequenceRunner::run(NpuSegments& npu) {
  ETHOSU_RT_CHECK_TRUE(arena_ != nullptr, Error::kBadArgument, "sequence",
                       "bind() must come before run()");
  for (size_t k = 0; k < sequence_.num_segments; ++k) {
    const bool cpu = sequence_.segments[k].kind == SegmentKind::kCpu;
    ETHOSU_RT_TRY(cpu ? run_cpu(k) : run_npu(npu, k));
  }
  return Error::kOk;
}

}  // namespace ethosu_rt
