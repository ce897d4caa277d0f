#include "ethosu_rt/io.h"

#include <string.h>

#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

// "tensor 'x' (int8)", composed only when a check fails (LazyWhere); context: the TensorInfo.
void format_tensor(TextBuffer& t, const LazyWhere& w) {
  const TensorInfo& info = *static_cast<const TensorInfo*>(w.context);
  t.add("tensor '").add(info.name != nullptr ? info.name : "?").add("' (");
  t.add(dtype_name(info.dtype)).add(")");
}

LazyWhere tensor_where(const TensorInfo& info) { return {format_tensor, &info, {0, 0, 0}}; }

int8_t sign_extend4(unsigned nibble) {
  return static_cast<int8_t>(static_cast<int>(nibble & 0xFu) - ((nibble & 0x8u) != 0 ? 16 : 0));
}

bool overlaps(const void* a, const void* b, size_t len) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a);
  const uintptr_t y = reinterpret_cast<uintptr_t>(b);
  return len != 0 && x < y + len && y < x + len;
}

// The NPU area of an IO inside its region, checked to lie within the region.
Error io_area(const Regions& regions, const TensorInfo& info, uint8_t** area, size_t* len) {
  const LazyWhere where = tensor_where(info);
  ETHOSU_RT_CHECK(info.region, <, kNumRegions, Error::kBadArgument, where, "region");
  const Region& r = regions.region[info.region];
  ETHOSU_RT_CHECK_TRUE(r.data != nullptr, Error::kBadArgument, where, "its region needs a buffer");
  ETHOSU_RT_CHECK(info.offset, <=, r.size, Error::kBufferTooSmall, where,
                  "IO offset (region buffer bytes)");
  ETHOSU_RT_CHECK(info.io_bytes, <=, r.size - info.offset, Error::kBufferTooSmall, where,
                  "IO bytes (region buffer bytes after the offset)");
  *area = r.data + info.offset;
  *len = r.size - info.offset;
  return Error::kOk;
}

Error permute(const TensorInfo& info, const void* src, void* dst, size_t len, bool to_npu) {
  const LazyWhere where = tensor_where(info);
  ETHOSU_RT_CHECK(len, ==, info.tensor_bytes, Error::kBadArgument, where,
                  "buffer bytes (the tensor's bytes)");
  ETHOSU_RT_CHECK_TRUE(src != nullptr && dst != nullptr, Error::kBadArgument, where,
                       "buffers must not be null");
  ETHOSU_RT_CHECK_TRUE(!overlaps(src, dst, len), Error::kBadArgument, where,
                       "source and destination must not overlap");
  if (info.layout == Layout::kSame) {
    memcpy(dst, src, len);
    return Error::kOk;
  }
  // shape holds the NPU (NHWC) order; torch holds the same data as NCHW. Only C moves
  // relative to the H x W plane, so that plane is walked as one dimension.
  const size_t n = static_cast<size_t>(info.shape[0]);
  const size_t hw = static_cast<size_t>(info.shape[1]) * static_cast<size_t>(info.shape[2]);
  const size_t c = static_cast<size_t>(info.shape[3]);
  const size_t elem = dtype_size(info.dtype);
  const uint8_t* in = static_cast<const uint8_t*>(src);
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (size_t b = 0; b < n; ++b) {
    for (size_t p = 0; p < hw; ++p) {
      for (size_t ch = 0; ch < c; ++ch) {
        const size_t nhwc = (b * hw + p) * c + ch;
        const size_t nchw = (b * c + ch) * hw + p;
        memcpy(out + (to_npu ? nhwc : nchw) * elem, in + (to_npu ? nchw : nhwc) * elem, elem);
      }
    }
  }
  return Error::kOk;
}

}  // namespace

Error plan_copy(const TensorInfo& info, CopyPlan* plan) {
  const LazyWhere where = tensor_where(info);
  size_t rows = 1;
  for (size_t d = 0; d + 1 < kMaxRank; ++d) {
    rows *= static_cast<size_t>(info.npu_shape[d]);  // no overflow: io_bytes was checked
  }
  const size_t npu_row = static_cast<size_t>(info.npu_shape[kMaxRank - 1]) * info.elem_size;
  ETHOSU_RT_CHECK(rows * npu_row, ==, info.io_bytes, Error::kBadArgument, where,
                  "rows x row bytes (IO bytes)");
  ETHOSU_RT_CHECK(dtype_size(info.dtype), ==, info.elem_size, Error::kUnsupported, where,
                  "bytes per element (Vela's elem_size)");
  ETHOSU_RT_CHECK_TRUE(info.dtype != DType::kFloat32, Error::kUnsupported, where,
                       "NPU data must not be float32");
  ETHOSU_RT_CHECK(info.tensor_bytes % rows, ==, size_t{0}, Error::kUnsupported, where,
                  "tensor bytes modulo the NPU row count");
  const size_t tensor_row = info.tensor_bytes / rows;
  *plan = CopyPlan{CopyKind::kPlain, rows, npu_row, tensor_row};
  if (tensor_row == npu_row) {
    return Error::kOk;
  }
  if (tensor_row < npu_row) {
    ETHOSU_RT_CHECK(tensor_row % info.elem_size, ==, size_t{0}, Error::kUnsupported, where,
                    "tensor row bytes modulo elem_size");
    plan->kind = CopyKind::kPadded;
    return Error::kOk;
  }
  // The tensor row is longer than the NPU row: only int4 values packed two per byte for an
  // int8 tensor are understood. Anything else would read past the NPU row.
  ETHOSU_RT_CHECK(tensor_row, ==, 2 * npu_row, Error::kUnsupported, where,
                  "tensor row bytes, when longer than the NPU row (int4 packing only)");
  ETHOSU_RT_CHECK_TRUE(info.dtype == DType::kInt8, Error::kUnsupported, where,
                       "int4-packed NPU data needs an int8 tensor");
  plan->kind = CopyKind::kInt4;
  return Error::kOk;
}

