/* TEST DOUBLE of the driver stack's kernel uapi header: only what the fake library uses.
 * The 26.05 values are unverified (reference section 6); nothing in runtime/ reads them. */
#ifndef ETHOSU_FAKE_DRIVER_STACK_UAPI_ETHOSU_H_
#define ETHOSU_FAKE_DRIVER_STACK_UAPI_ETHOSU_H_

#define ETHOSU_FD_MAX 16
#define ETHOSU_PMU_EVENT_MAX 8

#endif /* ETHOSU_FAKE_DRIVER_STACK_UAPI_ETHOSU_H_ */
