// Control of the TEST DOUBLE of Arm's Ethos-U Linux driver library (driver_library/src/
// ethosu.cpp in this folder). No Ethos-U hardware exists here, so the double stands in for
// the library and the direct-mode kernel driver behind it, and enforces the contract the
// reference describes (ethos-u-interfaces.md sections 4.1 and 4.3):
//   * call order: Device, then Network / createBuffers on it, Inference on the network,
//     wait before status and before an output is read, everything freed before the Device;
//   * BUFFERS_CREATE: 1..16 sizes, none 0; each buffer 16-byte aligned in its batch;
//   * Buffer::write/read within the buffer; inputs written before INFERENCE_CREATE;
//   * INFERENCE_CREATE: 0..16 IFMs, 1..16 OFMs (EFAULT otherwise), each list from one batch
//     in offset order, constant/intermediate a real buffer or a null pointer (never a
//     default-constructed Buffer), buffers at least as large as each region's extent;
//   * NETWORK_CREATE: a non-empty COP2 payload of whole words whose header length matches
//     its size.
// A breach is recorded in violations() and answered as the library would (an exception).
// Failures the kernel may return on a correct call are injected with fail_next().
#ifndef ETHOSU_RT_TESTS_FAKE_DRIVER_STACK_H_
#define ETHOSU_RT_TESTS_FAKE_DRIVER_STACK_H_

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <string>
#include <vector>

#include "ethosu.hpp"

namespace fake_driver_stack {

struct Options {
  std::string path = "/dev/ethosu0";
  uint32_t pmu_counters = 8;  // Inference::getMaxPmuEventCounters()
};

// The NPU's view of one inference's buffers (null/0 when not given).
struct NpuBuffers {
  const uint8_t* constant;
  size_t constant_size;
  uint8_t* intermediate;
  size_t intermediate_size;
  const uint8_t* ifm;  // ifm[0]: region 3
  size_t ifm_size;
  uint8_t* ofm;  // ofm[0]: region 4
  size_t ofm_size;
};
using Npu = std::function<void(const NpuBuffers& buffers)>;

// What the last INFERENCE_CREATE was given.
struct LastInference {
  size_t ifm_count;
  size_t ofm_count;
  bool constant;      // a buffer was given
  bool intermediate;  // a buffer was given
  std::vector<uint32_t> events;
  bool cycle_counter;
};

// Forgets every object and setting (objects still alive become violations when used).
void reset(const Options& options = Options());
void set_npu(Npu npu);
void set_wait_times_out(bool times_out);
void set_status(EthosU::InferenceStatus status);
void set_status_value(int value);  // a status number outside the enum
void set_cycles(uint64_t cycles);
void set_event_count(uint32_t event, uint32_t count);
// Region 0, 1, 3 or 4: the bytes the command stream addresses there.
void set_region_extent(int region, size_t bytes);
// The next call named `call` ("Device", "Network", "createBuffers", "write", "read",
// "Inference", "wait", "status", "getCycleCounter", "getPmuCounters") throws
// EthosU::Exception(message), as a failed system call does (not a violation).
void fail_next(const std::string& call, const std::string& message);

const std::string& violations();  // one line per breach; empty when the caller behaved
const std::string& calls();       // the calls made, in order, separated by spaces
const LastInference& last_inference();
int inferences();
size_t live_objects();  // devices, networks, buffers and inferences not destroyed
std::vector<size_t> batch_sizes();  // the sizes of every createBuffers() call, flattened

}  // namespace fake_driver_stack

#endif  // ETHOSU_RT_TESTS_FAKE_DRIVER_STACK_H_
