"""aten.avg_pool2d / adaptive_avg_pool2d -> AVG_POOL2D (+ PAD, SLICE/CONCAT when needed).

TOSA divides by the number of *valid* (unpadded) elements and Vela keeps an AVG_POOL2D with
top/left padding on the CPU, so padding is split by what torch divides by:
``count_include_pad=True`` (torch's default) pads explicitly with the zero point (a real 0.0)
and pools without padding, which divides by the whole kernel exactly like torch;
``count_include_pad=False`` keeps TOSA's own padding. ``ceil_mode`` lets the last window hang
over the padded input; torch leaves that part out of the divisor, so it is TOSA padding (which
TOSA does not count) beyond the explicit one in either case.

Adaptive pooling with output sizes that divide the input is one pool (kernel = stride =
input / output, global pooling included). Otherwise torch's windows
``[floor(i * in / out), ceil((i + 1) * in / out))`` differ in size and may overlap (an output
larger than the input), so every window is summed by one constant 0/1 matrix and divided by
its own size in the RESCALE (``window_matrix.py``: one rounding per output like torch's; 6
operators, and fewer NPU cycles than a pool per cell where measured). Past the matrix's
weight bound, each output cell is a global pool of its SLICE, joined by CONCATs.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.fx import adaptive_windows, pair
from pipeline.tosa.emit.pooling import pool_geometry
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, U55_U65, lowers
from pipeline.tosa.emit.window_matrix import MAX_WEIGHTS, window_average

MAX_ADAPTIVE_CELLS = 64  # beyond this the SLICE/CONCAT decomposition gets too large


def _pool(ctx, node, src: str, in_hw, kernel, stride, padding, out: str, out_hw=None) -> None:
    """AVG_POOL2D of NHWC ``src`` (input of torch size ``in_hw``) into ``out`` (``out_hw``
    windows, default: TOSA's floor rule)."""
    x_q = ctx.qparams(node.args[0])
    attrs, crop = pool_geometry(in_hw, kernel, stride, padding, out_hw)
    dtype, zp = (x_q.dtype, x_q.zero_point) if x_q else (ctx.graph.tensors[src].dtype, 0)
    inputs = [
        emit.crop_trailing(ctx, node, src, (0, *crop, 0)),
        ctx.zero_point(f"{node.name}_input_zp", zp, dtype),
        ctx.zero_point(f"{node.name}_output_zp", zp, dtype),
    ]
    ctx.emit("AVG_POOL2D", inputs, [out], node, acc_type="int32" if x_q else "fp32", **attrs)


def _output(ctx: LoweringContext, node: fx.Node) -> str:
    x_q = ctx.qparams(node.args[0])
    return emit.int_output(ctx, node, x_q) if x_q else ctx.define(node)


def _finish(ctx: LoweringContext, node: fx.Node, pooled: str) -> None:
    x_q = ctx.qparams(node.args[0])
    if x_q is not None:
        emit.finish_int(ctx, node, pooled, x_q)


def _pad_explicitly(ctx, node, kernel, stride, padding, ceil_mode) -> tuple[str, list[int]]:
    """PAD the NHWC input with a real 0.0; (tensor, padded H/W). Trailing rows the stride
    never reaches are left unpadded rather than padded and sliced off again."""
    x = node.args[0]
    (n, h, w, c), x_q = ctx.graph.tensors[ctx.tensor(x)].shape, ctx.qparams(x)
    after = [
        p if ceil_mode else max(p - (size + 2 * p - k) % s, 0)
        for size, k, s, p in zip((h, w), kernel, stride, padding)
    ]
    size = [h + padding[0] + after[0], w + padding[1] + after[1]]
    dtype = ctx.graph.tensors[ctx.tensor(x)].dtype
    padded = ctx.temp(node, "padded", (n, *size, c), dtype)
    pads = [0, 0, padding[0], after[0], padding[1], after[1], 0, 0]
    inputs = [
        ctx.tensor(x),
        ctx.const(f"{node.name}_padding", pads, "shape"),
        ctx.const(f"{node.name}_pad_const", [x_q.zero_point if x_q else 0.0], dtype),
    ]
    ctx.emit("PAD", inputs, [padded], node)
    return padded, size


@lowers("aten.avg_pool2d.default")
def visit_avg_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    args = list(node.args) + [None] * (7 - len(node.args))
    kernel, stride, padding, ceil_mode, include_pad, divisor = args[1:7]
    kernel, stride, padding = pair(kernel), pair(stride or kernel), pair(padding or 0)
    if divisor is not None:
        raise ctx.unsupported(node, f"divisor_override={divisor}", "no divisor_override")
    src, in_hw = ctx.tensor(node.args[0]), torch_shape(node.args[0])[2:]
    if padding != (0, 0) and include_pad in (None, True):
        src, in_hw = _pad_explicitly(ctx, node, kernel, stride, padding, ceil_mode)
        padding = (0, 0)
    pooled = _output(ctx, node)
    _pool(ctx, node, src, in_hw, kernel, stride, padding, pooled, torch_shape(node)[2:])
    _finish(ctx, node, pooled)


def _cell(ctx, node, window_h, window_w) -> str:
    """Global pool of one SLICE of the input: a [N, 1, 1, C] tensor in the input's type."""
    x = ctx.tensor(node.args[0])
    n, _, _, c = ctx.graph.tensors[x].shape
    (h0, h1), (w0, w1) = window_h, window_w
    dtype = ctx.graph.tensors[x].dtype
    window = ctx.temp(node, "window", (n, h1 - h0, w1 - w0, c), dtype)
    inputs = [
        x,
        ctx.const(f"{node.name}_start", [0, h0, w0, 0], "shape"),
        ctx.const(f"{node.name}_size", [n, h1 - h0, w1 - w0, c], "shape"),
    ]
    ctx.emit("SLICE", inputs, [window], node)
    cell = ctx.temp(node, "cell", (n, 1, 1, c), dtype)
    _pool(ctx, node, window, (h1 - h0, w1 - w0), (h1 - h0, w1 - w0), 1, 0, cell)
    return cell


def _concat(ctx, node, parts: list[str], axis: int, out: str | None = None) -> str:
    if len(parts) == 1 and out is None:
        return parts[0]
    shape = list(ctx.graph.tensors[parts[0]].shape)
    shape[axis] = sum(ctx.graph.tensors[p].shape[axis] for p in parts)
    out = out or ctx.temp(node, "row", shape, ctx.graph.tensors[parts[0]].dtype)
    ctx.emit("CONCAT", parts, [out], node, axis=axis)
    return out


@lowers("aten.adaptive_avg_pool2d.default")
def visit_adaptive_avg_pool2d(node: fx.Node, ctx: LoweringContext) -> None:
    in_hw, out_hw = torch_shape(node.args[0])[2:], torch_shape(node)[2:]
    rows, columns = (adaptive_windows(i, o) for i, o in zip(in_hw, out_hw))
    if not any(i % o for i, o in zip(in_hw, out_hw)):
        kernel = [i // o for i, o in zip(in_hw, out_hw)]
        pooled = _output(ctx, node)
        _pool(ctx, node, ctx.tensor(node.args[0]), in_hw, kernel, kernel, 0, pooled)
    elif math.prod(in_hw) * math.prod(out_hw) <= MAX_WEIGHTS:
        window_average(ctx, node, rows, columns, ctx.define(node))
        return
    elif out_hw[0] * out_hw[1] <= MAX_ADAPTIVE_CELLS:
        cells = [_concat(ctx, node, [_cell(ctx, node, wh, ww) for ww in columns], 2) for wh in rows]
        pooled = _concat(ctx, node, cells, 1, _output(ctx, node))
    else:
        raise ctx.unsupported(
            node,
            f"output {tuple(out_hw)} not dividing input {tuple(in_hw)}",
            f"output sizes that divide the input, at most {MAX_WEIGHTS} input x output pixels "
            f"(a window matrix) or at most {MAX_ADAPTIVE_CELLS} output cells",
        )
    _finish(ctx, node, pooled)


# Vela 5.2, Ethos-U55/U65: AVG_POOL2D with padding takes kernel_x, kernel_y <= 8.
MAX_PADDED_AVG_POOL_KERNEL = 8


def u55_padded_pool_kernel(op) -> tuple[str, str] | None:
    """Vela 5.2 runs a padded AVG_POOL2D on Ethos-U55/U65 with a kernel of at most 8x8
    ('Non-passthrough operation (AvgPool) could not run on NPU' otherwise)."""
    kernel, pad = op.attrs.get("kernel", []), op.attrs.get("pad", [])
    if any(pad) and max(kernel) > MAX_PADDED_AVG_POOL_KERNEL:
        limit = MAX_PADDED_AVG_POOL_KERNEL
        must = f"have a kernel of at most {limit}x{limit} when it pads"
        return must, f"kernel {kernel[0]}x{kernel[1]} with pad {pad}"
    return None


OPERATOR = Operator(
    "avg_pool2d / adaptive_avg_pool2d -> AVG_POOL2D (+ PAD, SLICE/CONCAT when needed)",
    quant=SHARED,
    npu={U55_U65: {"AVG_POOL2D": u55_padded_pool_kernel}},
)
