// The Cortex-A backend against the FAKE DRM accel device (fake_drm_device.h).
#include "ethosu_rt/npu_drm.h"

#include <errno.h>
#include <string.h>

#include <vector>

#include "artifact_builder.h"
#include "ethosu_rt/arena.h"
#include "ethosu_rt/cop.h"
#include "fake_drm_device.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::DrmNpu;
using ethosu_rt::Error;
using ethosu_rt::Model;
using test_support::FakeDrmDevice;
using test_support::FakeNpuRegion;
using test_support::LogCapture;
using test_support::Sample;

constexpr unsigned long kSubmit = 0xc0106445ul;
constexpr unsigned long kBoCreate = 0xc0106441ul;

// A built artifact that stays alive for the Model pointing into it.
struct Artifact {
  test_support::ArtifactBuffer buffer;
  Model model;
};

void build(const Sample& sample, Artifact* artifact) {
  artifact->buffer.size =
      test_support::build_artifact(sample, artifact->buffer.bytes, sizeof(artifact->buffer.bytes));
  artifact->model = Model{};
  ASSERT_EQ(
      ethosu_rt::parse_artifact(artifact->buffer.bytes, artifact->buffer.size, &artifact->model),
      Error::kOk);
}

// The sample (COP1, conv on region 1 with weights/scales in region 0), but compiled for a
// U85 as the DRM driver supports U65/U85 only.
void u85_sample(Sample* sample) {
  test_support::make_sample(sample);
  uint32_t words[16];
  const size_t n = test_support::conv_stream(1, 1, words);
  sample->cmd_size = test_support::build_cop1(test_support::kU85Config, test_support::kU85Id, words,
                                              n, sample->cmd, sizeof(sample->cmd));
}

TEST(DrmWithFakeDevice, MissingDeviceIsOneClearError) {
  FakeDrmDevice device;
  DrmNpu npu(device);
  LogCapture log;
  EXPECT_EQ(npu.open("/dev/accel/accel7"), Error::kNoDevice);
  EXPECT_LOG(log, "/dev/accel/accel7: open() of the NPU device node must be 0; got -2 (");
  EXPECT_LOG(log, strerror(ENOENT));
  EXPECT_EQ(log.count(), 1);
  EXPECT_EQ(device.live_fds(), 0u);
}

TEST(DrmWithFakeDevice, OpenQueriesTheNpu) {
  FakeDrmDevice::Options options;
  options.sram_size = 0x60000;
  options.npu_info_size = 16;  // a newer kernel with a longer npu_info
  FakeDrmDevice device(options);
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  EXPECT_EQ(npu.info().id, 0x20007000u);
  EXPECT_EQ(npu.info().config, 0x20000118u);
  EXPECT_EQ(npu.info().sram_size, 0x60000u);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, PrepareAndInvokeAScratchModel) {
  Sample sample;
  u85_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(0, 16);
  device.set_region_extent(1, 2048);
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
  // The command stream BO holds the raw words, without the COP1 wrapper.
  ethosu_rt::CommandStream stream;
  ASSERT_EQ(ethosu_rt::cop_command_stream(artifact.model.cmd_data.data,
                                          artifact.model.cmd_data.size, nullptr, &stream),
            Error::kOk);
  ASSERT_EQ(device.cmdstream_words().size() * 4, stream.size);
  EXPECT_EQ(memcmp(device.cmdstream_words().data(), stream.words, stream.size), 0);
  // The weights are in the region 0 BO.
  EXPECT_EQ(memcmp(npu.regions().region[0].data, artifact.model.weights.data, 16), 0);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  EXPECT_EQ(device.submits(), 1);
  EXPECT_NE(device.last_job().region_bo_handles[0], 0u);
  EXPECT_NE(device.last_job().region_bo_handles[1], 0u);
  for (int r = 2; r < 8; ++r) {
    EXPECT_EQ(device.last_job().region_bo_handles[r], 0u);
  }
  EXPECT_EQ(device.last_job().sram_size, 0u);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, EndToEndThroughTheFakeNpu) {
  Sample sample;
  u85_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(0, 16);
  device.set_region_extent(1, 2048);
  device.set_npu([](FakeNpuRegion(&regions)[8]) {
    // An identity network: input at scratch + 1024, output at scratch + 0.
    memcpy(regions[1].data, regions[1].data + 1024, 1024);
  });
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
  std::vector<uint8_t> input(1024);
  for (size_t i = 0; i < input.size(); ++i) {
    input[i] = static_cast<uint8_t>(i * 31 + 7);
  }
  std::vector<uint8_t> output(1024);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(ethosu_rt::copy_input(artifact.model, npu.regions(), 0, input.data(), input.size()),
              Error::kOk);
    ASSERT_EQ(npu.invoke(), Error::kOk);
  }
  ASSERT_EQ(ethosu_rt::copy_output(artifact.model, npu.regions(), 0, output.data(), output.size()),
            Error::kOk);
  EXPECT_EQ(output, input);
  EXPECT_EQ(device.submits(), 3);
  EXPECT_EQ(device.violations(), "");
}

