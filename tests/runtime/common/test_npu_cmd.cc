#include "ethosu_rt/npu_cmd.h"

#include "artifact_builder.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::Error;
using ethosu_rt::RegionUse;
using test_support::cmd0;
using test_support::LogCapture;
namespace ts = test_support;

Error scan(const uint32_t* words, size_t count, RegionUse* use) {
  static uint8_t bytes[256];
  for (size_t i = 0; i < count; ++i) {
    ts::store_u32(bytes + 4 * i, words[i]);
  }
  return ethosu_rt::scan_region_use(bytes, 4 * count, use);
}

TEST(NpuCmd, ConvUsesIfmWeightsScalesAndOfm) {
  uint32_t words[16];
  const size_t n = ts::conv_stream(1, 1, words);
  RegionUse use;
  ASSERT_EQ(scan(words, n, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x03u);  // regions 0 (weights, scales) and 1
  EXPECT_EQ(use.written, 0x02u);
}

TEST(NpuCmd, ConvWithWeightsFromIfm2AndNoScales) {
  const uint32_t words[] = {cmd0(ts::kSetIfmRegion, 3), cmd0(ts::kSetIfm2Region, 1),
                            cmd0(ts::kSetOfmRegion, 4), cmd0(ts::kSetOfmPrecision, 0x100),
                            cmd0(ts::kOpConv, 1)};
  RegionUse use;
  ASSERT_EQ(scan(words, 5, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x1Au);  // 1, 3, 4
  EXPECT_EQ(use.written, 0x10u);
}

TEST(NpuCmd, ElementwiseUnaryAndScalarOperandsReadNoIfm2) {
  uint32_t words[16];
  size_t n = ts::elementwise_stream(3, 4, words);
  RegionUse use;
  ASSERT_EQ(scan(words, n, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x18u);
  const uint32_t binary[] = {cmd0(ts::kSetIfmRegion, 3),     cmd0(ts::kSetIfm2Region, 1),
                             cmd0(ts::kSetOfmRegion, 4),     cmd0(ts::kOpElementwise, 0),
                             cmd0(ts::kSetIfm2Broadcast, 8), cmd0(ts::kSetIfm2Region, 2),
                             cmd0(ts::kOpElementwise, 0)};
  ASSERT_EQ(scan(binary, 7, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x1Au);  // the scalar IFM2 in region 2 is never read
}

TEST(NpuCmd, PoolModeFourReadsNoIfm) {
  const uint32_t words[] = {cmd0(ts::kSetIfmRegion, 3), cmd0(ts::kSetOfmRegion, 1),
                            cmd0(ts::kOpPool, 4)};
  RegionUse use;
  ASSERT_EQ(scan(words, 3, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x02u);
}

TEST(NpuCmd, DmaUsesSourceAndDestinationUnlessExternal) {
  const uint32_t words[] = {cmd0(ts::kSetDmaSrcRegion, 0), cmd0(ts::kSetDmaDstRegion, 2),
                            cmd0(ts::kOpDmaStart, 0), cmd0(ts::kSetDmaSrcRegion, 0x100 | 5),
                            cmd0(ts::kOpDmaStart, 0)};
  RegionUse use;
  ASSERT_EQ(scan(words, 5, &use), Error::kOk);
  EXPECT_EQ(use.used, 0x05u);
  EXPECT_EQ(use.written, 0x04u);
}

TEST(NpuCmd, PayloadWordsAreNotCommands) {
  // The payload of IFM_BASE0 looks like a CONV; read as a command it would use unset regions.
  const uint32_t words[] = {cmd0(ts::kSetIfmBase0, 0), cmd0(ts::kOpConv, 0)};
  RegionUse use;
  ASSERT_EQ(scan(words, 2, &use), Error::kOk);
  EXPECT_EQ(use.used, 0u);
}

TEST(NpuCmd, Errors) {
  LogCapture log;
  RegionUse use;
  const uint32_t unset[] = {cmd0(ts::kSetOfmRegion, 1), cmd0(ts::kOpElementwise, 5)};
  EXPECT_EQ(scan(unset, 2, &use), Error::kBadValue);
  EXPECT_LOG(log, "command word 1: the operation uses an operand whose region was never set");
  const uint32_t truncated[] = {cmd0(ts::kSetIfmBase0, 0)};
  EXPECT_EQ(scan(truncated, 1, &use), Error::kTruncated);
  EXPECT_LOG(log,
             "command word 0: index of the payload word of a two-word command (word count) "
             "must be < 1; got 1");
  const uint32_t wide[] = {cmd0(ts::kSetIfmRegion, 9)};
  EXPECT_EQ(scan(wide, 1, &use), Error::kBadValue);
  EXPECT_LOG(log, "command word 0: region must be < 8; got 9");
  static const uint8_t odd[6] = {};
  EXPECT_EQ(ethosu_rt::scan_region_use(odd, 6, &use), Error::kBadValue);
}

}  // namespace
