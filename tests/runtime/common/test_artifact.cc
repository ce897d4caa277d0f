#include "ethosu_rt/artifact.h"

#include <stdlib.h>
#include <string.h>

#include "artifact_builder.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::Error;
using ethosu_rt::Model;
using ethosu_rt::TensorInfo;
using test_support::ArtifactBuffer;
using test_support::LogCapture;
using test_support::Sample;

// Block indices in packager order.
enum Block : size_t {
  kBinStream,
  kCmdData,
  kWeightData,
  kScratchSize,
  kInputs,
  kOutputs,
  kScratchFast,
  kIoMeta,
  kEndStream,
};

ArtifactBuffer g_buffer;

// Builds `sample` into the shared buffer; its payload of block `block` starts at the
// returned offset (header + 32).
uint8_t* payload(size_t block) {
  return g_buffer.bytes + test_support::block_offset(g_buffer.bytes, block) + 32;
}

void build(const Sample& sample) {
  g_buffer.size = test_support::build_artifact(sample, g_buffer.bytes, sizeof(g_buffer.bytes));
}

void build_default() {
  Sample sample;
  test_support::make_sample(&sample);
  build(sample);
}

Error parse(Model* model) {
  return ethosu_rt::parse_artifact(g_buffer.bytes, g_buffer.size, model);
}

// Parses the first `size` bytes from memory that ends exactly there on hosted builds, so
// AddressSanitizer reports any read past the end.
Error parse_prefix(size_t size) {
  Model model;
#if defined(ETHOSU_RT_TEST_GTEST)
  const size_t alloc = size == 0 ? 16 : size;
  uint8_t* copy = static_cast<uint8_t*>(aligned_alloc(16, (alloc + 15) / 16 * 16));
  memcpy(copy, g_buffer.bytes, size);
  const Error error = ethosu_rt::parse_artifact(copy, size, &model);
  free(copy);
  return error;
#else
  return ethosu_rt::parse_artifact(g_buffer.bytes, size, &model);
#endif
}

TEST(Artifact, ParsesTheSample) {
  build_default();
  ASSERT_GT(g_buffer.size, 0u);
  Model model;
  ASSERT_EQ(parse(&model), Error::kOk);
  EXPECT_EQ(model.scratch_size, 2048u);
  EXPECT_EQ(model.scratch_fast_size, 0u);
  EXPECT_EQ(model.weights.size, 16u);
  EXPECT_EQ(model.weights.data[0], 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(model.cmd_data.data) % 16, 0u);
  EXPECT_EQ(model.num_inputs, 1u);
  EXPECT_EQ(model.num_outputs, 1u);
  TensorInfo in;
  ASSERT_EQ(ethosu_rt::get_input(model, 0, &in), Error::kOk);
  EXPECT_STREQ(in.name, "x");
  EXPECT_EQ(in.dtype, ethosu_rt::DType::kInt8);
  EXPECT_EQ(in.rank, 4u);
  EXPECT_EQ(in.shape[3], 16);
  EXPECT_EQ(in.npu_shape[0], 1);
  EXPECT_EQ(in.npu_shape[5], 16);
  EXPECT_EQ(in.offset, 1024u);
  EXPECT_EQ(in.region, 1u);
  EXPECT_EQ(in.io_bytes, 1024u);
  EXPECT_EQ(in.tensor_bytes, 1024u);
  EXPECT_NEAR(in.scale, 0.25, 1e-9);
  TensorInfo out;
  ASSERT_EQ(ethosu_rt::get_output(model, 0, &out), Error::kOk);
  EXPECT_STREQ(out.name, "y");
  EXPECT_EQ(out.offset, 0u);
}

TEST(Artifact, RegionBytesCoverScratchAndSeparateIo) {
  build_default();
  Model model;
  ASSERT_EQ(parse(&model), Error::kOk);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 0), 16u);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 1), 2048u);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 3), 0u);
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  sample.outputs[0].offset = 64;
  build(sample);
  ASSERT_EQ(parse(&model), Error::kOk);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 1), 0u);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 3), 128u);
  EXPECT_EQ(ethosu_rt::region_bytes(model, 4), 64u + 128u);
}

TEST(Artifact, EveryTruncationIsRejected) {
  build_default();
  const size_t full = g_buffer.size;
  for (size_t size = 0; size < full; ++size) {
    EXPECT_NE(parse_prefix(size), Error::kOk);
  }
  EXPECT_EQ(parse_prefix(full), Error::kOk);
}

