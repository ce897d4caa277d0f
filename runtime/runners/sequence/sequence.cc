#include "ethosu_rt/sequence.h"

#include <string.h>

#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

struct Span {
  const uint8_t* data;
  size_t size;
};

// The block at `*offset` must be named `name`; its payload goes to `out`, `*offset` past it.
Error next_block(const uint8_t* base, size_t size, size_t* offset, const char* name, Span* out) {
  ETHOSU_RT_CHECK(size - *offset, >=, kBlockHeaderBytes, Error::kTruncated, name,
                  "bytes left for the block header");
  const uint8_t* header = base + *offset;
  char want[kBlockNameBytes] = {};
  strncpy(want, name, kBlockNameBytes - 1);
  ETHOSU_RT_CHECK_TRUE(memcmp(header, want, kBlockNameBytes) == 0, Error::kBadMagic, name,
                       "block name must be the next sequence artifact block");
  const size_t payload = load_u32(header + kBlockNameBytes);
  for (size_t i = kBlockNameBytes + 4; i < kBlockHeaderBytes; ++i) {
    ETHOSU_RT_CHECK(header[i], ==, 0u, Error::kBadValue, name, "external flag / reserved byte");
  }
  const size_t padded = (payload + 15u) & ~size_t{15};
  ETHOSU_RT_CHECK(padded, <=, size - *offset - kBlockHeaderBytes, Error::kTruncated, name,
                  "padded payload bytes (the bytes left)");
  *out = Span{header + kBlockHeaderBytes, payload};
  *offset += kBlockHeaderBytes + padded;
  return Error::kOk;
}

Error read_tensor(const uint8_t* p, size_t index, SequenceTensor* t) {
  const char* name = reinterpret_cast<const char*>(p);
  size_t name_len = 0;
  while (name_len < kIoNameBytes && name[name_len] != '\0') {
    ++name_len;
  }
  ETHOSU_RT_CHECK(name_len, <, kIoNameBytes, Error::kBadValue, "sequence",
                  "tensor name length (NUL-terminated in 32 bytes)");
  t->name = name;
  const uint32_t dtype = load_u32(p + 32);
  ETHOSU_RT_CHECK(dtype - 1u, <=, 5u, Error::kBadValue, name, "dtype - 1 (codes are 1..6)");
  t->dtype = static_cast<DType>(dtype);
  t->rank = load_u32(p + 36);
  ETHOSU_RT_CHECK(t->rank, <=, kMaxRank, Error::kBadValue, name, "rank");
  size_t elements = 1;
  for (size_t d = 0; d < kMaxRank; ++d) {
    t->shape[d] = static_cast<int32_t>(load_u32(p + 40 + 4 * d));
    if (d < t->rank) {
      ETHOSU_RT_CHECK(t->shape[d], >=, 1, Error::kBadValue, name, "dimension");
      ETHOSU_RT_CHECK(elements, <=, SIZE_MAX / static_cast<size_t>(t->shape[d]),
                      Error::kOverflow, name, "element count (fits in size_t)");
      elements *= static_cast<size_t>(t->shape[d]);
    }
  }
  t->bytes = load_u32(p + 64);
  ETHOSU_RT_CHECK(t->bytes, ==, elements * dtype_size(t->dtype), Error::kBadValue, name,
                  "bytes (elements x dtype size)");
  static_cast<void>(index);
  return Error::kOk;
}

