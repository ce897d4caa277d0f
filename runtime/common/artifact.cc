#include "ethosu_rt/artifact.h"

#include <limits.h>
#include <string.h>

#include "ethosu_rt/check.h"
#include "ethosu_rt/cop.h"
#include "ethosu_rt/io.h"

namespace ethosu_rt {
namespace {

// The blocks in the order the packager writes them; any other order is an error.
enum BlockId : size_t {
  kBinStream,
  kCmdData,
  kWeightData,
  kScratchSize,
  kInputs,
  kOutputs,
  kScratchFast,
  kIoMeta,
  kEndStream,
  kNumBlocks,
};

constexpr const char* kBlockNames[kNumBlocks] = {
    "vela_bin_stream", "cmd_data",     "weight_data", "scratch_size",    "inputs",
    "outputs",         "scratch_fast", "io_meta",     "vela_end_stream",
};

struct Block {
  const uint8_t* payload;
  size_t size;    // unpadded
  size_t offset;  // of the header from the artifact start
};

// `where` texts, composed only when a check fails (LazyWhere). A block: values {id, offset}.
void format_block(TextBuffer& t, const LazyWhere& w) {
  t.add("block ").add_u64(w.values[0] + 1).add(" '").add(kBlockNames[w.values[0]]);
  t.add("' at offset ").add_u64(w.values[1]);
}

LazyWhere block_where(size_t id, size_t offset) { return {format_block, nullptr, {id, offset, 0}}; }

constexpr size_t kNoDim = SIZE_MAX;

// An IO: values {output, index, dimension or kNoDim}, context the part or nullptr, e.g.
// "input 0", "output 1 io_meta", "input 0 shape[2]".
void format_io(TextBuffer& t, const LazyWhere& w) {
  t.add(w.values[0] != 0 ? "output " : "input ").add_u64(w.values[1]);
  if (w.context != nullptr) {
    t.add(" ").add(static_cast<const char*>(w.context));
  }
  if (w.values[2] != kNoDim) {
    t.add("[").add_u64(w.values[2]).add("]");
  }
}

LazyWhere io_where(bool output, size_t index, const char* part, size_t dim = kNoDim) {
  return {format_io, part, {output ? 1u : 0u, index, dim}};
}

// `text` (at most `len` bytes, shown printable) in single quotes, in `out`.
const char* quoted(char (&out)[kBlockNameBytes + 3], const void* text, size_t len) {
  TextBuffer(out, sizeof(out)).add("'").add_printable(static_cast<const char*>(text), len).add("'");
  return out;
}

bool checked_mul(size_t a, size_t b, size_t* out) {
  if (a != 0 && b > SIZE_MAX / a) {
    return false;
  }
  *out = a * b;
  return true;
}

Error read_header(const uint8_t* base, size_t size, size_t offset, size_t id, Block* block) {
  const LazyWhere where = block_where(id, offset);
  ETHOSU_RT_CHECK(size - offset, >=, kBlockHeaderBytes, Error::kTruncated, where,
                  "bytes left for the 32-byte block header");
  const uint8_t* header = base + offset;
  // The name is NUL-padded to 16 bytes and at most 15 characters long.
  size_t name_len = 0;
  while (name_len < kBlockNameBytes && header[name_len] != 0) {
    ++name_len;
  }
  bool padding_clean = name_len < kBlockNameBytes;
  for (size_t i = name_len; i < kBlockNameBytes; ++i) {
    padding_clean = padding_clean && header[i] == 0;
  }
  const char* expected = kBlockNames[id];
  if (!padding_clean || strlen(expected) != name_len || memcmp(header, expected, name_len) != 0) {
    char got[kBlockNameBytes + 3];
    char want[kBlockNameBytes + 3];
    ETHOSU_RT_FAIL_TEXT(Error::kBadMagic, where, "block name (NUL-padded, in packager order)",
                        quoted(want, expected, kBlockNameBytes), quoted(got, header, name_len));
  }
  const uint32_t payload_size = load_u32(header + 16);
  ETHOSU_RT_CHECK(header[20], ==, 0u, Error::kUnsupported, where,
                  "external flag (named-data blocks are not supported)");
  for (size_t i = 21; i < kBlockHeaderBytes; ++i) {
    ETHOSU_RT_CHECK(header[i], ==, 0u, Error::kBadValue, where, "reserved header byte");
  }
  const uint64_t padded = (static_cast<uint64_t>(payload_size) + 15u) & ~uint64_t{15};
  const size_t left = size - offset - kBlockHeaderBytes;
  ETHOSU_RT_CHECK(padded, <=, static_cast<uint64_t>(left), Error::kTruncated, where,
                  "padded payload bytes (bytes left in the artifact)");
  const uint8_t* payload = header + kBlockHeaderBytes;
  for (size_t i = payload_size; i < padded; ++i) {
    ETHOSU_RT_CHECK(payload[i], ==, 0u, Error::kBadValue, where, "payload padding byte");
  }
  *block = Block{payload, payload_size, offset};
  return Error::kOk;
}

Error read_blocks(const uint8_t* base, size_t size, Block blocks[kNumBlocks]) {
  size_t offset = 0;
  for (size_t id = 0; id < kNumBlocks; ++id) {
    ETHOSU_RT_TRY(read_header(base, size, offset, id, &blocks[id]));
    offset += kBlockHeaderBytes + ((blocks[id].size + 15u) & ~size_t{15});
  }
  ETHOSU_RT_CHECK(offset, ==, size, Error::kBadValue, "artifact",
                  "end of block 9 'vela_end_stream' (the buffer size)");
  return Error::kOk;
}

Error expect_size(const Block& block, size_t id, size_t want) {
  ETHOSU_RT_CHECK(block.size, ==, want, Error::kBadValue, block_where(id, block.offset),
                  "payload bytes");
  return Error::kOk;
}

// Count of an `inputs`/`outputs` block, checked against the block's size.
Error io_count(const Block& block, size_t id, size_t* count) {
  const LazyWhere where = block_where(id, block.offset);
  ETHOSU_RT_CHECK(block.size, >=, size_t{4}, Error::kTruncated, where,
                  "payload bytes (room for the i32 count)");
  const int32_t n = static_cast<int32_t>(load_u32(block.payload));
  ETHOSU_RT_CHECK(n, >=, id == kOutputs ? 1 : 0, Error::kBadValue, where, "IO count");
  const uint64_t need = 4u + static_cast<uint64_t>(n) * kVelaIoBytes;
  ETHOSU_RT_CHECK(static_cast<uint64_t>(block.size), ==, need, Error::kTruncated, where,
                  "payload bytes (4 + 36 x count)");
  *count = static_cast<size_t>(n);
  return Error::kOk;
}

Error read_io_meta(const Block& block, Model* model) {
  const LazyWhere where = block_where(kIoMeta, block.offset);
  ETHOSU_RT_CHECK(block.size, >=, kIoMetaHeaderBytes, Error::kTruncated, where,
                  "payload bytes (16-byte header)");
  const uint8_t* p = block.payload;
  ETHOSU_RT_CHECK_HEX(load_u32(p), ==, kIoMetaMagic, Error::kBadMagic, where, "magic (\"IOMD\")");
  ETHOSU_RT_CHECK(load_u16(p + 4), ==, kIoMetaVersion, Error::kUnsupported, where, "version");
  ETHOSU_RT_CHECK(load_u16(p + 6), ==, 0u, Error::kBadValue, where, "flags");
  const uint32_t num_inputs = load_u32(p + 8);
  const uint32_t num_outputs = load_u32(p + 12);
  ETHOSU_RT_CHECK(static_cast<size_t>(num_inputs), ==, model->num_inputs, Error::kBadValue, where,
                  "num_inputs (the 'inputs' count)");
  ETHOSU_RT_CHECK(static_cast<size_t>(num_outputs), ==, model->num_outputs, Error::kBadValue, where,
                  "num_outputs (the 'outputs' count)");
  const uint64_t need =
      kIoMetaHeaderBytes + (static_cast<uint64_t>(num_inputs) + num_outputs) * kIoMetaRecordBytes;
  ETHOSU_RT_CHECK(static_cast<uint64_t>(block.size), ==, need, Error::kTruncated, where,
                  "payload bytes (16 + 80 x (num_inputs + num_outputs))");
  model->meta_records = p + kIoMetaHeaderBytes;
  return Error::kOk;
}

Error decode_vela_io(const uint8_t* record, bool output, size_t index, TensorInfo* info) {
  const LazyWhere where = io_where(output, index, nullptr);
  LazyWhere dim_at = io_where(output, index, "Vela shape", 0);
  size_t elements = 1;
  for (size_t d = 0; d < kMaxRank; ++d) {
    const int32_t dim = static_cast<int32_t>(load_u32(record + 4 * d));
    dim_at.values[2] = d;
    ETHOSU_RT_CHECK(dim, >=, 1, Error::kBadValue, dim_at, "dimension");
    info->npu_shape[d] = dim;
    ETHOSU_RT_CHECK_TRUE(checked_mul(elements, static_cast<size_t>(dim), &elements),
                         Error::kOverflow, io_where(output, index, "Vela shape"),
                         "element count must fit in size_t");
  }
  const int32_t elem_size = static_cast<int32_t>(load_u32(record + 24));
  const int32_t offset = static_cast<int32_t>(load_u32(record + 28));
  const int32_t region = static_cast<int32_t>(load_u32(record + 32));
  ETHOSU_RT_CHECK_ONE_OF(elem_size == 1 || elem_size == 2 || elem_size == 4, elem_size,
                         Error::kBadValue, where, "elem_size", "1, 2 or 4");
  ETHOSU_RT_CHECK(offset, >=, 0, Error::kBadValue, where, "offset");
  const int32_t io_region =
      output ? static_cast<int32_t>(kRegionOutputs) : static_cast<int32_t>(kRegionInputs);
  ETHOSU_RT_CHECK_ONE_OF(region == static_cast<int32_t>(kRegionScratch) || region == io_region,
                         region, Error::kBadValue, where, "region", output ? "1 or 4" : "1 or 3");
  info->elem_size = static_cast<size_t>(elem_size);
  info->offset = static_cast<size_t>(offset);
  info->region = static_cast<uint32_t>(region);
  ETHOSU_RT_CHECK_TRUE(checked_mul(elements, info->elem_size, &info->io_bytes), Error::kOverflow,
                       where, "IO bytes must fit in size_t");
  ETHOSU_RT_CHECK(info->io_bytes, <=, SIZE_MAX - info->offset, Error::kOverflow, where,
                  "IO bytes (offset + bytes fit in size_t)");
  return Error::kOk;
}

bool zero_point_fits(DType dtype, int32_t zp) {
  switch (dtype) {
    case DType::kInt8:
      return zp >= -128 && zp <= 127;
    case DType::kUint8:
      return zp >= 0 && zp <= 255;
    case DType::kInt16:
      return zp >= -32768 && zp <= 32767;
    case DType::kBool:
      return zp == 0;
    default:
      return true;
  }
}

Error decode_meta(const uint8_t* record, bool output, size_t index, TensorInfo* info) {
  const LazyWhere where = io_where(output, index, "io_meta");
  const char* name = reinterpret_cast<const char*>(record);
  size_t name_len = 0;
  while (name_len < kIoNameBytes && name[name_len] != '\0') {
    ++name_len;
  }
  ETHOSU_RT_CHECK(name_len, <, kIoNameBytes, Error::kBadValue, where,
                  "name length (NUL-terminated in 32 bytes)");
  for (size_t i = 0; i < name_len; ++i) {
    // Names end up in log lines and file names: printable ASCII only.
    ETHOSU_RT_CHECK_ONE_OF(record[i] >= 0x20 && record[i] <= 0x7E, record[i], Error::kBadValue,
                           where, "name byte", "printable ASCII (32..126)");
  }
  for (size_t i = name_len; i < kIoNameBytes; ++i) {
    ETHOSU_RT_CHECK(record[i], ==, 0u, Error::kBadValue, where, "name padding byte");
  }
  info->name = name;
  const uint32_t dtype = load_u32(record + 32);
  const uint32_t layout = load_u32(record + 36);
  const uint32_t rank = load_u32(record + 40);
  ETHOSU_RT_CHECK(dtype - 1u, <=, 5u, Error::kBadValue, where, "dtype - 1 (dtype codes are 1..6)");
  ETHOSU_RT_CHECK(layout, <=, 1u, Error::kBadValue, where, "layout");
  ETHOSU_RT_CHECK(rank - 1u, <, kMaxRank, Error::kBadValue, where, "rank - 1 (rank is 1..6)");
  if (layout == static_cast<uint32_t>(Layout::kNhwcForNchw)) {
    ETHOSU_RT_CHECK(rank, ==, 4u, Error::kBadValue, where, "rank of an NHWC-for-NCHW tensor");
  }
  info->dtype = static_cast<DType>(dtype);
  info->layout = static_cast<Layout>(layout);
  info->rank = rank;
  size_t elements = 1;
  LazyWhere dim_at = io_where(output, index, "shape", 0);
  for (size_t d = 0; d < kMaxRank; ++d) {
    const int32_t dim = static_cast<int32_t>(load_u32(record + 44 + 4 * d));
    dim_at.values[2] = d;
    if (d < rank) {
      ETHOSU_RT_CHECK(dim, >=, 1, Error::kBadValue, dim_at, "dimension");
      ETHOSU_RT_CHECK_TRUE(checked_mul(elements, static_cast<size_t>(dim), &elements),
                           Error::kOverflow, where, "element count must fit in size_t");
    } else {
      ETHOSU_RT_CHECK(dim, ==, 0, Error::kBadValue, dim_at, "dimension past the rank");
    }
    info->shape[d] = dim;
  }
  uint32_t scale_bits = load_u32(record + 68);
  memcpy(&info->scale, &scale_bits, sizeof(info->scale));
  // Exponent all ones: inf or NaN. Sign bit set: negative (or -0).
  ETHOSU_RT_CHECK_HEX(scale_bits & 0x7F800000u, !=, 0x7F800000u, Error::kBadValue, where,
                      "scale bits (finite)");
  ETHOSU_RT_CHECK_HEX(scale_bits & 0x80000000u, ==, 0u, Error::kBadValue, where,
                      "scale sign bit (scale >= 0)");
  info->zero_point = static_cast<int32_t>(load_u32(record + 72));
  ETHOSU_RT_CHECK_ONE_OF(zero_point_fits(info->dtype, info->zero_point), info->zero_point,
                         Error::kBadValue, where, "zero point", "within the dtype's range");
  ETHOSU_RT_CHECK(load_u32(record + 76), ==, 0u, Error::kBadValue, where, "reserved word");
  info->element_count = elements;
  ETHOSU_RT_CHECK_TRUE(checked_mul(elements, dtype_size(info->dtype), &info->tensor_bytes),
                       Error::kOverflow, where, "tensor bytes must fit in size_t");
  return Error::kOk;
}

Error decode_io(const Model& model, bool output, size_t index, TensorInfo* info) {
  const size_t count = output ? model.num_outputs : model.num_inputs;
  const LazyWhere where = io_where(output, index, nullptr);
  ETHOSU_RT_CHECK(index, <, count, Error::kBadArgument, where, "index (the IO count)");
  const uint8_t* records = output ? model.output_records : model.input_records;
  ETHOSU_RT_TRY(decode_vela_io(records + index * kVelaIoBytes, output, index, info));
  const size_t meta_index = output ? model.num_inputs + index : index;
  ETHOSU_RT_TRY(
      decode_meta(model.meta_records + meta_index * kIoMetaRecordBytes, output, index, info));
  if (info->region == kRegionScratch) {
    ETHOSU_RT_CHECK(info->offset + info->io_bytes, <=, model.scratch_size, Error::kBadValue, where,
                    "offset + IO bytes in region 1 (scratch_size)");
  }
  CopyPlan plan;
  return plan_copy(*info, &plan);
}

}  // namespace

Error decode_io_meta(const uint8_t* record, bool output, size_t index, TensorInfo* info) {
  return decode_meta(record, output, index, info);
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kUint8:
    case DType::kBool:
      return 1;
    case DType::kInt16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return "int8";
    case DType::kUint8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kInt32:
      return "int32";
    case DType::kBool:
      return "bool";
    case DType::kFloat32:
      return "float32";
  }
  return "unknown";
}

