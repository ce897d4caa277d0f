#include "ethosu_rt/cop.h"

#include <string.h>

#include "artifact_builder.h"
#include "ethosu_rt/artifact.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::CommandStream;
using ethosu_rt::CopMatch;
using ethosu_rt::Error;
using test_support::LogCapture;

const uint32_t kWords[] = {0x0001010Fu, 0x0001011Fu, 0x00000006u, 0x00000000u};

struct Payload {
  alignas(16) uint8_t bytes[1024];
  size_t size;
};

Payload cop1() {
  Payload p = {};
  p.size = test_support::build_cop1(test_support::kU85Config, test_support::kU85Id, kWords, 4,
                                    p.bytes, sizeof(p.bytes));
  return p;
}

Payload cop2(const test_support::Cop2Entry* entries, size_t count) {
  Payload p = {};
  p.size = test_support::build_cop2(entries, count, p.bytes, sizeof(p.bytes));
  return p;
}

Payload cop2_single() {
  const test_support::Cop2Entry entry = {test_support::kU85Config, test_support::kU85Id, 0x1580,
                                         kWords, 4};
  return cop2(&entry, 1);
}

TEST(Cop, Cop1StreamConfigAndId) {
  const Payload p = cop1();
  CommandStream s;
  ASSERT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kOk);
  EXPECT_EQ(s.format, ethosu_rt::CopFormat::kCop1);
  EXPECT_EQ(s.offset, 32u);  // Vela's layout: FourCC, OPT_CFG x3, NOP x3, header
  EXPECT_EQ(s.size, 16u);
  EXPECT_EQ(s.words, p.bytes + 32);
  EXPECT_EQ(memcmp(s.words, kWords, sizeof(kWords)), 0);
  EXPECT_TRUE(s.has_config);
  EXPECT_EQ(s.config, test_support::kU85Config);
  EXPECT_EQ(ethosu_rt::npu_product(s.config), 2u);
  EXPECT_EQ(ethosu_rt::npu_log2_macs(s.config), 8u);
  uint32_t config = 0;
  uint32_t id = 0;
  ASSERT_EQ(ethosu_rt::cop_optimizer_config(p.bytes, p.size, &config, &id), Error::kOk);
  EXPECT_EQ(config, 0x20000118u);
  EXPECT_EQ(id, 0x20007000u);
}

TEST(Cop, Cop1LengthUsesTheReservedByteAsTheTopEightBits) {
  Payload p = cop1();
  // 0x010004 words claimed: byte 1 = 0x01, data = 0x0004.
  test_support::store_u32(p.bytes + 28, 0x00040102u);
  LogCapture log;
  CommandStream s;
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kTruncated);
  EXPECT_LOG(log,
             "COP1 COMMAND_STREAM at byte 28: length in words (words left) must be <= 4; got "
             "65540");
}

TEST(Cop, Cop1StructuralErrors) {
  LogCapture log;
  CommandStream s;
  Payload p = cop1();
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size - 2, nullptr, &s), Error::kBadValue);
  EXPECT_LOG(log, "COP1: payload bytes % 4 must be 0; got 2");
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, 8, nullptr, &s), Error::kTruncated);
  EXPECT_LOG(log, "COP1 OPTIMIZER_CONFIG at byte 4: bytes left (3 words) must be >= 12; got 4");
  test_support::store_u32(p.bytes + 16, 0x00000003u);  // READ_APB_REG is not Vela's
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kBadValue);
  EXPECT_LOG(log,
             "COP1 action at byte 16: driver action command must be 1 (OPTIMIZER_CONFIG), 2 "
             "(COMMAND_STREAM) or 5 (NOP); got 3");
  p = cop1();
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, 28, nullptr, &s), Error::kBadValue);
  EXPECT_LOG(log, "COP1: COMMAND_STREAM count must be >= 1; got 0");
}

