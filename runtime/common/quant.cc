#include "ethosu_rt/quant.h"

#include <stdint.h>
#include <string.h>

#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

struct Range {
  double lo;
  double hi;
};

bool quantized_range(DType dtype, Range* range) {
  switch (dtype) {
    case DType::kInt8:
      *range = Range{-128.0, 127.0};
      return true;
    case DType::kUint8:
      *range = Range{0.0, 255.0};
      return true;
    case DType::kInt16:
      *range = Range{-32768.0, 32767.0};
      return true;
    case DType::kInt32:
      *range = Range{-2147483648.0, 2147483647.0};
      return true;
    default:
      return false;
  }
}

// Round half to even without libm, matching torch's nearbyint in the default mode: below
// 2^52, adding and subtracting 2^52 leaves the nearest integer (ties to even), and it
// needs no 64-bit integer conversion routine.
double round_half_even(double v) {
  constexpr double kTwo52 = 4503599627370496.0;
  if (!(v > -kTwo52 && v < kTwo52)) {
    return v;  // |v| >= 2^52 is already integral (or inf)
  }
  // Not folded away: without -ffast-math the compiler keeps both roundings.
  return v < 0 ? (v - kTwo52) + kTwo52 : (v + kTwo52) - kTwo52;
}

// Element `index` of a tensor of `dtype` (int8, uint8, int16 or int32 by now).
void store(DType dtype, void* out, size_t index, int32_t q) {
  const size_t size = dtype_size(dtype);
  uint8_t* p = static_cast<uint8_t*>(out) + index * size;
  // Little-endian: the low `size` bytes of q are the narrowed value.
  for (size_t i = 0; i < size; ++i) {
    p[i] = static_cast<uint8_t>(static_cast<uint32_t>(q) >> (8 * i));
  }
}

int32_t load(DType dtype, const void* in, size_t index) {
  const uint8_t* p = static_cast<const uint8_t*>(in);
  switch (dtype) {
    case DType::kInt8:
      return static_cast<int8_t>(p[index]);
    case DType::kUint8:
      return p[index];
    case DType::kInt16:
      return static_cast<int16_t>(load_u16(p + 2 * index));
    default:
      return static_cast<int32_t>(load_u32(p + 4 * index));
  }
}

Error check_quantized(const TensorInfo& info, Range* range) {
  ETHOSU_RT_CHECK_ONE_OF(quantized_range(info.dtype, range), static_cast<uint32_t>(info.dtype),
                         Error::kUnsupported, info.name, "dtype to (de)quantize",
                         "1 (int8), 2 (uint8), 3 (int16) or 4 (int32)");
  ETHOSU_RT_CHECK_TRUE(info.scale > 0.0f, Error::kBadValue, info.name,
                       "scale must be > 0 (a quantized tensor)");
  return Error::kOk;
}

}  // namespace

Error quantize(const TensorInfo& info, const float* in, size_t count, void* out, size_t out_len) {
  Range range = {0.0, 0.0};
  ETHOSU_RT_TRY(check_quantized(info, &range));
  ETHOSU_RT_CHECK(count, ==, info.element_count, Error::kBadArgument, info.name,
                  "float count (the tensor's elements)");
  ETHOSU_RT_CHECK(out_len, ==, info.tensor_bytes, Error::kBadArgument, info.name,
                  "output bytes (the tensor's bytes)");
  ETHOSU_RT_CHECK_TRUE(in != nullptr && out != nullptr, Error::kBadArgument, info.name,
                       "buffers must not be null");
  const double scale = info.scale;
  for (size_t i = 0; i < count; ++i) {
    const double x = in[i];
    double q = x == x ? round_half_even(x / scale) + info.zero_point : info.zero_point;
    q = q < range.lo ? range.lo : (q > range.hi ? range.hi : q);
    store(info.dtype, out, i, static_cast<int32_t>(q));
  }
  return Error::kOk;
}

Error dequantize(const TensorInfo& info, const void* in, size_t in_len, float* out, size_t count) {
  Range range = {0.0, 0.0};
  ETHOSU_RT_TRY(check_quantized(info, &range));
  ETHOSU_RT_CHECK(in_len, ==, info.tensor_bytes, Error::kBadArgument, info.name,
                  "input bytes (the tensor's bytes)");
  ETHOSU_RT_CHECK(count, ==, info.element_count, Error::kBadArgument, info.name,
                  "float count (the tensor's elements)");
  ETHOSU_RT_CHECK_TRUE(in != nullptr && out != nullptr, Error::kBadArgument, info.name,
                       "buffers must not be null");
  for (size_t i = 0; i < count; ++i) {
    // In double, so q - zero_point cannot overflow (both may be any int32).
    const double q = static_cast<double>(load(info.dtype, in, i)) - info.zero_point;
    out[i] = static_cast<float>(q * info.scale);
  }
  return Error::kOk;
}

}  // namespace ethosu_rt
