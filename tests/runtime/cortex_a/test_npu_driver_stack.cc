// The driver-stack backend against the TEST DOUBLE of Arm's Ethos-U Linux driver library
// (fake_driver_stack/: no Ethos-U hardware here). Every test ends with the double's
// contract check: no violations and no object left alive.
#include "ethosu_rt/npu_driver_stack.h"

#include <string.h>

#include <string>
#include <vector>

#include "artifact_builder.h"
#include "ethosu_rt/io.h"
#include "fake_driver_stack.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::DriverStackNpu;
using ethosu_rt::Error;
using ethosu_rt::Model;
using test_support::LogCapture;
using test_support::Sample;

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

// The separate-IO sample (COP2, U85, region 3 -> 4) with 32 bytes of weights and 256 bytes
// of scratch; the fake NPU adds 1 to every input byte.
void sample_with_scratch(Sample* sample) {
  test_support::make_separate_io_sample(sample);
  sample->weight_size = 32;
  for (size_t i = 0; i < sample->weight_size; ++i) {
    sample->weights[i] = static_cast<uint8_t>(i);
  }
  sample->scratch_size = 256;
}

void add_one_npu() {
  fake_driver_stack::set_npu([](const fake_driver_stack::NpuBuffers& b) {
    for (size_t i = 0; i < b.ofm_size && i < b.ifm_size; ++i) {
      b.ofm[i] = static_cast<uint8_t>(b.ifm[i] + 1);
    }
  });
}

// Runs prepare + one invoke of `artifact` on a fresh fake; returns invoke's result.
Error run_once(const Artifact& artifact, DriverStackNpu* npu, uint8_t fill) {
  Error error = npu->open("/dev/ethosu0");
  if (error != Error::kOk) {
    return error;
  }
  error = npu->prepare(artifact.model);
  if (error != Error::kOk) {
    return error;
  }
  std::vector<uint8_t> input(128, fill);
  error = ethosu_rt::copy_input(artifact.model, npu->regions(), 0, input.data(), input.size());
  return error != Error::kOk ? error : npu->invoke(1000000000);
}

class DriverStackWithFakeLibrary : public ::testing::Test {
 protected:
  void SetUp() override { fake_driver_stack::reset(); }
  void TearDown() override {
    EXPECT_EQ(fake_driver_stack::violations(), "");
    EXPECT_EQ(fake_driver_stack::live_objects(), 0u) << fake_driver_stack::calls();
  }
};

TEST_F(DriverStackWithFakeLibrary, MissingDeviceIsOneClearError) {
  LogCapture log;
  {
    DriverStackNpu npu;
    EXPECT_EQ(npu.open("/dev/ethosu7"), Error::kNoDevice);
  }
  EXPECT_EQ(log.count(), 1);
  EXPECT_CONTAINS(log.last(),
                  "/dev/ethosu7: EthosU::Device (open of the NPU device node) must be done "
                  "without an exception; got 'Failed to open device /dev/ethosu7: No such file");
}

TEST_F(DriverStackWithFakeLibrary, PrepareAndInvokeInTheDocumentedOrder) {
  Sample sample;
  sample_with_scratch(&sample);
  Artifact artifact;
  build(sample, &artifact);
  add_one_npu();
  fake_driver_stack::set_region_extent(3, 128);
  fake_driver_stack::set_region_extent(4, 128);
  {
    DriverStackNpu npu;
    ASSERT_EQ(run_once(artifact, &npu, 41), Error::kOk);
    std::vector<uint8_t> output(128, 0);
    ASSERT_EQ(ethosu_rt::copy_output(artifact.model, npu.regions(), 0, output.data(),
                                     output.size()),
              Error::kOk);
    EXPECT_EQ(output, std::vector<uint8_t>(128, 42));
  }
  // Device; the network from the COP2 payload; weights written once; scratch, inputs and
  // outputs; inputs written; one inference, waited for before its status and outputs.
  EXPECT_EQ(fake_driver_stack::calls(),
            "Device Network createBuffers write createBuffers createBuffers createBuffers write "
            "Inference wait status read");
  EXPECT_EQ(fake_driver_stack::batch_sizes(), (std::vector<size_t>{32, 256, 128, 128}));
  const fake_driver_stack::LastInference& last = fake_driver_stack::last_inference();
  EXPECT_TRUE(last.constant);
  EXPECT_TRUE(last.intermediate);
  EXPECT_EQ(last.ifm_count, 1u);
  EXPECT_EQ(last.ofm_count, 1u);
  EXPECT_FALSE(last.cycle_counter);
}