TEST(Artifact, RejectsMisalignedBufferAndSize) {
  build_default();
  LogCapture log;
  Model model;
  static uint8_t shifted[sizeof(g_buffer.bytes) + 16];
  uint8_t* misaligned = shifted + (16 - reinterpret_cast<uintptr_t>(shifted) % 16) % 16 + 4;
  memcpy(misaligned, g_buffer.bytes, g_buffer.size);
  EXPECT_EQ(ethosu_rt::parse_artifact(misaligned, g_buffer.size, &model), Error::kMisaligned);
  EXPECT_LOG(log, "artifact: buffer address % 16 must be 0x0; got 0x4");
  EXPECT_EQ(ethosu_rt::parse_artifact(g_buffer.bytes, g_buffer.size - 8, &model),
            Error::kMisaligned);
  EXPECT_LOG(log, "size % 16 (blocks are padded to 16 bytes) must be 0; got 8");
}

TEST(Artifact, RejectsAWrongFirstBlockName) {
  build_default();
  g_buffer.bytes[14] = 'X';  // "vela_bin_streaX"
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadMagic);
  EXPECT_LOG(log,
             "block 1 'vela_bin_stream' at offset 0: block name (NUL-padded, in packager "
             "order) must be 'vela_bin_stream'; got 'vela_bin_streaX'");
}

TEST(Artifact, RejectsANameOf16CharactersWithoutTerminator) {
  build_default();
  g_buffer.bytes[15] = 'm';
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadMagic);
  EXPECT_LOG(log, "got 'vela_bin_streamm'");
}

TEST(Artifact, RejectsBlocksOutOfOrder) {
  build_default();
  uint8_t* header = g_buffer.bytes + test_support::block_offset(g_buffer.bytes, kWeightData);
  memcpy(header, "outputs\0\0\0\0\0\0\0\0", 16);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadMagic);
  EXPECT_LOG(log, "block 3 'weight_data' at offset");
  EXPECT_LOG(log, "must be 'weight_data'; got 'outputs'");
}

TEST(Artifact, RejectsExternalBlocksAndReservedBytes) {
  build_default();
  const size_t cmd = test_support::block_offset(g_buffer.bytes, kCmdData);
  g_buffer.bytes[cmd + 20] = 1;
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kUnsupported);
  EXPECT_LOG(log, "block 2 'cmd_data' at offset 32: external flag");
  g_buffer.bytes[cmd + 20] = 0;
  g_buffer.bytes[cmd + 31] = 7;
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "reserved header byte must be 0; got 7");
}

TEST(Artifact, RejectsAPayloadSizePastTheEnd) {
  build_default();
  const size_t weights = test_support::block_offset(g_buffer.bytes, kWeightData);
  test_support::store_u32(g_buffer.bytes + weights + 16, 0xFFFFFFF0u);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kTruncated);
  EXPECT_LOG(log, "block 3 'weight_data' at offset");
  EXPECT_LOG(log, "padded payload bytes (bytes left in the artifact) must be <=");
  EXPECT_LOG(log, "got 4294967280");
}

TEST(Artifact, RejectsNonZeroPadding) {
  Model model;
  LogCapture log;
  build_default();
  payload(kScratchSize)[5] = 1;  // scratch_size holds 4 bytes, padded to 16
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "block 4 'scratch_size' at offset");
  EXPECT_LOG(log, "payload padding byte must be 0; got 1");
}

TEST(Artifact, RejectsBytesAfterTheEndBlock) {
  build_default();
  memset(g_buffer.bytes + g_buffer.size, 0, 16);
  g_buffer.size += 16;
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "artifact: end of block 9 'vela_end_stream' (the buffer size) must be");
}

TEST(Artifact, RejectsAnIoCountThatDisagreesWithTheBlockSize) {
  build_default();
  test_support::store_u32(payload(kInputs), 2);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kTruncated);
  EXPECT_LOG(log, "block 5 'inputs' at offset");
  EXPECT_LOG(log, "payload bytes (4 + 36 x count) must be 76; got 40");
  test_support::store_u32(payload(kInputs), 0xFFFFFFFFu);
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "IO count must be >= 0; got -1");
}

