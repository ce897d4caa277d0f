"""Real-valued bounds of the clamp-like activations (relu, relu6, hardtanh, clamp)."""

from __future__ import annotations

from torch import fx

FLOAT_MAX = 3.4028234663852886e38
TARGETS = ("aten.relu.default", "aten.relu6.default", "aten.hardtanh.default", "aten.clamp.default")


def float_bounds(node: fx.Node) -> tuple[float, float]:
    """The activation's [lo, hi] in real values (``+-FLOAT_MAX`` when unbounded)."""
    name = str(node.target)
    if name == "aten.relu6.default":
        return 0.0, 6.0
    if name == "aten.relu.default":
        return 0.0, FLOAT_MAX
    if name == "aten.hardtanh.default":
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
        return float(lo), float(hi)
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    return (-FLOAT_MAX if lo is None else float(lo)), (FLOAT_MAX if hi is None else float(hi))
