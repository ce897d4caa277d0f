// The one error type of the runtime. Every fallible function returns an Error;
// the details (file:line, what was checked, the values) go to the log sink
// through the check macros in check.h, so the error itself stays one byte.
#ifndef ETHOSU_RT_ERROR_H_
#define ETHOSU_RT_ERROR_H_

#include <stdint.h>

namespace ethosu_rt {

enum class [[nodiscard]] Error : uint8_t{
    kOk = 0,
    kTruncated,       // a length points past the end of the buffer it lives in
    kMisaligned,      // a pointer or size breaks a 16-byte (or cache-line) rule
    kBadMagic,        // a FourCC or block name is not the expected one
    kBadValue,        // a field holds a value outside its allowed set
    kOverflow,        // size arithmetic would overflow size_t
    kUnsupported,     // well-formed, but this runtime does not handle it
    kBufferTooSmall,  // a caller-supplied buffer is smaller than needed
    kBadArgument,     // a caller passed an index, pointer or length that is wrong
    kBadState,        // called in the wrong order (e.g. invoke before prepare)
    kDriver,          // the Ethos-U core driver reported a failure
    kDevice,          // a Linux system call on the NPU device failed
    kNoDevice,        // the NPU device node does not exist or cannot be opened
    kTimeout,         // the NPU did not finish in time
};

// Short stable name of an error, e.g. "truncated"; never null.
const char* error_name(Error error);

inline bool ok(Error error) { return error == Error::kOk; }

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_ERROR_H_
