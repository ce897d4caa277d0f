"""Reductions and clamps with no TOSA operator of their own, written out before quantization
(and for float programs alike) in operators that quantize and lower well:

- ``var`` / ``std`` (``torch.var``, ``x.std(dim)``, any ``correction``): the mean of the
  squared deviations from the mean, times ``n / (n - correction)`` - the form layer_norm
  already uses (each intermediate observed on its own; ``std`` is this and a ``sqrt``);
- ``clamp(x, min=t, max=u)`` by tensors: ``clamp_min`` then ``clamp_max`` (MAXIMUM, MINIMUM
  of operands sharing one quantization: exact), which is torch's order - a bound ``min``
  above ``max`` gives ``max``, as torch does;
- ``any`` / ``all`` of a number tensor: of ``x != 0`` (a bool tensor, which REDUCE_ANY /
  REDUCE_ALL take; ``pipeline/tosa/ops/op_any_all.py``);
- ``torch.linalg.vector_norm`` / ``x.norm(p, dim)``: ``sqrt(sum(x * x))`` for p = 2,
  ``sum(|x|)`` for 1, ``amax(|x|)`` / ``amin(|x|)`` for +-inf, ``sum(|x| ** p) ** (1 / p)``
  otherwise;
- ``avg_pool2d(..., divisor_override=d)``: torch divides every window's sum by ``d``. Where
  every window holds ``kh * kw`` values (no ceil_mode, padding counted) that is the average
  times ``kh * kw / d`` (one more MUL, its own qparams); otherwise (ceil_mode, uncounted
  padding) the sums are a depthwise convolution with a kernel of ones over the input padded
  with zeros (also past the end for the last ceil_mode windows), times ``1 / d``;
- a dilated ``max_pool2d``: the MAXIMUM of the strided slices its taps read;
- ``adaptive_max_pool2d`` (indices unread): a max pool when its windows tile the input,
  else the ``amax`` of each window's slice;
- ``x.mean()`` as the mean over every dim, ``mul.Scalar`` / ``div.Scalar`` as the Tensor
  forms of the same call.
"""

from __future__ import annotations

import math
import operator

import torch

from pipeline.fx import adaptive_windows
from pipeline.fx import pair
from pipeline.fx import call_arguments

aten = torch.ops.aten


def _dims(x: torch.Tensor, dim) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return list(range(x.dim()))
    return sorted({d % x.dim() for d in ([dim] if isinstance(dim, int) else dim)})


def var(x: torch.Tensor, dim=None, *, correction=None, keepdim: bool = False) -> torch.Tensor:
    dims = _dims(x, dim)
    count = math.prod(x.shape[d] for d in dims)
    correction = 1 if correction is None else correction
    centered = x - x.mean(dims, keepdim=True)
    variance = (centered * centered).mean(dims, keepdim=keepdim)
    if count == correction:
        return variance * math.inf  # torch: the sum over no degrees of freedom
    return variance * (count / (count - correction))


def clamp_tensor(x: torch.Tensor, min=None, max=None) -> torch.Tensor:
    if min is not None:
        x = torch.clamp_min(x, min)
    if max is not None:
        x = torch.clamp_max(x, max)
    return x


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002 - aten's name
    dims = _dims(x, dim)
    magnitude = x.abs()
    if ord == math.inf:
        return torch.amax(magnitude, dims, keepdim=keepdim)
    if ord == -math.inf:
        return torch.amin(magnitude, dims, keepdim=keepdim)
    if ord == 2:
        return torch.sqrt((x * x).sum(dims, keepdim=keepdim))
    if ord == 1:
        return magnitude.sum(dims, keepdim=keepdim)
    if ord == 0:
        return NotImplemented  # a count of nonzeros
    return (magnitude**ord).sum(dims, keepdim=keepdim) ** (1.0 / ord)


def avg_pool2d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):  # fmt: skip
    kh, kw = pair(kernel_size)
    if divisor_override is None:
        return NotImplemented
    if _overrides_evenly(padding, ceil_mode, count_include_pad):
        average = aten.avg_pool2d.default(x, kernel_size, stride, padding, False, True, None)
        return average * (kh * kw / divisor_override)
    return _window_sums(x, (kh, kw), pair(stride) if stride else (kh, kw), pair(padding),
                        ceil_mode) * (1.0 / divisor_override)  # fmt: skip


