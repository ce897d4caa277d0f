"""aten.upsample_nearest2d by integer factors -> RESIZE (NEAREST); integer values pass as is.

torch picks input row ``floor(y / k)``; TOSA NEAREST rounds ``(y * d + offset) / n`` to the
nearest, half up. With ``n = 2k, d = 2, offset = 1 - k`` that is ``floor((2y + 1) / 2k)`` =
``floor(y / k)``. Ethos-U55 runs exactly this form for power-of-two factors 2..8 (it rejects
the equivalent ``n = k, d = 1, offset = -k / 2``); Ethos-U85 runs any factor.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.tosa.registry import lowers


def resize_parameters(in_size: int, out_size: int) -> tuple[int, int, int, int]:
    """(scale_n, scale_d, offset, border) along one axis for an integer factor."""
    factor = out_size // in_size
    n, d, offset = 2 * factor, 2, 1 - factor
    border = (out_size - 1) * d - (in_size - 1) * n + offset
    return n, d, offset, border


def resize_inputs(node: fx.Node, ctx: LoweringContext) -> tuple[list, int]:
    """RESIZE's inputs (tensor, scale, offset, border) for an integer-factor upsample, and
    the product of the scale numerators (what BILINEAR multiplies integer values by).

    Raises:
        UnsupportedOperatorError: a non-integer factor, or input and output quantized apart.
    """
    x = node.args[0]
    in_hw, out_hw = torch_shape(x)[2:], torch_shape(node)[2:]
    if any(o % i for i, o in zip(in_hw, out_hw)):
        raise ctx.unsupported(
            node, f"output {tuple(out_hw)} from input {tuple(in_hw)}", "integer scale factors"
        )
    (ny, dy, oy, by), (nx, dx, ox, bx) = (resize_parameters(i, o) for i, o in zip(in_hw, out_hw))
    x_q = ctx.qparams(x)
    if x_q is not None and x_q != ctx.qparams(node):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    inputs = [
        ctx.tensor(x),
        ctx.const(f"{node.name}_scale", [ny, dy, nx, dx], "shape"),
        ctx.const(f"{node.name}_offset", [oy, ox], "shape"),
        ctx.const(f"{node.name}_border", [by, bx], "shape"),
    ]
    return inputs, ny * nx


@lowers("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def visit_upsample_nearest2d(node: fx.Node, ctx: LoweringContext) -> None:
    inputs, _ = resize_inputs(node, ctx)
    ctx.emit("RESIZE", inputs, [ctx.define(node)], node, mode="NEAREST")
