// Reader of the sequence artifact of a mixed NPU + CPU graph (pipeline/stages/mixed.py;
// docs/artifacts.md#sequence-artifact): a versioned `sequence` block (the tensors crossing
// segment borders, the segments in order), one block per segment holding a whole artifact of
// its kind (`npu_segment`: a model artifact, `cpu_segment`: a CPU artifact), `io_meta` for the
// whole graph and `sequence_end`.
//
// (runners/sequence/sequence.cc, beside the runner: NPU-only builds do not carry it.)
// parse_sequence() checks the framing, the version, every tensor id and count, and each NPU
// segment with parse_artifact() (its IO against the border tensors); a CPU segment is handed
// over as bytes for CpuModel::open() (runners/cpu), since common/ does not link the kernels.
// No heap: the Sequence points into the caller's buffer.
#ifndef ETHOSU_RT_SEQUENCE_H_
#define ETHOSU_RT_SEQUENCE_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"

namespace ethosu_rt {

constexpr uint32_t kSequenceMagic = 0x5145534Du;  // bytes "MSEQ"
constexpr uint16_t kSequenceVersion = 1;
constexpr size_t kSequenceHeaderBytes = 12;
constexpr size_t kSequenceTensorBytes = 68;  // name[32], dtype, rank, shape[6], bytes
constexpr size_t kMaxSegments = 16;
constexpr size_t kMaxSequenceTensors = 64;
constexpr size_t kMaxSegmentIo = 16;

enum class SegmentKind : uint32_t { kNpu = 0, kCpu = 1 };

struct SequenceTensor {
  const char* name;  // NUL-terminated, points into the artifact
  DType dtype;
  uint32_t rank;
  int32_t shape[kMaxRank];
  size_t bytes;
};

struct Segment {
  SegmentKind kind;
  size_t num_inputs;
  size_t num_outputs;
  uint32_t inputs[kMaxSegmentIo];   // tensor ids
  uint32_t outputs[kMaxSegmentIo];  // tensor ids
  ByteSpan artifact;                // the segment's own artifact (16-byte aligned)
  Model npu;                        // kNpu: the parsed model artifact
};

struct Sequence {
  size_t num_tensors;
  SequenceTensor tensors[kMaxSequenceTensors];
  size_t num_segments;
  Segment segments[kMaxSegments];
  size_t num_inputs;   // graph inputs: tensors [0, num_inputs)
  size_t num_outputs;  // graph outputs: tensors [num_inputs, num_inputs + num_outputs)
  const uint8_t* meta_records;
};

// True when `data` starts with a `sequence` block (a model or CPU artifact does not).
bool is_sequence(const void* data, size_t size);

// Validates `data[0, size)` (16-byte aligned) and fills `sequence`.
Error parse_sequence(const void* data, size_t size, Sequence* sequence);

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_SEQUENCE_H_
