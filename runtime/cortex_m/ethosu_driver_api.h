/*
 * The few Ethos-U core driver functions this runtime calls, declared from the driver's
 * documented API (ethosu_driver.h, driver 1.x) so the runtime library builds without an
 * SDK. With an SDK, ethosu_driver_api_check.c includes both headers: any drift between
 * these prototypes and the SDK's is a compile error there.
 */
#ifndef ETHOSU_RT_CORTEX_M_ETHOSU_DRIVER_API_H_
#define ETHOSU_RT_CORTEX_M_ETHOSU_DRIVER_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ethosu_driver; /* owned by the application, opaque here */

/* Blocks until a registered driver is free; NULL in multi-variant builds. */
struct ethosu_driver* ethosu_reserve_driver(void);

void ethosu_release_driver(struct ethosu_driver* drv);

/* Synchronous inference. custom_data_ptr is the whole COP1 payload; base_addr[i] is the
 * address of region i and is written by the driver (index 2 may be replaced by the fast
 * memory given to ethosu_init). Returns 0 on success. */
int ethosu_invoke_v3(struct ethosu_driver* drv, const void* custom_data_ptr,
                     const int custom_data_size, uint64_t* const base_addr,
                     const size_t* base_addr_size, const int num_base_addr, void* user_arg);

/* Weak hooks in the driver, overridden by this runtime (npu_cortex_m.cc). Called with
 * every base pointer before the NPU starts and after it completes. */
void ethosu_flush_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                         int num_base_addr);
void ethosu_invalidate_dcache(const uint64_t* base_addr, const size_t* base_addr_size,
                              int num_base_addr);

#ifdef __cplusplus
}
#endif

#endif /* ETHOSU_RT_CORTEX_M_ETHOSU_DRIVER_API_H_ */
