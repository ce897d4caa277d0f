// TEST DOUBLE of the Ethos-U Linux driver library: the classes of ../include/ethosu.hpp over
// a fake direct-mode kernel driver held in memory. See ../../fake_driver_stack.h for the
// contract it enforces. Not thread-safe; one fake device per process.
#include "ethosu.hpp"

#include <stdlib.h>
#include <string.h>

#include <map>
#include <string>
#include <vector>

#include "../../fake_driver_stack.h"
#include "uapi/ethosu.h"

namespace {

constexpr size_t kAlign = 16;
constexpr uint32_t kCop2Magic = 0x32504F43u;  // "COP2"

struct FakeBuffer {
  std::vector<uint8_t> data;
  int batch;
  size_t offset;  // in its batch (16-byte aligned)
  bool written;
  bool owned_by_ofm_of_running;  // an OFM of an inference not yet waited for
};

struct FakeInference {
  int status;
  bool waited;
  std::vector<uint32_t> events;
  bool cycle_counter;
  std::vector<int> ofm_fds;
};

struct World {
  fake_driver_stack::Options options;
  fake_driver_stack::Npu npu;
  bool wait_times_out = false;
  int status = static_cast<int>(EthosU::InferenceStatus::OK);
  uint64_t cycles = 0;
  std::map<uint32_t, uint32_t> event_counts;
  std::map<int, size_t> extent;
  std::map<std::string, std::string> failures;
  std::string violations;
  std::string calls;
  fake_driver_stack::LastInference last = {};
  int inferences = 0;
  int next_fd = 3;
  int next_batch = 1;
  int devices = 0;
  int networks = 0;
  std::map<int, FakeBuffer> buffers;
  std::map<int, FakeInference> running;
  std::vector<size_t> batch_sizes;
};

// A process that links the double as its driver library (the runner built against this
// folder, driven by tests/runtime/test_driver_stack_runtime.py) is set up through the
// environment: FAKE_ETHOSU_CYCLES=<n>, FAKE_ETHOSU_STATUS=<status number>,
// FAKE_ETHOSU_TIMEOUT=1, FAKE_ETHOSU_DEVICE=<node>. Unit tests call fake_driver_stack::reset().
World initial_world() {
  World w;
  if (const char* cycles = getenv("FAKE_ETHOSU_CYCLES")) {
    w.cycles = strtoull(cycles, nullptr, 10);
  }
  if (const char* status = getenv("FAKE_ETHOSU_STATUS")) {
    w.status = atoi(status);
  }
  if (const char* timeout = getenv("FAKE_ETHOSU_TIMEOUT")) {
    w.wait_times_out = atoi(timeout) != 0;
  }
  if (const char* device = getenv("FAKE_ETHOSU_DEVICE")) {
    w.options.path = device;
  }
  // Without a test's NPU, the fake NPU copies the input region to the output region.
  w.npu = [](const fake_driver_stack::NpuBuffers& b) {
    if (b.ifm != nullptr) {
      memcpy(b.ofm, b.ifm, b.ofm_size < b.ifm_size ? b.ofm_size : b.ifm_size);
    }
  };
  return w;
}

World& world() {
  static World w = initial_world();
  return w;
}

void violation(const std::string& what) { world().violations += what + "\n"; }

[[noreturn]] void fail(const std::string& what) { throw EthosU::Exception(what.c_str()); }

// Records the call; throws when a failure was injected for it.
void enter(const std::string& call) {
  World& w = world();
  w.calls += (w.calls.empty() ? "" : " ") + call;
  auto it = w.failures.find(call);
  if (it != w.failures.end()) {
    const std::string message = it->second;
    w.failures.erase(it);
    fail(message);
  }
}

// The violation is recorded and the call fails as the kernel fails it.
[[noreturn]] void reject(const std::string& what, const char* error) {
  violation(what);
  fail(what + ": " + error);
}

FakeBuffer* buffer(int fd) {
  auto it = world().buffers.find(fd);
  return it == world().buffers.end() ? nullptr : &it->second;
}

void check_list(const char* name, const std::vector<std::shared_ptr<EthosU::Buffer>>& list) {
  int batch = 0;
  size_t offset = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const FakeBuffer* b = list[i] ? buffer(list[i]->getFd()) : nullptr;
    if (b == nullptr) {
      reject(std::string(name) + "[" + std::to_string(i) + "] must be a live buffer", "EINVAL");
    }
    if (i > 0 && (b->batch != batch || b->offset < offset)) {
      reject(std::string(name) + " buffers must come from one createBuffers() call in offset "
             "order", "EINVAL");
    }
    batch = b->batch;
    offset = b->offset;
  }
}

