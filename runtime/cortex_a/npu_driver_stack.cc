#include "ethosu_rt/npu_driver_stack.h"

#include <ethosu.hpp>

#include <exception>
#include <memory>
#include <vector>

#include "ethosu_rt/check.h"
#include "ethosu_rt/cop.h"

namespace ethosu_rt {
namespace {

// The library's destructors may throw (noexcept(false): closing an fd can fail). Where this
// file owns the object, it is deleted here so that nothing escapes a destructor. Buffers
// come from createBuffers() with the library's own deleter.
struct SafeDelete {
  template <typename T>
  void operator()(T* p) const noexcept {
    try {
      delete p;
    } catch (...) {
    }
  }
};

}  // namespace

struct DriverStackNpu::State {
  char device[96] = {};
  std::unique_ptr<EthosU::Device, SafeDelete> dev;
  std::shared_ptr<EthosU::Network> network;
  std::shared_ptr<EthosU::Buffer> constant;      // region 0; null when there are no weights
  std::shared_ptr<EthosU::Buffer> intermediate;  // region 1; null when scratch is 0 bytes
  std::vector<std::shared_ptr<EthosU::Buffer>> ifm;  // one buffer: all of region 3
  std::vector<std::shared_ptr<EthosU::Buffer>> ofm;  // one buffer: all of region 4
  std::vector<uint8_t> inputs;   // CPU staging of region 3
  std::vector<uint8_t> outputs;  // CPU staging of region 4
  Regions regions = {};
  PmuConfig pmu = {};
  PmuCounts counts = {};
  bool prepared = false;

  void release() {
    // Buffers and the network before the device they were made on.
    ifm.clear();
    ofm.clear();
    constant.reset();
    intermediate.reset();
    network.reset();
    inputs.clear();
    outputs.clear();
    regions = Regions{};
    counts = PmuCounts{};
    prepared = false;
  }
};

namespace {

const char* status_name(EthosU::InferenceStatus status) {
  switch (status) {
    case EthosU::InferenceStatus::OK:
      return "OK";
    case EthosU::InferenceStatus::ERROR:
      return "ERROR (the NPU reported an error; the kernel reset it)";
    case EthosU::InferenceStatus::RUNNING:
      return "RUNNING (not finished although the wait returned)";
    case EthosU::InferenceStatus::REJECTED:
      return "REJECTED (the kernel refused the inference)";
    case EthosU::InferenceStatus::ABORTED:
      return "ABORTED (the inference was cancelled or the NPU reset)";
    case EthosU::InferenceStatus::ABORTING:
      return "ABORTING (the inference is being cancelled)";
    case EthosU::InferenceStatus::PENDING:
      return "PENDING (queued, never started)";
  }
  return nullptr;
}

}  // namespace

// Runs `call` (a library call, which throws on a failed system call) inside the seam: an
// exception becomes `err` and one line
// "<device>: <name> must be done without an exception; got '<exception>'".
#define ETHOSU_RT_DRIVER_CALL(err, name, call)                                        \
  do {                                                                                \
    const char* ethosu_rt_thrown_ = nullptr;                                          \
    char ethosu_rt_text_[160];                                                        \
    try {                                                                             \
      call;                                                                           \
    } catch (const std::exception& e) {                                               \
      TextBuffer(ethosu_rt_text_, sizeof(ethosu_rt_text_))                            \
          .add("'")                                                                   \
          .add_printable(e.what(), sizeof(ethosu_rt_text_) - 3)                       \
          .add("'");                                                                  \
      ethosu_rt_thrown_ = ethosu_rt_text_;                                            \
    } catch (...) {                                                                   \
      ethosu_rt_thrown_ = "an exception that is not a std::exception";               \
    }                                                                                 \
    if (ethosu_rt_thrown_ != nullptr) {                                               \
      ETHOSU_RT_FAIL_TEXT((err), state_->device, name, "done without an exception",           \
                          ethosu_rt_thrown_);                                           \
    }                                                                                 \
  } while (0)

DriverStackNpu::DriverStackNpu() : state_(new State()) {}

DriverStackNpu::~DriverStackNpu() { close(); }

const Regions& DriverStackNpu::regions() const { return state_->regions; }

const PmuCounts& DriverStackNpu::pmu_counts() const { return state_->counts; }

Error DriverStackNpu::open(const char* device) {
  close();
  ETHOSU_RT_CHECK_TRUE(device != nullptr, Error::kBadArgument, "DriverStackNpu",
                       "device path must not be null");
  TextBuffer(state_->device, sizeof(state_->device)).add(device);
  ETHOSU_RT_DRIVER_CALL(Error::kNoDevice, "EthosU::Device (open of the NPU device node)",
                        state_->dev.reset(new EthosU::Device(device)));
  return Error::kOk;
}

Error DriverStackNpu::set_pmu(const PmuConfig& pmu) {
  uint32_t counters = 0;
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "EthosU::Inference::getMaxPmuEventCounters",
                        counters = EthosU::Inference::getMaxPmuEventCounters());
  const size_t most = counters < kMaxPmuEvents ? counters : kMaxPmuEvents;
  ETHOSU_RT_CHECK(pmu.num_events, <=, most, Error::kBadArgument, "pmu",
                  "events (the PMU event counters the driver has)");
  state_->pmu = pmu;
  return Error::kOk;
}

