// A light scan of raw Ethos-U command words: which base-pointer regions the operations
// in the stream read or write. Linux's DRM accel driver rejects a job that gives a
// buffer for a region the stream never uses, and one that omits a used region, so the
// Cortex-A backend must know the set before SUBMIT. The rules mirror what that driver
// counts as a use: the regions selected for IFM/IFM2/OFM/weights/scales at each
// CONV, DEPTHWISE, POOL and ELEMENTWISE operation, and the DMA source/destination at
// each DMA_START. No extents are computed.
#ifndef ETHOSU_RT_NPU_CMD_H_
#define ETHOSU_RT_NPU_CMD_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/error.h"

namespace ethosu_rt {

struct RegionUse {
  uint8_t used;     // bit n set: region n is read or written
  uint8_t written;  // bit n set: region n is written (OFM or DMA destination)
};

// Scans `size` bytes of command words (a multiple of 4).
Error scan_region_use(const uint8_t* words, size_t size, RegionUse* use);

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_NPU_CMD_H_
