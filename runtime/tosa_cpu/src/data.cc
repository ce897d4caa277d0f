// Data movement and reductions: RESHAPE, TRANSPOSE, SLICE, PAD, TILE, CONCAT, REVERSE,
// REDUCE_*, ARGMAX, GATHER, SCATTER, RESIZE, as TOSA 1.0.
#include <string.h>

#include "kernels.h"
#include "tosa_cpu/ops.h"

namespace tosa_cpu {
namespace {

Error check_same_type(const OpArgs& op, const Tensor& a, const Tensor& b) {
  ETHOSU_RT_CHECK(static_cast<uint32_t>(b.dtype), ==, static_cast<uint32_t>(a.dtype),
                  Error::kBadValue, op_name(op.op), "output type");
  return Error::kOk;
}

Error check_axis(const OpArgs& op, int32_t axis, uint32_t rank) {
  ETHOSU_RT_CHECK(axis, >=, 0, Error::kBadValue, op_name(op.op), "axis");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(axis), <, rank, Error::kBadValue, op_name(op.op), "axis");
  return Error::kOk;
}

// Copies element `from` of `src` to element `to` of `dst` (same type).
inline void copy_elem(const Tensor& dst, size_t to, const Tensor& src, size_t from) {
  const size_t s = dtype_size(src.dtype);
  memcpy(static_cast<uint8_t*>(dst.data) + to * s,
         static_cast<const uint8_t*>(src.data) + from * s, s);
}

// What TRANSPOSE, SLICE and PAD check first: one input, whose rank sets the attribute count
// (attrs_per_dim a dimension, plus extra), and one output of its type and rank.
Error check_per_dim_op(const OpArgs& op, uint32_t attrs_per_dim, uint32_t extra) {
  ETHOSU_RT_CHECK(op.n_inputs, ==, 1u, Error::kBadValue, op_name(op.op), "operand count");
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_counts(op, 1, 1, attrs_per_dim * in.rank + extra));
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  ETHOSU_RT_CHECK(out.rank, ==, in.rank, Error::kBadValue, op_name(op.op), "output rank");
  return Error::kOk;
}

size_t offset_of(const Tensor& t, const int32_t* index) {
  size_t o = 0;
  for (uint32_t d = 0; d < t.rank; ++d) o = o * static_cast<size_t>(t.shape[d]) + index[d];
  return o;
}

// The elements of `t` before and after `axis` (row-major: outer x shape[axis] x inner).
void split_at_axis(const Tensor& t, int32_t axis, size_t* outer, size_t* inner) {
  *outer = *inner = 1;
  for (int32_t d = 0; d < axis; ++d) *outer *= static_cast<size_t>(t.shape[d]);
  for (uint32_t d = static_cast<uint32_t>(axis) + 1; d < t.rank; ++d) {
    *inner *= static_cast<size_t>(t.shape[d]);
  }
}

// The lines of `in` along `axis` (REDUCE_*, ARGMAX): f(first, stride, k, o) with the offset of
// a line's first element, the stride of its k elements and o, its index in the result.
template <class F>
void for_each_line(const Tensor& in, int32_t axis, F f) {
  size_t outer, inner;
  split_at_axis(in, axis, &outer, &inner);
  const size_t k = static_cast<size_t>(in.shape[axis]);
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) f(o * k * inner + i, inner, k, o * inner + i);
  }
}

}  // namespace

Error reshape(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 0));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  ETHOSU_RT_CHECK(out.elements, ==, in.elements, Error::kBadValue, "RESHAPE", "output elements");
  if (run) memmove(out.data, in.data, in.bytes);
  return Error::kOk;
}

