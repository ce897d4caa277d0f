// Builds model artifacts (and COP1/COP2 payloads and NPU command words) in memory, in the
// exact format the Python packager writes, so tests need neither Python nor Vela. No heap:
// everything is written into caller buffers, and a failed build returns 0.
#ifndef ETHOSU_RT_TESTS_SUPPORT_ARTIFACT_BUILDER_H_
#define ETHOSU_RT_TESTS_SUPPORT_ARTIFACT_BUILDER_H_

#include <stddef.h>
#include <stdint.h>

namespace test_support {

// One input or output: Vela's record and our io_meta record.
struct IoSpec {
  int32_t vela_shape[6];
  int32_t elem_size;
  int32_t offset;
  int32_t region;
  const char* name;
  uint32_t dtype;  // 1 int8, 2 uint8, 3 int16, 4 int32, 5 bool, 6 float32
  uint32_t layout;
  uint32_t rank;
  int32_t shape[6];
  float scale;
  int32_t zero_point;
};

// An IO whose tensor matches Vela's view exactly: shape (rank <= 6) padded with leading
// 1s for Vela, elem_size from the dtype.
IoSpec plain_io(const char* name, uint32_t dtype, const int32_t* shape, uint32_t rank,
                int32_t offset, int32_t region);

constexpr size_t kMaxIo = 8;

// Everything an artifact holds. The defaults of make_sample() describe a small valid model.
struct Sample {
  uint8_t cmd[512];
  size_t cmd_size;
  uint8_t weights[64];
  size_t weight_size;
  uint32_t scratch_size;
  uint32_t scratch_fast_size;
  IoSpec inputs[kMaxIo];
  size_t num_inputs;
  IoSpec outputs[kMaxIo];
  size_t num_outputs;
};

// Vela-like configuration words (OPTIMIZER_CONFIG cfg/id) seen in real payloads.
constexpr uint32_t kU55Config = 0x00001807u;  // U55, 128 MACs
constexpr uint32_t kU55Id = 0x10066001u;
constexpr uint32_t kU85Config = 0x20000118u;  // U85, 256 MACs
constexpr uint32_t kU85Id = 0x20007000u;

// NPU command words. cmd0 packs an opcode and a 16-bit parameter into one word.
constexpr uint32_t cmd0(uint32_t opcode, uint32_t param) { return opcode | (param << 16); }
constexpr uint32_t kOpStop = 0x000;
constexpr uint32_t kOpConv = 0x002;
constexpr uint32_t kOpPool = 0x005;
constexpr uint32_t kOpElementwise = 0x006;
constexpr uint32_t kOpDmaStart = 0x010;
constexpr uint32_t kSetIfmBroadcast = 0x108;
constexpr uint32_t kSetIfmRegion = 0x10F;
constexpr uint32_t kSetOfmPrecision = 0x114;
constexpr uint32_t kSetOfmRegion = 0x11F;
constexpr uint32_t kSetWeightRegion = 0x128;
constexpr uint32_t kSetScaleRegion = 0x129;
constexpr uint32_t kSetDmaSrcRegion = 0x130;
constexpr uint32_t kSetDmaDstRegion = 0x131;
constexpr uint32_t kSetIfm2Broadcast = 0x180;
constexpr uint32_t kSetIfm2Region = 0x18F;
constexpr uint32_t kSetIfmBase0 = 0x4000;  // a two-word command

// A convolution reading IFM from `in_region`, weights and scales from region 0 and
// writing OFM to `out_region`, into `words` (room for 16); returns the word count.
size_t conv_stream(uint32_t in_region, uint32_t out_region, uint32_t* words);
// An elementwise (unary) operation from `in_region` to `out_region`.
size_t elementwise_stream(uint32_t in_region, uint32_t out_region, uint32_t* words);

// COP1 as Vela lays it out: FourCC, OPTIMIZER_CONFIG + 2 words, 3 NOPs, COMMAND_STREAM
// header, words (the stream starts at byte 32).
size_t build_cop1(uint32_t config, uint32_t id, const uint32_t* words, size_t count, uint8_t* out,
                  size_t capacity);
// COP2 with one COMMAND_STREAM entry per (config, id) pair, each with VEUM metadata
// padded so the stream starts 16-byte aligned (byte 64 for the first entry).
struct Cop2Entry {
  uint32_t config;
  uint32_t id;
  uint64_t cache_size;
  const uint32_t* words;
  size_t count;
};
size_t build_cop2(const Cop2Entry* entries, size_t num_entries, uint8_t* out, size_t capacity);

// A valid sample: COP1 (U55) conv stream on region 1, 16 bytes of weights, scratch 2048,
// one int8 input [1,8,8,16] at 1024 and one int8 output [1,8,8,16] at 0.
void make_sample(Sample* sample);
// A separate-IO sample: COP2 (U85) elementwise stream from region 3 to 4, scratch 0,
// input at region 3 offset 0, output at region 4 offset 0.
void make_separate_io_sample(Sample* sample);

// Writes the artifact; returns its size or 0 when it does not fit in `capacity`.
size_t build_artifact(const Sample& sample, uint8_t* out, size_t capacity);

// Offset of the header of block `index` (0-based, packager order) in a built artifact.
size_t block_offset(const uint8_t* artifact, size_t index);

void store_u32(uint8_t* p, uint32_t value);
void store_u16(uint8_t* p, uint16_t value);

// A 16-byte aligned buffer for built artifacts.
struct ArtifactBuffer {
  alignas(16) uint8_t bytes[8192];
  size_t size;
};

}  // namespace test_support

#endif  // ETHOSU_RT_TESTS_SUPPORT_ARTIFACT_BUILDER_H_
