"""aten.upsample_nearest2d -> RESIZE (NEAREST); integer values pass as is.

TOSA RESIZE samples input position ``(y * d + offset) / n`` along each axis (``n, d, offset``
are the scale numerator, denominator and offset; ``border`` follows from the sizes), and
NEAREST rounds that position half up. ``axis_parameters`` gives the parameters of every
form torch has:

- an integer factor ``k``: torch picks input row ``floor(y / k)``; ``n = 2k, d = 2,
  offset = 1 - k`` gives ``floor((2y + 1) / 2k)`` = ``floor(y / k)``. Ethos-U55 runs exactly
  this form for power-of-two factors 2..8 (it rejects the equivalent ``n = k, d = 1,
  offset = -k / 2``); Ethos-U85 runs any factor.
- any other ratio ``r = p / q`` (``in / out``, or ``1 / scale_factor`` when the model gave
  one: torch's kernel samples by that): nearest ``floor(y * r)`` is ``n = 2q, d = 2p,
  offset = -q``; half-pixel bilinear (align_corners=False) ``(y + 0.5) * r - 0.5`` is
  ``n = 2q, d = 2p, offset = p - q``; align_corners=True ``y * (in - 1) / (out - 1)`` is
  ``n = out - 1, d = in - 1, offset = 0``. Each reduced by the common divisor.

TOSA bounds the parameters (``n <= 2048``, a downscale below 16x, offset and border within
their ranges): a ratio outside them is named as unsupported. torch computes the nearest
source row in float32, which can fall one row short of the exact ratio; the lowering runs
torch's own operator on an index image and lowers only when TOSA's rows are the same.
"""

from __future__ import annotations

from fractions import Fraction
from math import gcd

import torch
from torch import fx

from pipeline.tosa.context import LoweringContext, torch_shape
from pipeline.fx import call_arguments
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, U55_U65, lowers

MAX_SCALE_N = 2048  # TOSA: scale_n <= 1 << 11 (an int32 accumulator for int8 BILINEAR)


def resize_parameters(in_size: int, out_size: int) -> tuple[int, int, int, int]:
    """(scale_n, scale_d, offset, border) along one axis for an integer factor."""
    factor = out_size // in_size
    n, d, offset = 2 * factor, 2, 1 - factor
    border = (out_size - 1) * d - (in_size - 1) * n + offset
    return n, d, offset, border


