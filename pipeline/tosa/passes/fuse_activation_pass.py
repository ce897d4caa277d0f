"""Fuse relu/relu6/hardtanh/clamp into the producer's output RESCALE.

The quantizer annotates ``conv -> relu`` as one pattern: only the activation's output is
quantized. This pass gives the producer those qparams, so its visitor rescales straight into
them; RESCALE saturates to the integer type, so when the activation's quantized bounds are
the type's full range (relu with zero point = qmin, the usual case) the activation is removed.
Otherwise it stays as an integer CLAMP, which Vela fuses into the producing NPU operation.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.emit.activation import TARGETS, float_bounds
from pipeline.tosa.passes.context import PassContext


def _absorbs(producer) -> bool:
    """A producer that computes in float in the q/dq graph and has only this consumer."""
    return (
        isinstance(producer, fx.Node)
        and producer.op == "call_function"
        and "qparams" not in producer.meta
        and len(producer.users) == 1
    )


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in list(gm.graph.nodes):
        qparams = node.meta.get("qparams")
        if node.op != "call_function" or str(node.target) not in TARGETS or qparams is None:
            continue
        producer = node.args[0]
        if not _absorbs(producer):
            continue
        producer.meta["qparams"] = qparams
        lo, hi = float_bounds(node)
        if qparams.quantize(lo) <= qparams.qmin and qparams.quantize(hi) >= qparams.qmax:
            node.replace_all_uses_with(producer)
            gm.graph.erase_node(node)
