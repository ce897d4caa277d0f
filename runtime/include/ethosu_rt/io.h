// Moving tensors between the application and the NPU regions in Vela's layout.
//
// Vela describes each IO as a 6-D shape and an element size. The application's
// tensor (io_meta) may be smaller than what the NPU reads or writes:
//   * padded:  each innermost NPU row is longer than the tensor's row; the padding is
//              inserted (zeroed) on input and stripped on output;
//   * int4:    the NPU stores two int4 values per byte (low nibble first) for an int8
//              tensor; they are packed on input and sign-extended on output.
// Every other combination is rejected by plan_copy() when the artifact is parsed,
// never handled by a raw memcpy. All sizes are checked before any byte moves.
#ifndef ETHOSU_RT_IO_H_
#define ETHOSU_RT_IO_H_

#include <stddef.h>
#include <stdint.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"

namespace ethosu_rt {

enum class CopyKind : uint8_t { kPlain, kPadded, kInt4 };

struct CopyPlan {
  CopyKind kind;
  size_t rows;        // product of Vela dims 0..4
  size_t npu_row;     // bytes of one row in the NPU region: npu_shape[5] * elem_size
  size_t tensor_row;  // bytes of one row in the application's tensor
};

// Decides how `info` is copied; fails for combinations the runtime does not handle.
Error plan_copy(const TensorInfo& info, CopyPlan* plan);

// Input: application tensor `src` (exactly info.tensor_bytes) into the NPU area `dst`
// (at least info.io_bytes, i.e. region base + info.offset).
Error write_input(const TensorInfo& info, const void* src, size_t src_len, uint8_t* dst,
                  size_t dst_len);

// Output: NPU area `src` (at least info.io_bytes) into the application tensor `dst`
// (exactly info.tensor_bytes).
Error read_output(const TensorInfo& info, const uint8_t* src, size_t src_len, void* dst,
                  size_t dst_len);

// CPU-visible memory of each base-pointer region; unused regions are {nullptr, 0}.
// Region 0 (weights) is read-only: nothing here writes through it.
struct Region {
  uint8_t* data;
  size_t size;
};

struct Regions {
  Region region[kNumRegions];
};

// Copies input `index` into its region (Vela's region and offset), checking the
// region is large enough for offset + io_bytes.
Error copy_input(const Model& model, const Regions& regions, size_t index, const void* src,
                 size_t src_len);

// Copies output `index` out of its region.
Error copy_output(const Model& model, const Regions& regions, size_t index, void* dst,
                  size_t dst_len);

// Torch NCHW <-> NPU NHWC for a rank-4 tensor with layout kNhwcForNchw; a plain copy
// for layout kSame. `src` and `dst` are both info.tensor_bytes long and must not overlap.
Error to_npu_order(const TensorInfo& info, const void* src, void* dst, size_t len);
Error from_npu_order(const TensorInfo& info, const void* src, void* dst, size_t len);

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_IO_H_
