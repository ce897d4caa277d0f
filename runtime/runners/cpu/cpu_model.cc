#include "cpu_model.h"

#include <string.h>

#include "ethosu_rt/check.h"
#include "ethosu_rt/io.h"

namespace ethosu_rt {
namespace {

constexpr size_t kNumCpuBlocks = sizeof(kCpuBlockNames) / sizeof(kCpuBlockNames[0]);

struct Span {
  const uint8_t* data;
  size_t size;
};

// Reads the three blocks in order; each header's name, size and padding are checked.
Error read_cpu_blocks(const uint8_t* base, size_t size, Span blocks[kNumCpuBlocks]) {
  size_t offset = 0;
  for (size_t id = 0; id < kNumCpuBlocks; ++id) {
    ETHOSU_RT_CHECK(size - offset, >=, kBlockHeaderBytes, Error::kTruncated, kCpuBlockNames[id],
                    "bytes left for the block header");
    const uint8_t* header = base + offset;
    char name[kBlockNameBytes] = {};
    strncpy(name, kCpuBlockNames[id], kBlockNameBytes - 1);
    ETHOSU_RT_CHECK_TRUE(memcmp(header, name, kBlockNameBytes) == 0, Error::kBadMagic,
                         kCpuBlockNames[id], "block name must be the next CPU artifact block");
    const size_t payload = load_u32(header + kBlockNameBytes);
    ETHOSU_RT_CHECK(header[kBlockNameBytes + 4], ==, 0u, Error::kUnsupported,
                    kCpuBlockNames[id], "external flag");
    const size_t padded = (payload + 15u) & ~size_t{15};
    ETHOSU_RT_CHECK(padded, <=, size - offset - kBlockHeaderBytes, Error::kTruncated,
                    kCpuBlockNames[id], "padded payload bytes (the bytes left)");
    blocks[id] = Span{header + kBlockHeaderBytes, payload};
    offset += kBlockHeaderBytes + padded;
  }
  ETHOSU_RT_CHECK(offset, ==, size, Error::kBadValue, "cpu artifact",
                  "end of block 'cpu_end_stream' (the buffer size)");
  return Error::kOk;
}

}  // namespace

Error CpuModel::open(const void* artifact, size_t size) {
  const uint8_t* base = static_cast<const uint8_t*>(artifact);
  ETHOSU_RT_CHECK_TRUE(base != nullptr, Error::kBadArgument, "cpu artifact",
                       "data must not be null");
  ETHOSU_RT_CHECK(reinterpret_cast<uintptr_t>(base) % kArtifactAlignment, ==, 0u,
                  Error::kMisaligned, "cpu artifact", "address % 16");
  Span blocks[kNumCpuBlocks];
  ETHOSU_RT_TRY(read_cpu_blocks(base, size, blocks));
  ETHOSU_RT_CHECK(blocks[2].size, ==, 0u, Error::kBadValue, "cpu_end_stream", "payload bytes");
  ETHOSU_RT_TRY(graph_.open(blocks[0].data, blocks[0].size));

  const Span& meta = blocks[1];
  ETHOSU_RT_CHECK(meta.size, >=, kIoMetaHeaderBytes, Error::kTruncated, "io_meta",
                  "payload bytes (the header)");
  ETHOSU_RT_CHECK_HEX(load_u32(meta.data), ==, kIoMetaMagic, Error::kBadMagic, "io_meta",
                      "magic (\"IOMD\")");
  ETHOSU_RT_CHECK(load_u16(meta.data + 4), ==, kIoMetaVersion, Error::kUnsupported, "io_meta",
                  "version");
  const size_t n_in = load_u32(meta.data + 8), n_out = load_u32(meta.data + 12);
  ETHOSU_RT_CHECK(n_in, ==, graph_.num_inputs(), Error::kBadValue, "io_meta",
                  "input count (the graph's)");
  ETHOSU_RT_CHECK(n_out, ==, graph_.num_outputs(), Error::kBadValue, "io_meta",
                  "output count (the graph's)");
  ETHOSU_RT_CHECK(meta.size, ==, kIoMetaHeaderBytes + (n_in + n_out) * kIoMetaRecordBytes,
                  Error::kTruncated, "io_meta", "payload bytes (header + 80 per tensor)");
  meta_records_ = meta.data + kIoMetaHeaderBytes;
  for (size_t i = 0; i < n_in + n_out; ++i) {
    TensorInfo app;
    tosa_cpu::Tensor t;
    const bool output = i >= n_in;
    const size_t index = output ? i - n_in : i;
    ETHOSU_RT_TRY(info(output, index, &app));
    ETHOSU_RT_TRY(output ? graph_.output(index, &t) : graph_.input(index, &t));
    ETHOSU_RT_CHECK(app.tensor_bytes, ==, t.bytes, Error::kBadValue, app.name,
                    "io_meta bytes (the graph tensor's)");
    ETHOSU_RT_CHECK(app.element_count, ==, t.elements, Error::kBadValue, app.name,
                    "io_meta elements (the graph tensor's)");
  }
  return Error::kOk;
}

Error CpuModel::info(bool output, size_t index, TensorInfo* info) const {
  ETHOSU_RT_CHECK_TRUE(meta_records_ != nullptr, Error::kBadState, "cpu model",
                       "open() must succeed first");
  const size_t count = output ? graph_.num_outputs() : graph_.num_inputs();
  ETHOSU_RT_CHECK(index, <, count, Error::kBadArgument, output ? "output" : "input",
                  "index (the IO count)");
  *info = TensorInfo{};
  const size_t record = output ? graph_.num_inputs() + index : index;
  return decode_io_meta(meta_records_ + record * kIoMetaRecordBytes, output, index, info);
}

Error CpuModel::input_info(size_t index, TensorInfo* out) const { return info(false, index, out); }
Error CpuModel::output_info(size_t index, TensorInfo* out) const { return info(true, index, out); }

Error CpuModel::bind(void* arena, size_t size) {
  ETHOSU_RT_CHECK(size, >=, graph_.arena_bytes(), Error::kBufferTooSmall, "cpu model",
                  "arena bytes (the memory plan's)");
  return graph_.bind(arena, size);
}

Error CpuModel::set_input(size_t index, const void* src, size_t len) {
  TensorInfo app;
  tosa_cpu::Tensor t;
  ETHOSU_RT_TRY(info(false, index, &app));
  ETHOSU_RT_TRY(graph_.input(index, &t));
  ETHOSU_RT_CHECK_TRUE(t.data != nullptr, Error::kBadState, app.name, "bind() must come first");
  return to_npu_order(app, src, t.data, len);
}

Error CpuModel::get_output(size_t index, void* dst, size_t len) const {
  TensorInfo app;
  tosa_cpu::Tensor t;
  ETHOSU_RT_TRY(info(true, index, &app));
  ETHOSU_RT_TRY(graph_.output(index, &t));
  ETHOSU_RT_CHECK_TRUE(t.data != nullptr, Error::kBadState, app.name, "bind() must come first");
  return from_npu_order(app, t.data, dst, len);
}

}  // namespace ethosu_rt
