#include "ethosu_rt/npu_cortex_m.h"

#include <limits.h>

#include "ethosu_driver_api.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/cop.h"

namespace ethosu_rt {
namespace {

const CacheOps* g_cache_ops = nullptr;

constexpr uintptr_t kNpuAlignment = 16;

// "region <n> buffer", composed only when a check fails (LazyWhere).
void format_region(TextBuffer& t, const LazyWhere& w) {
  t.add("region ").add_u64(w.values[0]).add(" buffer");
}

// One region the application provides: big enough for what the model needs and aligned
// for the NPU (and for whole cache lines when the hooks maintain the cache).
Error take_region(uint32_t region, uint8_t* data, size_t size, size_t need, Region* out) {
  const LazyWhere where = {format_region, nullptr, {region, 0, 0}};
  if (need == 0) {
    *out = Region{nullptr, 0};  // unused: base pointer 0, never a dangling buffer
    return Error::kOk;
  }
  ETHOSU_RT_CHECK_TRUE(data != nullptr, Error::kBadArgument, where,
                       "must be provided: the model uses the region");
  ETHOSU_RT_CHECK(size, >=, need, Error::kBufferTooSmall, where, "bytes (the model's region size)");
  const uintptr_t alignment = g_cache_ops != nullptr ? kCacheLineBytes : kNpuAlignment;
  ETHOSU_RT_CHECK_HEX(reinterpret_cast<uintptr_t>(data) % alignment, ==, uintptr_t{0},
                      Error::kMisaligned, where, "address modulo the NPU/cache-line alignment");
  if (g_cache_ops != nullptr) {
    // Invalidation works on whole lines; the buffer must own the last line it touches.
    const size_t lines = (need + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
    ETHOSU_RT_CHECK(size, >=, lines, Error::kBufferTooSmall, where,
                    "bytes (whole cache lines with D-cache maintenance)");
  }
  *out = Region{data, size};
  return Error::kOk;
}

// Releases the reserved driver on every path out of invoke().
class Reservation {
 public:
  Reservation() : driver_(ethosu_reserve_driver()) {}
  ~Reservation() {
    if (driver_ != nullptr) {
      ethosu_release_driver(driver_);
    }
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ethosu_driver* get() const { return driver_; }

 private:
  ethosu_driver* driver_;
};

void memory_barrier() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

uint8_t* to_pointer(uint64_t address) {
  return reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(address));
}

}  // namespace

void set_cache_ops(const CacheOps* ops) { g_cache_ops = ops; }

Error CortexMNpu::prepare(const Model& model, const CortexMMemory& memory) {
  prepared_ = false;
  CopFormat format = CopFormat::kCop1;
  ETHOSU_RT_TRY(cop_format(model.cmd_data.data, model.cmd_data.size, &format));
  ETHOSU_RT_CHECK(static_cast<int>(format), ==, static_cast<int>(CopFormat::kCop1),
                  Error::kUnsupported, "cmd_data",
                  "COP format (the core driver takes COP1; COP2 is for Linux direct drive)");
  CommandStream stream;
  ETHOSU_RT_TRY(cop_command_stream(model.cmd_data.data, model.cmd_data.size, nullptr, &stream));
  ETHOSU_RT_CHECK(model.cmd_data.size, <=, static_cast<size_t>(INT_MAX), Error::kOverflow,
                  "cmd_data", "payload bytes (the driver takes an int)");
  ETHOSU_RT_CHECK_HEX(reinterpret_cast<uintptr_t>(model.cmd_data.data) % kNpuAlignment, ==,
                      uintptr_t{0}, Error::kMisaligned, "cmd_data", "payload address % 16");
  ETHOSU_RT_CHECK(stream.offset % kNpuAlignment, ==, size_t{0}, Error::kMisaligned, "cmd_data",
                  "command stream offset % 16");
  ETHOSU_RT_CHECK_HEX(reinterpret_cast<uintptr_t>(model.weights.data) % kNpuAlignment, ==,
                      uintptr_t{0}, Error::kMisaligned, "weight_data", "payload address % 16");

  size_t need[kNumRegions];
  for (uint32_t r = 0; r < kNumRegions; ++r) {
    need[r] = r == kRegionWeights ? model.weights.size : region_bytes(model, r);
  }
  Regions regions = {};
  // Region 0 is only read by the NPU; the runtime never writes through this pointer.
  regions.region[kRegionWeights] =
      Region{const_cast<uint8_t*>(model.weights.data), model.weights.size};
  // The application's buffers for regions 1 (scratch) to 4 (outputs).
  const Region given[] = {{memory.scratch, memory.scratch_size},
                          {memory.fast_scratch, memory.fast_scratch_size},
                          {memory.input_region, memory.input_region_size},
                          {memory.output_region, memory.output_region_size}};
  for (uint32_t r = kRegionScratch; r <= kRegionOutputs; ++r) {
    const Region& buffer = given[r - kRegionScratch];
    ETHOSU_RT_TRY(take_region(r, buffer.data, buffer.size, need[r], &regions.region[r]));
  }
  for (uint32_t r = 0; r < kNumRegions; ++r) {
    region_sizes_[r] = need[r];
  }
  // Vela's convention: regions 0..2 always; 3 and 4 only for separate IO regions.
  const bool separate_io = region_sizes_[kRegionInputs] != 0 || region_sizes_[kRegionOutputs] != 0;
  num_base_addr_ = separate_io ? 5 : 3;
  regions_ = regions;
  model_ = model;
  prepared_ = true;
  return Error::kOk;
}

Error CortexMNpu::invoke(void* user_arg) {
  ETHOSU_RT_CHECK_TRUE(prepared_, Error::kBadState, "CortexMNpu",
                       "prepare() must succeed before invoke()");
  uint64_t base[kNumRegions] = {};
  size_t size[kNumRegions] = {};
  for (int r = 0; r < num_base_addr_; ++r) {
    base[r] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(regions_.region[r].data));
    size[r] = regions_.region[r].data != nullptr ? region_sizes_[r] : 0;
  }
  Reservation driver;
  ETHOSU_RT_CHECK_TRUE(driver.get() != nullptr, Error::kDriver, "ethosu_reserve_driver",
                       "must return a driver: call ethosu_init first (multi-variant driver "
                       "builds, which return NULL, are not supported)");
  const int result =
      ethosu_invoke_v3(driver.get(), model_.cmd_data.data, static_cast<int>(model_.cmd_data.size),
                       base, size, num_base_addr_, user_arg);
  ETHOSU_RT_CHECK(result, ==, 0, Error::kDriver, "ethosu_invoke_v3", "result");
  return Error::kOk;
}

}  // namespace ethosu_rt