Error transpose(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_per_dim_op(op, 1, 0));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  uint32_t seen = 0;
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_TRY(check_axis(op, op.attrs[d], in.rank));
    seen |= 1u << op.attrs[d];
    ETHOSU_RT_CHECK(out.shape[d], ==, in.shape[op.attrs[d]], Error::kBadValue, "TRANSPOSE",
                    "output dimension (input dimension perms[d])");
  }
  ETHOSU_RT_CHECK(seen, ==, (1u << in.rank) - 1, Error::kBadValue, "TRANSPOSE",
                  "perms (a permutation) bit set");
  if (!run) return Error::kOk;
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0}, src[kMaxRank];
  for (size_t o = 0; o < out.elements; ++o) {
    for (uint32_t d = 0; d < in.rank; ++d) src[op.attrs[d]] = index[d];
    copy_elem(out, o, in, offset_of(in, src));
    next_index(index, out.shape, out.rank);
  }
  return Error::kOk;
}

Error slice(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_per_dim_op(op, 1, 0));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_CHECK(op.attrs[d], >=, 0, Error::kBadValue, "SLICE", "start");
    ETHOSU_RT_CHECK(static_cast<int64_t>(op.attrs[d]) + out.shape[d], <=,
                    static_cast<int64_t>(in.shape[d]), Error::kBadValue, "SLICE",
                    "start + size");
  }
  if (!run || out.elements == 0) return Error::kOk;
  // Rows of the innermost dimension are contiguous in both: one copy per row.
  const uint32_t outer = in.rank ? in.rank - 1 : 0;
  const size_t row = in.rank ? static_cast<size_t>(out.shape[outer]) : 1;
  const size_t s = dtype_size(in.dtype);
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0}, src[kMaxRank];
  for (size_t o = 0; o < out.elements; o += row) {
    for (uint32_t d = 0; d < in.rank; ++d) src[d] = index[d] + op.attrs[d];
    memcpy(static_cast<uint8_t*>(out.data) + o * s,
           static_cast<const uint8_t*>(in.data) + offset_of(in, src) * s, row * s);
    next_index(index, out.shape, outer);
  }
  return Error::kOk;
}

// Attrs: padding[2 * rank] (before, after per dimension), pad_const.
Error pad(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_per_dim_op(op, 2, 1));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_CHECK(op.attrs[2 * d], >=, 0, Error::kBadValue, "PAD", "padding before");
    ETHOSU_RT_CHECK(op.attrs[2 * d + 1], >=, 0, Error::kBadValue, "PAD", "padding after");
    ETHOSU_RT_CHECK(static_cast<int64_t>(out.shape[d]), ==,
                    static_cast<int64_t>(in.shape[d]) + op.attrs[2 * d] + op.attrs[2 * d + 1],
                    Error::kBadValue, "PAD", "output dimension");
  }
  if (!run) return Error::kOk;
  const int64_t value = op.attrs[2 * in.rank];
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0}, src[kMaxRank];
  for (size_t o = 0; o < out.elements; ++o) {
    bool inside = true;
    for (uint32_t d = 0; d < in.rank; ++d) {
      src[d] = index[d] - op.attrs[2 * d];
      inside = inside && src[d] >= 0 && src[d] < in.shape[d];
    }
    if (inside) {
      copy_elem(out, o, in, offset_of(in, src));
    } else {
      store(out, o, value);
    }
    next_index(index, out.shape, out.rank);
  }
  return Error::kOk;
}

Error tile(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 0));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  ETHOSU_RT_CHECK(out.rank, ==, in.rank, Error::kBadValue, "TILE", "output rank");
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_CHECK(out.shape[d] % in.shape[d], ==, 0, Error::kBadValue, "TILE",
                    "output dimension (a multiple of the input's) remainder");
  }
  if (!run) return Error::kOk;
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0}, src[kMaxRank];
  for (size_t o = 0; o < out.elements; ++o) {
    for (uint32_t d = 0; d < in.rank; ++d) src[d] = index[d] % in.shape[d];
    copy_elem(out, o, in, offset_of(in, src));
    next_index(index, out.shape, out.rank);
  }
  return Error::kOk;
}

