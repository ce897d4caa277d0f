// FAKE Ethos-U core driver: the API functions of ethosu_driver.h with argument checks
// and no hardware. See fake_ethosu_driver.h.
#include "fake_ethosu_driver.h"

#include <stdio.h>
#include <string.h>

namespace fake_ethosu {
namespace {

ethosu_driver* g_registered = nullptr;
Stats g_stats = {};
NpuModel g_model = nullptr;
void* g_model_user = nullptr;
int g_invoke_result = 0;
bool g_reserve_null = false;

constexpr uint32_t kCop1 = 0x31504F43u;

uint32_t word(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

int violation(const char* text, unsigned long value) {
  ++g_stats.violations;
  snprintf(g_stats.last_violation, sizeof(g_stats.last_violation), "%s (%lu)", text, value);
  return -1;
}

// The checks the real driver makes on the payload, plus completeness of every action.
int check_cop1(const uint8_t* cop, int size) {
  if (cop == nullptr || size < 4 || size % 4 != 0) {
    return violation("COP payload must be >= 4 bytes and a multiple of 4", size < 0 ? 0 : size);
  }
  if (reinterpret_cast<uintptr_t>(cop) % 16 != 0) {
    return violation("COP payload must be 16-byte aligned", reinterpret_cast<uintptr_t>(cop));
  }
  if (word(cop) != kCop1) {
    return violation("COP payload must start with the COP1 FourCC", word(cop));
  }
  int streams = 0;
  for (int pos = 4; pos < size;) {
    const uint32_t header = word(cop + pos);
    const int command = static_cast<int>(header & 0xFF);
    if (command == 1) {
      pos += 12;
    } else if (command == 2) {
      const int words = static_cast<int>((((header >> 8) & 0xFF) << 16) | (header >> 16));
      if ((pos + 4) % 16 != 0) {
        return violation("command stream must start 16-byte aligned", pos + 4);
      }
      pos += 4 + 4 * words;
      ++streams;
    } else if (command == 5) {
      pos += 4;
    } else {
      return violation("COP1 action must be 1, 2 or 5", static_cast<unsigned long>(command));
    }
    if (pos > size) {
      return violation("COP1 action runs past the payload end", static_cast<unsigned long>(pos));
    }
  }
  return streams == 1 ? 0 : violation("COP1 must hold one command stream", streams);
}

}  // namespace

void reset() {
  g_registered = nullptr;
  g_stats = Stats{};
  g_model = nullptr;
  g_model_user = nullptr;
  g_invoke_result = 0;
  g_reserve_null = false;
}

const Stats& stats() { return g_stats; }

void set_npu_model(NpuModel model, void* user) {
  g_model = model;
  g_model_user = user;
}

void set_invoke_result(int result) { g_invoke_result = result; }
void set_reserve_returns_null(bool null) { g_reserve_null = null; }

}  // namespace fake_ethosu

using fake_ethosu::g_registered;
using fake_ethosu::g_stats;
using fake_ethosu::violation;

extern "C" int ethosu_init(ethosu_driver* drv, void* base_address, const void* fast_memory,
                           const size_t fast_memory_size, uint32_t /*secure_enable*/,
                           uint32_t /*privilege_enable*/) {
  if (drv == nullptr) {
    return violation("ethosu_init needs a driver object", 0);
  }
  *drv = ethosu_driver{base_address, fast_memory, fast_memory_size, true, false};
  g_registered = drv;
  return 0;
}

extern "C" void ethosu_deinit(ethosu_driver* drv) {
  if (drv == g_registered) {
    g_registered = nullptr;
  }
}

extern "C" void ethosu_irq_handler(ethosu_driver* /*drv*/) {}

extern "C" ethosu_driver* ethosu_reserve_driver(void) {
  ++g_stats.reserves;
  if (fake_ethosu::g_reserve_null || g_registered == nullptr) {
    return nullptr;
  }
  if (g_registered->reserved) {
    violation("ethosu_reserve_driver: the only driver is already reserved (missing release)", 0);
    return nullptr;
  }
  g_registered->reserved = true;
  return g_registered;
}

extern "C" void ethosu_release_driver(ethosu_driver* drv) {
  ++g_stats.releases;
  if (drv == nullptr || drv != g_registered || !drv->reserved) {
    violation("ethosu_release_driver: driver was not reserved", 0);
    return;
  }
  drv->reserved = false;
}

extern "C" int ethosu_invoke_v3(ethosu_driver* drv, const void* custom_data_ptr,
                                const int custom_data_size, uint64_t* const base_addr,
                                const size_t* base_addr_size, const int num_base_addr,
                                void* user_arg) {
  ++g_stats.invokes;
  fake_ethosu::Invocation& call = g_stats.last;
  call =
      fake_ethosu::Invocation{custom_data_ptr, custom_data_size, {}, {}, num_base_addr, user_arg};
  if (drv == nullptr || drv != g_registered || !drv->initialised || !drv->reserved) {
    return violation("ethosu_invoke_v3: driver must be initialised and reserved", 0);
  }
  if (num_base_addr < 1 || num_base_addr > fake_ethosu::kMaxBases || base_addr == nullptr ||
      base_addr_size == nullptr) {
    return violation("ethosu_invoke_v3: base address arrays (1..8 entries)",
                     static_cast<unsigned long>(num_base_addr));
  }
  for (int i = 0; i < num_base_addr; ++i) {
    call.base[i] = base_addr[i];
    call.size[i] = base_addr_size[i];
  }
  if (fake_ethosu::check_cop1(static_cast<const uint8_t*>(custom_data_ptr), custom_data_size) !=
      0) {
    return -1;
  }
  for (int i = 0; i < num_base_addr; ++i) {
    if (base_addr_size[i] != 0 && base_addr[i] % 16 != 0) {
      return violation("base address must be 16-byte aligned", static_cast<unsigned long>(i));
    }
    if (base_addr_size[i] == 0 && base_addr[i] != 0) {
      return violation("a zero-sized region must have base address 0",
                       static_cast<unsigned long>(i));
    }
    if (base_addr_size[i] != 0 && base_addr[i] == 0) {
      return violation("a region with a size needs a base address", static_cast<unsigned long>(i));
    }
  }
  if (drv->fast_memory != nullptr && num_base_addr > 2) {
    if (base_addr_size[2] > drv->fast_memory_size) {
      return violation("region 2 must fit the fast memory given to ethosu_init",
                       static_cast<unsigned long>(base_addr_size[2]));
    }
    base_addr[2] = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(drv->fast_memory));
  }
  ethosu_flush_dcache(base_addr, base_addr_size, num_base_addr);
  if (fake_ethosu::g_model != nullptr) {
    fake_ethosu::g_model(base_addr, base_addr_size, num_base_addr, fake_ethosu::g_model_user);
  }
  ethosu_invalidate_dcache(base_addr, base_addr_size, num_base_addr);
  return fake_ethosu::g_invoke_result;
}