// The segment records after the tensor table: kind, counts, then the tensor ids.
Error read_segments(const Span& block, size_t pos, Sequence* s) {
  for (size_t k = 0; k < s->num_segments; ++k) {
    Segment& seg = s->segments[k];
    ETHOSU_RT_CHECK(block.size - pos, >=, size_t{12}, Error::kTruncated, "sequence",
                    "bytes left for a segment record");
    const uint32_t kind = load_u32(block.data + pos);
    ETHOSU_RT_CHECK(kind, <=, 1u, Error::kBadValue, "sequence", "segment kind (0 NPU, 1 CPU)");
    seg.kind = static_cast<SegmentKind>(kind);
    seg.num_inputs = load_u32(block.data + pos + 4);
    seg.num_outputs = load_u32(block.data + pos + 8);
    ETHOSU_RT_CHECK(seg.num_inputs, <=, kMaxSegmentIo, Error::kUnsupported, "sequence",
                    "segment inputs");
    ETHOSU_RT_CHECK(seg.num_outputs - 1u, <, kMaxSegmentIo, Error::kUnsupported, "sequence",
                    "segment outputs - 1 (1..16)");
    pos += 12;
    const size_t ids = seg.num_inputs + seg.num_outputs;
    ETHOSU_RT_CHECK(block.size - pos, >=, 4 * ids, Error::kTruncated, "sequence",
                    "bytes left for the segment's tensor ids");
    for (size_t i = 0; i < ids; ++i) {
      const uint32_t id = load_u32(block.data + pos + 4 * i);
      ETHOSU_RT_CHECK(static_cast<size_t>(id), <, s->num_tensors, Error::kBadValue, "sequence",
                      "segment tensor id (the tensor count)");
      (i < seg.num_inputs ? seg.inputs[i] : seg.outputs[i - seg.num_inputs]) = id;
    }
    pos += 4 * ids;
  }
  ETHOSU_RT_CHECK(pos, ==, block.size, Error::kBadValue, "sequence",
                  "end of the segment records (the block size)");
  return Error::kOk;
}

Error read_sequence_block(const Span& block, Sequence* s) {
  ETHOSU_RT_CHECK(block.size, >=, kSequenceHeaderBytes, Error::kTruncated, "sequence",
                  "payload bytes (the 12-byte header)");
  ETHOSU_RT_CHECK_HEX(load_u32(block.data), ==, kSequenceMagic, Error::kBadMagic, "sequence",
                      "magic (\"MSEQ\")");
  ETHOSU_RT_CHECK(load_u16(block.data + 4), ==, kSequenceVersion, Error::kUnsupported,
                  "sequence", "version");
  s->num_segments = load_u16(block.data + 6);
  s->num_tensors = load_u16(block.data + 8);
  ETHOSU_RT_CHECK(s->num_segments - 1u, <, kMaxSegments, Error::kUnsupported, "sequence",
                  "segment count - 1 (1..16)");
  ETHOSU_RT_CHECK(s->num_tensors, <=, kMaxSequenceTensors, Error::kUnsupported, "sequence",
                  "tensor count");
  ETHOSU_RT_CHECK(block.size - kSequenceHeaderBytes, >=, s->num_tensors * kSequenceTensorBytes,
                  Error::kTruncated, "sequence", "payload bytes (the tensor table)");
  size_t pos = kSequenceHeaderBytes;
  for (size_t i = 0; i < s->num_tensors; ++i, pos += kSequenceTensorBytes) {
    ETHOSU_RT_TRY(read_tensor(block.data + pos, i, &s->tensors[i]));
  }
  return read_segments(block, pos, s);
}

// An NPU segment's inputs/outputs must be its border tensors, byte for byte.
Error check_npu_io(const Sequence& s, const Segment& seg) {
  ETHOSU_RT_CHECK(seg.npu.num_inputs, ==, seg.num_inputs, Error::kBadValue, "npu_segment",
                  "input count (the sequence record's)");
  ETHOSU_RT_CHECK(seg.npu.num_outputs, ==, seg.num_outputs, Error::kBadValue, "npu_segment",
                  "output count (the sequence record's)");
  TensorInfo info;
  for (size_t i = 0; i < seg.num_inputs + seg.num_outputs; ++i) {
    const bool output = i >= seg.num_inputs;
    const size_t index = output ? i - seg.num_inputs : i;
    ETHOSU_RT_TRY(output ? get_output(seg.npu, index, &info) : get_input(seg.npu, index, &info));
    const SequenceTensor& t = s.tensors[output ? seg.outputs[index] : seg.inputs[index]];
    ETHOSU_RT_CHECK(info.tensor_bytes, ==, t.bytes, Error::kBadValue, t.name,
                    "NPU segment IO bytes (the border tensor's)");
  }
  return Error::kOk;
}