Error DriverStackNpu::prepare(const Model& model) {
  State& s = *state_;
  ETHOSU_RT_CHECK_TRUE(s.dev != nullptr, Error::kBadState, "DriverStackNpu",
                       "open() must succeed before prepare()");
  s.release();
  // Direct mode parses COP2 only and passes inputs and outputs as buffers of their own.
  CopFormat format;
  ETHOSU_RT_TRY(cop_format(model.cmd_data.data, model.cmd_data.size, &format));
  ETHOSU_RT_CHECK_ONE_OF(format == CopFormat::kCop2, static_cast<uint32_t>(format),
                         Error::kUnsupported, "cmd_data",
                         "driver payload format (COP1 = 1, COP2 = 2) for the driver stack",
                         "2 (COP2: compile with --cop-format COP2 --separate-io-regions)");
  ETHOSU_RT_TRY(cop_validate(model.cmd_data.data, model.cmd_data.size));
  char where[32];
  TensorInfo info;
  for (size_t i = 0; i < model.num_inputs + model.num_outputs; ++i) {
    const bool output = i >= model.num_inputs;
    const size_t index = output ? i - model.num_inputs : i;
    ETHOSU_RT_TRY(output ? get_output(model, index, &info) : get_input(model, index, &info));
    const uint32_t region = output ? kRegionOutputs : kRegionInputs;
    if (info.region != region) {
      TextBuffer(where, sizeof(where)).add(output ? "output " : "input ").add_u64(index);
      ETHOSU_RT_CHECK_ONE_OF(false, info.region, Error::kUnsupported, where, "region",
                             output ? "4 (compile with --separate-io-regions)"
                                    : "3 (compile with --separate-io-regions)");
    }
  }
  const size_t in_bytes = region_bytes(model, kRegionInputs);
  const size_t out_bytes = region_bytes(model, kRegionOutputs);
  // The kernel rejects zero-sized buffers; a model always has an output, inputs may be 0.
  ETHOSU_RT_CHECK(out_bytes, >, size_t{0}, Error::kBadValue, "outputs", "bytes of region 4");

  EthosU::Device& dev = *s.dev;
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "EthosU::Network (NETWORK_CREATE of the COP2 payload)",
                        s.network.reset(new EthosU::Network(dev, model.cmd_data.data,
                                                            model.cmd_data.size),
                                        SafeDelete()));
  if (model.weights.size > 0) {
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "createBuffers (weights)",
                          s.constant = dev.createBuffers({model.weights.size}).at(0);
                          s.constant->write(model.weights.data, model.weights.size));
  }
  if (model.scratch_size > 0) {
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "createBuffers (scratch)",
                          s.intermediate = dev.createBuffers({model.scratch_size}).at(0));
  }
  if (in_bytes > 0) {
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "createBuffers (inputs)",
                          s.ifm = dev.createBuffers({in_bytes}));
  }
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "createBuffers (outputs)",
                        s.ofm = dev.createBuffers({out_bytes}));
  // The outputs are read back whole: a buffer smaller than region 4 would be read past.
  ETHOSU_RT_CHECK(s.ofm.size() == 1 && s.ofm[0] ? s.ofm[0]->size() : 0, >=, out_bytes,
                  Error::kDevice, s.device, "bytes of the output buffer the driver created");
  s.inputs.assign(in_bytes, 0);
  s.outputs.assign(out_bytes, 0);
  s.regions.region[kRegionInputs] = Region{s.inputs.data(), in_bytes};
  s.regions.region[kRegionOutputs] = Region{s.outputs.data(), out_bytes};
  s.prepared = true;
  return Error::kOk;
}

