// The Linux DRM accel "ethosu" UAPI (include/uapi/drm/ethosu_accel.h), declared here from
// its documented layout so the runtime builds without kernel headers. The static_asserts
// pin every size, field offset and ioctl number to the published values (64-bit Linux).
#ifndef ETHOSU_RT_CORTEX_A_DRM_ETHOSU_UAPI_H_
#define ETHOSU_RT_CORTEX_A_DRM_ETHOSU_UAPI_H_

#include <stddef.h>
#include <stdint.h>

namespace ethosu_rt {
namespace drm {

struct DevQuery {  // drm_ethosu_dev_query
  uint32_t type;
  uint32_t size;     // in: bytes at `pointer`; out: bytes written / struct size
  uint64_t pointer;  // user pointer, 0 to ask for the size
};

struct NpuInfo {  // drm_ethosu_npu_info (newer kernels may append fields)
  uint32_t id;
  uint32_t config;
  uint32_t sram_size;
};

struct BoCreate {  // drm_ethosu_bo_create
  uint64_t size;   // in: requested; out: page-aligned size
  uint32_t flags;  // kBoNoMmap or 0
  uint32_t handle;
};

struct BoWait {  // drm_ethosu_bo_wait
  uint32_t handle;
  uint32_t pad;
  int64_t timeout_ns;  // absolute CLOCK_MONOTONIC time
};

struct BoMmapOffset {  // drm_ethosu_bo_mmap_offset
  uint32_t handle;
  uint32_t pad;
  uint64_t offset;
};

struct CmdstreamBoCreate {  // drm_ethosu_cmdstream_bo_create
  uint32_t size;
  uint32_t flags;  // must be 0
  uint64_t data;   // user pointer to the raw command words
  uint32_t handle;
  uint32_t pad;
};

constexpr size_t kMaxRegions = 8;  // ETHOSU_MAX_REGIONS
constexpr uint32_t kSramRegion = 2;

struct Job {  // drm_ethosu_job
  uint32_t cmd_bo;
  uint32_t sram_size;
  uint32_t region_bo_handles[kMaxRegions];
};

struct Submit {   // drm_ethosu_submit
  uint64_t jobs;  // user pointer to Job[job_count]
  uint32_t job_count;
  uint32_t pad;
};

struct GemClose {  // drm_gem_close (core DRM)
  uint32_t handle;
  uint32_t pad;
};

constexpr uint32_t kDevQueryNpuInfo = 0;
constexpr uint32_t kBoNoMmap = 1;

// Linux _IOC encoding: nr in bits 0..7, type 8..15, size 16..29, direction 30..31.
constexpr unsigned long ioc(unsigned long dir, unsigned long type, unsigned long nr,
                            unsigned long size) {
  return (dir << 30) | (size << 16) | (type << 8) | nr;
}
constexpr unsigned long kIocWrite = 1;
constexpr unsigned long kIocReadWrite = 3;
constexpr unsigned long kDrmCommandBase = 0x40;

constexpr unsigned long kIoctlDevQuery =
    ioc(kIocReadWrite, 'd', kDrmCommandBase + 0, sizeof(DevQuery));
constexpr unsigned long kIoctlBoCreate =
    ioc(kIocReadWrite, 'd', kDrmCommandBase + 1, sizeof(BoCreate));
constexpr unsigned long kIoctlBoWait = ioc(kIocReadWrite, 'd', kDrmCommandBase + 2, sizeof(BoWait));
constexpr unsigned long kIoctlBoMmapOffset =
    ioc(kIocReadWrite, 'd', kDrmCommandBase + 3, sizeof(BoMmapOffset));
constexpr unsigned long kIoctlCmdstreamBoCreate =
    ioc(kIocReadWrite, 'd', kDrmCommandBase + 4, sizeof(CmdstreamBoCreate));
constexpr unsigned long kIoctlSubmit = ioc(kIocReadWrite, 'd', kDrmCommandBase + 5, sizeof(Submit));
constexpr unsigned long kIoctlGemClose = ioc(kIocWrite, 'd', 0x09, sizeof(GemClose));

static_assert(sizeof(DevQuery) == 16 && offsetof(DevQuery, pointer) == 8, "drm_ethosu_dev_query");
static_assert(sizeof(NpuInfo) == 12 && offsetof(NpuInfo, sram_size) == 8, "drm_ethosu_npu_info");
static_assert(sizeof(BoCreate) == 16 && offsetof(BoCreate, handle) == 12, "drm_ethosu_bo_create");
static_assert(sizeof(BoWait) == 16 && offsetof(BoWait, timeout_ns) == 8, "drm_ethosu_bo_wait");
static_assert(sizeof(BoMmapOffset) == 16 && offsetof(BoMmapOffset, offset) == 8,
              "drm_ethosu_bo_mmap_offset");
static_assert(sizeof(CmdstreamBoCreate) == 24 && offsetof(CmdstreamBoCreate, data) == 8 &&
                  offsetof(CmdstreamBoCreate, handle) == 16,
              "drm_ethosu_cmdstream_bo_create");
static_assert(sizeof(Job) == 40 && offsetof(Job, region_bo_handles) == 8, "drm_ethosu_job");
static_assert(sizeof(Submit) == 16 && offsetof(Submit, job_count) == 8, "drm_ethosu_submit");
static_assert(sizeof(GemClose) == 8, "drm_gem_close");
static_assert(kIoctlDevQuery == 0xc0106440ul, "DRM_IOCTL_ETHOSU_DEV_QUERY");
static_assert(kIoctlBoCreate == 0xc0106441ul, "DRM_IOCTL_ETHOSU_BO_CREATE");
static_assert(kIoctlBoWait == 0xc0106442ul, "DRM_IOCTL_ETHOSU_BO_WAIT");
static_assert(kIoctlBoMmapOffset == 0xc0106443ul, "DRM_IOCTL_ETHOSU_BO_MMAP_OFFSET");
static_assert(kIoctlCmdstreamBoCreate == 0xc0186444ul, "DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE");
static_assert(kIoctlSubmit == 0xc0106445ul, "DRM_IOCTL_ETHOSU_SUBMIT");
static_assert(kIoctlGemClose == 0x40086409ul, "DRM_IOCTL_GEM_CLOSE");

}  // namespace drm
}  // namespace ethosu_rt

#endif  // ETHOSU_RT_CORTEX_A_DRM_ETHOSU_UAPI_H_
