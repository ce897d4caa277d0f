// The window operators' shape and attribute checks (window.h).
#include "window.h"

#include "tosa_cpu/ops.h"

namespace tosa_cpu {
namespace {

// Output extent of a convolution/pool window along one axis; -1 when not a whole number.
int32_t out_extent(int32_t in, int32_t pad_a, int32_t pad_b, int32_t k, int32_t dil,
                   int32_t stride) {
  const int64_t span =
      static_cast<int64_t>(in) - 1 + pad_a + pad_b - static_cast<int64_t>(k - 1) * dil;
  if (stride <= 0 || span < 0 || span % stride != 0) return -1;
  return static_cast<int32_t>(span / stride + 1);
}

Error check_types(const OpArgs& op, const Tensor& in, const Tensor& w, const Tensor& bias,
                  const Tensor& out) {
  const char* where = op_name(op.op);
  const bool int8 = in.dtype == DType::kInt8 && out.dtype == DType::kInt32 &&
                    bias.dtype == DType::kInt32;
  const bool int16 = in.dtype == DType::kInt16 && out.dtype == DType::kInt48 &&
                     bias.dtype == DType::kInt48;
  ETHOSU_RT_CHECK_ONE_OF(int8 || int16, static_cast<uint32_t>(in.dtype), Error::kUnsupported,
                         where, "input/bias/output types",
                         "int8/int32/int32 or int16/int48/int48");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(w.dtype), ==, static_cast<uint32_t>(DType::kInt8),
                  Error::kUnsupported, where, "weight type");
  ETHOSU_RT_CHECK(in.rank, ==, 4u, Error::kBadValue, where, "input rank");
  ETHOSU_RT_CHECK(w.rank, ==, 4u, Error::kBadValue, where, "weight rank");
  ETHOSU_RT_CHECK(out.rank, ==, 4u, Error::kBadValue, where, "output rank");
  ETHOSU_RT_CHECK(bias.rank, ==, 1u, Error::kBadValue, where, "bias rank");
  return Error::kOk;
}

Error check_window(const OpArgs& op, const Conv& c) {
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK(c.stride_y, >=, 1, Error::kBadValue, where, "stride_y");
  ETHOSU_RT_CHECK(c.stride_x, >=, 1, Error::kBadValue, where, "stride_x");
  ETHOSU_RT_CHECK(c.dil_y, >=, 1, Error::kBadValue, where, "dilation_y");
  ETHOSU_RT_CHECK(c.dil_x, >=, 1, Error::kBadValue, where, "dilation_x");
  ETHOSU_RT_CHECK(c.pad_top, >=, 0, Error::kBadValue, where, "pad_top");
  ETHOSU_RT_CHECK(c.pad_bottom, >=, 0, Error::kBadValue, where, "pad_bottom");
  ETHOSU_RT_CHECK(c.pad_left, >=, 0, Error::kBadValue, where, "pad_left");
  ETHOSU_RT_CHECK(c.pad_right, >=, 0, Error::kBadValue, where, "pad_right");
  ETHOSU_RT_CHECK(c.oh, ==, out_extent(c.ih, c.pad_top, c.pad_bottom, c.kh, c.dil_y, c.stride_y),
                  Error::kBadValue, where, "output height");
  ETHOSU_RT_CHECK(c.ow, ==, out_extent(c.iw, c.pad_left, c.pad_right, c.kw, c.dil_x, c.stride_x),
                  Error::kBadValue, where, "output width");
  return Error::kOk;
}

}  // namespace

Error check_zp(const OpArgs& op, DType dtype, int32_t zp) {
  if (dtype != DType::kInt8) {
    ETHOSU_RT_CHECK(zp, ==, 0, Error::kBadValue, op_name(op.op), "zero point of an int16 operand");
  }
  ETHOSU_RT_CHECK(zp, >=, -128, Error::kBadValue, op_name(op.op), "zero point");
  ETHOSU_RT_CHECK(zp, <=, 127, Error::kBadValue, op_name(op.op), "zero point");
  return Error::kOk;
}

