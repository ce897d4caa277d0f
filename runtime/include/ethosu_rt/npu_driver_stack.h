// Cortex-A backend: Linux "direct drive" through Arm's Ethos-U Linux driver stack: its
// user-space library (EthosU::Device / Buffer / Network / Inference) over the `ethosu`
// kernel driver in direct mode (/dev/ethosu0). Built with -DETHOSU_RT_LINUX_DRIVER=
// ethosu-driver-stack (cmake/EthosuDriverStack.cmake).
//
// open() opens the device. prepare() checks the artifact is what direct mode takes (a COP2
// payload, inputs in region 3 and outputs in region 4: Vela's --separate-io-regions
// --cop-format COP2), creates the network from the COP2 payload and one buffer per region:
// weights (written once), scratch (none when 0 bytes: a null handle, never a zero-sized or
// default-constructed buffer), one input buffer spanning region 3 and one output buffer
// spanning region 4. Inputs and outputs are staged in CPU memory (regions(): the driver's
// buffers cannot be mapped), so common/'s copy_input/copy_output place every tensor at
// Vela's offset. invoke() writes the inputs, runs one inference, waits with a timeout,
// maps its status to an Error, reads the outputs and the PMU counters asked for.
//
// The library throws on a failed system call: every call is made inside this file's seam,
// which turns an exception into an Error and one log line, so none crosses this API.
#ifndef ETHOSU_RT_NPU_DRIVER_STACK_H_
#define ETHOSU_RT_NPU_DRIVER_STACK_H_

#include <stddef.h>
#include <stdint.h>

#include <memory>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"
#include "ethosu_rt/io.h"

namespace ethosu_rt {

constexpr const char* kDriverStackDevice = "/dev/ethosu0";
constexpr int64_t kDriverStackTimeoutNs = 60ll * 1000 * 1000 * 1000;  // ExecuTorch's default
constexpr size_t kMaxPmuEvents = 8;  // the Ethos-U85 has 8 event counters

// What the PMU counts during invoke(): up to the driver's counter count of event numbers
// (Ethos-U PMU event ids) and the cycle counter.
struct PmuConfig {
  uint32_t events[kMaxPmuEvents];
  size_t num_events;
  bool cycle_counter;
};

// What the driver reported for the last invoke(): only what PmuConfig asked for.
struct PmuCounts {
  bool has_cycles;
  uint64_t cycles;
  size_t num_events;
  uint32_t events[kMaxPmuEvents];  // counts, in PmuConfig order
};

class DriverStackNpu {
 public:
  DriverStackNpu();
  ~DriverStackNpu();
  DriverStackNpu(const DriverStackNpu&) = delete;
  DriverStackNpu& operator=(const DriverStackNpu&) = delete;

  Error open(const char* device = kDriverStackDevice);

  // Needs open(). The Model is copied; the artifact buffer must outlive prepare().
  Error prepare(const Model& model);
  const Regions& regions() const;

  // Checked against the driver's counter count; kept for every later invoke().
  Error set_pmu(const PmuConfig& pmu);
  const PmuCounts& pmu_counts() const;

  // One inference: inputs out of regions(), outputs back into them.
  Error invoke(int64_t timeout_ns = kDriverStackTimeoutNs);

  // Frees the buffers and network and closes the device; safe to call twice.
  void close();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_NPU_DRIVER_STACK_H_
