// The Cortex-M backend against the FAKE core driver (fake_ethosu_driver.h): what it passes
// to ethosu_invoke_v3, how it treats the application's memory, and the cache hooks.
#include "ethosu_rt/npu_cortex_m.h"

#include <string.h>

#include "artifact_builder.h"
#include "ethosu_rt/arena.h"
#include "fake_ethosu_driver.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::CortexMMemory;
using ethosu_rt::CortexMNpu;
using ethosu_rt::Error;
using ethosu_rt::Model;
using test_support::LogCapture;
using test_support::Sample;

ethosu_driver g_driver;
test_support::ArtifactBuffer g_artifact;
alignas(32) uint8_t g_scratch[4096];
alignas(32) uint8_t g_fast[1024];

uint64_t address(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Builds `sample`, parses it and gives the fake a fresh, initialised driver.
Model setup(const Sample& sample, const void* fast = nullptr, size_t fast_size = 0) {
  fake_ethosu::reset();
  ethosu_rt::set_cache_ops(nullptr);
  ethosu_init(&g_driver, reinterpret_cast<void*>(0x58102000u), fast, fast_size, 1, 1);
  g_artifact.size =
      test_support::build_artifact(sample, g_artifact.bytes, sizeof(g_artifact.bytes));
  Model model = {};
  if (ethosu_rt::parse_artifact(g_artifact.bytes, g_artifact.size, &model) != Error::kOk) {
    model = Model{};
  }
  return model;
}

Model setup_default() {
  Sample sample;
  test_support::make_sample(&sample);
  return setup(sample);
}

CortexMMemory scratch_only(size_t size = sizeof(g_scratch)) {
  CortexMMemory memory = {};
  memory.scratch = g_scratch;
  memory.scratch_size = size;
  return memory;
}

TEST(CortexMWithFakeDriver, InvokePassesTheCop1PayloadAndBasePointers) {
  const Model model = setup_default();
  ASSERT_EQ(model.num_inputs, 1u);
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, scratch_only()), Error::kOk);
  int marker = 0;
  ASSERT_EQ(npu.invoke(&marker), Error::kOk);
  const fake_ethosu::Stats& stats = fake_ethosu::stats();
  EXPECT_EQ(stats.violations, 0);
  EXPECT_EQ(stats.invokes, 1);
  EXPECT_EQ(stats.reserves, 1);
  EXPECT_EQ(stats.releases, 1);
  EXPECT_EQ(stats.last.cop, static_cast<const void*>(model.cmd_data.data));
  EXPECT_EQ(stats.last.cop_size, static_cast<int>(model.cmd_data.size));
  EXPECT_EQ(stats.last.num_base_addr, 3);
  EXPECT_EQ(stats.last.base[0], address(model.weights.data));
  EXPECT_EQ(stats.last.size[0], 16u);
  EXPECT_EQ(stats.last.base[1], address(g_scratch));
  EXPECT_EQ(stats.last.size[1], 2048u);  // the model's scratch, not the whole arena
  EXPECT_EQ(stats.last.base[2], 0u);     // no fast scratch: no pointer, size 0
  EXPECT_EQ(stats.last.size[2], 0u);
  EXPECT_EQ(stats.last.user_arg, static_cast<void*>(&marker));
}

TEST(CortexMWithFakeDriver, RegionsExposeTheArenaForIoCopies) {
  const Model model = setup_default();
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, scratch_only()), Error::kOk);
  EXPECT_EQ(npu.regions().region[1].data, g_scratch);
  EXPECT_EQ(npu.regions().region[1].size, sizeof(g_scratch));
  EXPECT_EQ(npu.regions().region[0].data, model.weights.data);
  EXPECT_TRUE(npu.regions().region[3].data == nullptr);
}

// The fake NPU: an identity network copying the input area (scratch + 1024) to the
// output area (scratch + 0), as the sample's IO placement says.
void identity_npu(const uint64_t* base, const size_t* size, int count, void* /*user*/) {
  if (count > 1 && size[1] >= 2048) {
    uint8_t* scratch = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(base[1]));
    memcpy(scratch, scratch + 1024, 1024);
  }
}

