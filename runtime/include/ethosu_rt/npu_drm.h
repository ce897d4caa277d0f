// Cortex-A backend: Linux "direct drive" through the mainline DRM accel driver `ethosu`
// (/dev/accel/accelN).
//
// open() queries the NPU (id, config, SRAM size). prepare() picks the command stream
// built for this NPU out of the COP1/COP2 payload, finds which base-pointer regions it
// uses, creates a command-stream BO from the raw words and one mmap'ed BO per used region
// (weights copied in); the fast-scratch region goes to the device SRAM. invoke() submits
// one job and waits on the output BO. Every failure is an Error with a log line naming
// the device, the call and the errno. The destructor unmaps and closes everything.
#ifndef ETHOSU_RT_NPU_DRM_H_
#define ETHOSU_RT_NPU_DRM_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"
#include "ethosu_rt/io.h"
#include "ethosu_rt/linux_sys.h"

namespace ethosu_rt {

struct NpuInfo {
  uint32_t id;
  uint32_t config;
  uint32_t sram_size;
};

constexpr int64_t kDefaultTimeoutNs = 60ll * 1000 * 1000 * 1000;

class DrmNpu {
 public:
  explicit DrmNpu(LinuxSys& sys) : sys_(sys) {}
  ~DrmNpu() { close(); }
  DrmNpu(const DrmNpu&) = delete;
  DrmNpu& operator=(const DrmNpu&) = delete;

  Error open(const char* device);
  const NpuInfo& info() const { return info_; }

  // Needs open(). The Model is copied; the artifact buffer must outlive prepare().
  Error prepare(const Model& model);
  const Regions& regions() const { return regions_; }

  // One inference: SUBMIT, then BO_WAIT on the output BO until now + timeout_ns.
  Error invoke(int64_t timeout_ns = kDefaultTimeoutNs);

  // Unmaps and frees every BO and closes the device; safe to call twice.
  void close();

  // For tests: live BO handles and mappings held by this object.
  size_t live_handles() const;

 private:
  struct Bo {
    uint32_t handle;
    uint8_t* map;
    size_t map_size;
  };

  Error create_region_bo(uint32_t region, size_t bytes);
  Error create_cmd_bo(const uint8_t* words, size_t size);
  void release_bos();
  const char* where() const { return device_; }

  LinuxSys& sys_;
  int fd_ = -1;
  char device_[96] = {};
  NpuInfo info_ = {};
  Bo cmd_bo_ = {};
  Bo region_bo_[kNumRegions] = {};
  uint32_t sram_size_ = 0;
  uint32_t wait_handle_ = 0;
  bool prepared_ = false;
  Regions regions_ = {};
};

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_NPU_DRM_H_