Error concat(const OpArgs& op, bool run) {
  ETHOSU_RT_CHECK(op.n_inputs, >=, 1u, Error::kBadValue, "CONCAT", "operand count");
  ETHOSU_RT_CHECK(op.n_outputs, ==, 1u, Error::kBadValue, "CONCAT", "result count");
  ETHOSU_RT_CHECK(op.n_attrs, ==, 1u, Error::kBadValue, "CONCAT", "attr count");
  const Tensor& out = op.outputs[0];
  const int32_t axis = op.attrs[0];
  ETHOSU_RT_TRY(check_axis(op, axis, out.rank));
  int64_t total = 0;
  for (uint32_t i = 0; i < op.n_inputs; ++i) {
    const Tensor& in = op.inputs[i];
    ETHOSU_RT_TRY(check_same_type(op, in, out));
    ETHOSU_RT_CHECK(in.rank, ==, out.rank, Error::kBadValue, "CONCAT", "operand rank");
    for (uint32_t d = 0; d < in.rank; ++d) {
      if (d != static_cast<uint32_t>(axis)) {
        ETHOSU_RT_CHECK(in.shape[d], ==, out.shape[d], Error::kBadValue, "CONCAT",
                        "operand dimension");
      }
    }
    total += in.shape[axis];
  }
  ETHOSU_RT_CHECK(total, ==, static_cast<int64_t>(out.shape[axis]), Error::kBadValue, "CONCAT",
                  "output dimension along axis");
  if (!run) return Error::kOk;
  // outer x (axis extent x inner) blocks, one input after another (inner in bytes).
  size_t outer, inner;
  split_at_axis(out, axis, &outer, &inner);
  inner *= dtype_size(out.dtype);
  const size_t out_row = inner * static_cast<size_t>(out.shape[axis]);
  size_t at = 0;
  for (uint32_t i = 0; i < op.n_inputs; ++i) {
    const Tensor& in = op.inputs[i];
    const size_t row = inner * static_cast<size_t>(in.shape[axis]);
    for (size_t o = 0; o < outer; ++o) {
      memmove(static_cast<uint8_t*>(out.data) + o * out_row + at,
              static_cast<const uint8_t*>(in.data) + o * row, row);
    }
    at += row;
  }
  return Error::kOk;
}

Error reverse(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 1));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  ETHOSU_RT_CHECK_TRUE(same_shape(in, out), Error::kBadValue, "REVERSE",
                       "input and output shapes must match");
  const int32_t axis = op.attrs[0];
  ETHOSU_RT_TRY(check_axis(op, axis, in.rank));
  if (!run) return Error::kOk;
  int32_t index[kMaxRank] = {0, 0, 0, 0, 0, 0}, src[kMaxRank];
  for (size_t o = 0; o < out.elements; ++o) {
    for (uint32_t d = 0; d < in.rank; ++d) src[d] = index[d];
    src[axis] = in.shape[axis] - 1 - index[axis];
    copy_elem(out, o, in, offset_of(in, src));
    next_index(index, out.shape, out.rank);
  }
  return Error::kOk;
}

