#include "fake_drm_device.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

namespace test_support {
namespace {

// The published ioctl numbers (64-bit Linux) and struct sizes of the DRM ethosu UAPI.
constexpr unsigned long kDevQuery = 0xc0106440ul;           // drm_ethosu_dev_query, 16 bytes
constexpr unsigned long kBoCreate = 0xc0106441ul;           // drm_ethosu_bo_create, 16
constexpr unsigned long kBoWait = 0xc0106442ul;             // drm_ethosu_bo_wait, 16
constexpr unsigned long kBoMmapOffset = 0xc0106443ul;       // drm_ethosu_bo_mmap_offset, 16
constexpr unsigned long kCmdstreamBoCreate = 0xc0186444ul;  // ..._cmdstream_bo_create, 24
constexpr unsigned long kSubmit = 0xc0106445ul;             // drm_ethosu_submit, 16
constexpr unsigned long kGemClose = 0x40086409ul;           // drm_gem_close, 8
constexpr size_t kJobBytes = 40;                            // drm_ethosu_job
constexpr uint32_t kNoMmap = 1;
constexpr uint64_t kPage = 4096;
constexpr int kSramRegion = 2;

uint32_t get32(const uint8_t* p, size_t offset) {
  uint32_t v;
  memcpy(&v, p + offset, 4);
  return v;
}
uint64_t get64(const uint8_t* p, size_t offset) {
  uint64_t v;
  memcpy(&v, p + offset, 8);
  return v;
}
void put32(uint8_t* p, size_t offset, uint32_t v) { memcpy(p + offset, &v, 4); }
void put64(uint8_t* p, size_t offset, uint64_t v) { memcpy(p + offset, &v, 8); }

uint64_t mmap_offset_of(uint32_t handle) { return static_cast<uint64_t>(handle) << 28; }

}  // namespace

int FakeDrmDevice::violation(int error, const std::string& what) {
  violations_ += what + "\n";
  return -error;
}

const uint8_t* FakeDrmDevice::bo_data(uint32_t handle) const {
  const auto it = bos_.find(handle);
  return it == bos_.end() ? nullptr : it->second.data.data();
}

int FakeDrmDevice::open(const char* path, int flags) {
  if (path != options_.path) {
    return -ENOENT;
  }
  if ((flags & O_ACCMODE) != O_RDWR) {
    return violation(EACCES, "open: the device must be opened O_RDWR");
  }
  const int fd = next_fd_++;
  fds_[fd] = true;
  return fd;
}

int FakeDrmDevice::close(int fd) {
  if (fds_.erase(fd) == 0) {
    return violation(EBADF, "close: fd " + std::to_string(fd) + " is not open");
  }
  // Closing the file frees every handle, as the kernel does; the backend should have
  // closed them already.
  bos_left_at_close_ += bos_.size();
  bos_.clear();
  return 0;
}

int FakeDrmDevice::ioctl(int fd, unsigned long request, void* arg) {
  if (fds_.count(fd) == 0) {
    return violation(EBADF, "ioctl: fd " + std::to_string(fd) + " is not open");
  }
  if (arg == nullptr) {
    return violation(EFAULT, "ioctl: argument pointer is null");
  }
  const auto injected = injected_.find(request);
  if (injected != injected_.end()) {
    if (injected->second.second-- == 0) {
      const int error = injected->second.first;
      injected_.erase(injected);
      return -error;
    }
  }
  uint8_t* bytes = static_cast<uint8_t*>(arg);
  switch (request) {
    case kDevQuery:
      return dev_query(bytes);
    case kBoCreate:
      return bo_create(bytes);
    case kBoWait:
      return bo_wait(bytes);
    case kBoMmapOffset:
      return bo_mmap_offset(bytes);
    case kCmdstreamBoCreate:
      return cmdstream_bo_create(bytes);
    case kSubmit:
      return submit(bytes);
    case kGemClose:
      return gem_close(bytes);
    default:
      return violation(ENOTTY, "ioctl: unknown request " + std::to_string(request) +
                                   " (wrong number or struct size)");
  }
}

int FakeDrmDevice::dev_query(uint8_t* arg) {
  const uint32_t type = get32(arg, 0);
  const uint32_t size = get32(arg, 4);
  const uint64_t pointer = get64(arg, 8);
  if (type != 0) {
    return violation(EINVAL, "DEV_QUERY: type must be 0 (NPU_INFO)");
  }
  if (pointer == 0) {
    put32(arg, 4, options_.npu_info_size);
    return 0;
  }
  if (size < 12) {
    return violation(EINVAL, "DEV_QUERY: size must cover id, config and sram_size");
  }
  std::vector<uint8_t> info(options_.npu_info_size, 0);
  put32(info.data(), 0, options_.id);
  put32(info.data(), 4, options_.config);
  put32(info.data(), 8, options_.sram_size);
  uint8_t* out = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(pointer));
  const size_t copy = size < info.size() ? size : info.size();
  memcpy(out, info.data(), copy);
  memset(out + copy, 0, size - copy);
  return 0;
}

