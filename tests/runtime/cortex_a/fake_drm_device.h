// A FAKE Linux DRM accel `ethosu` device for unit tests of the Cortex-A backend.
//
// It implements the LinuxSys seam (open/close/ioctl/mmap/munmap/clock) and enforces the
// UAPI contract the way drivers/accel/ethosu does: ioctl numbers and struct sizes, pad and
// flag fields that must be zero, valid and live handles, a handle for exactly the regions
// the command stream uses, BOs at least as large as the region extents, the SRAM rules of
// region 2, and mappings of mmap-able BOs only. The structs are read by byte offset from
// the published layout, independently of the backend's own declarations. Every breach is
// recorded in violations() and answered with the errno the kernel would return.
//
// The kernel derives each region's extent from the command stream; tests state it with
// set_region_extent(). An optional NPU callback stands in for the hardware on SUBMIT.
#ifndef ETHOSU_RT_TESTS_CORTEX_A_FAKE_DRM_DEVICE_H_
#define ETHOSU_RT_TESTS_CORTEX_A_FAKE_DRM_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ethosu_rt/linux_sys.h"

namespace test_support {

struct FakeNpuRegion {
  uint8_t* data;  // BO memory (or the fake SRAM for region 2); nullptr when not given
  size_t size;
};

struct FakeJob {
  uint32_t cmd_bo;
  uint32_t sram_size;
  uint32_t region_bo_handles[8];
};

class FakeDrmDevice final : public ethosu_rt::LinuxSys {
 public:
  struct Options {
    std::string path = "/dev/accel/accel0";
    uint32_t id = 0x20007000u;      // arch 2 (U85)
    uint32_t config = 0x20000118u;  // U85, 256 MACs
    uint32_t sram_size = 0;
    uint32_t npu_info_size = 12;  // a newer kernel may report a larger struct
  };
  using Npu = std::function<void(FakeNpuRegion (&regions)[8])>;

  FakeDrmDevice() : FakeDrmDevice(Options()) {}
  explicit FakeDrmDevice(Options options) : options_(std::move(options)) {}

  void set_region_extent(int region, uint64_t bytes) { extent_[region] = bytes; }
  void set_npu(Npu npu) { npu_ = std::move(npu); }
  void set_wait_result(int result) { wait_result_ = result; }
  // After `skip` more successful calls, the next ioctl with `request` fails with -error
  // (as the kernel might: not a violation).
  void fail_next(unsigned long request, int error, int skip = 0) {
    injected_[request] = {error, skip};
  }

  int open(const char* path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void* arg) override;
  int mmap(size_t length, int prot, int flags, int fd, uint64_t offset, void** address) override;
  int munmap(void* address, size_t length) override;
  int64_t monotonic_ns() override { return now_ns_ += 1000; }

  // Contract breaches so far, one per line; empty when the backend behaved.
  const std::string& violations() const { return violations_; }
  size_t live_fds() const { return fds_.size(); }
  size_t live_bos() const { return bos_.size(); }
  size_t live_mappings() const { return mappings_.size(); }
  size_t bos_left_at_close() const { return bos_left_at_close_; }
  int submits() const { return submits_; }
  int bo_creates() const { return bo_creates_; }
  const FakeJob& last_job() const { return last_job_; }
  const std::vector<uint32_t>& cmdstream_words() const { return cmdstream_words_; }
  const uint8_t* bo_data(uint32_t handle) const;

 private:
  struct Bo {
    std::vector<uint8_t> data;
    uint32_t flags;
    bool cmdstream;
  };

  int violation(int error, const std::string& what);
  int dev_query(uint8_t* arg);
  int bo_create(uint8_t* arg);
  int bo_wait(uint8_t* arg);
  int bo_mmap_offset(uint8_t* arg);
  int cmdstream_bo_create(uint8_t* arg);
  int submit(uint8_t* arg);
  int submit_job(const FakeJob& job);
  int gem_close(uint8_t* arg);

  Options options_;
  std::map<int, bool> fds_;
  int next_fd_ = 3;
  std::map<uint32_t, Bo> bos_;
  uint32_t next_handle_ = 1;
  std::map<uint8_t*, std::pair<uint32_t, size_t>> mappings_;  // address -> handle, length
  std::map<unsigned long, std::pair<int, int>> injected_;     // request -> errno, calls to skip
  uint64_t extent_[8] = {};
  std::vector<uint8_t> sram_;
  Npu npu_;
  int wait_result_ = 0;
  int64_t now_ns_ = 1000000000;
  std::string violations_;
  size_t bos_left_at_close_ = 0;
  int submits_ = 0;
  int bo_creates_ = 0;
  FakeJob last_job_ = {};
  std::vector<uint32_t> cmdstream_words_;
};

}  // namespace test_support

#endif  // ETHOSU_RT_TESTS_CORTEX_A_FAKE_DRM_DEVICE_H_