// Review finding 3: no zero-sized or default-constructed buffers. With separate IO and no
// intermediates the scratch is 0 bytes: it gets no BO and handle 0; regions 3 and 4 get
// BOs of exactly the IO extent.
TEST(DrmWithFakeDevice, SeparateIoModelCreatesNoScratchBo) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(3, 128);
  device.set_region_extent(4, 128);
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
  EXPECT_EQ(device.bo_creates(), 2);  // regions 3 and 4; the 1-byte weights are unused
  EXPECT_TRUE(npu.regions().region[0].data == nullptr);
  EXPECT_TRUE(npu.regions().region[1].data == nullptr);
  EXPECT_EQ(npu.regions().region[3].size, 128u);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  EXPECT_EQ(device.last_job().region_bo_handles[0], 0u);
  EXPECT_EQ(device.last_job().region_bo_handles[1], 0u);
  EXPECT_NE(device.last_job().region_bo_handles[3], 0u);
  EXPECT_NE(device.last_job().region_bo_handles[4], 0u);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, ARegionTheStreamUsesNeedsBytesInTheArtifact) {
  Sample sample;
  u85_sample(&sample);
  sample.scratch_size = 0;
  sample.num_inputs = 0;
  sample.outputs[0].region = 4;
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  LogCapture log;
  EXPECT_EQ(npu.prepare(artifact.model), Error::kBadValue);
  EXPECT_LOG(log, "output 0: region must be one the command stream uses; got 4");
  sample.outputs[0].region = 1;
  sample.scratch_size = 1024;
  static Artifact with_scratch;
  build(sample, &with_scratch);
  ASSERT_EQ(npu.prepare(with_scratch.model), Error::kOk);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, FastScratchGoesToTheDeviceSram) {
  Sample sample;
  u85_sample(&sample);
  sample.scratch_fast_size = 0x1580;
  uint32_t words[24];
  size_t n = test_support::conv_stream(1, 1, words);
  // A DMA into region 2 (weights cached in SRAM), as Dedicated_Sram models do.
  words[n - 1] = test_support::cmd0(test_support::kSetDmaSrcRegion, 0);
  words[n++] = test_support::cmd0(test_support::kSetDmaDstRegion, 2);
  words[n++] = test_support::cmd0(test_support::kOpDmaStart, 0);
  sample.cmd_size = test_support::build_cop1(test_support::kU85Config, test_support::kU85Id, words,
                                             n, sample.cmd, sizeof(sample.cmd));
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice::Options small;
  small.sram_size = 0x1000;
  FakeDrmDevice too_small(small);
  DrmNpu npu(too_small);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  LogCapture log;
  EXPECT_EQ(npu.prepare(artifact.model), Error::kUnsupported);
  EXPECT_LOG(log,
             "/dev/accel/accel0: fast scratch bytes the model needs (the device SRAM size) "
             "must be <= 4096; got 5504");
  EXPECT_EQ(too_small.submits(), 0);

  FakeDrmDevice::Options big;
  big.sram_size = 0x60000;
  FakeDrmDevice device(big);
  device.set_region_extent(0, 16);
  device.set_region_extent(1, 2048);
  device.set_region_extent(2, 0x1580);
  DrmNpu npu2(device);
  ASSERT_EQ(npu2.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu2.prepare(artifact.model), Error::kOk);
  ASSERT_EQ(npu2.invoke(), Error::kOk);
  EXPECT_EQ(device.last_job().sram_size, 0x1580u);
  EXPECT_EQ(device.last_job().region_bo_handles[2], 0u);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, AStreamForAnotherNpuIsRefused) {
  Sample sample;
  test_support::make_sample(&sample);  // compiled for a U55-128
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  LogCapture log;
  EXPECT_EQ(npu.prepare(artifact.model), Error::kUnsupported);
  EXPECT_LOG(log,
             "COP1 config 0x1807 vs NPU config 0x20000118: COMMAND_STREAM entries built for "
             "the NPU's product and MACs must be >= 1; got 0");
}