TEST_F(DriverStackWithFakeLibrary, ZeroScratchIsANullHandleNotAZeroSizedBuffer) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);  // scratch 0, as Vela's separate IO gives
  Artifact artifact;
  build(sample, &artifact);
  {
    DriverStackNpu npu;
    ASSERT_EQ(run_once(artifact, &npu, 0), Error::kOk);
  }
  EXPECT_FALSE(fake_driver_stack::last_inference().intermediate);
  EXPECT_TRUE(fake_driver_stack::last_inference().constant);
  for (size_t size : fake_driver_stack::batch_sizes()) {
    EXPECT_GT(size, 0u);
  }
}

TEST_F(DriverStackWithFakeLibrary, SeveralInputsShareOneRegionBufferAtVelaOffsets) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  const int32_t shape[2] = {1, 20};  // 20 bytes: the second input starts at 32, not at 20
  sample.inputs[0] = test_support::plain_io("a", 1, shape, 2, 0, 3);
  sample.inputs[1] = test_support::plain_io("b", 1, shape, 2, 32, 3);
  sample.num_inputs = 2;
  sample.outputs[0] = test_support::plain_io("y", 1, shape, 2, 16, 4);
  Artifact artifact;
  build(sample, &artifact);
  std::vector<uint8_t> seen;
  fake_driver_stack::set_npu([&seen](const fake_driver_stack::NpuBuffers& b) {
    seen.assign(b.ifm, b.ifm + b.ifm_size);
    memcpy(b.ofm + 16, b.ifm + 32, 20);  // y = b
  });
  {
    DriverStackNpu npu;
    ASSERT_EQ(npu.open("/dev/ethosu0"), Error::kOk);
    ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
    const std::vector<uint8_t> a(20, 1), b(20, 2);
    ASSERT_EQ(ethosu_rt::copy_input(artifact.model, npu.regions(), 0, a.data(), a.size()),
              Error::kOk);
    ASSERT_EQ(ethosu_rt::copy_input(artifact.model, npu.regions(), 1, b.data(), b.size()),
              Error::kOk);
    ASSERT_EQ(npu.invoke(), Error::kOk);
    std::vector<uint8_t> y(20, 0);
    ASSERT_EQ(ethosu_rt::copy_output(artifact.model, npu.regions(), 0, y.data(), y.size()),
              Error::kOk);
    EXPECT_EQ(y, b);
  }
  ASSERT_EQ(seen.size(), 52u);  // one buffer spanning region 3: 32 + 20 bytes
  EXPECT_EQ(seen[0], 1);
  EXPECT_EQ(seen[31], 0);  // the gap Vela left stays zero
  EXPECT_EQ(seen[32], 2);
  EXPECT_EQ(fake_driver_stack::last_inference().ifm_count, 1u);
  EXPECT_EQ(fake_driver_stack::batch_sizes(), (std::vector<size_t>{1, 52, 36}));
}

TEST_F(DriverStackWithFakeLibrary, OutputLargerThanItsTensorIsAnErrorNeverAnOverflow) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  Artifact artifact;
  build(sample, &artifact);
  {
    DriverStackNpu npu;
    ASSERT_EQ(run_once(artifact, &npu, 5), Error::kOk);
    // A caller buffer smaller than the tensor the NPU wrote (128 bytes) is refused before
    // any byte moves, and the region staging holds exactly what the output buffer held.
    std::vector<uint8_t> small(64, 0xEE);
    LogCapture log;
    EXPECT_NE(ethosu_rt::copy_output(artifact.model, npu.regions(), 0, small.data(),
                                     small.size()),
              Error::kOk);
    EXPECT_EQ(log.count(), 1);
    EXPECT_EQ(small, std::vector<uint8_t>(64, 0xEE));
    EXPECT_EQ(npu.regions().region[ethosu_rt::kRegionOutputs].size, 128u);
  }
}

