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

// Round half to even without libm, matching torch's nearbyint in the default mode.
double round_half_even(double v) {
  if (!(v > -4503599627370496.0 && v < 4503599627370496.0)) {
    return v;  // |v| >= 2^52 is already integral (or inf)
  }
  const double t = static_cast<double>(static_cast<int64_t>(v));  // toward zero
  const double frac = v - t;
  if (frac > 0.5 || (frac == 0.5 && static_cast<int64_t>(t) % 2 != 0)) {
    return t + 1.0;
  }
  if (frac < -0.5 || (frac == -0.5 && static_cast<int64_t>(t) % 2 != 0)) {
    return t - 1.0;
  }
  return t;
}

void store(DType dtype, void* out, size_t index, int64_t q) {
  switch (dtype) {
    case DType::kInt8: {
      const int8_t v = static_cast<int8_t>(q);
      memcpy(static_cast<uint8_t*>(out) + index, &v, 1);
      break;
    }
    case DType::kUint8: {
      const uint8_t v = static_cast<uint8_t>(q);
      memcpy(static_cast<uint8_t*>(out) + index, &v, 1);
      break;
    }
    case DType::kInt16: {
      const int16_t v = static_cast<int16_t>(q);
      memcpy(static_cast<uint8_t*>(out) + 2 * index, &v, 2);
      break;
    }
    default: {
      const int32_t v = static_cast<int32_t>(q);
      memcpy(static_cast<uint8_t*>(out) + 4 * index, &v, 4);
      break;
    }
  }
}

int64_t load(DType dtype, const void* in, size_t index) {
  const uint8_t* p = static_cast<const uint8_t*>(in);
  switch (dtype) {
    case DType::kInt8: {
      int8_t v;
      memcpy(&v, p + index, 1);
      return v;
    }
    case DType::kUint8:
      return p[index];
    case DType::kInt16: {
      int16_t v;
      memcpy(&v, p + 2 * index, 2);
      return v;
    }
    default: {
      int32_t v;
      memcpy(&v, p + 4 * index, 4);
      return v;
    }
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
    store(info.dtype, out, i, static_cast<int64_t>(q));
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
    const int64_t q = load(info.dtype, in, i) - info.zero_point;
    out[i] = static_cast<float>(static_cast<double>(q) * info.scale);
  }
  return Error::kOk;
}

}  // namespace ethosu_rt
