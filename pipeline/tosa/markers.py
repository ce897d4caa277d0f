"""FX call targets that exist only inside the lowering (inserted by passes, lowered by a
visitor). They are never executed; ``tosa_name`` is their registry key."""

from __future__ import annotations


def rescale(x):
    """Requantize ``x`` from its producer's qparams to this node's ``meta["qparams"]``."""
    raise RuntimeError("tosa.rescale is a lowering marker; it is never executed")


rescale.tosa_name = "tosa.rescale"
