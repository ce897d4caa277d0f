"""3-D convolution written out as one 2-D convolution, before quantization (and for float
programs alike): TOSA's Ethos-U subset and the lowering have CONV2D, not CONV3D.

An output depth ``od`` of ``conv3d`` sums, over the kernel's depth taps ``k``, 2-D convolutions
of the input depth ``od * stride + k * dilation`` (after depth padding) with the kernel's depth
slice ``k``. So the ``KD`` input depths each output reads are stacked into the channels, the
output depths into the batch, and one ``conv2d`` with the kernel reshaped to
``[O, KD * C / groups, KH, KW]`` computes every output: the same products summed in the same
int32 accumulator as a CONV3D would, with the same per-output-channel weight scales, so the
quantized graph equals the 3-D one's. Around it: a depth PAD, strided SLICEs, and the
reshapes/transposes that move depth into the batch and back (movement only, no rounding; the
kernel's reshape folds into a constant). Groups keep their channels together: the stacked
channels are ordered group, depth tap, channel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def _triple(value) -> tuple[int, int, int]:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return tuple(int(v) for v in (values * 3 if len(values) == 1 else values))


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = _triple(stride), _triple(padding), _triple(dilation)
    unbatched = x.dim() == 4
    if unbatched:
        x = x.unsqueeze(0)
    if pd:
        x = F.pad(x, (0, 0, 0, 0, pd, pd))
    n, c, depth, h, w = x.shape
    o, per_group, kd, kh, kw = weight.shape
    out_depth = (depth - dd * (kd - 1) - 1) // sd + 1
    span = (out_depth - 1) * sd + 1
    taps = [x[:, :, k * dd : k * dd + span : sd] for k in range(kd)]  # each [n, c, od, h, w]
    stacked = torch.stack(taps, 1).permute(0, 3, 1, 2, 4, 5)  # [n, od, kd, c, h, w]
    if groups == 1:
        columns = stacked.reshape(n * out_depth, kd * c, h, w)
    else:  # channels ordered group, depth tap, channel of the group
        columns = (
            stacked.reshape(n * out_depth, kd, groups, per_group, h * w)
            .permute(0, 2, 1, 3, 4)
            .reshape(n * out_depth, kd * c, h, w)
        )
    kernel = weight.permute(0, 2, 1, 3, 4).reshape(o, kd * per_group, kh, kw)
    y = F.conv2d(columns, kernel, bias, (sh, sw), (ph, pw), (dh, dw), groups)
    y = y.reshape(n, out_depth, o, y.shape[-2], y.shape[-1]).permute(0, 2, 1, 3, 4)
    return y.squeeze(0) if unbatched else y


def conv3d_padding(x, weight, bias=None, stride=1, padding="valid", dilation=1, groups=1):
    """``padding='same'`` / ``'valid'``: 'same' pads each dim by dilation * (kernel - 1), the
    extra odd element after, as torch does."""
    if padding == "same":
        pads = []
        for size, rate in reversed(list(zip(weight.shape[2:], _triple(dilation)))):
            total = rate * (int(size) - 1)
            pads += [total // 2, total - total // 2]
        x = F.pad(x, pads)
    return conv3d(x, weight, bias, stride, 0, dilation, groups)


DECOMPOSITIONS = {
    aten.conv3d.default: conv3d,
    aten.conv3d.padding: conv3d_padding,
}