TEST(CortexMWithFakeDriver, EndToEndThroughTheFakeNpu) {
  const Model model = setup_default();
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, scratch_only()), Error::kOk);
  fake_ethosu::set_npu_model(identity_npu, nullptr);
  static uint8_t input[1024];
  static uint8_t output[1024];
  for (size_t i = 0; i < sizeof(input); ++i) {
    input[i] = static_cast<uint8_t>(i * 13 + 1);
  }
  ASSERT_EQ(ethosu_rt::copy_input(model, npu.regions(), 0, input, sizeof(input)), Error::kOk);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  ASSERT_EQ(ethosu_rt::copy_output(model, npu.regions(), 0, output, sizeof(output)), Error::kOk);
  EXPECT_EQ(memcmp(output, input, sizeof(input)), 0);
  EXPECT_EQ(fake_ethosu::stats().violations, 0);
}

TEST(CortexMWithFakeDriver, Cop2IsRefusedAtPrepare) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  const Model model = setup(sample);
  ASSERT_EQ(model.num_outputs, 1u);
  LogCapture log;
  CortexMNpu npu;
  EXPECT_EQ(npu.prepare(model, scratch_only()), Error::kUnsupported);
  EXPECT_LOG(log,
             "cmd_data: COP format (the core driver takes COP1; COP2 is for Linux direct "
             "drive) must be 1; got 2");
  EXPECT_EQ(npu.invoke(), Error::kBadState);
  EXPECT_LOG(log, "CortexMNpu: prepare() must succeed before invoke()");
  EXPECT_EQ(fake_ethosu::stats().invokes, 0);
}

TEST(CortexMWithFakeDriver, ScratchMustBeLargeEnoughAndAligned) {
  const Model model = setup_default();
  LogCapture log;
  CortexMNpu npu;
  EXPECT_EQ(npu.prepare(model, scratch_only(2047)), Error::kBufferTooSmall);
  EXPECT_LOG(log, "region 1 buffer: bytes (the model's region size) must be >= 2048; got 2047");
  CortexMMemory memory = scratch_only();
  memory.scratch = g_scratch + 8;
  memory.scratch_size = 2048;
  EXPECT_EQ(npu.prepare(model, memory), Error::kMisaligned);
  EXPECT_LOG(log,
             "region 1 buffer: address modulo the NPU/cache-line alignment must be 0x0; got "
             "0x8");
  memory = CortexMMemory{};
  EXPECT_EQ(npu.prepare(model, memory), Error::kBadArgument);
  EXPECT_LOG(log, "region 1 buffer: must be provided: the model uses the region");
}

// Review finding 3: a region the model does not use gets base 0 and size 0, never a
// default-constructed or zero-sized buffer.
TEST(CortexMWithFakeDriver, ZeroSizedScratchGetsNoPointer) {
  Sample sample;
  test_support::make_sample(&sample);
  sample.scratch_size = 0;
  sample.num_inputs = 0;
  sample.outputs[0].region = 4;  // a separate output region, so scratch can be empty
  const Model model = setup(sample);
  ASSERT_EQ(model.num_outputs, 1u);
  ASSERT_EQ(model.scratch_size, 0u);
  static uint8_t out_region[1024] __attribute__((aligned(16)));
  CortexMMemory memory = {};
  memory.output_region = out_region;
  memory.output_region_size = sizeof(out_region);
  memory.scratch = g_scratch;  // offered, but the model does not use region 1
  memory.scratch_size = sizeof(g_scratch);
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, memory), Error::kOk);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  const fake_ethosu::Stats& stats = fake_ethosu::stats();
  EXPECT_EQ(stats.violations, 0);
  EXPECT_EQ(stats.last.num_base_addr, 5);
  EXPECT_EQ(stats.last.base[1], 0u);
  EXPECT_EQ(stats.last.size[1], 0u);
  EXPECT_EQ(stats.last.base[3], 0u);
  EXPECT_EQ(stats.last.base[4], address(out_region));
  EXPECT_EQ(stats.last.size[4], 1024u);
}

TEST(CortexMWithFakeDriver, FastScratchIsCheckedAndPassedAsRegionTwo) {
  Sample sample;
  test_support::make_sample(&sample);
  sample.scratch_fast_size = 512;
  Model model = setup(sample, g_fast, sizeof(g_fast));
  LogCapture log;
  CortexMNpu npu;
  EXPECT_EQ(npu.prepare(model, scratch_only()), Error::kBadArgument);
  EXPECT_LOG(log, "region 2 buffer: must be provided: the model uses the region");
  CortexMMemory memory = scratch_only();
  memory.fast_scratch = g_fast;
  memory.fast_scratch_size = 256;
  EXPECT_EQ(npu.prepare(model, memory), Error::kBufferTooSmall);
  EXPECT_LOG(log, "region 2 buffer: bytes (the model's region size) must be >= 512; got 256");
  memory.fast_scratch_size = sizeof(g_fast);
  ASSERT_EQ(npu.prepare(model, memory), Error::kOk);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  EXPECT_EQ(fake_ethosu::stats().violations, 0);
  EXPECT_EQ(fake_ethosu::stats().last.base[2], address(g_fast));
  EXPECT_EQ(fake_ethosu::stats().last.size[2], 512u);  // the model's need, not the buffer
}

