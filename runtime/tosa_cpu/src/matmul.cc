// MATMUL, as the TOSA 1.0 pseudo-code: int8 x int8 -> int32 and int16 x int16 -> int48, zero
// points subtracted before the product. The int8 one through the ISA's dot product
// (dot_isa.h).
#include "dot_isa.h"
#include "kernels.h"
#include "tosa_cpu/ops.h"
#include "window.h"

namespace tosa_cpu {
namespace {

// int8 MATMUL through the ISA's dot product: B's column is gathered into a contiguous
// chunk (on the stack) and reused for every row of A.
void matmul_int8(const Tensor& a, const Tensor& b, const Tensor& out, int32_t n, int32_t h,
                 int32_t c, int32_t w, int32_t azp, int32_t bzp) {
  constexpr int32_t kChunk = 256;
  int8_t column[kChunk];
  const int8_t* ap = static_cast<const int8_t*>(a.data);
  const int8_t* bp = static_cast<const int8_t*>(b.data);
  for (int32_t in = 0; in < n; ++in) {
    for (int32_t x = 0; x < w; ++x) {
      for (int32_t y = 0; y < h; ++y) {
        store(out, (static_cast<size_t>(in) * h + y) * w + x, 0);
      }
      for (int32_t k0 = 0; k0 < c; k0 += kChunk) {
        const int32_t len = c - k0 < kChunk ? c - k0 : kChunk;
        for (int32_t k = 0; k < len; ++k) {
          column[k] = bp[(static_cast<size_t>(in) * c + k0 + k) * w + x];
        }
        for (int32_t y = 0; y < h; ++y) {
          const int8_t* row = ap + (static_cast<size_t>(in) * h + y) * c + k0;
          const size_t o = (static_cast<size_t>(in) * h + y) * w + x;
          store(out, o, load(out, o) + dot8_corrected(dot8(row, column, len), len, azp, bzp));
        }
      }
    }
  }
}

}  // namespace

Error matmul(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 2, 1, 2));
  const Tensor &a = op.inputs[0], &b = op.inputs[1], &out = op.outputs[0];
  const char* where = "MATMUL";
  const bool int8 =
      a.dtype == DType::kInt8 && b.dtype == DType::kInt8 && out.dtype == DType::kInt32;
  const bool int16 = a.dtype == DType::kInt16 && b.dtype == DType::kInt16 &&
                     out.dtype == DType::kInt48;
  ETHOSU_RT_CHECK_ONE_OF(int8 || int16, static_cast<uint32_t>(a.dtype), Error::kUnsupported, where,
                         "A/B/output types", "int8/int8/int32 or int16/int16/int48");
  ETHOSU_RT_CHECK(a.rank, ==, 3u, Error::kBadValue, where, "A rank");
  ETHOSU_RT_CHECK(b.rank, ==, 3u, Error::kBadValue, where, "B rank");
  ETHOSU_RT_CHECK(out.rank, ==, 3u, Error::kBadValue, where, "output rank");
  const int32_t n = a.shape[0], h = a.shape[1], c = a.shape[2], w = b.shape[2];
  ETHOSU_RT_CHECK(b.shape[0], ==, n, Error::kBadValue, where, "B batch");
  ETHOSU_RT_CHECK(b.shape[1], ==, c, Error::kBadValue, where, "B rows (A columns)");
  ETHOSU_RT_CHECK(out.shape[0], ==, n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[1], ==, h, Error::kBadValue, where, "output rows");
  ETHOSU_RT_CHECK(out.shape[2], ==, w, Error::kBadValue, where, "output columns");
  const int32_t azp = op.attrs[0], bzp = op.attrs[1];
  ETHOSU_RT_TRY(check_zp(op, a.dtype, azp));
  ETHOSU_RT_TRY(check_zp(op, b.dtype, bzp));
  if (!run) return Error::kOk;
  if (int8) {
    matmul_int8(a, b, out, n, h, c, w, azp, bzp);
    return Error::kOk;
  }
  size_t o = 0;
  for (int32_t in = 0; in < n; ++in) {
    for (int32_t y = 0; y < h; ++y) {
      for (int32_t x = 0; x < w; ++x, ++o) {
        int64_t acc = 0;
        for (int32_t k = 0; k < c; ++k) {
          const int64_t av = load(a, (static_cast<size_t>(in) * h + y) * c + k) - azp;
          const int64_t bv = load(b, (static_cast<size_t>(in) * c + k) * w + x) - bzp;
          acc += av * bv;
        }
        store(out, o, acc);
      }
    }
  }
  return Error::kOk;
}

}  // namespace tosa_cpu
