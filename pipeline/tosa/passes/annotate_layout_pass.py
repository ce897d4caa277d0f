"""Give every FX value its TOSA dimension order (NHWC for 4-D, torch's order otherwise).

See ``pipeline/tosa/layout.py``: the graph is NHWC end to end, graph inputs and outputs
included, so lowering needs no TRANSPOSE for layout alone.
"""

from __future__ import annotations

import torch
from torch import fx

from pipeline.tosa.layout import default_order
from pipeline.tosa.passes.context import PassContext


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in gm.graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            node.meta["tosa_dim_order"] = default_order(value.dim())
