#include "ethosu_rt/quant.h"

#include <string.h>

#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::DType;
using ethosu_rt::Error;
using ethosu_rt::TensorInfo;
using test_support::LogCapture;

TensorInfo quantized(DType dtype, size_t count, float scale, int32_t zero_point) {
  TensorInfo info = {};
  info.name = "q";
  info.dtype = dtype;
  info.rank = 1;
  info.shape[0] = static_cast<int32_t>(count);
  info.element_count = count;
  info.tensor_bytes = count * ethosu_rt::dtype_size(dtype);
  info.scale = scale;
  info.zero_point = zero_point;
  return info;
}

TEST(Quant, Int8RoundsHalfToEvenAndClamps) {
  const TensorInfo info = quantized(DType::kInt8, 8, 0.5f, 3);
  // x / 0.5 = 0.5, 1.5, 2.5, -0.5, -1.5, 1000, -1000, NaN
  const float nan = __builtin_nanf("");
  const float in[8] = {0.25f, 0.75f, 1.25f, -0.25f, -0.75f, 500.0f, -500.0f, nan};
  int8_t out[8];
  ASSERT_EQ(ethosu_rt::quantize(info, in, 8, out, sizeof(out)), Error::kOk);
  const int8_t want[8] = {3, 5, 5, 3, 1, 127, -128, 3};
  EXPECT_EQ(memcmp(out, want, sizeof(want)), 0);
  float back[8];
  ASSERT_EQ(ethosu_rt::dequantize(info, out, sizeof(out), back, 8), Error::kOk);
  EXPECT_NEAR(back[1], 1.0, 1e-6);
  EXPECT_NEAR(back[5], 62.0, 1e-6);
  EXPECT_NEAR(back[6], -65.5, 1e-6);
}

TEST(Quant, Uint8Int16AndInt32Ranges) {
  uint8_t u8[2];
  const float in[2] = {-10.0f, 300.0f};
  ASSERT_EQ(ethosu_rt::quantize(quantized(DType::kUint8, 2, 1.0f, 128), in, 2, u8, 2), Error::kOk);
  EXPECT_EQ(u8[0], 118u);
  EXPECT_EQ(u8[1], 255u);
  int16_t i16[2];
  const float big[2] = {-1e9f, 1e9f};
  ASSERT_EQ(ethosu_rt::quantize(quantized(DType::kInt16, 2, 1.0f, 0), big, 2, i16, 4), Error::kOk);
  EXPECT_EQ(i16[0], -32768);
  EXPECT_EQ(i16[1], 32767);
  int32_t i32[2];
  ASSERT_EQ(ethosu_rt::quantize(quantized(DType::kInt32, 2, 1.0f, 0), big, 2, i32, 8), Error::kOk);
  EXPECT_EQ(i32[0], -1000000000);
  EXPECT_EQ(i32[1], 1000000000);
  const float huge[1] = {1e30f};
  ASSERT_EQ(ethosu_rt::quantize(quantized(DType::kInt32, 1, 1.0f, 0), huge, 1, i32, 4), Error::kOk);
  EXPECT_EQ(i32[0], 2147483647);
}

TEST(Quant, RefusesUnquantizedTensorsAndWrongSizes) {
  LogCapture log;
  const float in[2] = {0, 0};
  uint8_t out[8];
  EXPECT_EQ(ethosu_rt::quantize(quantized(DType::kBool, 2, 1.0f, 0), in, 2, out, 2),
            Error::kUnsupported);
  EXPECT_LOG(log,
             "q: dtype to (de)quantize must be 1 (int8), 2 (uint8), 3 (int16) or 4 (int32); "
             "got 5");
  EXPECT_EQ(ethosu_rt::quantize(quantized(DType::kInt8, 2, 0.0f, 0), in, 2, out, 2),
            Error::kBadValue);
  EXPECT_LOG(log, "q: scale must be > 0 (a quantized tensor)");
  EXPECT_EQ(ethosu_rt::quantize(quantized(DType::kInt8, 2, 1.0f, 0), in, 1, out, 2),
            Error::kBadArgument);
  EXPECT_LOG(log, "float count (the tensor's elements) must be 2; got 1");
  float back[2];
  EXPECT_EQ(ethosu_rt::dequantize(quantized(DType::kInt16, 2, 1.0f, 0), out, 3, back, 2),
            Error::kBadArgument);
  EXPECT_LOG(log, "input bytes (the tensor's bytes) must be 4; got 3");
}

}  // namespace