TEST(CortexMWithFakeDriver, DriverFailuresReleaseTheDriver) {
  const Model model = setup_default();
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, scratch_only()), Error::kOk);
  LogCapture log;
  fake_ethosu::set_invoke_result(-1);
  EXPECT_EQ(npu.invoke(), Error::kDriver);
  EXPECT_LOG(log, "ethosu_invoke_v3: result must be 0; got -1");
  EXPECT_EQ(fake_ethosu::stats().releases, 1);
  fake_ethosu::set_invoke_result(0);
  fake_ethosu::set_reserve_returns_null(true);
  EXPECT_EQ(npu.invoke(), Error::kDriver);
  EXPECT_LOG(log, "ethosu_reserve_driver: must return a driver");
  EXPECT_EQ(fake_ethosu::stats().releases, 1);  // nothing was reserved
  fake_ethosu::set_reserve_returns_null(false);
  EXPECT_EQ(npu.invoke(), Error::kOk);  // the driver is free again
  EXPECT_EQ(fake_ethosu::stats().violations, 0);
}

struct CacheLog {
  int cleans;
  int invalidates;
  const void* last_invalidate;
  size_t last_invalidate_size;
  bool invalidated_weights;
  const void* weights;
};
CacheLog g_cache;

void record_clean(const void*, size_t) { ++g_cache.cleans; }
void record_invalidate(const void* p, size_t n) {
  ++g_cache.invalidates;
  g_cache.last_invalidate = p;
  g_cache.last_invalidate_size = n;
  g_cache.invalidated_weights = g_cache.invalidated_weights || p == g_cache.weights;
}

TEST(CortexMWithFakeDriver, CacheHooksCleanAllAndInvalidateOnlyWhatTheNpuWrites) {
  const Model model = setup_default();
  static const ethosu_rt::CacheOps ops = {record_clean, record_invalidate};
  g_cache = CacheLog{0, 0, nullptr, 0, false, model.weights.data};
  ethosu_rt::set_cache_ops(&ops);
  CortexMNpu npu;
  ASSERT_EQ(npu.prepare(model, scratch_only()), Error::kOk);
  ASSERT_EQ(npu.invoke(), Error::kOk);
  EXPECT_EQ(g_cache.cleans, 2);  // weights and scratch
  EXPECT_EQ(g_cache.invalidates, 1);
  EXPECT_EQ(g_cache.last_invalidate, static_cast<const void*>(g_scratch));
  EXPECT_EQ(g_cache.last_invalidate_size, 2048u);
  EXPECT_FALSE(g_cache.invalidated_weights);
  // With maintenance on, buffers must own whole cache lines.
  LogCapture log;
  CortexMMemory memory = scratch_only();
  memory.scratch = g_scratch + 16;
  memory.scratch_size = 2064;
  EXPECT_EQ(npu.prepare(model, memory), Error::kMisaligned);
  EXPECT_LOG(log, "address modulo the NPU/cache-line alignment must be 0x0; got 0x10");
  ethosu_rt::set_cache_ops(nullptr);
}

// Review finding 4: state placed in caller memory is constructed and destroyed properly.
TEST(CortexMWithFakeDriver, BackendInAnArena) {
  const Model model = setup_default();
  alignas(CortexMNpu) static uint8_t arena[sizeof(CortexMNpu)];
  CortexMNpu* npu = ethosu_rt::create_in<CortexMNpu>(arena, sizeof(arena));
  ASSERT_TRUE(npu != nullptr);
  EXPECT_EQ(npu->invoke(), Error::kBadState);  // constructed: not prepared
  ASSERT_EQ(npu->prepare(model, scratch_only()), Error::kOk);
  ASSERT_EQ(npu->invoke(), Error::kOk);
  ethosu_rt::destroy(npu);
  EXPECT_EQ(fake_ethosu::stats().reserves, fake_ethosu::stats().releases);
}

}  // namespace
