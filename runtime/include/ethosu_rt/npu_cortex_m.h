// Cortex-M backend: drives the NPU through Arm's Ethos-U core driver on bare metal.
//
// The application owns the driver (ethosu_init with the NPU base address and, if any,
// its fast SRAM; the NPU interrupt wired to ethosu_irq_handler) and all memory: the
// scratch arena, the separate IO regions and the fast scratch. prepare() checks that
// memory against the model; invoke() reserves a driver, runs the COP1 payload with the
// region base pointers and releases the driver on every path.
#ifndef ETHOSU_RT_NPU_CORTEX_M_H_
#define ETHOSU_RT_NPU_CORTEX_M_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"
#include "ethosu_rt/io.h"

namespace ethosu_rt {

// D-cache maintenance for the driver's flush/invalidate hooks. Without ops (the default)
// the hooks only order memory; install ops when the data cache is on (e.g. with the
// CMSIS SCB_CleanDCache_by_Addr / SCB_InvalidateDCache_by_Addr functions).
struct CacheOps {
  void (*clean)(const void* address, size_t size);       // nullptr address: whole cache
  void (*invalidate)(const void* address, size_t size);  // nullptr address: whole cache
};
constexpr size_t kCacheLineBytes = 32;

// Installs `ops` (nullptr removes them). The ops object must outlive all invokes.
void set_cache_ops(const CacheOps* ops);

// Memory the application provides. Every buffer is 16-byte aligned (32 with cache ops);
// unused ones may be {nullptr, 0}.
struct CortexMMemory {
  uint8_t* scratch;  // region 1: at least region_bytes(model, 1)
  size_t scratch_size;
  uint8_t* input_region;  // region 3, only for --separate-io-regions models
  size_t input_region_size;
  uint8_t* output_region;  // region 4, likewise
  size_t output_region_size;
  uint8_t* fast_scratch;  // region 2: the fast SRAM also given to ethosu_init
  size_t fast_scratch_size;
};

class CortexMNpu {
 public:
  CortexMNpu() = default;
  CortexMNpu(const CortexMNpu&) = delete;
  CortexMNpu& operator=(const CortexMNpu&) = delete;

  // Checks `model` (a COP1 payload, aligned data) and `memory` (sizes, alignment).
  Error prepare(const Model& model, const CortexMMemory& memory);

  // Region memory for copy_input / copy_output; valid after prepare().
  const Regions& regions() const { return regions_; }

  // One synchronous inference. `user_arg` goes to the driver's inference hooks.
  Error invoke(void* user_arg = nullptr);

 private:
  Model model_ = {};  // a copy; the artifact buffer it points into must stay alive
  bool prepared_ = false;
  Regions regions_ = {};
  size_t region_sizes_[kNumRegions] = {};  // bytes the NPU uses, passed to the driver
  int num_base_addr_ = 0;
};

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_NPU_CORTEX_M_H_