// Overrides of the driver's weak cache hooks. They live in this file, not a separate
// one, because a static library member is only linked to resolve an undefined symbol:
// a separate object would lose to the driver's weak definition. This object is always
// linked, since it holds CortexMNpu.
extern "C" void ethosu_flush_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                                    int num_base_addr) {
  const ethosu_rt::CacheOps* ops = ethosu_rt::g_cache_ops;
  if (ops != nullptr && ops->clean != nullptr) {
    if (base_addr == nullptr || base_addr_size == nullptr) {
      ops->clean(nullptr, 0);
    } else {
      for (int i = 0; i < num_base_addr; ++i) {
        if (base_addr[i] != 0 && base_addr_size[i] != 0) {
          ops->clean(ethosu_rt::to_pointer(base_addr[i]), base_addr_size[i]);
        }
      }
    }
  }
  ethosu_rt::memory_barrier();
}

extern "C" void ethosu_invalidate_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                                         int num_base_addr) {
  ethosu_rt::memory_barrier();
  const ethosu_rt::CacheOps* ops = ethosu_rt::g_cache_ops;
  if (ops == nullptr || ops->invalidate == nullptr) {
    return;
  }
  if (base_addr == nullptr || base_addr_size == nullptr) {
    ops->invalidate(nullptr, 0);
    return;
  }
  // Region 0 (constants) is never written by the NPU; invalidating it would only cost.
  for (int i = 1; i < num_base_addr; ++i) {
    if (base_addr[i] != 0 && base_addr_size[i] != 0) {
      const size_t lines = (base_addr_size[i] + ethosu_rt::kCacheLineBytes - 1) /
                           ethosu_rt::kCacheLineBytes * ethosu_rt::kCacheLineBytes;
      ops->invalidate(ethosu_rt::to_pointer(base_addr[i]), lines);
    }
  }
}