Error DriverStackNpu::invoke(int64_t timeout_ns) {
  State& s = *state_;
  ETHOSU_RT_CHECK_TRUE(s.prepared, Error::kBadState, "DriverStackNpu",
                       "prepare() must succeed before invoke()");
  ETHOSU_RT_CHECK(timeout_ns, >, int64_t{0}, Error::kBadArgument, "DriverStackNpu", "timeout_ns");
  s.counts = PmuCounts{};
  if (!s.ifm.empty()) {
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Buffer::write (inputs)",
                          s.ifm[0]->write(s.inputs.data(), s.inputs.size()));
  }
  const std::vector<uint32_t> events(s.pmu.events, s.pmu.events + s.pmu.num_events);
  std::unique_ptr<EthosU::Inference, SafeDelete> inference;
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "EthosU::Inference (INFERENCE_CREATE)",
                        inference.reset(new EthosU::Inference(
                            s.network, s.ifm.begin(), s.ifm.end(), s.ofm.begin(), s.ofm.end(),
                            s.intermediate, s.constant, events, s.pmu.cycle_counter)));
  bool timed_out = false;
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Inference::wait", timed_out = inference->wait(timeout_ns));
  if (timed_out) {
    char got[64];
    TextBuffer(got, sizeof(got))
        .add("still running after ")
        .add_u64(static_cast<uint64_t>(timeout_ns / 1000000))
        .add(" ms");
    // Destroying the inference closes its fd: the kernel resets the NPU and aborts it.
    inference.reset();
    ETHOSU_RT_FAIL_TEXT(Error::kTimeout, s.device, "inference", "done within the timeout", got);
  }
  EthosU::InferenceStatus status = EthosU::InferenceStatus::ERROR;
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Inference::status", status = inference->status());
  if (status != EthosU::InferenceStatus::OK) {
    const char* name = status_name(status);
    if (name == nullptr) {  // a status a newer kernel added
      ETHOSU_RT_CHECK_ONE_OF(false, static_cast<uint32_t>(status), Error::kDevice, s.device,
                             "inference status", "OK (0)");
    }
    ETHOSU_RT_FAIL_TEXT(Error::kDevice, s.device, "inference status", "OK", name);
  }
  ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Buffer::read (outputs)",
                        s.ofm[0]->read(s.outputs.data(), s.outputs.size()));
  if (s.pmu.cycle_counter) {
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Inference::getCycleCounter",
                          s.counts.cycles = inference->getCycleCounter());
    s.counts.has_cycles = true;
  }
  if (s.pmu.num_events > 0) {
    std::vector<uint32_t> counters;
    ETHOSU_RT_DRIVER_CALL(Error::kDevice, "Inference::getPmuCounters",
                          counters = inference->getPmuCounters());
    ETHOSU_RT_CHECK(counters.size(), >=, s.pmu.num_events, Error::kDevice, s.device,
                    "PMU event counts the driver returned (the events asked for)");
    for (size_t i = 0; i < s.pmu.num_events; ++i) {
      s.counts.events[i] = counters[i];
    }
    s.counts.num_events = s.pmu.num_events;
  }
  return Error::kOk;
}

void DriverStackNpu::close() {
  state_->release();
  state_->dev.reset();
}

}  // namespace ethosu_rt