TEST(Artifact, RejectsZeroOutputs) {
  Sample sample;
  test_support::make_sample(&sample);
  sample.num_outputs = 0;
  build(sample);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "block 6 'outputs' at offset");
  EXPECT_LOG(log, "IO count must be >= 1; got 0");
}

TEST(Artifact, RejectsFixedSizeBlocksOfTheWrongSize) {
  build_default();
  const size_t header = test_support::block_offset(g_buffer.bytes, kScratchFast);
  test_support::store_u32(g_buffer.bytes + header + 16, 3);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "block 7 'scratch_fast' at offset");
  EXPECT_LOG(log, "payload bytes must be 4; got 3");
}

TEST(Artifact, RejectsAnEmptyWeightBlockAndACommandPayloadWithoutMagic) {
  Sample sample;
  test_support::make_sample(&sample);
  sample.weight_size = 0;
  build(sample);
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kTruncated);
  EXPECT_LOG(log, "payload bytes (Vela always writes at least 1) must be >= 1; got 0");
  test_support::make_sample(&sample);
  sample.cmd[0] = 'X';
  build(sample);
  EXPECT_EQ(parse(&model), Error::kBadMagic);
  EXPECT_LOG(log,
             "cmd_data: FourCC must be \"COP1\" (0x31504f43) or \"COP2\" (0x32504f43); got "
             "0x31504f58");
}

TEST(Artifact, AcceptsCop2) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  build(sample);
  Model model;
  EXPECT_EQ(parse(&model), Error::kOk);
}

TEST(Artifact, RejectsIoMetaHeaderProblems) {
  build_default();
  LogCapture log;
  Model model;
  uint8_t* meta = payload(kIoMeta);
  meta[0] = 'X';
  EXPECT_EQ(parse(&model), Error::kBadMagic);
  EXPECT_LOG(log, "block 8 'io_meta' at offset");
  EXPECT_LOG(log, "magic (\"IOMD\") must be 0x444d4f49; got 0x444d4f58");
  build_default();
  test_support::store_u16(payload(kIoMeta) + 4, 2);
  EXPECT_EQ(parse(&model), Error::kUnsupported);
  EXPECT_LOG(log, "version must be 1; got 2");
  build_default();
  test_support::store_u16(payload(kIoMeta) + 6, 1);
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "flags must be 0; got 1");
  build_default();
  test_support::store_u32(payload(kIoMeta) + 8, 3);
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "num_inputs (the 'inputs' count) must be 1; got 3");
  build_default();
  test_support::store_u32(payload(kIoMeta) + 12, 0);
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "num_outputs (the 'outputs' count) must be 1; got 0");
}

struct IoCase {
  const char* name;
  void (*mutate)(Sample*);
  Error error;
  const char* message;
};

