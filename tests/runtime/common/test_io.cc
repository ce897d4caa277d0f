#include "ethosu_rt/io.h"

#include <stdlib.h>
#include <string.h>

#include "artifact_builder.h"
#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::CopyKind;
using ethosu_rt::CopyPlan;
using ethosu_rt::DType;
using ethosu_rt::Error;
using ethosu_rt::TensorInfo;
using test_support::LogCapture;

// A tensor of `dtype` with NPU rows of `npu_c` elements and tensor rows of `tensor_c`.
TensorInfo tensor(DType dtype, int32_t rows, int32_t npu_c, int32_t tensor_c, size_t elem) {
  TensorInfo info = {};
  const int32_t npu_shape[6] = {1, 1, 1, 1, rows, npu_c};
  memcpy(info.npu_shape, npu_shape, sizeof(npu_shape));
  info.elem_size = elem;
  info.region = 1;
  info.io_bytes = static_cast<size_t>(rows * npu_c) * elem;
  info.name = "t";
  info.dtype = dtype;
  info.rank = 2;
  info.shape[0] = rows;
  info.shape[1] = tensor_c;
  info.element_count = static_cast<size_t>(rows * tensor_c);
  info.tensor_bytes = info.element_count * ethosu_rt::dtype_size(dtype);
  info.scale = 1.0f;
  return info;
}

// Memory that ends exactly at `size` on hosted builds, so ASan catches any overread.
struct Exact {
  explicit Exact(size_t n) : size(n) {
#if defined(ETHOSU_RT_TEST_GTEST)
    data = static_cast<uint8_t*>(malloc(n));
#else
    static uint8_t pool[4][4096];
    static int next = 0;
    data = pool[next++ % 4];
#endif
  }
  ~Exact() {
#if defined(ETHOSU_RT_TEST_GTEST)
    free(data);
#endif
  }
  Exact(const Exact&) = delete;
  Exact& operator=(const Exact&) = delete;
  uint8_t* data;
  size_t size;
};

TEST(IoPlan, PlainPaddedAndInt4) {
  CopyPlan plan;
  ASSERT_EQ(ethosu_rt::plan_copy(tensor(DType::kInt8, 4, 16, 16, 1), &plan), Error::kOk);
  EXPECT_EQ(plan.kind, CopyKind::kPlain);
  ASSERT_EQ(ethosu_rt::plan_copy(tensor(DType::kInt16, 4, 16, 10, 2), &plan), Error::kOk);
  EXPECT_EQ(plan.kind, CopyKind::kPadded);
  EXPECT_EQ(plan.rows, 4u);
  EXPECT_EQ(plan.npu_row, 32u);
  EXPECT_EQ(plan.tensor_row, 20u);
  ASSERT_EQ(ethosu_rt::plan_copy(tensor(DType::kInt8, 4, 8, 16, 1), &plan), Error::kOk);
  EXPECT_EQ(plan.kind, CopyKind::kInt4);
}

// Review finding 1: a chunked copy that steps the source by its own (smaller) row while
// copying the destination's (larger) row reads past every source row. Such a layout is
// refused up front instead.
TEST(IoPlan, TensorRowsLongerThanNpuRowsAreRefusedUnlessInt4) {
  LogCapture log;
  CopyPlan plan;
  EXPECT_EQ(ethosu_rt::plan_copy(tensor(DType::kInt8, 4, 8, 12, 1), &plan), Error::kUnsupported);
  EXPECT_LOG(log,
             "tensor 't' (int8): tensor row bytes, when longer than the NPU row (int4 "
             "packing only) must be 16; got 12");
  EXPECT_EQ(ethosu_rt::plan_copy(tensor(DType::kUint8, 4, 8, 16, 1), &plan), Error::kUnsupported);
  EXPECT_LOG(log, "tensor 't' (uint8): int4-packed NPU data needs an int8 tensor");
  // The output path never gets as far as copying: nothing is read from `src`.
  const TensorInfo info = tensor(DType::kInt8, 4, 8, 12, 1);
  Exact src(info.io_bytes);
  uint8_t dst[48];
  EXPECT_EQ(ethosu_rt::read_output(info, src.data, src.size, dst, sizeof(dst)),
            Error::kUnsupported);
}

