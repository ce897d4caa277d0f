#include "ethosu_rt/linux_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace ethosu_rt {
namespace {

class RealLinuxSys final : public LinuxSys {
 public:
  int open(const char* path, int flags) override {
    const int fd = ::open(path, flags);
    return fd >= 0 ? fd : -errno;
  }

  int close(int fd) override { return ::close(fd) == 0 ? 0 : -errno; }

  int ioctl(int fd, unsigned long request, void* arg) override {
    int result;
    do {
      result = ::ioctl(fd, request, arg);
    } while (result == -1 && (errno == EINTR || errno == EAGAIN));
    return result >= 0 ? result : -errno;
  }

  int mmap(size_t length, int prot, int flags, int fd, uint64_t offset, void** address) override {
    void* p = ::mmap(nullptr, length, prot, flags, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) {
      return -errno;
    }
    *address = p;
    return 0;
  }

  int munmap(void* address, size_t length) override {
    return ::munmap(address, length) == 0 ? 0 : -errno;
  }

  int64_t monotonic_ns() override {
    timespec now = {};
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  }
};

}  // namespace

LinuxSys& real_linux_sys() {
  static RealLinuxSys sys;
  return sys;
}

}  // namespace ethosu_rt