Error reduce(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 1));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const char* where = op_name(op.op);
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  const bool logical = op.op == kReduceAll || op.op == kReduceAny;
  ETHOSU_RT_CHECK_ONE_OF(logical ? in.dtype == DType::kBool
                                 : (in.dtype == DType::kInt8 || in.dtype == DType::kInt16 ||
                                    in.dtype == DType::kInt32),
                         static_cast<uint32_t>(in.dtype), Error::kUnsupported, where, "input type",
                         "bool for REDUCE_ALL/ANY, int8/int16/int32 otherwise");
  if (op.op == kReduceSum) {
    ETHOSU_RT_CHECK(static_cast<uint32_t>(in.dtype), ==, static_cast<uint32_t>(DType::kInt32),
                    Error::kUnsupported, where, "input type");
  }
  const int32_t axis = op.attrs[0];
  ETHOSU_RT_TRY(check_axis(op, axis, in.rank));
  ETHOSU_RT_CHECK(out.rank, ==, in.rank, Error::kBadValue, where, "output rank");
  for (uint32_t d = 0; d < in.rank; ++d) {
    ETHOSU_RT_CHECK(out.shape[d], ==, d == static_cast<uint32_t>(axis) ? 1 : in.shape[d],
                    Error::kBadValue, where, "output dimension");
  }
  if (!run) return Error::kOk;
  for_each_line(in, axis, [&](size_t first, size_t stride, size_t k, size_t o) {
    int64_t acc = load(in, first);
    for (size_t j = 1; j < k; ++j) {
      const int64_t v = load(in, first + j * stride);
      switch (op.op) {
        case kReduceAll: acc = acc && v; break;
        case kReduceAny: acc = acc || v; break;
        case kReduceMax: acc = v > acc ? v : acc; break;
        case kReduceMin: acc = v < acc ? v : acc; break;
        default:  // REDUCE_SUM, int32: wrapping
          acc = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(v));
          break;
      }
    }
    store(out, o, acc);
  });
  return Error::kOk;
}

Error argmax(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 1));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  ETHOSU_RT_CHECK_ONE_OF(in.dtype == DType::kInt8 || in.dtype == DType::kInt16,
                         static_cast<uint32_t>(in.dtype), Error::kUnsupported, "ARGMAX",
                         "input type", "int8 (3) or int16 (4)");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(DType::kInt32),
                  Error::kBadValue, "ARGMAX", "output type");
  const int32_t axis = op.attrs[0];
  ETHOSU_RT_TRY(check_axis(op, axis, in.rank));
  ETHOSU_RT_CHECK(out.rank + 1, ==, in.rank, Error::kBadValue, "ARGMAX", "output rank + 1");
  for (uint32_t d = 0, o = 0; d < in.rank; ++d) {
    if (d == static_cast<uint32_t>(axis)) continue;
    ETHOSU_RT_CHECK(out.shape[o], ==, in.shape[d], Error::kBadValue, "ARGMAX", "output dimension");
    ++o;
  }
  if (!run) return Error::kOk;
  for_each_line(in, axis, [&](size_t first, size_t stride, size_t k, size_t o) {
    int64_t best = load(in, first);
    size_t at = 0;
    for (size_t j = 1; j < k; ++j) {
      const int64_t v = load(in, first + j * stride);
      if (v > best) {
        best = v;
        at = j;
      }
    }
    store(out, o, static_cast<int64_t>(at));
  });
  return Error::kOk;
}