TEST(Cop, Cop2AsVelaLaysItOut) {
  const Payload p = cop2_single();
  EXPECT_EQ(ethosu_rt::load_u32(p.bytes + 8), static_cast<uint32_t>(p.size - 16));
  CommandStream s;
  ASSERT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kOk);
  EXPECT_EQ(s.format, ethosu_rt::CopFormat::kCop2);
  EXPECT_EQ(s.offset, 64u);
  EXPECT_EQ(s.size, 16u);
  EXPECT_EQ(memcmp(s.words, kWords, sizeof(kWords)), 0);
  EXPECT_EQ(s.config, test_support::kU85Config);
  EXPECT_EQ(s.id, test_support::kU85Id);
  EXPECT_EQ(s.cache_size, 0x1580u);
  uint32_t config = 0;
  uint32_t id = 0;
  ASSERT_EQ(ethosu_rt::cop_optimizer_config(p.bytes, p.size, &config, &id), Error::kOk);
  EXPECT_EQ(id, test_support::kU85Id);
}

TEST(Cop, Cop2StructuralErrors) {
  LogCapture log;
  CommandStream s;
  Payload p = cop2_single();
  test_support::store_u32(p.bytes + 8, 4096);
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kTruncated);
  EXPECT_LOG(log, "COP2: header length (payload bytes - 16) must be <= 64; got 4096");
  p = cop2_single();
  test_support::store_u16(p.bytes + 4, 2);
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kUnsupported);
  EXPECT_LOG(log, "COP2: major version must be 1; got 2");
  p = cop2_single();
  p.bytes[28] = 'X';
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kBadMagic);
  EXPECT_LOG(log, "COP2 metadata at byte 28: FourCC (\"VEUM\") must be 0x4d554556; got 0x4d554558");
  p = cop2_single();
  test_support::store_u32(p.bytes + 24, 200);  // metadata_length past the entry
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kTruncated);
  EXPECT_LOG(log,
             "COP2 COMMAND_STREAM at byte 16: metadata_length (entry length - 4) must be <= "
             "52; got 200");
  p = cop2_single();
  test_support::store_u32(p.bytes + 24, 50);  // leaves 2 command bytes
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kTruncated);
  EXPECT_LOG(log, "command bytes must be >= 4; got 2");
  p = cop2_single();
  test_support::store_u32(p.bytes + 16, 0);
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kBadValue);
  EXPECT_LOG(log, "COP2 entry at byte 16: type must not be 0; got 0");
}

TEST(Cop, Cop2SkipsUnknownEntries) {
  Payload p = cop2_single();
  test_support::store_u32(p.bytes + 16, 9);
  LogCapture log;
  CommandStream s;
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kBadValue);
  EXPECT_LOG(log, "COP2: COMMAND_STREAM count must be >= 1; got 0");
}

TEST(Cop, Cop2PicksTheEntryForTheNpu) {
  const uint32_t u55_words[] = {0x0000010Fu, 0x0000011Fu, 0x00050006u, 0x0u, 0x0u};
  const test_support::Cop2Entry entries[] = {
      {test_support::kU55Config, test_support::kU55Id, 0, u55_words, 5},
      {test_support::kU85Config, test_support::kU85Id, 0, kWords, 4},
  };
  const Payload p = cop2(entries, 2);
  LogCapture log;
  CommandStream s;
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, nullptr, &s), Error::kUnsupported);
  EXPECT_LOG(log, "COP2: COMMAND_STREAM count without an NPU to choose by must be 1; got 2");
  const CopMatch u85 = {0x20000128u};  // another revision of a U85-256: same product and MACs
  ASSERT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, &u85, &s), Error::kOk);
  EXPECT_EQ(s.config, test_support::kU85Config);
  EXPECT_EQ(s.size, 16u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.words) % 16, 0u);
  const CopMatch u65 = {0x10000108u};
  EXPECT_EQ(ethosu_rt::cop_command_stream(p.bytes, p.size, &u65, &s), Error::kUnsupported);
  EXPECT_LOG(log,
             "COP2 config 0x1807 vs NPU config 0x10000108: COMMAND_STREAM entries built for "
             "the NPU's product and MACs must be >= 1; got 0");
}

TEST(Cop, FormatNamesBothMagics) {
  const uint8_t junk[8] = {'C', 'O', 'P', '3', 0, 0, 0, 0};
  LogCapture log;
  ethosu_rt::CopFormat format;
  EXPECT_EQ(ethosu_rt::cop_format(junk, sizeof(junk), &format), Error::kBadMagic);
  EXPECT_LOG(log, "got 0x33504f43");
  EXPECT_EQ(ethosu_rt::cop_format(junk, 3, &format), Error::kTruncated);
}

}  // namespace
