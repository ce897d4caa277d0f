// Reader of the model artifact: the Vela bin-stream blocks written by the Python
// packager (vela_bin_stream, cmd_data, weight_data, scratch_size, inputs, outputs,
// scratch_fast, io_meta, vela_end_stream), all little-endian.
//
// parse_artifact() checks every length, offset, count and alignment against the
// buffer before it is used, so a truncated, misaligned, oversized or wrong-magic
// artifact gives an Error (and a log line naming the block and the values) and
// nothing is read out of bounds. The Model keeps pointers into the caller's buffer,
// which must outlive it. No heap is used.
#ifndef ETHOSU_RT_ARTIFACT_H_
#define ETHOSU_RT_ARTIFACT_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ethosu_rt/error.h"

namespace ethosu_rt {

constexpr size_t kArtifactAlignment = 16;
constexpr size_t kBlockHeaderBytes = 32;
constexpr size_t kBlockNameBytes = 16;
constexpr size_t kVelaIoBytes = 36;
constexpr size_t kIoMetaHeaderBytes = 16;
constexpr size_t kIoMetaRecordBytes = 80;
constexpr size_t kIoNameBytes = 32;
constexpr size_t kMaxRank = 6;
constexpr uint32_t kIoMetaMagic = 0x444D4F49u;  // bytes "IOMD"
constexpr uint16_t kIoMetaVersion = 1;

// Base-pointer regions as Vela numbers them.
constexpr uint32_t kRegionWeights = 0;
constexpr uint32_t kRegionScratch = 1;
constexpr uint32_t kRegionFastScratch = 2;
constexpr uint32_t kRegionInputs = 3;   // only with --separate-io-regions
constexpr uint32_t kRegionOutputs = 4;  // only with --separate-io-regions
constexpr uint32_t kNumRegions = 8;     // base pointers the NPU has

enum class DType : uint32_t {
  kInt8 = 1,
  kUint8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kBool = 5,
  kFloat32 = 6,
};

enum class Layout : uint32_t {
  kSame = 0,         // the NPU sees the tensor in torch's layout
  kNhwcForNchw = 1,  // torch has NCHW, the NPU has NHWC (rank 4 only)
};

// Bytes of one element of `dtype` (0 for an unknown value).
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

struct ByteSpan {
  const uint8_t* data;
  size_t size;
};

// One network input or output: Vela's placement plus our io_meta record.
struct TensorInfo {
  // Vela's view (from the `inputs`/`outputs` block).
  int32_t npu_shape[kMaxRank];  // always 6-D, every entry >= 1
  size_t elem_size;             // 1, 2 or 4
  size_t offset;                // byte offset inside `region`
  uint32_t region;              // 1 (scratch), 3 (inputs) or 4 (outputs)
  size_t io_bytes;              // bytes the NPU reads or writes: prod(npu_shape) * elem_size
  // The tensor as the application holds it (from `io_meta`).
  const char* name;  // NUL-terminated, points into the artifact
  DType dtype;
  Layout layout;
  uint32_t rank;
  int32_t shape[kMaxRank];  // NPU-side order; entries past `rank` are 0
  float scale;
  int32_t zero_point;
  size_t element_count;  // prod(shape[0..rank))
  size_t tensor_bytes;   // element_count * dtype_size(dtype)
};

// A validated artifact. All pointers point into the caller's buffer.
struct Model {
  ByteSpan cmd_data;  // COP1 or COP2 container, as Vela wrote it
  ByteSpan weights;   // region 0 contents (>= 1 byte)
  size_t scratch_size;
  size_t scratch_fast_size;
  size_t num_inputs;
  size_t num_outputs;
  const uint8_t* input_records;   // num_inputs x 36 bytes
  const uint8_t* output_records;  // num_outputs x 36 bytes
  const uint8_t* meta_records;    // (num_inputs + num_outputs) x 80 bytes
};

// Validates `data[0, size)` and fills `model`. `data` must be 16-byte aligned.
Error parse_artifact(const void* data, size_t size, Model* model);

// Decoded description of input/output `index` (already validated by parse_artifact).
Error get_input(const Model& model, size_t index, TensorInfo* info);
Error get_output(const Model& model, size_t index, TensorInfo* info);

// Bytes a buffer for `region` must hold: the largest offset + io_bytes of the IO
// placed there, and for region 1 at least scratch_size. 0 when the region is unused.
size_t region_bytes(const Model& model, uint32_t region);

// Decodes one 80-byte io_meta record (input or output `index`) into the application-side
// fields of `info` (name .. tensor_bytes), with every check get_input/get_output make; the
// Vela fields are left as they are. CPU artifacts (cpu_artifact.h) carry the same records.
Error decode_io_meta(const uint8_t* record, bool output, size_t index, TensorInfo* info);

// Little-endian loads that work at any alignment. Inline: on a little-endian core that
// allows unaligned access each is one load instruction.
inline uint32_t load_u32(const uint8_t* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint32_t value;
  memcpy(&value, p, sizeof(value));
  return value;
#else
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
#endif
}

inline uint16_t load_u16(const uint8_t* p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint16_t value;
  memcpy(&value, p, sizeof(value));
  return value;
#else
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
#endif
}

inline uint64_t load_u64(const uint8_t* p) {
  return static_cast<uint64_t>(load_u32(p)) | (static_cast<uint64_t>(load_u32(p + 4)) << 32);
}

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_ARTIFACT_H_
