"""Fold a zero ``aten.pad`` of the H/W dims into the padding of the conv2d that reads it (or
of the L dim into a conv1d's: causal convolutions pad on the left only).

Ports of TensorFlow models pad explicitly to get "same" padding, which is asymmetric (one more
row after than before at stride 2) and so has no ``nn.Conv2d(padding=...)`` equivalent. TOSA
convolutions take separate top/bottom/left/right pads, and they pad with the input zero point,
which is exactly a quantized 0.0; so the PAD disappears. The pads go to
``conv.meta["extra_pad"]`` (top, bottom, left, right) for the conv2d visitor.
"""

from __future__ import annotations

from torch import fx

from pipeline.tosa.passes.context import PassContext

_PADS = ("aten.pad.default", "aten.constant_pad_nd.default")
# Convolutions -> the rank of their input (a conv1d pads W only; visitors read extra_pad).
_CONVS = {
    "aten.conv2d.default": 4,
    "aten.conv2d.padding": 4,
    "aten.conv1d.default": 3,
    "aten.conv1d.padding": 3,
}


def _hw_pads(pad: fx.Node, rank: int = 4) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a zero-valued constant pad of H/W only (of a rank-4
    value; of W only for rank 3), else None."""
    args = list(pad.args) + [None] * (4 - len(pad.args))
    if str(pad.target) == "aten.constant_pad_nd.default":
        args = [args[0], args[1], "constant", args[2]]
    pads, mode, value = list(args[1]), args[2] or "constant", args[3] or 0.0
    if mode != "constant" or value != 0 or len(pad.meta["val"].shape) != rank:
        return None
    if len(pads) > 2 * (rank - 2):
        return None
    left, right, top, bottom = (pads + [0] * 4)[:4]
    if min(left, right, top, bottom) < 0:
        return None  # negative pads crop
    return top, bottom, left, right


def _fold(pad: fx.Node, conv: fx.Node, pads: tuple[int, int, int, int]) -> None:
    extra = conv.meta.get("extra_pad", (0, 0, 0, 0))
    conv.meta["extra_pad"] = tuple(a + b for a, b in zip(extra, pads))
    conv.replace_input_with(pad, pad.args[0])


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for pad in list(gm.graph.nodes):
        if pad.op != "call_function" or str(pad.target) not in _PADS:
            continue
        users = list(pad.users)
        if len(users) != 1 or str(users[0].target) not in _CONVS:
            continue
        if users[0].args[0] is not pad or users[0].args.count(pad) != 1:
            continue
        pads = _hw_pads(pad, _CONVS[str(users[0].target)])
        if pads is None:
            continue
        _fold(pad, users[0], pads)
        gm.graph.erase_node(pad)
