// Controls and records of the FAKE Ethos-U core driver (fake_ethosu_driver.cc), used to
// exercise the Cortex-M backend without an NPU: on the host and under QEMU.
//
// The fake implements ethosu_init / reserve / invoke_v3 / release / irq_handler and checks
// each call the way the real driver and its README require: the driver was initialised
// and is reserved by the caller, the payload is COP1 with a complete, 16-byte aligned
// command stream, every used base address is 16-byte aligned, no zero-sized region has a
// pointer, and region 2 fits the fast memory given to ethosu_init (which then replaces
// base[2], as the real driver does). It calls the cache hooks around the "inference" and
// an optional NPU model that writes results into the regions.
#ifndef ETHOSU_RT_TESTS_CORTEX_M_FAKE_ETHOSU_DRIVER_H_
#define ETHOSU_RT_TESTS_CORTEX_M_FAKE_ETHOSU_DRIVER_H_

#include <ethosu_driver.h>
#include <stddef.h>
#include <stdint.h>

namespace fake_ethosu {

constexpr int kMaxBases = 8;

struct Invocation {
  const void* cop;
  int cop_size;
  uint64_t base[kMaxBases];  // as received, before the fast-memory replacement
  size_t size[kMaxBases];
  int num_base_addr;
  void* user_arg;
};

struct Stats {
  int reserves;
  int releases;
  int invokes;
  int violations;  // contract violations seen (each makes the call fail)
  char last_violation[160];
  Invocation last;
};

// Emulates the NPU's work: gets the final base pointers (after the fast-memory swap).
using NpuModel = void (*)(const uint64_t* base, const size_t* size, int count, void* user);

void reset();  // forgets every driver, counter and setting
const Stats& stats();
void set_npu_model(NpuModel model, void* user);
void set_invoke_result(int result);        // forced result of the next invokes (0 = normal)
void set_reserve_returns_null(bool null);  // emulate "no driver" / multi-variant builds

}  // namespace fake_ethosu

#endif  // ETHOSU_RT_TESTS_CORTEX_M_FAKE_ETHOSU_DRIVER_H_
