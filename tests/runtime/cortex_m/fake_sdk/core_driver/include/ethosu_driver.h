/*
 * FAKE Ethos-U core driver header, laid out like an SDK's core_driver/include so the
 * runtime's -DETHOSU_SDK=<path> integration can be built and run under QEMU, which has no
 * NPU. The prototypes follow the driver's documented API (1.x); the struct's fields are the
 * fake's own. Not the real driver: see fake_ethosu_driver.cc.
 */
#ifndef FAKE_ETHOSU_DRIVER_H_
#define FAKE_ETHOSU_DRIVER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ethosu_driver {
  void* base_address;
  const void* fast_memory;
  size_t fast_memory_size;
  bool initialised;
  bool reserved;
};

int ethosu_init(struct ethosu_driver* drv, void* base_address, const void* fast_memory,
                const size_t fast_memory_size, uint32_t secure_enable, uint32_t privilege_enable);
void ethosu_deinit(struct ethosu_driver* drv);
void ethosu_irq_handler(struct ethosu_driver* drv);
struct ethosu_driver* ethosu_reserve_driver(void);
void ethosu_release_driver(struct ethosu_driver* drv);
int ethosu_invoke_v3(struct ethosu_driver* drv, const void* custom_data_ptr,
                     const int custom_data_size, uint64_t* const base_addr,
                     const size_t* base_addr_size, const int num_base_addr, void* user_arg);
void ethosu_flush_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                         int num_base_addr);
void ethosu_invalidate_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                              int num_base_addr);

#ifdef __cplusplus
}
#endif

#endif /* FAKE_ETHOSU_DRIVER_H_ */
