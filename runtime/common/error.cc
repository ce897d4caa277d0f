#include "ethosu_rt/error.h"

namespace ethosu_rt {

const char* error_name(Error error) {
  switch (error) {
    case Error::kOk:
      return "ok";
    case Error::kTruncated:
      return "truncated";
    case Error::kMisaligned:
      return "misaligned";
    case Error::kBadMagic:
      return "bad magic";
    case Error::kBadValue:
      return "bad value";
    case Error::kOverflow:
      return "overflow";
    case Error::kUnsupported:
      return "unsupported";
    case Error::kBufferTooSmall:
      return "buffer too small";
    case Error::kBadArgument:
      return "bad argument";
    case Error::kBadState:
      return "bad state";
    case Error::kDriver:
      return "driver error";
    case Error::kDevice:
      return "device error";
    case Error::kNoDevice:
      return "no device";
    case Error::kTimeout:
      return "timeout";
  }
  return "unknown error";
}

}  // namespace ethosu_rt