int FakeDrmDevice::bo_create(uint8_t* arg) {
  const uint64_t size = get64(arg, 0);
  const uint32_t flags = get32(arg, 8);
  if (size == 0) {
    return violation(EINVAL, "BO_CREATE: size must not be 0");
  }
  if ((flags & ~kNoMmap) != 0) {
    return violation(EINVAL, "BO_CREATE: unknown flags " + std::to_string(flags));
  }
  const uint64_t rounded = (size + kPage - 1) / kPage * kPage;
  const uint32_t handle = next_handle_++;
  bos_[handle] = Bo{std::vector<uint8_t>(rounded, 0), flags, false};
  put64(arg, 0, rounded);
  put32(arg, 12, handle);
  ++bo_creates_;
  return 0;
}

int FakeDrmDevice::bo_mmap_offset(uint8_t* arg) {
  const uint32_t handle = get32(arg, 0);
  if (get32(arg, 4) != 0) {
    return violation(EINVAL, "BO_MMAP_OFFSET: pad must be 0");
  }
  if (bos_.count(handle) == 0) {
    return violation(ENOENT, "BO_MMAP_OFFSET: unknown handle " + std::to_string(handle));
  }
  put64(arg, 8, mmap_offset_of(handle));
  return 0;
}

int FakeDrmDevice::mmap(size_t length, int prot, int flags, int fd, uint64_t offset,
                        void** address) {
  if (fds_.count(fd) == 0) {
    return violation(EBADF, "mmap: fd is not open");
  }
  const uint32_t handle = static_cast<uint32_t>(offset >> 28);
  const auto it = bos_.find(handle);
  if (it == bos_.end() || mmap_offset_of(handle) != offset) {
    return violation(EINVAL, "mmap: offset does not come from BO_MMAP_OFFSET");
  }
  if ((it->second.flags & kNoMmap) != 0) {
    return violation(EINVAL, "mmap: the BO was created with NO_MMAP");
  }
  if (length == 0 || length > it->second.data.size()) {
    return violation(EINVAL, "mmap: length must be 1.." + std::to_string(it->second.data.size()));
  }
  if ((flags & MAP_SHARED) == 0 || (prot & (PROT_READ | PROT_WRITE)) != (PROT_READ | PROT_WRITE)) {
    return violation(EINVAL, "mmap: a BO is mapped MAP_SHARED with PROT_READ | PROT_WRITE");
  }
  uint8_t* data = it->second.data.data();
  mappings_[data] = {handle, length};
  *address = data;
  return 0;
}

int FakeDrmDevice::munmap(void* address, size_t length) {
  const auto it = mappings_.find(static_cast<uint8_t*>(address));
  if (it == mappings_.end() || it->second.second != length) {
    return violation(EINVAL, "munmap: not a live mapping of that length");
  }
  mappings_.erase(it);
  return 0;
}

int FakeDrmDevice::cmdstream_bo_create(uint8_t* arg) {
  const uint32_t size = get32(arg, 0);
  const uint32_t flags = get32(arg, 4);
  const uint64_t data = get64(arg, 8);
  if (size == 0 || data == 0 || flags != 0 || get32(arg, 20) != 0) {
    return violation(EINVAL, "CMDSTREAM_BO_CREATE: size and data must be set, flags and pad 0");
  }
  if (size % 4 != 0) {
    return violation(EINVAL, "CMDSTREAM_BO_CREATE: size must be whole 32-bit words");
  }
  // The kernel copies the words from user memory, as this does.
  cmdstream_words_.assign(size / 4, 0);
  memcpy(cmdstream_words_.data(), reinterpret_cast<const void*>(static_cast<uintptr_t>(data)),
         size);
  const uint32_t handle = next_handle_++;
  bos_[handle] = Bo{std::vector<uint8_t>(size, 0), kNoMmap, true};
  memcpy(bos_[handle].data.data(), cmdstream_words_.data(), size);
  put32(arg, 16, handle);
  return 0;
}