Error parse_artifact(const void* data, size_t size, Model* model) {
  ETHOSU_RT_CHECK_TRUE(data != nullptr, Error::kBadArgument, "artifact", "data must not be null");
  ETHOSU_RT_CHECK_TRUE(model != nullptr, Error::kBadArgument, "artifact", "model must not be null");
  ETHOSU_RT_CHECK_HEX(reinterpret_cast<uintptr_t>(data) % kArtifactAlignment, ==, uintptr_t{0},
                      Error::kMisaligned, "artifact", "buffer address % 16");
  ETHOSU_RT_CHECK(size % kArtifactAlignment, ==, size_t{0}, Error::kMisaligned, "artifact",
                  "size % 16 (blocks are padded to 16 bytes)");
  const uint8_t* base = static_cast<const uint8_t*>(data);
  Block blocks[kNumBlocks];
  ETHOSU_RT_TRY(read_blocks(base, size, blocks));

  Model m = {};
  ETHOSU_RT_TRY(expect_size(blocks[kBinStream], kBinStream, 0));
  ETHOSU_RT_TRY(expect_size(blocks[kEndStream], kEndStream, 0));
  m.cmd_data = ByteSpan{blocks[kCmdData].payload, blocks[kCmdData].size};
  ETHOSU_RT_CHECK(m.cmd_data.size, >=, size_t{4}, Error::kTruncated,
                  block_where(kCmdData, blocks[kCmdData].offset), "payload bytes");
  ETHOSU_RT_TRY(cop_validate(m.cmd_data.data, m.cmd_data.size));
  m.weights = ByteSpan{blocks[kWeightData].payload, blocks[kWeightData].size};
  ETHOSU_RT_CHECK(m.weights.size, >=, size_t{1}, Error::kTruncated,
                  block_where(kWeightData, blocks[kWeightData].offset),
                  "payload bytes (Vela always writes at least 1)");
  ETHOSU_RT_TRY(expect_size(blocks[kScratchSize], kScratchSize, 4));
  m.scratch_size = load_u32(blocks[kScratchSize].payload);
  ETHOSU_RT_TRY(expect_size(blocks[kScratchFast], kScratchFast, 4));
  m.scratch_fast_size = load_u32(blocks[kScratchFast].payload);
  ETHOSU_RT_TRY(io_count(blocks[kInputs], kInputs, &m.num_inputs));
  ETHOSU_RT_TRY(io_count(blocks[kOutputs], kOutputs, &m.num_outputs));
  m.input_records = blocks[kInputs].payload + 4;
  m.output_records = blocks[kOutputs].payload + 4;
  ETHOSU_RT_TRY(read_io_meta(blocks[kIoMeta], &m));

  TensorInfo info;
  for (size_t i = 0; i < m.num_inputs; ++i) {
    ETHOSU_RT_TRY(decode_io(m, false, i, &info));
  }
  for (size_t i = 0; i < m.num_outputs; ++i) {
    ETHOSU_RT_TRY(decode_io(m, true, i, &info));
  }
  *model = m;
  return Error::kOk;
}

Error get_input(const Model& model, size_t index, TensorInfo* info) {
  return decode_io(model, false, index, info);
}

Error get_output(const Model& model, size_t index, TensorInfo* info) {
  return decode_io(model, true, index, info);
}

size_t region_bytes(const Model& model, uint32_t region) {
  if (region == kRegionWeights) {
    return model.weights.size;
  }
  if (region == kRegionFastScratch) {
    return model.scratch_fast_size;
  }
  size_t bytes = region == kRegionScratch ? model.scratch_size : 0;
  TensorInfo info;
  for (size_t i = 0; i < model.num_inputs + model.num_outputs; ++i) {
    const bool output = i >= model.num_inputs;
    const size_t index = output ? i - model.num_inputs : i;
    // Already validated by parse_artifact; a failure here means a Model not made by it.
    if (decode_io(model, output, index, &info) != Error::kOk) {
      return 0;
    }
    if (info.region == region && info.offset + info.io_bytes > bytes) {
      bytes = info.offset + info.io_bytes;
    }
  }
  return bytes;
}

}  // namespace ethosu_rt