const FakeBuffer* optional_buffer(const char* name, const std::shared_ptr<EthosU::Buffer>& p) {
  if (!p) {
    return nullptr;
  }
  if (p->getFd() < 0) {
    reject(std::string(name) + " must be a buffer or a null pointer; got a default-constructed "
           "Buffer (no fd)", "EINVAL");
  }
  const FakeBuffer* b = buffer(p->getFd());
  if (b == nullptr) {
    reject(std::string(name) + " must be a live buffer", "EINVAL");
  }
  return b;
}

void check_extent(int region, const char* name, size_t size) {
  auto it = world().extent.find(region);
  if (it != world().extent.end() && size < it->second) {
    violation(std::string(name) + " (region " + std::to_string(region) + ") must hold " +
              std::to_string(it->second) + " bytes the command stream addresses; got " +
              std::to_string(size));
  }
}

}  // namespace

namespace fake_driver_stack {

void reset(const Options& options) {
  world() = initial_world();
  world().options = options;
}
void set_npu(Npu npu) { world().npu = std::move(npu); }
void set_wait_times_out(bool times_out) { world().wait_times_out = times_out; }
void set_status(EthosU::InferenceStatus status) { world().status = static_cast<int>(status); }
void set_status_value(int value) { world().status = value; }
void set_cycles(uint64_t cycles) { world().cycles = cycles; }
void set_event_count(uint32_t event, uint32_t count) { world().event_counts[event] = count; }
void set_region_extent(int region, size_t bytes) { world().extent[region] = bytes; }
void fail_next(const std::string& call, const std::string& message) {
  world().failures[call] = message;
}
const std::string& violations() { return world().violations; }
const std::string& calls() { return world().calls; }
const LastInference& last_inference() { return world().last; }
int inferences() { return world().inferences; }
size_t live_objects() {
  const World& w = world();
  return static_cast<size_t>(w.devices + w.networks) + w.buffers.size() + w.running.size();
}
std::vector<size_t> batch_sizes() { return world().batch_sizes; }

}  // namespace fake_driver_stack

