#include "ethosu_rt/npu_drm.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include "drm_ethosu_uapi.h"
#include "ethosu_rt/check.h"
#include "ethosu_rt/cop.h"
#include "ethosu_rt/npu_cmd.h"

namespace ethosu_rt {
namespace {

// "-22 (Invalid argument)"
const char* errno_text(int result, char* out, size_t len) {
  TextBuffer t(out, len);
  t.add_i64(result).add(" (").add(strerror(-result)).add(")");
  return out;
}

uint64_t user_pointer(const void* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

bool uses(const RegionUse& use, uint32_t region) { return ((use.used >> region) & 1u) != 0; }

struct Where {
  char text[128];
};

}  // namespace

// A failed system call: "<device>: <what> must be 0; got -22 (Invalid argument)".
#define ETHOSU_RT_CHECK_SYS(result, err, what)                                                    \
  do {                                                                                            \
    const int ethosu_rt_result_ = (result);                                                       \
    if (ethosu_rt_result_ < 0) {                                                                  \
      char ethosu_rt_got_[96];                                                                    \
      ETHOSU_RT_FAIL_TEXT((err), where(), what, "0",                                              \
                          errno_text(ethosu_rt_result_, ethosu_rt_got_, sizeof(ethosu_rt_got_))); \
    }                                                                                             \
  } while (0)

Error DrmNpu::open(const char* device) {
  close();
  ETHOSU_RT_CHECK_TRUE(device != nullptr, Error::kBadArgument, "DrmNpu",
                       "device path must not be null");
  TextBuffer(device_, sizeof(device_)).add(device);
  const int fd = sys_.open(device, O_RDWR | O_CLOEXEC);
  ETHOSU_RT_CHECK_SYS(fd, Error::kNoDevice, "open() of the NPU device node");
  fd_ = fd;

  // Ask for the struct size first: a newer kernel may have a larger npu_info.
  drm::DevQuery query = {drm::kDevQueryNpuInfo, 0, 0};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlDevQuery, &query), Error::kDevice,
                      "DEV_QUERY(NPU_INFO) size ioctl");
  ETHOSU_RT_CHECK(query.size, >=, sizeof(drm::NpuInfo), Error::kDevice, where(),
                  "npu_info size reported by the kernel");
  drm::NpuInfo npu = {};
  query = drm::DevQuery{drm::kDevQueryNpuInfo, sizeof(npu), user_pointer(&npu)};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlDevQuery, &query), Error::kDevice,
                      "DEV_QUERY(NPU_INFO) ioctl");
  info_ = NpuInfo{npu.id, npu.config, npu.sram_size};
  return Error::kOk;
}

Error DrmNpu::create_region_bo(uint32_t region, size_t bytes) {
  drm::BoCreate create = {bytes, 0, 0};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlBoCreate, &create), Error::kDevice,
                      "BO_CREATE ioctl");
  ETHOSU_RT_CHECK(create.handle, !=, 0u, Error::kDevice, where(), "BO_CREATE handle");
  region_bo_[region].handle = create.handle;  // owned from here on, freed by close()
  ETHOSU_RT_CHECK(create.size, >=, static_cast<uint64_t>(bytes), Error::kDevice, where(),
                  "BO_CREATE size (the requested bytes)");
  drm::BoMmapOffset offset = {create.handle, 0, 0};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlBoMmapOffset, &offset), Error::kDevice,
                      "BO_MMAP_OFFSET ioctl");
  void* address = nullptr;
  const size_t map_size = static_cast<size_t>(create.size);
  ETHOSU_RT_CHECK_SYS(
      sys_.mmap(map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, offset.offset, &address),
      Error::kDevice, "mmap() of a region BO");
  region_bo_[region].map = static_cast<uint8_t*>(address);
  region_bo_[region].map_size = map_size;
  regions_.region[region] = Region{static_cast<uint8_t*>(address), bytes};
  return Error::kOk;
}

Error DrmNpu::create_cmd_bo(const uint8_t* words, size_t size) {
  drm::CmdstreamBoCreate create = {static_cast<uint32_t>(size), 0, user_pointer(words), 0, 0};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlCmdstreamBoCreate, &create), Error::kDevice,
                      "CMDSTREAM_BO_CREATE ioctl");
  ETHOSU_RT_CHECK(create.handle, !=, 0u, Error::kDevice, where(), "CMDSTREAM_BO_CREATE handle");
  cmd_bo_.handle = create.handle;
  return Error::kOk;
}