const IoCase kIoCases[] = {
    {"elem_size 3", [](Sample* s) { s->inputs[0].elem_size = 3; }, Error::kBadValue,
     "input 0: elem_size must be 1, 2 or 4; got 3"},
    {"input region 2", [](Sample* s) { s->inputs[0].region = 2; }, Error::kBadValue,
     "input 0: region must be 1 or 3; got 2"},
    {"output region 3", [](Sample* s) { s->outputs[0].region = 3; }, Error::kBadValue,
     "output 0: region must be 1 or 4; got 3"},
    {"negative offset", [](Sample* s) { s->inputs[0].offset = -16; }, Error::kBadValue,
     "input 0: offset must be >= 0; got -16"},
    {"zero dimension", [](Sample* s) { s->outputs[0].vela_shape[2] = 0; }, Error::kBadValue,
     "output 0 Vela shape[2]: dimension must be >= 1; got 0"},
    {"IO past scratch", [](Sample* s) { s->inputs[0].offset = 1040; }, Error::kBadValue,
     "input 0: offset + IO bytes in region 1 (scratch_size) must be <= 2048; got 2064"},
    {"huge shape",
     [](Sample* s) {
       for (int32_t& d : s->inputs[0].vela_shape) d = 0x7FFFFFFF;
     },
     Error::kOverflow, "input 0 Vela shape: element count must fit in size_t"},
    {"unterminated name", [](Sample* s) { s->inputs[0].name = "abcdefghijabcdefghijabcdefghijab"; },
     Error::kBadValue,
     "input 0 io_meta: name length (NUL-terminated in 32 bytes) must be < 32; got 32"},
    {"control character in a name", [](Sample* s) { s->outputs[0].name = "y\n"; }, Error::kBadValue,
     "output 0 io_meta: name byte must be printable ASCII (32..126); got 10"},
    {"dtype 7", [](Sample* s) { s->outputs[0].dtype = 7; }, Error::kBadValue,
     "output 0 io_meta: dtype - 1 (dtype codes are 1..6) must be <= 5; got 6"},
    {"layout 2", [](Sample* s) { s->inputs[0].layout = 2; }, Error::kBadValue,
     "input 0 io_meta: layout must be <= 1; got 2"},
    {"rank 7", [](Sample* s) { s->inputs[0].rank = 7; }, Error::kBadValue,
     "input 0 io_meta: rank - 1 (rank is 1..6) must be < 6; got 6"},
    {"rank 0", [](Sample* s) { s->inputs[0].rank = 0; }, Error::kBadValue,
     "input 0 io_meta: rank - 1 (rank is 1..6) must be < 6; got 4294967295"},
    {"NHWC layout at rank 3",
     [](Sample* s) {
       s->inputs[0].layout = 1;
       s->inputs[0].rank = 3;
       s->inputs[0].shape[3] = 0;
     },
     Error::kBadValue, "input 0 io_meta: rank of an NHWC-for-NCHW tensor must be 4; got 3"},
    {"shape past rank", [](Sample* s) { s->inputs[0].shape[5] = 2; }, Error::kBadValue,
     "input 0 shape[5]: dimension past the rank must be 0; got 2"},
    {"negative scale", [](Sample* s) { s->inputs[0].scale = -1.0f; }, Error::kBadValue,
     "input 0 io_meta: scale sign bit (scale >= 0) must be 0x0; got 0x80000000"},
    {"infinite scale", [](Sample* s) { s->inputs[0].scale = 1e38f * 10.0f; }, Error::kBadValue,
     "input 0 io_meta: scale bits (finite) must not be 0x7f800000; got 0x7f800000"},
    {"int8 zero point 128", [](Sample* s) { s->outputs[0].zero_point = 128; }, Error::kBadValue,
     "output 0 io_meta: zero point must be within the dtype's range; got 128"},
    {"float32 tensor on 1-byte NPU data (factor 4)", [](Sample* s) { s->outputs[0].dtype = 6; },
     Error::kUnsupported,
     "tensor 'y' (float32): bytes per element (Vela's elem_size) must be 1; got 4"},
};

TEST(Artifact, RejectsEachBadIoRecord) {
  for (const IoCase& c : kIoCases) {
    Sample sample;
    test_support::make_sample(&sample);
    c.mutate(&sample);
    build(sample);
    ASSERT_GT(g_buffer.size, 0u);
    LogCapture log;
    Model model;
    EXPECT_EQ(parse(&model), c.error);
    EXPECT_LOG(log, c.message);
  }
}

TEST(Artifact, RejectsNonZeroMetaReservedAndNamePadding) {
  build_default();
  uint8_t* record = payload(kIoMeta) + 16;
  record[76] = 1;
  LogCapture log;
  Model model;
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "input 0 io_meta: reserved word must be 0; got 1");
  record[76] = 0;
  record[20] = 'z';  // after the NUL of "x"
  EXPECT_EQ(parse(&model), Error::kBadValue);
  EXPECT_LOG(log, "input 0 io_meta: name padding byte must be 0; got 122");
}

TEST(Artifact, IndexOutOfRangeIsABadArgument) {
  build_default();
  Model model;
  ASSERT_EQ(parse(&model), Error::kOk);
  LogCapture log;
  TensorInfo info;
  EXPECT_EQ(ethosu_rt::get_output(model, 1, &info), Error::kBadArgument);
  EXPECT_LOG(log, "output 1: index (the IO count) must be < 1; got 1");
}

TEST(Artifact, LittleEndianLoadsAtAnyAlignment) {
  const uint8_t bytes[9] = {0xFF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  EXPECT_EQ(ethosu_rt::load_u16(bytes + 1), 0x0201u);
  EXPECT_EQ(ethosu_rt::load_u32(bytes + 1), 0x04030201u);
  EXPECT_EQ(ethosu_rt::load_u64(bytes + 1), 0x0807060504030201ull);
}

}  // namespace
