"""aten.permute / transpose.int -> TRANSPOSE (a RESHAPE when only size-1 dims move).

Both tensors are in their own TOSA dim order (NHWC for 4-D), so the TOSA permutation is
composed from torch's: output TOSA dim ``i`` is torch output dim ``out_order[i]``, which is
torch input dim ``perm[out_order[i]]``, found in the input at its TOSA position.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit import common as emit
from pipeline.tosa import layout
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape
from pipeline.tosa.registry import lowers


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