Error write_input(const TensorInfo& info, const void* src, size_t src_len, uint8_t* dst,
                  size_t dst_len) {
  const LazyWhere where = tensor_where(info);
  CopyPlan plan;
  ETHOSU_RT_TRY(plan_copy(info, &plan));
  ETHOSU_RT_CHECK(src_len, ==, info.tensor_bytes, Error::kBadArgument, where,
                  "input bytes (the tensor's bytes)");
  ETHOSU_RT_CHECK(dst_len, >=, info.io_bytes, Error::kBufferTooSmall, where,
                  "NPU area bytes (IO bytes)");
  ETHOSU_RT_CHECK_TRUE(src != nullptr && dst != nullptr, Error::kBadArgument, where,
                       "buffers must not be null");
  const uint8_t* in = static_cast<const uint8_t*>(src);
  switch (plan.kind) {
    case CopyKind::kPlain:
      memcpy(dst, in, info.io_bytes);
      break;
    case CopyKind::kPadded:
      for (size_t r = 0; r < plan.rows; ++r) {
        uint8_t* row = dst + r * plan.npu_row;
        memcpy(row, in + r * plan.tensor_row, plan.tensor_row);
        memset(row + plan.tensor_row, 0, plan.npu_row - plan.tensor_row);
      }
      break;
    case CopyKind::kInt4:
      for (size_t i = 0; i < info.io_bytes; ++i) {
        const int8_t lo = static_cast<int8_t>(in[2 * i]);
        const int8_t hi = static_cast<int8_t>(in[2 * i + 1]);
        ETHOSU_RT_CHECK_ONE_OF(lo >= -8 && lo <= 7 && hi >= -8 && hi <= 7,
                               (lo >= -8 && lo <= 7) ? hi : lo, Error::kBadValue, where,
                               "int4 input value", "in [-8, 7]");
        dst[i] = static_cast<uint8_t>((static_cast<unsigned>(lo) & 0xFu) |
                                      ((static_cast<unsigned>(hi) & 0xFu) << 4));
      }
      break;
  }
  return Error::kOk;
}

Error read_output(const TensorInfo& info, const uint8_t* src, size_t src_len, void* dst,
                  size_t dst_len) {
  const LazyWhere where = tensor_where(info);
  CopyPlan plan;
  ETHOSU_RT_TRY(plan_copy(info, &plan));
  ETHOSU_RT_CHECK(src_len, >=, info.io_bytes, Error::kBufferTooSmall, where,
                  "NPU area bytes (IO bytes)");
  ETHOSU_RT_CHECK(dst_len, ==, info.tensor_bytes, Error::kBadArgument, where,
                  "output bytes (the tensor's bytes)");
  ETHOSU_RT_CHECK_TRUE(src != nullptr && dst != nullptr, Error::kBadArgument, where,
                       "buffers must not be null");
  uint8_t* out = static_cast<uint8_t*>(dst);
  switch (plan.kind) {
    case CopyKind::kPlain:
      memcpy(out, src, info.tensor_bytes);
      break;
    case CopyKind::kPadded:
      // tensor_row < npu_row (plan_copy), so every row read stays inside its NPU row.
      for (size_t r = 0; r < plan.rows; ++r) {
        memcpy(out + r * plan.tensor_row, src + r * plan.npu_row, plan.tensor_row);
      }
      break;
    case CopyKind::kInt4:
      for (size_t i = 0; i < info.io_bytes; ++i) {
        out[2 * i] = static_cast<uint8_t>(sign_extend4(src[i]));
        out[2 * i + 1] = static_cast<uint8_t>(sign_extend4(src[i] >> 4));
      }
      break;
  }
  return Error::kOk;
}

Error copy_input(const Model& model, const Regions& regions, size_t index, const void* src,
                 size_t src_len) {
  TensorInfo info;
  ETHOSU_RT_TRY(get_input(model, index, &info));
  uint8_t* area = nullptr;
  size_t area_len = 0;
  ETHOSU_RT_TRY(io_area(regions, info, &area, &area_len));
  return write_input(info, src, src_len, area, area_len);
}

Error copy_output(const Model& model, const Regions& regions, size_t index, void* dst,
                  size_t dst_len) {
  TensorInfo info;
  ETHOSU_RT_TRY(get_output(model, index, &info));
  uint8_t* area = nullptr;
  size_t area_len = 0;
  ETHOSU_RT_TRY(io_area(regions, info, &area, &area_len));
  return read_output(info, area, area_len, dst, dst_len);
}

Error to_npu_order(const TensorInfo& info, const void* src, void* dst, size_t len) {
  return permute(info, src, dst, len, true);
}

Error from_npu_order(const TensorInfo& info, const void* src, void* dst, size_t len) {
  return permute(info, src, dst, len, false);
}

}  // namespace ethosu_rt