Error DrmNpu::prepare(const Model& model) {
  ETHOSU_RT_CHECK_TRUE(fd_ >= 0, Error::kBadState, "DrmNpu",
                       "open() must succeed before prepare()");
  release_bos();
  const CopMatch match = {info_.config};
  CommandStream stream;
  ETHOSU_RT_TRY(cop_command_stream(model.cmd_data.data, model.cmd_data.size, &match, &stream));
  ETHOSU_RT_CHECK(stream.size, <=, kMaxCommandStreamBytes, Error::kUnsupported, "cmd_data",
                  "command stream bytes");
  RegionUse use;
  ETHOSU_RT_TRY(scan_region_use(stream.words, stream.size, &use));

  Where w;
  TensorInfo info;
  for (size_t i = 0; i < model.num_inputs + model.num_outputs; ++i) {
    const bool output = i >= model.num_inputs;
    const size_t index = output ? i - model.num_inputs : i;
    ETHOSU_RT_TRY(output ? get_output(model, index, &info) : get_input(model, index, &info));
    if (!uses(use, info.region)) {
      TextBuffer(w.text, sizeof(w.text)).add(output ? "output " : "input ").add_u64(index);
      ETHOSU_RT_CHECK_ONE_OF(false, info.region, Error::kBadValue, w.text, "region",
                             "one the command stream uses");
    }
  }
  for (uint32_t r = 0; r < kNumRegions; ++r) {
    if (!uses(use, r)) {
      continue;  // the kernel rejects a BO for a region the stream does not use
    }
    if (r == drm::kSramRegion) {
      // Fast scratch lives in the device SRAM; the job passes its size and no BO.
      const uint64_t need =
          model.scratch_fast_size > stream.cache_size ? model.scratch_fast_size : stream.cache_size;
      ETHOSU_RT_CHECK(need, >, 0u, Error::kBadValue, "scratch_fast",
                      "bytes (the command stream uses region 2)");
      ETHOSU_RT_CHECK(need, <=, static_cast<uint64_t>(info_.sram_size), Error::kUnsupported,
                      where(), "fast scratch bytes the model needs (the device SRAM size)");
      sram_size_ = static_cast<uint32_t>(need);
      continue;
    }
    ETHOSU_RT_CHECK(r, <=, kRegionOutputs, Error::kUnsupported, "command stream",
                    "region used (Vela uses regions 0..4)");
    const size_t bytes = region_bytes(model, r);
    // Never a zero-sized BO: the kernel rejects it, and it would mean a region the model
    // does not describe.
    TextBuffer(w.text, sizeof(w.text)).add("region ").add_u64(r);
    ETHOSU_RT_CHECK(bytes, >, size_t{0}, Error::kBadValue, w.text,
                    "bytes the artifact gives a region the command stream uses");
    ETHOSU_RT_TRY(create_region_bo(r, bytes));
    if (r == kRegionWeights) {
      memcpy(region_bo_[r].map, model.weights.data, model.weights.size);
    }
  }
  ETHOSU_RT_TRY(create_cmd_bo(stream.words, stream.size));
  ETHOSU_RT_TRY(get_output(model, 0, &info));
  wait_handle_ = region_bo_[info.region].handle;
  prepared_ = true;
  return Error::kOk;
}

Error DrmNpu::invoke(int64_t timeout_ns) {
  ETHOSU_RT_CHECK_TRUE(prepared_, Error::kBadState, "DrmNpu",
                       "prepare() must succeed before invoke()");
  ETHOSU_RT_CHECK(timeout_ns, >, int64_t{0}, Error::kBadArgument, "DrmNpu", "timeout_ns");
  drm::Job job = {};
  job.cmd_bo = cmd_bo_.handle;
  job.sram_size = sram_size_;
  for (size_t r = 0; r < kNumRegions; ++r) {
    job.region_bo_handles[r] = region_bo_[r].handle;
  }
  drm::Submit submit = {user_pointer(&job), 1, 0};
  ETHOSU_RT_CHECK_SYS(sys_.ioctl(fd_, drm::kIoctlSubmit, &submit), Error::kDevice, "SUBMIT ioctl");
  const int64_t now = sys_.monotonic_ns();
  const int64_t deadline = now > INT64_MAX - timeout_ns ? INT64_MAX : now + timeout_ns;
  drm::BoWait wait = {wait_handle_, 0, deadline};
  const int result = sys_.ioctl(fd_, drm::kIoctlBoWait, &wait);
  if (result == -ETIME || result == -ETIMEDOUT) {
    char got[64];
    TextBuffer(got, sizeof(got))
        .add("still running after ")
        .add_u64(static_cast<uint64_t>(timeout_ns / 1000000))
        .add(" ms");
    ETHOSU_RT_FAIL_TEXT(Error::kTimeout, where(), "inference", "done within the timeout", got);
  }
  ETHOSU_RT_CHECK_SYS(result, Error::kDevice, "BO_WAIT ioctl");
  return Error::kOk;
}

void DrmNpu::release_bos() {
  // Errors while tearing down are ignored: there is nothing left to recover.
  for (Bo& bo : region_bo_) {
    if (bo.map != nullptr) {
      (void)sys_.munmap(bo.map, bo.map_size);
    }
    if (bo.handle != 0) {
      drm::GemClose gem_close = {bo.handle, 0};
      (void)sys_.ioctl(fd_, drm::kIoctlGemClose, &gem_close);
    }
    bo = Bo{};
  }
  if (cmd_bo_.handle != 0) {
    drm::GemClose gem_close = {cmd_bo_.handle, 0};
    (void)sys_.ioctl(fd_, drm::kIoctlGemClose, &gem_close);
    cmd_bo_ = Bo{};
  }
  regions_ = Regions{};
  sram_size_ = 0;
  wait_handle_ = 0;
  prepared_ = false;
}

void DrmNpu::close() {
  if (fd_ >= 0) {
    release_bos();
    (void)sys_.close(fd_);
    fd_ = -1;
  }
}

size_t DrmNpu::live_handles() const {
  size_t count = cmd_bo_.handle != 0 ? 1 : 0;
  for (const Bo& bo : region_bo_) {
    count += bo.handle != 0 ? 1 : 0;
  }
  return count;
}

}  // namespace ethosu_rt