int FakeDrmDevice::submit(uint8_t* arg) {
  const uint64_t jobs = get64(arg, 0);
  const uint32_t count = get32(arg, 8);
  if (get32(arg, 12) != 0) {
    return violation(EINVAL, "SUBMIT: pad must be 0");
  }
  if (jobs == 0 || count != 1) {
    return violation(EFAULT, "SUBMIT: one job expected at a valid address");
  }
  const uint8_t* raw = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(jobs));
  FakeJob job = {};
  job.cmd_bo = get32(raw, 0);
  job.sram_size = get32(raw, 4);
  for (int i = 0; i < 8; ++i) {
    job.region_bo_handles[i] = get32(raw, 8 + 4 * static_cast<size_t>(i));
  }
  static_assert(sizeof(FakeJob) == kJobBytes, "drm_ethosu_job is 40 bytes");
  return submit_job(job);
}

int FakeDrmDevice::submit_job(const FakeJob& job) {
  if (job.region_bo_handles[kSramRegion] != 0 && job.sram_size != 0) {
    return violation(EINVAL, "SUBMIT: region 2 has a BO and sram_size is set");
  }
  if (job.sram_size > options_.sram_size) {
    return violation(EINVAL, "SUBMIT: sram_size " + std::to_string(job.sram_size) +
                                 " exceeds the device SRAM " + std::to_string(options_.sram_size));
  }
  const auto cmd = bos_.find(job.cmd_bo);
  if (cmd == bos_.end()) {
    return violation(ENOENT, "SUBMIT: unknown command stream handle");
  }
  if (!cmd->second.cmdstream) {
    return violation(EINVAL, "SUBMIT: cmd_bo is not a command stream BO");
  }
  FakeNpuRegion regions[8] = {};
  for (int i = 0; i < 8; ++i) {
    const uint32_t handle = job.region_bo_handles[i];
    const std::string region = "SUBMIT: region " + std::to_string(i);
    if (handle == 0) {
      if (extent_[i] == 0) {
        continue;
      }
      if (i == kSramRegion && extent_[i] <= options_.sram_size) {
        // Stricter than the kernel, which accepts this and then leaves the base pointer
        // unset unless sram_size is given: the job must ask for the SRAM it uses.
        if (job.sram_size < extent_[i]) {
          return violation(EINVAL, region + " uses SRAM but sram_size does not cover it");
        }
        sram_.assign(job.sram_size, 0);
        regions[i] = FakeNpuRegion{sram_.data(), sram_.size()};
        continue;
      }
      return violation(ENOENT, region + " is used by the stream but has no BO");
    }
    if (extent_[i] == 0) {
      return violation(EINVAL, region + " has a BO but the stream does not use it");
    }
    const auto bo = bos_.find(handle);
    if (bo == bos_.end()) {
      return violation(ENOENT, region + ": unknown handle " + std::to_string(handle));
    }
    if (bo->second.cmdstream) {
      return violation(EINVAL, region + ": a command stream BO used as a region");
    }
    if (extent_[i] > bo->second.data.size()) {
      return violation(EOVERFLOW, region + ": BO of " + std::to_string(bo->second.data.size()) +
                                      " bytes is smaller than the extent " +
                                      std::to_string(extent_[i]));
    }
    regions[i] = FakeNpuRegion{bo->second.data.data(), bo->second.data.size()};
  }
  ++submits_;
  last_job_ = job;
  if (npu_) {
    npu_(regions);
  }
  return 0;
}

int FakeDrmDevice::bo_wait(uint8_t* arg) {
  const uint32_t handle = get32(arg, 0);
  const int64_t timeout = static_cast<int64_t>(get64(arg, 8));
  if (get32(arg, 4) != 0) {
    return violation(EINVAL, "BO_WAIT: pad must be 0");
  }
  if (bos_.count(handle) == 0) {
    return violation(ENOENT, "BO_WAIT: unknown handle " + std::to_string(handle));
  }
  if (timeout <= now_ns_) {
    return violation(ETIME, "BO_WAIT: timeout_ns is absolute (CLOCK_MONOTONIC) and already past");
  }
  return wait_result_;
}

int FakeDrmDevice::gem_close(uint8_t* arg) {
  const uint32_t handle = get32(arg, 0);
  if (get32(arg, 4) != 0) {
    return violation(EINVAL, "GEM_CLOSE: pad must be 0");
  }
  const auto it = bos_.find(handle);
  if (it == bos_.end()) {
    return violation(EINVAL, "GEM_CLOSE: unknown handle " + std::to_string(handle));
  }
  for (const auto& mapping : mappings_) {
    if (mapping.second.first == handle) {
      return violation(EBUSY, "GEM_CLOSE: handle " + std::to_string(handle) +
                                  " is still mapped (stricter than the kernel: unmap first)");
    }
  }
  bos_.erase(it);
  return 0;
}

}  // namespace test_support
