"""Fold a zero ``aten.pad`` of the H/W dims into the padding of the conv2d that reads it.

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


def _hw_pads(pad: fx.Node) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of a zero-valued constant pad of H/W only, else None."""
    args = list(pad.args) + [None] * (4 - len(pad.args))
    if str(pad.target) == "aten.constant_pad_nd.default":
        args = [args[0], args[1], "constant", args[2]]
    pads, mode, value = list(args[1]), args[2] or "constant", args[3] or 0.0
    if mode != "constant" or value != 0 or len(pad.meta["val"].shape) != 4 or len(pads) > 4:
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
        if len(users) != 1 or str(users[0].target) != "aten.conv2d.default":
            continue
        if users[0].args[0] is not pad or users[0].args.count(pad) != 1:
            continue
        pads = _hw_pads(pad)
        if pads is None:
            continue
        _fold(pad, users[0], pads)
        gm.graph.erase_node(pad)