// Attrs: pad (top bottom left right; TRANSPOSE_CONV2D: out_pad) stride (y x), dilation (y x;
// not TRANSPOSE_CONV2D), input_zp, weight_zp.
Error read_conv(const OpArgs& op, Conv* c) {
  const bool transpose = op.op == kTransposeConv2d, depthwise = op.op == kDepthwiseConv2d;
  ETHOSU_RT_TRY(check_counts(op, 3, 1, transpose ? 8 : 10));
  const Tensor &in = op.inputs[0], &w = op.inputs[1], &bias = op.inputs[2], &out = op.outputs[0];
  ETHOSU_RT_TRY(check_types(op, in, w, bias, out));
  const char* where = op_name(op.op);
  const int32_t* a = op.attrs;
  c->n = in.shape[0]; c->ih = in.shape[1]; c->iw = in.shape[2]; c->ic = in.shape[3];
  c->oh = out.shape[1]; c->ow = out.shape[2];
  c->pad_top = a[0]; c->pad_bottom = a[1]; c->pad_left = a[2]; c->pad_right = a[3];
  c->stride_y = a[4]; c->stride_x = a[5];
  c->dil_y = transpose ? 1 : a[6]; c->dil_x = transpose ? 1 : a[7];
  c->izp = a[transpose ? 6 : 8]; c->wzp = a[transpose ? 7 : 9];
  if (depthwise) {
    c->kh = w.shape[0]; c->kw = w.shape[1]; c->m = w.shape[3]; c->oc = c->ic * c->m;
    ETHOSU_RT_CHECK(w.shape[2], ==, c->ic, Error::kBadValue, where, "weight channels");
  } else {
    c->oc = w.shape[0]; c->kh = w.shape[1]; c->kw = w.shape[2]; c->m = 1;
    ETHOSU_RT_CHECK(w.shape[3], ==, c->ic, Error::kBadValue, where, "weight input channels");
  }
  ETHOSU_RT_CHECK(out.shape[0], ==, c->n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c->oc, Error::kBadValue, where,
                  depthwise ? "output channels (C x M)" : "output channels");
  if (transpose) {
    ETHOSU_RT_CHECK(c->stride_y, >=, 1, Error::kBadValue, where, "stride_y");
    ETHOSU_RT_CHECK(c->stride_x, >=, 1, Error::kBadValue, where, "stride_x");
    const int64_t oh =
        static_cast<int64_t>(c->ih - 1) * c->stride_y + c->pad_top + c->pad_bottom + c->kh;
    const int64_t ow =
        static_cast<int64_t>(c->iw - 1) * c->stride_x + c->pad_left + c->pad_right + c->kw;
    ETHOSU_RT_CHECK(static_cast<int64_t>(c->oh), ==, oh, Error::kBadValue, where, "output height");
    ETHOSU_RT_CHECK(static_cast<int64_t>(c->ow), ==, ow, Error::kBadValue, where, "output width");
  }
  ETHOSU_RT_CHECK_TRUE(bias.shape[0] == 1 || bias.shape[0] == c->oc, Error::kBadValue, where,
                       "bias length must be 1 or the output channels");
  if (!transpose) ETHOSU_RT_TRY(check_window(op, *c));
  ETHOSU_RT_TRY(check_zp(op, in.dtype, c->izp));
  return check_zp(op, w.dtype, c->wzp);
}

// Attrs: kernel (y x) stride (y x) pad (top bottom left right), then the pool's own.
Error read_pool(const OpArgs& op, Conv* c) {
  const Tensor &in = op.inputs[0], &out = op.outputs[0];
  const char* where = op_name(op.op);
  ETHOSU_RT_CHECK_ONE_OF(in.dtype == DType::kInt8 || in.dtype == DType::kInt16,
                         static_cast<uint32_t>(in.dtype), Error::kUnsupported, where,
                         "input type", "int8 (3) or int16 (4)");
  ETHOSU_RT_CHECK(static_cast<uint32_t>(out.dtype), ==, static_cast<uint32_t>(in.dtype),
                  Error::kBadValue, where, "output type");
  ETHOSU_RT_CHECK(in.rank, ==, 4u, Error::kBadValue, where, "input rank");
  ETHOSU_RT_CHECK(out.rank, ==, 4u, Error::kBadValue, where, "output rank");
  c->n = in.shape[0]; c->ih = in.shape[1]; c->iw = in.shape[2]; c->ic = in.shape[3];
  c->oh = out.shape[1]; c->ow = out.shape[2]; c->oc = c->ic; c->m = 1;
  c->kh = op.attrs[0]; c->kw = op.attrs[1];
  c->stride_y = op.attrs[2]; c->stride_x = op.attrs[3];
  c->pad_top = op.attrs[4]; c->pad_bottom = op.attrs[5];
  c->pad_left = op.attrs[6]; c->pad_right = op.attrs[7];
  c->dil_y = c->dil_x = 1;
  ETHOSU_RT_CHECK(c->kh, >=, 1, Error::kBadValue, where, "kernel_y");
  ETHOSU_RT_CHECK(c->kw, >=, 1, Error::kBadValue, where, "kernel_x");
  ETHOSU_RT_CHECK(out.shape[0], ==, c->n, Error::kBadValue, where, "output batch");
  ETHOSU_RT_CHECK(out.shape[3], ==, c->ic, Error::kBadValue, where, "output channels");
  // TOSA: padding smaller than the kernel, so no window is all padding.
  ETHOSU_RT_CHECK(c->pad_top, <, c->kh, Error::kBadValue, where, "pad_top");
  ETHOSU_RT_CHECK(c->pad_bottom, <, c->kh, Error::kBadValue, where, "pad_bottom");
  ETHOSU_RT_CHECK(c->pad_left, <, c->kw, Error::kBadValue, where, "pad_left");
  ETHOSU_RT_CHECK(c->pad_right, <, c->kw, Error::kBadValue, where, "pad_right");
  return check_window(op, *c);
}

}  // namespace tosa_cpu