def _pooled_size(size: int, kernel: int, stride: int, pad: int, ceil_mode: bool) -> int:
    """torch's pooling output size (a ceil_mode window must start inside the input or its
    leading padding)."""
    count = (size + 2 * pad - kernel + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (count - 1) * stride >= size + pad:
        count -= 1
    return count


def _window_sums(x, kernel, stride, padding, ceil_mode):
    """The sum of every pooling window (zeros past the input), as a depthwise convolution."""
    batched = x if x.dim() == 4 else x.unsqueeze(0)
    (height, width), channels = batched.shape[-2:], batched.shape[-3]
    extra = [
        max(0, (_pooled_size(size, k, s, p, ceil_mode) - 1) * s + k - (size + 2 * p))
        for size, k, s, p in zip((height, width), kernel, stride, padding)
    ]
    (ph, pw) = padding
    padded = torch.nn.functional.pad(batched, (pw, pw + extra[1], ph, ph + extra[0]))
    ones = torch.ones(channels, 1, *kernel, dtype=x.dtype, device=x.device)
    sums = torch.nn.functional.conv2d(padded, ones, stride=stride, groups=channels)
    return sums if x.dim() == 4 else sums.squeeze(0)


def _overrides_evenly(padding, ceil_mode, count_include_pad) -> bool:
    """Every window of the pool holds kh * kw values (padding included)."""
    return not ceil_mode and (count_include_pad or pair(padding) == (0, 0))


def _overridden(node) -> bool:
    return call_arguments(node)["divisor_override"] is not None


avg_pool2d.applies = _overridden  # the table's entry rewrites only these calls


def mean_all(x: torch.Tensor, *, dtype=None) -> torch.Tensor:
    """``x.mean()``: over every dim (mean.dim, the form the lowering takes)."""
    return x.mean(list(range(x.dim())))


def max_all(x: torch.Tensor) -> torch.Tensor:
    """``x.max()`` (Whisper's ``log_spec.max()``): amax over every dim, the form the lowering
    takes; ``x.min()`` likewise with amin."""
    return torch.amax(x, list(range(x.dim()))) if x.is_floating_point() else NotImplemented


def min_all(x: torch.Tensor) -> torch.Tensor:
    return torch.amin(x, list(range(x.dim()))) if x.is_floating_point() else NotImplemented


def max_pool2d(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """A dilated max pool (no ceil_mode): the maximum of the kh * kw strided slices its taps
    read (MAXIMUM of operands sharing one quantization: exact), the padding -inf."""
    (kh, kw), (dh, dw) = pair(kernel_size), pair(dilation)
    (sh, sw) = pair(stride) if stride else (kh, kw)
    (ph, pw) = pair(padding)
    if (dh, dw) == (1, 1) or ceil_mode:
        return NotImplemented
    if ph or pw:
        x = torch.nn.functional.pad(x, (pw, pw, ph, ph), value=-math.inf)
    height, width = x.shape[-2:]
    rows = (height - dh * (kh - 1) - 1) // sh + 1
    cols = (width - dw * (kw - 1) - 1) // sw + 1
    result = None
    for i in range(kh):
        for j in range(kw):
            top, left = i * dh, j * dw
            tap = x[
                ..., top : top + (rows - 1) * sh + 1 : sh, left : left + (cols - 1) * sw + 1 : sw
            ]
            result = tap if result is None else torch.maximum(result, tap)
    return result


def _dilated(node) -> bool:
    a = call_arguments(node)
    return pair(a["dilation"]) != (1, 1) and not a["ceil_mode"]


max_pool2d.applies = _dilated


def adaptive_max_pool2d(x, output_size):
    """The maximum over each of torch's adaptive windows: one max pool when they tile the
    input evenly, else per window row and column the ``amax`` of its slice (REDUCE_MAX of
    values sharing one quantization: exact) and a concatenation. Only where the indices go
    unread (``applies``): the second output is a placeholder."""
    (height, width), (rows, cols) = x.shape[-2:], pair(output_size)
    rows, cols = rows or height, cols or width  # None keeps the size
    if height % rows == 0 and width % cols == 0:
        kernel = (height // rows, width // cols)
        values = torch.nn.functional.max_pool2d(x, kernel, kernel)
    else:
        bands = []
        for top, bottom in adaptive_windows(height, rows):
            band = torch.amax(x[..., top:bottom, :], -2, keepdim=True)
            cells = [torch.amax(band[..., left:right], -1, keepdim=True)
                     for left, right in adaptive_windows(width, cols)]  # fmt: skip
            bands.append(torch.cat(cells, -1))
        values = torch.cat(bands, -2)
    return values, torch.zeros(values.shape, dtype=torch.int64, device=x.device)


def _indices_unread(node) -> bool:
    return not any(user.args[1] == 1 and user.users
                   for user in node.users if user.target is operator.getitem)  # fmt: skip


adaptive_max_pool2d.applies = _indices_unread


def _scalar_form(op):
    return lambda x, other: op(x, other)


def _of_bools(reduction):
    def decomposed(x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        if x.dtype == torch.bool:
            return NotImplemented  # one REDUCE_ANY / REDUCE_ALL
        return reduction(x != 0, *args, **kwargs)

    return decomposed


DECOMPOSITIONS = {
    aten.var.correction: var,
    aten.clamp.Tensor: clamp_tensor,
    aten.linalg_vector_norm.default: vector_norm,
    aten.avg_pool2d.default: avg_pool2d,
    aten.adaptive_max_pool2d.default: adaptive_max_pool2d,
    aten.mean.default: mean_all,
    aten.max.default: max_all,
    aten.min.default: min_all,
    aten.max_pool2d.default: max_pool2d,
    # ``x * c`` as the Tensor form (what the quantizer and the lowering take)
    aten.mul.Scalar: _scalar_form(aten.mul.Tensor),
    aten.div.Scalar: _scalar_form(aten.div.Tensor),
    **{op: _of_bools(op) for op in (aten.any.default, aten.any.dim, aten.any.dims)},
    **{op: _of_bools(op) for op in (aten.all.default, aten.all.dim, aten.all.dims)},
}