TEST_F(DriverStackWithFakeLibrary, AWaitThatTimesOutIsReportedAsATimeout) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  Artifact artifact;
  build(sample, &artifact);
  fake_driver_stack::set_wait_times_out(true);
  LogCapture log;
  {
    DriverStackNpu npu;
    EXPECT_EQ(run_once(artifact, &npu, 0), Error::kTimeout);
  }
  EXPECT_EQ(log.count(), 1);
  EXPECT_CONTAINS(log.last(), "/dev/ethosu0: inference must be done within the timeout; got "
                              "still running after 1000 ms");
  // Never a status or an output read of an unfinished inference.
  EXPECT_EQ(fake_driver_stack::calls().find("status"), std::string::npos);
  EXPECT_EQ(fake_driver_stack::calls().find("read"), std::string::npos);
}

TEST_F(DriverStackWithFakeLibrary, EveryInferenceStatusIsMappedToAnError) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  Artifact artifact;
  build(sample, &artifact);
  const struct {
    EthosU::InferenceStatus status;
    const char* text;
  } cases[] = {
      {EthosU::InferenceStatus::ERROR, "got ERROR (the NPU reported an error"},
      {EthosU::InferenceStatus::RUNNING, "got RUNNING"},
      {EthosU::InferenceStatus::REJECTED, "got REJECTED"},
      {EthosU::InferenceStatus::ABORTED, "got ABORTED"},
      {EthosU::InferenceStatus::ABORTING, "got ABORTING"},
      {EthosU::InferenceStatus::PENDING, "got PENDING"},
  };
  for (const auto& c : cases) {
    fake_driver_stack::reset();
    fake_driver_stack::set_status(c.status);
    LogCapture log;
    {
      DriverStackNpu npu;
      EXPECT_EQ(run_once(artifact, &npu, 0), Error::kDevice) << c.text;
    }
    EXPECT_EQ(log.count(), 1);
    EXPECT_CONTAINS(log.last(), "/dev/ethosu0: inference status must be OK; ");
    EXPECT_CONTAINS(log.last(), c.text);
    EXPECT_EQ(fake_driver_stack::calls().find("read"), std::string::npos) << c.text;
    EXPECT_EQ(fake_driver_stack::violations(), "");
  }
  fake_driver_stack::reset();
  fake_driver_stack::set_status_value(17);  // a kernel newer than this runtime
  LogCapture log;
  {
    DriverStackNpu npu;
    EXPECT_EQ(run_once(artifact, &npu, 0), Error::kDevice);
  }
  EXPECT_CONTAINS(log.last(), "/dev/ethosu0: inference status must be OK (0); got 17");
}

TEST_F(DriverStackWithFakeLibrary, CyclesAndPmuEventsAreReportedWhenAsked) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  Artifact artifact;
  build(sample, &artifact);
  fake_driver_stack::set_cycles(123456789012ull);
  fake_driver_stack::set_event_count(0x22, 700);
  fake_driver_stack::set_event_count(0x30, 9);
  {
    DriverStackNpu npu;
    ASSERT_EQ(npu.open(), Error::kOk);
    EXPECT_FALSE(npu.pmu_counts().has_cycles);
    ethosu_rt::PmuConfig pmu = {};
    pmu.events[0] = 0x22;
    pmu.events[1] = 0x30;
    pmu.num_events = 2;
    pmu.cycle_counter = true;
    ASSERT_EQ(npu.set_pmu(pmu), Error::kOk);
    ASSERT_EQ(npu.prepare(artifact.model), Error::kOk);
    std::vector<uint8_t> input(128, 0);
    ASSERT_EQ(ethosu_rt::copy_input(artifact.model, npu.regions(), 0, input.data(), 128),
              Error::kOk);
    ASSERT_EQ(npu.invoke(), Error::kOk);
    EXPECT_TRUE(npu.pmu_counts().has_cycles);
    EXPECT_EQ(npu.pmu_counts().cycles, 123456789012ull);
    ASSERT_EQ(npu.pmu_counts().num_events, 2u);
    EXPECT_EQ(npu.pmu_counts().events[0], 700u);
    EXPECT_EQ(npu.pmu_counts().events[1], 9u);
  }
  const fake_driver_stack::LastInference& last = fake_driver_stack::last_inference();
  EXPECT_TRUE(last.cycle_counter);
  EXPECT_EQ(last.events, (std::vector<uint32_t>{0x22, 0x30, 0, 0, 0, 0, 0, 0}));
}