TEST(DrmWithFakeDevice, Cop2WithStreamsForSeveralNpusPicksThisOne) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  uint32_t u85[16];
  const size_t n85 = test_support::elementwise_stream(3, 4, u85);
  const uint32_t u65[] = {0x0003010Fu, 0x0004011Fu, 0x00050006u};
  const test_support::Cop2Entry entries[] = {
      {0x10000108u, 0x10000000u, 0, u65, 3},
      {test_support::kU85Config, test_support::kU85Id, 0, u85, n85},
  };
  sample.cmd_size = test_support::build_cop2(entries, 2, sample.cmd, sizeof(sample.cmd));
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(3, 128);
  device.set_region_extent(4, 128);
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
  ASSERT_EQ(device.cmdstream_words().size(), n85);
  EXPECT_EQ(device.cmdstream_words()[2], u85[2]);
}

TEST(DrmWithFakeDevice, TimeoutAndSubmitFailuresAreReported) {
  Sample sample;
  u85_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(0, 16);
  device.set_region_extent(1, 2048);
  DrmNpu npu(device);
  ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
  ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
  LogCapture log;
  device.set_wait_result(-ETIME);
  EXPECT_EQ(npu.invoke(5000000), Error::kTimeout);
  EXPECT_LOG(log,
             "/dev/accel/accel0: inference must be done within the timeout; got still "
             "running after 5 ms");
  device.set_wait_result(0);
  device.fail_next(kSubmit, EINVAL);
  EXPECT_EQ(npu.invoke(), Error::kDevice);
  EXPECT_LOG(log, "/dev/accel/accel0: SUBMIT ioctl must be 0; got -22 (");
  EXPECT_LOG(log, strerror(EINVAL));
  EXPECT_EQ(npu.invoke(), Error::kOk);
  EXPECT_EQ(npu.invoke(0), Error::kBadArgument);
  EXPECT_EQ(device.violations(), "");
}

TEST(DrmWithFakeDevice, CallsOutOfOrderAreBadState) {
  Sample sample;
  u85_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  DrmNpu npu(device);
  LogCapture log;
  EXPECT_EQ(npu.prepare(artifact.model), Error::kBadState);
  EXPECT_LOG(log, "DrmNpu: open() must succeed before prepare()");
  EXPECT_EQ(npu.invoke(), Error::kBadState);
  EXPECT_LOG(log, "DrmNpu: prepare() must succeed before invoke()");
}

// Review finding 4: the backend's resources are released by its destructor, also when it
// lives in caller memory and prepare() failed halfway.
TEST(DrmWithFakeDevice, EverythingIsReleasedOnDestructionEvenAfterAFailedPrepare) {
  Sample sample;
  u85_sample(&sample);
  static Artifact artifact;
  build(sample, &artifact);
  FakeDrmDevice device;
  device.set_region_extent(0, 16);
  device.set_region_extent(1, 2048);
  {
    DrmNpu npu(device);
    ASSERT_EQ(npu.open("/dev/accel/accel0"), Error::kOk);
    ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
    ASSERT_EQ(npu.invoke(), Error::kOk);
    EXPECT_EQ(npu.live_handles(), 3u);
    EXPECT_EQ(device.live_mappings(), 2u);
  }
  EXPECT_EQ(device.live_fds(), 0u);
  EXPECT_EQ(device.live_mappings(), 0u);
  EXPECT_EQ(device.bos_left_at_close(), 0u);

  alignas(DrmNpu) static uint8_t arena[sizeof(DrmNpu)];
  DrmNpu* npu = ethosu_rt::create_in<DrmNpu>(arena, sizeof(arena), device);
  ASSERT_TRUE(npu != nullptr);
  ASSERT_EQ(npu->open("/dev/accel/accel0"), Error::kOk);
  device.fail_next(kBoCreate, ENOMEM, 1);  // weights BO made, scratch BO refused
  {
    LogCapture log;
    EXPECT_EQ(npu->prepare(artifact.model), Error::kDevice);
    EXPECT_LOG(log, "/dev/accel/accel0: BO_CREATE ioctl must be 0; got -12 (");
    EXPECT_LOG(log, strerror(ENOMEM));  // the C library's wording
    EXPECT_EQ(npu->live_handles(), 1u);
    EXPECT_EQ(npu->invoke(), Error::kBadState);
  }
  ethosu_rt::destroy(npu);
  EXPECT_EQ(device.live_fds(), 0u);
  EXPECT_EQ(device.live_mappings(), 0u);
  EXPECT_EQ(device.bos_left_at_close(), 0u);
  EXPECT_EQ(device.violations(), "");
}

}  // namespace