namespace {

// GATHER / SCATTER: every index of `indices` [N, W] checked against K, then f(offset of its
// row in the [N, K, C] tensor, offset of its row in the [N, W, C] one), rows of C elements.
template <class F>
Error for_each_index(const OpArgs& op, const Tensor& indices, int32_t k, int32_t c, F f) {
  const int32_t n = indices.shape[0], w = indices.shape[1];
  for (int32_t b = 0; b < n; ++b) {
    for (int32_t i = 0; i < w; ++i) {
      const int64_t at = load(indices, static_cast<size_t>(b) * w + i);
      ETHOSU_RT_CHECK(at, >=, 0, Error::kBadValue, op_name(op.op), "index");
      ETHOSU_RT_CHECK(at, <, static_cast<int64_t>(k), Error::kBadValue, op_name(op.op), "index");
      f((static_cast<size_t>(b) * k + static_cast<size_t>(at)) * c,
        (static_cast<size_t>(b) * w + i) * c);
    }
  }
  return Error::kOk;
}

// GATHER / SCATTER shapes: values [N, K, C], int32 indices [N, W], and rows [N, W, C] (GATHER's
// output, SCATTER's input).
Error check_indexed(const OpArgs& op, const Tensor& values, const Tensor& indices,
                    const Tensor& rows) {
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK(static_cast<uint32_t>(indices.dtype), ==, static_cast<uint32_t>(DType::kInt32),
                  Error::kBadValue, where, "indices type");
  ETHOSU_RT_CHECK(values.rank, ==, 3u, Error::kBadValue, where, "values rank");
  ETHOSU_RT_CHECK(indices.rank, ==, 2u, Error::kBadValue, where, "indices rank");
  ETHOSU_RT_CHECK(rows.rank, ==, 3u, Error::kBadValue, where,
                  "rows (GATHER output, SCATTER input) rank");
  const int32_t n = values.shape[0], c = values.shape[2], w = indices.shape[1];
  ETHOSU_RT_CHECK(indices.shape[0], ==, n, Error::kBadValue, where, "indices batch");
  ETHOSU_RT_CHECK(rows.shape[0], ==, n, Error::kBadValue, where, "rows batch");
  ETHOSU_RT_CHECK(rows.shape[1], ==, w, Error::kBadValue, where, "rows (indices per batch)");
  ETHOSU_RT_CHECK(rows.shape[2], ==, c, Error::kBadValue, where, "rows columns");
  return Error::kOk;
}

// Copies `count` elements from element `from` of `src` to element `to` of `dst` (same type).
void copy_row(const Tensor& dst, size_t to, const Tensor& src, size_t from, size_t count) {
  const size_t s = dtype_size(src.dtype);
  memcpy(static_cast<uint8_t*>(dst.data) + to * s, static_cast<const uint8_t*>(src.data) + from * s,
         count * s);
}

}  // namespace

Error gather(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 2, 1, 0));
  const Tensor &values = op.inputs[0], &indices = op.inputs[1], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_same_type(op, values, out));
  ETHOSU_RT_TRY(check_indexed(op, values, indices, out));
  if (!run) return Error::kOk;
  const int32_t k = values.shape[1], c = values.shape[2];
  return for_each_index(op, indices, k, c, [&](size_t k_row, size_t w_row) {
    copy_row(out, w_row, values, k_row, static_cast<size_t>(c));
  });
}

Error scatter(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 3, 1, 0));
  const Tensor &values = op.inputs[0], &indices = op.inputs[1], &in = op.inputs[2];
  const Tensor& out = op.outputs[0];
  ETHOSU_RT_TRY(check_same_type(op, values, out));
  ETHOSU_RT_TRY(check_same_type(op, in, out));
  ETHOSU_RT_TRY(check_indexed(op, values, indices, in));
  ETHOSU_RT_CHECK_TRUE(same_shape(values, out), Error::kBadValue, "SCATTER",
                       "output shape (values_in's [N, K, C])");
  if (!run) return Error::kOk;
  const int32_t k = values.shape[1], c = values.shape[2];
  memmove(out.data, values.data, values.bytes);
  return for_each_index(op, indices, k, c, [&](size_t k_row, size_t w_row) {
    copy_row(out, k_row, in, w_row, static_cast<size_t>(c));
  });
}