TEST_F(DriverStackWithFakeLibrary, MorePmuEventsThanCountersAreRefused) {
  fake_driver_stack::Options options;
  options.pmu_counters = 4;  // the 2023 uapi had 4
  fake_driver_stack::reset(options);
  DriverStackNpu npu;
  ethosu_rt::PmuConfig pmu = {};
  pmu.num_events = 5;
  LogCapture log;
  EXPECT_EQ(npu.set_pmu(pmu), Error::kBadArgument);
  EXPECT_CONTAINS(log.last(), "pmu: events (the PMU event counters the driver has) must be <= 4; "
                              "got 5");
}

TEST_F(DriverStackWithFakeLibrary, LibraryExceptionsStopAtTheSeam) {
  Sample sample;
  sample_with_scratch(&sample);
  Artifact artifact;
  build(sample, &artifact);
  const char* calls[] = {"Network", "createBuffers", "write", "Inference", "wait", "status",
                         "read"};
  for (const char* call : calls) {
    fake_driver_stack::reset();
    fake_driver_stack::fail_next(call, std::string(call) + ": Input/output error");
    LogCapture log;
    {
      DriverStackNpu npu;
      EXPECT_EQ(run_once(artifact, &npu, 0), Error::kDevice) << call;
    }
    EXPECT_EQ(log.count(), 1) << call;
    EXPECT_CONTAINS(log.last(), "must be done without an exception; got '");
    EXPECT_CONTAINS(log.last(), ": Input/output error'");
    EXPECT_EQ(fake_driver_stack::violations(), "") << call;
    EXPECT_EQ(fake_driver_stack::live_objects(), 0u) << call;
  }
}

TEST_F(DriverStackWithFakeLibrary, Cop1OrSharedIoRegionsAreRefusedBeforeTheDriverSeesThem) {
  Sample sample;
  test_support::make_sample(&sample);  // COP1, IO in scratch (region 1)
  Artifact artifact;
  build(sample, &artifact);
  LogCapture log;
  {
    DriverStackNpu npu;
    ASSERT_EQ(npu.open(), Error::kOk);
    EXPECT_EQ(npu.prepare(artifact.model), Error::kUnsupported);
  }
  EXPECT_CONTAINS(log.last(), "cmd_data: driver payload format (COP1 = 1, COP2 = 2) for the "
                              "driver stack must be 2 (COP2: compile with --cop-format COP2 "
                              "--separate-io-regions); got 1");

  test_support::make_separate_io_sample(&sample);
  sample.outputs[0].region = 1;
  sample.scratch_size = 256;
  build(sample, &artifact);
  {
    DriverStackNpu npu;
    ASSERT_EQ(npu.open(), Error::kOk);
    EXPECT_EQ(npu.prepare(artifact.model), Error::kUnsupported);
  }
  EXPECT_CONTAINS(log.last(), "output 0: region must be 4 (compile with --separate-io-regions); "
                              "got 1");
  EXPECT_EQ(fake_driver_stack::calls(), "Device Device");
}

TEST_F(DriverStackWithFakeLibrary, RepeatedInvokesRewriteTheInputsAndCloseIsIdempotent) {
  Sample sample;
  test_support::make_separate_io_sample(&sample);
  Artifact artifact;
  build(sample, &artifact);
  add_one_npu();
  DriverStackNpu npu;
  ASSERT_EQ(run_once(artifact, &npu, 1), Error::kOk);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(npu.invoke(), Error::kOk);  // the staged input is written again each time
  }
  EXPECT_EQ(fake_driver_stack::inferences(), 4);
  npu.close();
  npu.close();
  LogCapture log;
  EXPECT_EQ(npu.invoke(), Error::kBadState);
  EXPECT_EQ(npu.prepare(artifact.model), Error::kBadState);
}

}  // namespace
