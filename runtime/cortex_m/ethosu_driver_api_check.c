/*
 * Compiled only when an Ethos-U SDK is configured: the SDK's declarations and ours must
 * agree, otherwise the C compiler reports conflicting types here.
 */
#include <ethosu_driver.h>

#include "ethosu_driver_api.h"