namespace {

int32_t floor_div(int32_t a, int32_t b) {
  const int32_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

// Attrs: mode (1 nearest, 2 bilinear) scale[4] (y_n y_d x_n x_d) offset[2] border[2].
Error resize(const OpArgs& op, bool run) {
  ETHOSU_RT_TRY(check_counts(op, 1, 1, 9));
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const char* where = "RESIZE";
  const int32_t mode = op.attrs[0];
  const int32_t sy_n = op.attrs[1], sy_d = op.attrs[2], sx_n = op.attrs[3], sx_d = op.attrs[4];
  const int32_t off_y = op.attrs[5], off_x = op.attrs[6], border_y = op.attrs[7],
                border_x = op.attrs[8];
  ETHOSU_RT_CHECK_ONE_OF(mode == 1 || mode == 2, mode, Error::kBadValue, where, "mode",
                         "1 (NEAREST) or 2 (BILINEAR)");
  const DType want = mode == 1 ? in.dtype
                     : in.dtype == DType::kInt8 ? DType::kInt32 : DType::kInt48;
  ETHOSU_RT_CHECK_ONE_OF(in.dtype == DType::kInt8 || in.dtype == DType::kInt16,
                         static_cast<uint32_t>(in.dtype), Error::kUnsupported, where,
                         "input type", "int8 (3) or int16 (4)");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(want),
                  Error::kBadValue, where, "output type");
  ETHOSU_RT_CHECK(in.rank, ==, 4u, Error::kBadValue, where, "input rank");
  ETHOSU_RT_CHECK(out.rank, ==, 4u, Error::kBadValue, where, "output rank");
  ETHOSU_RT_CHECK_TRUE(sy_n > 0 && sy_d > 0 && sx_n > 0 && sx_d > 0 && sy_n <= (1 << 11) &&
                           sx_n <= (1 << 11),
                       Error::kBadValue, where, "scale values must be in 1..2048 (n) and > 0 (d)");
  const int32_t ih = in.shape[1], iw = in.shape[2], c = in.shape[3];
  const int64_t hy = static_cast<int64_t>(ih - 1) * sy_n - off_y + border_y;
  const int64_t hx = static_cast<int64_t>(iw - 1) * sx_n - off_x + border_x;
  ETHOSU_RT_CHECK_TRUE(hy >= 0 && hx >= 0 && hy % sy_d == 0 && hx % sx_d == 0, Error::kBadValue,
                       where, "(in - 1) x scale_n - offset + border must divide by scale_d");
  ETHOSU_RT_CHECK(static_cast<int64_t>(out.shape[1]), ==, hy / sy_d + 1, Error::kBadValue, where,
                  "output height");
  ETHOSU_RT_CHECK(static_cast<int64_t>(out.shape[2]), ==, hx / sx_d + 1, Error::kBadValue, where,
                  "output width");
  ETHOSU_RT_CHECK(out.shape[0], ==, in.shape[0], Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c, Error::kBadValue, where, "output channels");
  if (!run) return Error::kOk;
  const int32_t oh = out.shape[1], ow = out.shape[2];
  size_t o = 0;
  for (int32_t n = 0; n < in.shape[0]; ++n) {
    for (int32_t oy = 0; oy < oh; ++oy) {
      const int32_t y = oy * sy_d + off_y;
      const int32_t iy = floor_div(y, sy_n), dy = y - iy * sy_n;
      const int32_t iy0 = iy < 0 ? 0 : iy, iy1 = iy + 1 > ih - 1 ? ih - 1 : iy + 1;
      for (int32_t ox = 0; ox < ow; ++ox) {
        const int32_t x = ox * sx_d + off_x;
        const int32_t ix = floor_div(x, sx_n), dx = x - ix * sx_n;
        const int32_t ix0 = ix < 0 ? 0 : ix, ix1 = ix + 1 > iw - 1 ? iw - 1 : ix + 1;
        const size_t base = static_cast<size_t>(n) * ih;
        for (int32_t ch = 0; ch < c; ++ch, ++o) {
          auto at = [&](int32_t yy, int32_t xx) {
            return load(in, ((base + yy) * iw + xx) * c + ch);
          };
          if (mode == 1) {
            const int32_t ny = 2 * dy >= sy_n ? iy1 : iy0;
            const int32_t nx = 2 * dx >= sx_n ? ix1 : ix0;
            store(out, o, at(ny, nx));
          } else {
            int64_t acc = at(iy0, ix0) * (sy_n - dy) * (sx_n - dx);
            acc += at(iy0, ix1) * (sy_n - dy) * dx;
            acc += at(iy1, ix0) * dy * (sx_n - dx);
            acc += at(iy1, ix1) * dy * dx;
            store(out, o, acc);
          }
        }
      }
    }
  }
  return Error::kOk;
}

}  // namespace tosa_cpu