namespace EthosU {

Exception::Exception(const char* text) : msg(text) {}
Exception::~Exception() throw() {}
const char* Exception::what() const throw() { return msg.c_str(); }

Device::Device(const char* device) : fd(-1) {
  enter("Device");
  if (device == nullptr || world().options.path != device) {
    fail(std::string("Failed to open device ") + (device ? device : "(null)") +
         ": No such file or directory");
  }
  fd = world().next_fd++;
  ++world().devices;
}

Device::~Device() noexcept(false) {
  World& w = world();
  if (w.networks + w.buffers.size() + w.running.size() > 0) {
    violation("Device destroyed before its networks, buffers and inferences");
  }
  --w.devices;
}

int Device::getFd() const { return fd; }

std::vector<std::shared_ptr<Buffer>> Device::createBuffers(const std::vector<size_t>& sizes) const {
  enter("createBuffers");
  World& w = world();
  if (sizes.empty() || sizes.size() > ETHOSU_FD_MAX) {
    reject("BUFFERS_CREATE must get 1 to 16 sizes; got " + std::to_string(sizes.size()),
           "EINVAL");
  }
  for (size_t size : sizes) {
    if (size == 0) {
      reject("BUFFERS_CREATE sizes must not be 0", "EINVAL");
    }
  }
  const int batch = w.next_batch++;
  size_t offset = 0;
  std::vector<std::shared_ptr<Buffer>> out;
  for (size_t size : sizes) {
    const int buffer_fd = w.next_fd++;
    w.buffers[buffer_fd] = FakeBuffer{std::vector<uint8_t>(size, 0), batch, offset, false, false};
    offset += (size + kAlign - 1) / kAlign * kAlign;
    w.batch_sizes.push_back(size);
    out.push_back(std::make_shared<Buffer>(*this, buffer_fd, size));
  }
  return out;
}

Buffer::Buffer() : fd(-1), bufferSize(0) {}

Buffer::Buffer(const Device& /*device*/, int buffer_fd, size_t size)
    : fd(buffer_fd), bufferSize(size) {}

Buffer::~Buffer() noexcept(false) {
  if (fd >= 0) {
    world().buffers.erase(fd);
  }
}

size_t Buffer::size() const { return bufferSize; }
int Buffer::getFd() const { return fd; }

void Buffer::write(const void* src, size_t size) const {
  enter("write");
  FakeBuffer* b = buffer(fd);
  if (b == nullptr) {
    reject("Buffer::write on a buffer with no fd", "EBADF");
  }
  if (size > b->data.size()) {
    violation("Buffer::write of " + std::to_string(size) + " bytes must fit the buffer of " +
              std::to_string(b->data.size()));
    size = b->data.size();  // the kernel clamps
  }
  memcpy(b->data.data(), src, size);
  b->written = true;
}

void Buffer::read(void* dst, size_t size) const {
  enter("read");
  FakeBuffer* b = buffer(fd);
  if (b == nullptr) {
    reject("Buffer::read on a buffer with no fd", "EBADF");
  }
  if (b->owned_by_ofm_of_running) {
    violation("an output buffer must not be read before Inference::wait() says it finished");
  }
  if (size > b->data.size()) {
    violation("Buffer::read of " + std::to_string(size) + " bytes must fit the buffer of " +
              std::to_string(b->data.size()));
    size = b->data.size();
  }
  memcpy(dst, b->data.data(), size);
}

Network::Network(const Device& dev, const unsigned char* data, size_t size)
    : device(dev), fd(-1) {
  enter("Network");
  if (data == nullptr || size == 0) {
    reject("NETWORK_CREATE must get a non-empty user buffer", "EINVAL");
  }
  uint32_t magic = 0;
  uint64_t length = 0;
  if (size >= 16) {
    memcpy(&magic, data, 4);
    memcpy(&length, data + 8, 8);
  }
  if (size % 4 != 0) {
    reject("NETWORK_CREATE payload must be whole 32-bit words; got " + std::to_string(size) +
               " bytes",
           "EINVAL");
  }
  if (magic != kCop2Magic) {
    reject("NETWORK_CREATE payload must be COP2 in direct mode", "EINVAL");
  }
  if (length != size - 16) {
    reject("NETWORK_CREATE COP2 length must be " + std::to_string(size - 16) + "; got " +
               std::to_string(length),
           "EINVAL");
  }
  fd = world().next_fd++;
  ++world().networks;
}

Network::~Network() noexcept(false) { --world().networks; }
const Device& Network::getDevice() const { return device; }
int Network::getFd() const { return fd; }

uint32_t Inference::getMaxPmuEventCounters() { return world().options.pmu_counters; }

void Inference::create(std::vector<uint32_t>& counterConfigs, bool enableCycleCounter) {
  enter("Inference");
  World& w = world();
  if (!network) {
    reject("INFERENCE_CREATE needs a network", "EINVAL");
  }
  if (ifmBuffers.size() > ETHOSU_FD_MAX || ofmBuffers.empty() ||
      ofmBuffers.size() > ETHOSU_FD_MAX) {
    reject("INFERENCE_CREATE must get 0..16 IFMs and 1..16 OFMs; got " +
               std::to_string(ifmBuffers.size()) + " and " + std::to_string(ofmBuffers.size()),
           "EFAULT");
  }
  check_list("ifm", ifmBuffers);
  check_list("ofm", ofmBuffers);
  const FakeBuffer* constant = optional_buffer("constant", constantBuffer);
  FakeBuffer* intermediate = const_cast<FakeBuffer*>(optional_buffer("intermediate",
                                                                     intermediateBuffer));
  FakeBuffer* ifm = ifmBuffers.empty() ? nullptr : buffer(ifmBuffers[0]->getFd());
  FakeBuffer* ofm = buffer(ofmBuffers[0]->getFd());
  if (ifm != nullptr && !ifm->written) {
    violation("the input buffer must be written before INFERENCE_CREATE");
  }
  check_extent(0, "constant", constant ? constant->data.size() : 0);
  check_extent(1, "intermediate", intermediate ? intermediate->data.size() : 0);
  check_extent(3, "ifm[0]", ifm ? ifm->data.size() : 0);
  check_extent(4, "ofm[0]", ofm->data.size());
  w.last = fake_driver_stack::LastInference{ifmBuffers.size(), ofmBuffers.size(),
                                            constant != nullptr, intermediate != nullptr,
                                            counterConfigs, enableCycleCounter};
  ++w.inferences;
  fd = w.next_fd++;
  FakeInference inference{w.status, false, counterConfigs, enableCycleCounter, {}};
  for (const auto& b : ofmBuffers) {
    inference.ofm_fds.push_back(b->getFd());
    buffer(b->getFd())->owned_by_ofm_of_running = true;
  }
  w.running[fd] = inference;
  if (ifm != nullptr) {
    ifm->written = false;  // the next inference needs its input written again
  }
  if (w.npu && !w.wait_times_out) {
    w.npu(fake_driver_stack::NpuBuffers{
        constant ? constant->data.data() : nullptr, constant ? constant->data.size() : 0,
        intermediate ? intermediate->data.data() : nullptr,
        intermediate ? intermediate->data.size() : 0, ifm ? ifm->data.data() : nullptr,
        ifm ? ifm->data.size() : 0, ofm->data.data(), ofm->data.size()});
  }
}

Inference::~Inference() noexcept(false) {
  World& w = world();
  auto it = w.running.find(fd);
  if (it != w.running.end()) {
    for (int ofm : it->second.ofm_fds) {
      if (FakeBuffer* b = buffer(ofm)) {
        b->owned_by_ofm_of_running = false;
      }
    }
    w.running.erase(it);
  }
}

bool Inference::wait(int64_t /*timeoutNanos*/) const {
  enter("wait");
  FakeInference& inference = world().running.at(fd);
  if (world().wait_times_out) {
    return true;
  }
  inference.waited = true;
  for (int ofm : inference.ofm_fds) {
    buffer(ofm)->owned_by_ofm_of_running = false;
  }
  return false;
}

InferenceStatus Inference::status() const {
  enter("status");
  const FakeInference& inference = world().running.at(fd);
  if (!inference.waited) {
    violation("Inference::status() must follow a wait() that did not time out");
  }
  return static_cast<InferenceStatus>(inference.status);
}

const std::vector<uint32_t> Inference::getPmuCounters() const {
  enter("getPmuCounters");
  const FakeInference& inference = world().running.at(fd);
  std::vector<uint32_t> counts;
  for (uint32_t event : inference.events) {
    auto it = world().event_counts.find(event);
    counts.push_back(event != 0 && it != world().event_counts.end() ? it->second : 0);
  }
  return counts;
}

uint64_t Inference::getCycleCounter() const {
  enter("getCycleCounter");
  if (!world().running.at(fd).cycle_counter) {
    violation("Inference::getCycleCounter() without the cycle counter enabled");
  }
  return world().cycles;
}

int Inference::getFd() const { return fd; }

}  // namespace EthosU
