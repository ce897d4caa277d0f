// The system calls the Linux backend makes, behind one small interface so tests can run
// the backend against a fake device. Every call returns a negative errno on failure
// (never sets errno for the caller to read).
#ifndef ETHOSU_RT_LINUX_SYS_H_
#define ETHOSU_RT_LINUX_SYS_H_

#include <stddef.h>
#include <stdint.h>

namespace ethosu_rt {

class LinuxSys {
 public:
  virtual ~LinuxSys() = default;
  virtual int open(const char* path, int flags) = 0;  // a file descriptor or -errno
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;  // >= 0 or -errno
  virtual int mmap(size_t length, int prot, int flags, int fd, uint64_t offset,
                   void** address) = 0;  // 0 or -errno
  virtual int munmap(void* address, size_t length) = 0;
  virtual int64_t monotonic_ns() = 0;  // CLOCK_MONOTONIC, the clock of DRM timeouts
};

// The real calls: open(2), close(2), ioctl(2) retried on EINTR/EAGAIN as libdrm does,
// mmap(2), munmap(2), clock_gettime(CLOCK_MONOTONIC).
LinuxSys& real_linux_sys();

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_LINUX_SYS_H_
