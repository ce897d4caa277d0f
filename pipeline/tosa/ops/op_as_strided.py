"""aten.as_strided_copy (``torch.as_strided(x, size, stride, offset)``) -> RESHAPE, or the
constant index map it describes taken from the flattened input.

Element ``(i_0, ..., i_k)`` of the output is element ``offset + sum(i_j * stride_j)`` of the
input's contiguous storage: a map known at build time. An identity map (contiguous strides,
no offset, as many elements) is a reshape; any other is ``movement.take`` of those elements
from the input flattened in torch's order (SLICEs of its consecutive runs - an offset window
is one SLICE -, a one-hot CONV2D, or a GATHER; repeated elements allowed). Values are moved
only: the output shares the input's quantization. An input whose storage is not its own
contiguous elements, or a map reaching past them, has no such map and is refused.
"""

from __future__ import annotations

import math

import numpy as np
from torch import fx

from pipeline.tosa.emit import common as emit, movement
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, lowers


def strided_indices(size, stride, offset: int) -> np.ndarray:
    """The flat input index of every output element, in the output's row-major order."""
    grids = np.meshgrid(*(np.arange(n) * s for n, s in zip(size, stride)), indexing="ij")
    return (offset + sum(grids, np.zeros(tuple(size), dtype=np.int64))).reshape(-1)


@lowers("aten.as_strided_copy.default", "aten.as_strided.default")
def visit_as_strided(node: fx.Node, ctx: LoweringContext) -> None:
    x, size, stride = node.args[:3]
    offset = int(node.args[3] if len(node.args) > 3 else node.kwargs.get("storage_offset") or 0)
    x_q = ctx.qparams(x)
    if x_q is not None and not emit.same_quantization(x_q, ctx.qparams(node)):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")
    value = x.meta.get("val")
    if value is not None and (not value.is_contiguous() or value.storage_offset() != 0):
        raise ctx.unsupported(
            node, "an input that is a strided view of another tensor",
            "a contiguous input (as_strided reads its storage)",
        )  # fmt: skip
    numel = math.prod(torch_shape(x))
    indices = strided_indices(size, stride, offset)
    if indices.size and (indices.min() < 0 or indices.max() >= numel):
        raise ctx.unsupported(
            node, f"size {list(size)}, stride {list(stride)}, offset {offset} reading element "
            f"{int(indices.max())}", f"elements of the {numel}-element input",
        )  # fmt: skip
    flat = emit.relayout(ctx, node, ctx.tensor(x), dim_order(x), (numel,), (0,))
    if not np.array_equal(indices, np.arange(numel)):
        flat = movement.take(ctx, node, flat, 0, indices)
    emit.relayout(ctx, node, flat, (0,), torch_shape(node), dim_order(node), define=True)


OPERATOR = Operator(
    "as_strided -> RESHAPE, or SLICEs, RESHAPEs and a CONCAT of the windows",
    quant=SHARED,
)