def axis_parameters(
    in_size: int,
    out_size: int,
    *,
    nearest: bool,
    align_corners: bool = False,
    scale: float | None = None,
) -> tuple[int, int, int, int]:
    """(scale_n, scale_d, offset, border) that sample along one axis where torch does.

    ``scale`` is the model's scale factor for the axis (None when it gave a size).
    """
    if out_size == in_size:  # torch copies an axis it does not resize, whatever the scale
        return resize_parameters(in_size, out_size)
    if align_corners and not nearest:
        if out_size == 1:  # one output row: input row 0
            n, d, offset = 1, 1, 0
        elif in_size == 1:  # every output row between row 0 and (clamped) row 0
            n, d, offset = out_size, 1, 0
        else:
            n, d, offset = out_size - 1, in_size - 1, 0
    else:
        integer = out_size % in_size == 0 and scale in (None, out_size // in_size)
        # torch's nearest takes row y // 2 for twice the size, whatever the scale
        if integer or (nearest and out_size == 2 * in_size):
            return resize_parameters(in_size, out_size)
        if scale:  # torch's kernel samples by 1 / scale, whatever the sizes
            ratio = 1 / Fraction(scale).limit_denominator(MAX_SCALE_N)
        else:
            ratio = Fraction(in_size, out_size)
        p, q = ratio.numerator, ratio.denominator
        n, d, offset = 2 * q, 2 * p, (-q if nearest else p - q)
    common = gcd(n, d, offset)
    n, d, offset = n // common, d // common, offset // common
    return n, d, offset, (out_size - 1) * d - (in_size - 1) * n + offset


def parameter_limits(n: int, d: int, offset: int, border: int) -> str | None:
    """What TOSA's RESIZE rejects in these parameters, or None."""
    if n > MAX_SCALE_N:
        return f"scale numerator {n} > {MAX_SCALE_N}"
    if d >= 16 * n:
        return f"a downscale of {Fraction(d, n)} (TOSA: less than 16)"
    if not -n <= offset < 16 * n or not -16 * n <= border < n:
        return f"offset {offset} / border {border} outside TOSA's range for scale {n}/{d}"
    return None


def _axis_scales(arguments: dict) -> list[float | None]:
    if arguments.get("scale_factors"):
        return list(arguments["scale_factors"])
    return [arguments.get("scales_h"), arguments.get("scales_w")]


def _nearest_rows(n: int, d: int, offset: int, in_size: int, out_size: int) -> list[int]:
    """TOSA NEAREST's input row per output row."""
    rows = []
    for y in range(out_size):
        position = y * d + offset
        row, rest = position // n, position % n
        rows.append(min(row + 1, in_size - 1) if 2 * rest >= n else max(row, 0))
    return rows


def _torch_nearest_rows(node: fx.Node, in_hw, out_hw) -> tuple[list[int], list[int]]:
    """torch's own source rows and columns: its operator run on an image of indices."""
    height, width = in_hw
    index = torch.arange(height * width, dtype=torch.float32).reshape(1, 1, height, width)
    picked = node.target(index, *node.args[1:], **node.kwargs).reshape(out_hw)
    return (
        [int(v) // width for v in picked[:, 0].tolist()],
        [int(v) % width for v in picked[0, :].tolist()],
    )


def resize_inputs(node: fx.Node, ctx: LoweringContext, *, nearest: bool) -> tuple[list, int]:
    """RESIZE's inputs (tensor, scale, offset, border) where torch samples, and the product
    of the scale numerators (what BILINEAR multiplies integer values by).

    Raises:
        UnsupportedOperatorError: a ratio outside TOSA's RESIZE limits, or input and output
            quantized apart.
    """
    x = node.args[0]
    in_hw, out_hw = torch_shape(x)[2:], torch_shape(node)[2:]
    arguments = call_arguments(node)
    align_corners = bool(arguments.get("align_corners"))
    per_axis = [
        axis_parameters(i, o, nearest=nearest, align_corners=align_corners, scale=s)
        for i, o, s in zip(in_hw, out_hw, _axis_scales(arguments))
    ]
    for (i, o), parameters in zip(zip(in_hw, out_hw), per_axis):
        problem = parameter_limits(*parameters)
        if problem:
            raise ctx.unsupported(
                node, f"output {tuple(out_hw)} from input {tuple(in_hw)}: {problem}",
                "a ratio TOSA RESIZE takes (an upscale, or a downscale below 16x)",
            )  # fmt: skip
    if nearest and in_hw[0] * in_hw[1] < 2**24:
        wanted = _torch_nearest_rows(node, in_hw, out_hw)
        for axis, (i, o) in enumerate(zip(in_hw, out_hw)):
            n, d, offset, _ = per_axis[axis]
            # torch's float32 ratio can fall just short of the exact one: the same rows but
            # one lower where y * ratio is a whole number; half a step less offset gives that
            candidates = [(n, d, offset), (2 * n, 2 * d, 2 * offset - 1)]
            found = [c for c in candidates if _nearest_rows(*c, i, o) == wanted[axis]]
            if not found:
                raise ctx.unsupported(
                    node, f"output {tuple(out_hw)} from input {tuple(in_hw)}, where torch's "
                    "float32 source rows are neither the exact ratio's nor all just below",
                    "a ratio whose nearest rows TOSA RESIZE can reproduce",
                )  # fmt: skip
            n, d, offset = found[0]
            per_axis[axis] = (n, d, offset, (o - 1) * d - (i - 1) * n + offset)
            problem = parameter_limits(*per_axis[axis])
            if problem:
                raise ctx.unsupported(
                    node, f"output {tuple(out_hw)} from input {tuple(in_hw)}: {problem}",
                    "a ratio TOSA RESIZE takes (an upscale, or a downscale below 16x)",
                )  # fmt: skip
    x_q = ctx.qparams(x)
    if x_q is not None and x_q != ctx.qparams(node):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    (ny, dy, oy, by), (nx, dx, ox, bx) = per_axis
    inputs = [
        ctx.tensor(x),
        ctx.const(f"{node.name}_scale", [ny, dy, nx, dx], "shape"),
        ctx.const(f"{node.name}_offset", [oy, ox], "shape"),
        ctx.const(f"{node.name}_border", [by, bx], "shape"),
    ]
    return inputs, ny * nx


@lowers("aten.upsample_nearest2d.vec", "aten.upsample_nearest2d.default")
def visit_upsample_nearest2d(node: fx.Node, ctx: LoweringContext) -> None:
    inputs, _ = resize_inputs(node, ctx, nearest=True)
    ctx.emit("RESIZE", inputs, [ctx.define(node)], node, mode="NEAREST")


def u55_resize_factor(op) -> tuple[str, str] | None:
    """Ethos-U55/U65 (Vela 5.2) upscale by 2, 4 or 8 on both axes, in NEAREST mode. Both
    RESIZE forms (this file's and ``op_upsample_bilinear.py``'s) are checked here."""
    sizes = list(zip(op.inputs[0].shape[1:3], op.outputs[0].shape[1:3]))
    if any(o % i or o // i not in (2, 4, 8) for i, o in sizes):
        found = " and ".join(f"{i} to {o}" for i, o in sizes)
        return "upscale both axes by a power of two 2..8", found
    # Vela 5.2 lists BILINEAR (followed by a RESCALE) for U55/U65, yet rejects every valid
    # TOSA form of it ("Non-passthrough operation (Resize) could not run on NPU"). The U55/U65
    # variant has bilinear by 2/4/8 as NEAREST + DEPTHWISE_CONV2D (split_bilinear_resize_pass),
    # so after the factor rule above this only names a graph other than that variant.
    if op.attrs.get("mode") == "BILINEAR":
        return "use NEAREST mode (Vela 5.2 does not compile BILINEAR for it)", "BILINEAR"
    return None


def u55_resize_batch(op) -> tuple[str, str] | None:
    """Vela runs a RESIZE as an upscaling AVG_POOL2D of batch 1 (it does not split the batch
    as it does for a pool of its own): 'Non-passthrough operation (AvgPool)'."""
    if op.inputs[0].shape[0] != 1:
        return "have batch 1", f"batch {op.inputs[0].shape[0]}"
    return None


OPERATOR = Operator(
    "upsample_nearest2d -> RESIZE (NEAREST)",
    quant=SHARED,
    npu={U55_U65: {"RESIZE": (u55_resize_factor, u55_resize_batch)}},
    measured_by=("upsample/nearest x2",),
)
