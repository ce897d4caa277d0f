// Quantize / dequantize helpers driven by the io_meta record of a tensor:
//   q = clamp(round_half_even(x / scale) + zero_point, dtype range)
//   x = (q - zero_point) * scale
// They work on tensors in the application's element type (int8, uint8, int16, int32).
#ifndef ETHOSU_RT_QUANT_H_
#define ETHOSU_RT_QUANT_H_

#include <stddef.h>

#include "ethosu_rt/artifact.h"
#include "ethosu_rt/error.h"

namespace ethosu_rt {

// Quantizes `count` floats (count == info.element_count) into `out` (out_len ==
// info.tensor_bytes). NaN maps to the zero point.
Error quantize(const TensorInfo& info, const float* in, size_t count, void* out, size_t out_len);

// Dequantizes `in` (in_len == info.tensor_bytes) into `count` floats.
Error dequantize(const TensorInfo& info, const void* in, size_t in_len, float* out, size_t count);

}  // namespace ethosu_rt

#endif  // ETHOSU_RT_QUANT_H_
