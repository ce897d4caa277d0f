// The interface of Arm's Ethos-U Linux driver library (ethos-u-linux-driver-stack,
// driver_library/include/ethosu.hpp, tag 26.05) as far as runtime/cortex_a/npu_driver_stack.cc
// uses it, written for this project from the documented API shape (the calls ExecuTorch's
// Cortex-A backend makes, /work/shared/reference/ethos-u-interfaces.md section 4.1). The
// signatures are inferred, not copied: building the backend against a real checkout
// (-DETHOSU_RT_DRIVER_STACK_DIR) is what proves them.
//
// This folder is a TEST DOUBLE of a driver-stack checkout: src/ethosu.cpp implements these
// classes over a fake device (no Ethos-U hardware here) that enforces the kernel's contract.
//
// Every call reaching the kernel throws EthosU::Exception when the system call fails.
#ifndef ETHOSU_FAKE_DRIVER_STACK_ETHOSU_HPP_
#define ETHOSU_FAKE_DRIVER_STACK_ETHOSU_HPP_

#include <stddef.h>
#include <stdint.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace EthosU {

class Exception : public std::exception {
 public:
  explicit Exception(const char* msg);
  ~Exception() throw() override;
  const char* what() const throw() override;

 private:
  std::string msg;
};

// INFERENCE_STATUS; PENDING is new in the direct-mode kernel (queued, not started).
enum class InferenceStatus { OK, ERROR, RUNNING, REJECTED, ABORTED, ABORTING, PENDING };

class Buffer;

// The device node, opened O_RDWR | O_NONBLOCK; the constructor checks the kernel driver's
// version (DRIVER_VERSION_GET) and throws when it is unsupported.
class Device {
 public:
  Device(const char* device = "/dev/ethosu0");
  virtual ~Device() noexcept(false);

  // BUFFERS_CREATE: one DMA allocation, buffer i at the sum of the 16-byte rounded sizes
  // before it. The kernel rejects zero sizes, no sizes and more than 16.
  std::vector<std::shared_ptr<Buffer>> createBuffers(const std::vector<size_t>& sizes) const;
  int getFd() const;

 private:
  int fd;
};

// A DMA buffer. Not mmap-able in direct mode: data moves with write()/read() from its start.
class Buffer {
 public:
  Buffer();  // no buffer (fd -1)
  Buffer(const Device& device, int fd, size_t size);
  virtual ~Buffer() noexcept(false);

  size_t size() const;
  void write(const void* src, size_t size) const;
  void read(void* dst, size_t size) const;
  int getFd() const;

 private:
  int fd;
  size_t bufferSize;
};

// NETWORK_CREATE with a user buffer: the kernel copies `data` (the COP2 payload) and parses
// it; in direct mode there is no NETWORK_INFO.
class Network {
 public:
  Network(const Device& device, const unsigned char* data, size_t size);
  virtual ~Network() noexcept(false);

  const Device& getDevice() const;
  int getFd() const;

 private:
  const Device& device;
  int fd;
};

// INFERENCE_CREATE on the network: IFM/OFM buffers, the intermediate (scratch) and constant
// (weights) buffers (a null pointer: none), PMU event numbers and the cycle counter.
class Inference {
 public:
  template <typename T, typename U>
  Inference(const std::shared_ptr<Network>& network, const T& ifmBegin, const T& ifmEnd,
            const T& ofmBegin, const T& ofmEnd, const std::shared_ptr<Buffer>& intermediate,
            const std::shared_ptr<Buffer>& constant, const U& counters,
            bool enableCycleCounter)
      : network(network), intermediateBuffer(intermediate), constantBuffer(constant) {
    std::copy(ifmBegin, ifmEnd, std::back_inserter(ifmBuffers));
    std::copy(ofmBegin, ofmEnd, std::back_inserter(ofmBuffers));
    std::vector<uint32_t> counterConfigs(getMaxPmuEventCounters(), 0);
    if (counters.size() > counterConfigs.size()) {
      throw Exception("PMU counters argument too large");
    }
    std::copy(counters.begin(), counters.end(), counterConfigs.begin());
    create(counterConfigs, enableCycleCounter);
  }
  virtual ~Inference() noexcept(false);

  // ppoll for completion: true when `timeoutNanos` passed first (negative: wait forever).
  bool wait(int64_t timeoutNanos = -1) const;
  InferenceStatus status() const;
  const std::vector<uint32_t> getPmuCounters() const;
  uint64_t getCycleCounter() const;
  int getFd() const;

  static uint32_t getMaxPmuEventCounters();

 private:
  void create(std::vector<uint32_t>& counterConfigs, bool enableCycleCounter);

  int fd = -1;
  const std::shared_ptr<Network> network;
  std::vector<std::shared_ptr<Buffer>> ifmBuffers;
  std::vector<std::shared_ptr<Buffer>> ofmBuffers;
  std::shared_ptr<Buffer> intermediateBuffer;
  std::shared_ptr<Buffer> constantBuffer;
};

}  // namespace EthosU

#endif  // ETHOSU_FAKE_DRIVER_STACK_ETHOSU_HPP_