TEST(IoPlan, RowsMustDivideTheTensor) {
  LogCapture log;
  TensorInfo info = tensor(DType::kInt8, 4, 16, 16, 1);
  info.tensor_bytes = 62;
  info.element_count = 62;
  CopyPlan plan;
  EXPECT_EQ(ethosu_rt::plan_copy(info, &plan), Error::kUnsupported);
  EXPECT_LOG(log, "tensor bytes modulo the NPU row count must be 0; got 2");
}

TEST(IoCopy, InputPaddingIsInsertedAndZeroed) {
  const TensorInfo info = tensor(DType::kInt8, 3, 8, 5, 1);
  uint8_t src[15];
  for (size_t i = 0; i < sizeof(src); ++i) {
    src[i] = static_cast<uint8_t>(i + 1);
  }
  uint8_t dst[24 + 4];
  memset(dst, 0xEE, sizeof(dst));
  ASSERT_EQ(ethosu_rt::write_input(info, src, sizeof(src), dst, 24), Error::kOk);
  const uint8_t want[24] = {1,  2, 3, 4, 5,  0,  0,  0,  6,  7, 8, 9,
                            10, 0, 0, 0, 11, 12, 13, 14, 15, 0, 0, 0};
  EXPECT_EQ(memcmp(dst, want, sizeof(want)), 0);
  EXPECT_EQ(dst[24], 0xEEu);  // nothing past the IO area
}

// Review finding 2: the NPU writes io_bytes (rows padded to 8) while the tensor holds only
// 5 per row. Exactly tensor_bytes reach the destination; the source is read only within
// its io_bytes.
TEST(IoCopy, OutputLargerThanTheTensorIsStrippedIntoTheTensor) {
  const TensorInfo info = tensor(DType::kInt8, 3, 8, 5, 1);
  Exact src(info.io_bytes);
  for (size_t i = 0; i < src.size; ++i) {
    src.data[i] = static_cast<uint8_t>(i);
  }
  uint8_t dst[15 + 8];
  memset(dst, 0xEE, sizeof(dst));
  ASSERT_EQ(ethosu_rt::read_output(info, src.data, src.size, dst, 15), Error::kOk);
  const uint8_t want[15] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20};
  EXPECT_EQ(memcmp(dst, want, sizeof(want)), 0);
  for (size_t i = 15; i < sizeof(dst); ++i) {
    EXPECT_EQ(dst[i], 0xEEu);
  }
}

TEST(IoCopy, OutputSourceMustHoldTheFullIoBytes) {
  LogCapture log;
  const TensorInfo info = tensor(DType::kInt8, 3, 8, 5, 1);
  Exact src(info.tensor_bytes);  // a staging buffer sized by the tensor: too small
  uint8_t dst[15];
  EXPECT_EQ(ethosu_rt::read_output(info, src.data, src.size, dst, sizeof(dst)),
            Error::kBufferTooSmall);
  EXPECT_LOG(log, "tensor 't' (int8): NPU area bytes (IO bytes) must be >= 24; got 15");
  EXPECT_EQ(ethosu_rt::read_output(info, src.data, 24, dst, 14), Error::kBadArgument);
  EXPECT_LOG(log, "output bytes (the tensor's bytes) must be 15; got 14");
}

TEST(IoCopy, InputSizeIsCheckedBeforeAnyByteMoves) {
  LogCapture log;
  const TensorInfo info = tensor(DType::kInt8, 2, 8, 8, 1);
  uint8_t src[32] = {};
  uint8_t dst[16];
  memset(dst, 0xEE, sizeof(dst));
  EXPECT_EQ(ethosu_rt::write_input(info, src, sizeof(src), dst, sizeof(dst)), Error::kBadArgument);
  EXPECT_LOG(log, "input bytes (the tensor's bytes) must be 16; got 32");
  EXPECT_EQ(ethosu_rt::write_input(info, src, 16, dst, 15), Error::kBufferTooSmall);
  for (uint8_t b : dst) {
    EXPECT_EQ(b, 0xEEu);
  }
}

