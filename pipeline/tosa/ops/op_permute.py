"""aten.permute / transpose.int -> TRANSPOSE (a RESHAPE when only size-1 dims move).

Both tensors are in their own TOSA dim order (NHWC for 4-D), so the TOSA permutation is
composed from torch's: output TOSA dim ``i`` is torch output dim ``out_order[i]``, which is
torch input dim ``perm[out_order[i]]``, found in the input at its TOSA position.
"""

from __future__ import annotations

import math

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.quant.rules import SHARED
from pipeline.tosa.registry import Operator, U55_U65, lowers


def torch_permutation(node: fx.Node) -> list[int]:
    rank = len(torch_shape(node))
    if str(node.target) == "aten.transpose.int":
        a, b = int(node.args[1]) % rank, int(node.args[2]) % rank
        perm = list(range(rank))
        perm[a], perm[b] = b, a
        return perm
    return [int(d) % rank for d in node.args[1]]


@lowers("aten.permute.default", "aten.transpose.int")
def visit_permute(node: fx.Node, ctx: LoweringContext) -> None:
    x = node.args[0]
    perm, in_order = torch_permutation(node), list(dim_order(x))
    tosa_perm = [in_order.index(perm[d]) for d in dim_order(node)]
    source = ctx.tensor(x)
    shape = ctx.graph.tensors[source].shape
    out = ctx.define(node)
    if layout.moves_only_unit_dims(shape, tosa_perm):
        emit.reshape(ctx, node, source, ctx.graph.tensors[out].shape, out)
    else:
        emit.transpose(ctx, node, source, tosa_perm, out)
    x_q, out_q = ctx.qparams(x), ctx.qparams(node)
    if x_q is not None and not emit.same_quantization(x_q, out_q):
        raise ctx.unsupported(node, "input and output quantized differently", "shared qparams")


# What Vela 5.2 rejects on U55/U65 beyond its table's wording, measured against Vela itself
# (tests/ethosu/test_placement_*.py), found by benchmarks/bench_op_parity.py.
MAX_AXIS = 65536


def u55_int32_rank(op) -> tuple[str, str] | None:
    """Vela 5.2 transposes int32 tensors of rank 4 at most on Ethos-U55/U65 (its table)."""
    if op.inputs[0].dtype == "int32" and len(op.inputs[0].shape) > 4:
        return "have rank <= 4 for int32", f"rank {len(op.inputs[0].shape)}"
    return None


def u55_transpose_size(op) -> tuple[str, str] | None:
    """Any axis over 65536 fails; from rank 5 so do three axes over 65536 elements together
    (Vela's table says 'any N-2 axes', but lets rank 4 pass with two axes of 300 and rank 6
    with four axes of 128,000 elements; three axes is where it fails, measured)."""
    shape = op.inputs[0].shape
    if max(shape, default=1) > MAX_AXIS:
        return f"have no axis over {MAX_AXIS}", f"shape {list(shape)}"
    if len(shape) >= 5 and math.prod(sorted(shape)[-3:]) > MAX_AXIS:
        return f"have at most {MAX_AXIS} elements in any three axes from rank 5", (
            f"shape {list(shape)}"
        )
    return None


OPERATOR = Operator(
    "permute / transpose -> TRANSPOSE (a RESHAPE when only size-1 dims move)",
    quant=SHARED,
    npu={U55_U65: {"TRANSPOSE": (u55_int32_rank, u55_transpose_size)}},
)
