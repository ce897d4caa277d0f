// Captures the runtime's check failures for assertions on the message text.
#ifndef ETHOSU_RT_TESTS_SUPPORT_LOG_CAPTURE_H_
#define ETHOSU_RT_TESTS_SUPPORT_LOG_CAPTURE_H_

#include "ethosu_rt/check.h"

namespace test_support {

class LogCapture {
 public:
  LogCapture() { ethosu_rt::set_log_sink(&LogCapture::sink, this); }
  ~LogCapture() { ethosu_rt::set_log_sink(nullptr, nullptr); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  const char* last() const { return last_; }
  int count() const { return count_; }
  void clear() {
    last_[0] = '\0';
    count_ = 0;
  }

 private:
  static void sink(const ethosu_rt::CheckFailure& failure, void* user) {
    LogCapture* self = static_cast<LogCapture*>(user);
    ethosu_rt::format_check(failure, self->last_, sizeof(self->last_));
    ++self->count_;
  }

  char last_[512] = {};
  int count_ = 0;
};

}  // namespace test_support

// Expects the last logged failure to contain `text`. With ETHOSU_RT_CHECK_TEXT=0 the
// runtime logs no descriptions, so only the fact that something was logged is checked.
#if ETHOSU_RT_CHECK_TEXT
#define EXPECT_LOG(log, text) EXPECT_CONTAINS((log).last(), text)
#else
#define EXPECT_LOG(log, text) EXPECT_GT((log).count(), 0)
#endif

#endif  // ETHOSU_RT_TESTS_SUPPORT_LOG_CAPTURE_H_