Error read_graph_io(const Span& meta, Sequence* s) {
  ETHOSU_RT_CHECK(meta.size, >=, kIoMetaHeaderBytes, Error::kTruncated, "io_meta",
                  "payload bytes (the header)");
  ETHOSU_RT_CHECK_HEX(load_u32(meta.data), ==, kIoMetaMagic, Error::kBadMagic, "io_meta",
                      "magic (\"IOMD\")");
  s->num_inputs = load_u32(meta.data + 8);
  s->num_outputs = load_u32(meta.data + 12);
  ETHOSU_RT_CHECK(s->num_inputs + s->num_outputs, <=, s->num_tensors, Error::kBadValue,
                  "io_meta", "graph inputs + outputs (the sequence's tensor count)");
  ETHOSU_RT_CHECK(meta.size, ==,
                  kIoMetaHeaderBytes + (s->num_inputs + s->num_outputs) * kIoMetaRecordBytes,
                  Error::kTruncated, "io_meta", "payload bytes (header + 80 per tensor)");
  s->meta_records = meta.data + kIoMetaHeaderBytes;
  TensorInfo info;
  for (size_t i = 0; i < s->num_inputs + s->num_outputs; ++i) {
    const bool output = i >= s->num_inputs;
    ETHOSU_RT_TRY(decode_io_meta(s->meta_records + i * kIoMetaRecordBytes, output,
                                 output ? i - s->num_inputs : i, &info));
    ETHOSU_RT_CHECK_TRUE(strcmp(info.name, s->tensors[i].name) == 0, Error::kBadValue, info.name,
                         "io_meta name must be the sequence tensor's of the same index");
    ETHOSU_RT_CHECK(info.tensor_bytes, ==, s->tensors[i].bytes, Error::kBadValue, info.name,
                    "io_meta bytes (the sequence tensor's)");
  }
  return Error::kOk;
}

}  // namespace

bool is_sequence(const void* data, size_t size) {
  return data != nullptr && size >= kBlockHeaderBytes &&
         memcmp(data, "sequence\0\0\0\0\0\0\0\0", kBlockNameBytes) == 0;
}

Error parse_sequence(const void* data, size_t size, Sequence* sequence) {
  ETHOSU_RT_CHECK_TRUE(data != nullptr && sequence != nullptr, Error::kBadArgument, "sequence",
                       "data and sequence must not be null");
  ETHOSU_RT_CHECK(reinterpret_cast<uintptr_t>(data) % kArtifactAlignment, ==, uintptr_t{0},
                  Error::kMisaligned, "sequence", "buffer address % 16");
  const uint8_t* base = static_cast<const uint8_t*>(data);
  Sequence& s = *sequence;
  s = Sequence{};
  size_t offset = 0;
  Span block;
  ETHOSU_RT_TRY(next_block(base, size, &offset, "sequence", &block));
  ETHOSU_RT_TRY(read_sequence_block(block, &s));
  for (size_t k = 0; k < s.num_segments; ++k) {
    Segment& seg = s.segments[k];
    const bool npu = seg.kind == SegmentKind::kNpu;
    ETHOSU_RT_TRY(next_block(base, size, &offset, npu ? "npu_segment" : "cpu_segment", &block));
    seg.artifact = ByteSpan{block.data, block.size};
    if (npu) {
      ETHOSU_RT_TRY(parse_artifact(block.data, block.size, &seg.npu));
      ETHOSU_RT_TRY(check_npu_io(s, seg));
    }
  }
  ETHOSU_RT_TRY(next_block(base, size, &offset, "io_meta", &block));
  ETHOSU_RT_TRY(read_graph_io(block, &s));
  ETHOSU_RT_TRY(next_block(base, size, &offset, "sequence_end", &block));
  ETHOSU_RT_CHECK(block.size, ==, size_t{0}, Error::kBadValue, "sequence_end", "payload bytes");
  ETHOSU_RT_CHECK(offset, ==, size, Error::kBadValue, "sequence",
                  "end of block 'sequence_end' (the buffer size)");
  return Error::kOk;
}

}  // namespace ethosu_rt