TEST(IoCopy, Int4PackAndUnpackRoundTrip) {
  const TensorInfo info = tensor(DType::kInt8, 2, 2, 4, 1);
  const int8_t values[8] = {-8, 7, 0, -1, 3, -4, 1, 2};
  uint8_t packed[4];
  ASSERT_EQ(ethosu_rt::write_input(info, values, sizeof(values), packed, sizeof(packed)),
            Error::kOk);
  EXPECT_EQ(packed[0], 0x78u);  // low nibble first: -8 = 0x8, 7 = 0x7
  EXPECT_EQ(packed[1], 0xF0u);
  int8_t back[8];
  ASSERT_EQ(ethosu_rt::read_output(info, packed, sizeof(packed), back, sizeof(back)), Error::kOk);
  EXPECT_EQ(memcmp(back, values, sizeof(values)), 0);
  const int8_t too_big[8] = {0, 0, 9, 0, 0, 0, 0, 0};
  LogCapture log;
  EXPECT_EQ(ethosu_rt::write_input(info, too_big, sizeof(too_big), packed, sizeof(packed)),
            Error::kBadValue);
  EXPECT_LOG(log, "int4 input value must be in [-8, 7]; got 9");
}

TEST(IoCopy, RegionsAreCheckedAgainstOffsetAndIoBytes) {
  test_support::Sample sample;
  test_support::make_sample(&sample);
  static test_support::ArtifactBuffer buffer;
  buffer.size = test_support::build_artifact(sample, buffer.bytes, sizeof(buffer.bytes));
  ethosu_rt::Model model;
  ASSERT_EQ(ethosu_rt::parse_artifact(buffer.bytes, buffer.size, &model), Error::kOk);
  static uint8_t scratch[2048];
  static uint8_t input[1024];
  static uint8_t output[1024];
  for (size_t i = 0; i < sizeof(input); ++i) {
    input[i] = static_cast<uint8_t>(i * 7);
  }
  ethosu_rt::Regions regions = {};
  LogCapture log;
  EXPECT_EQ(ethosu_rt::copy_input(model, regions, 0, input, sizeof(input)), Error::kBadArgument);
  EXPECT_LOG(log, "tensor 'x' (int8): its region needs a buffer");
  regions.region[1] = ethosu_rt::Region{scratch, 2000};
  EXPECT_EQ(ethosu_rt::copy_input(model, regions, 0, input, sizeof(input)), Error::kBufferTooSmall);
  EXPECT_LOG(log, "IO bytes (region buffer bytes after the offset) must be <= 976; got 1024");
  regions.region[1] = ethosu_rt::Region{scratch, sizeof(scratch)};
  ASSERT_EQ(ethosu_rt::copy_input(model, regions, 0, input, sizeof(input)), Error::kOk);
  EXPECT_EQ(memcmp(scratch + 1024, input, sizeof(input)), 0);
  memcpy(scratch, scratch + 1024, 1024);  // what an identity network would write
  ASSERT_EQ(ethosu_rt::copy_output(model, regions, 0, output, sizeof(output)), Error::kOk);
  EXPECT_EQ(memcmp(output, input, sizeof(input)), 0);
}

TEST(IoOrder, NchwToNhwcAndBack) {
  TensorInfo info = tensor(DType::kInt16, 1, 1, 1, 2);
  info.layout = ethosu_rt::Layout::kNhwcForNchw;
  info.rank = 4;
  const int32_t nhwc[4] = {1, 2, 3, 2};  // N, H, W, C on the NPU
  memcpy(info.shape, nhwc, sizeof(nhwc));
  info.element_count = 12;
  info.tensor_bytes = 24;
  int16_t nchw[12];
  for (int i = 0; i < 12; ++i) {
    nchw[i] = static_cast<int16_t>(i);  // c * 6 + h * 3 + w
  }
  int16_t npu[12];
  ASSERT_EQ(ethosu_rt::to_npu_order(info, nchw, npu, sizeof(npu)), Error::kOk);
  const int16_t want[12] = {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11};
  EXPECT_EQ(memcmp(npu, want, sizeof(want)), 0);
  int16_t back[12];
  ASSERT_EQ(ethosu_rt::from_npu_order(info, npu, back, sizeof(back)), Error::kOk);
  EXPECT_EQ(memcmp(back, nchw, sizeof(nchw)), 0);
  LogCapture log;
  EXPECT_EQ(ethosu_rt::to_npu_order(info, npu, npu + 1, 22), Error::kBadArgument);
  EXPECT_EQ(ethosu_rt::to_npu_order(info, npu, npu + 1, 24), Error::kBadArgument);
  EXPECT_LOG(log, "source and destination must not overlap");
}

}  // namespace
