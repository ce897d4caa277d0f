"""The Ethos-U / TOSA-INT quantizer for torchao PT2E (``prepare_pt2e`` / ``convert_pt2e``)."""

from __future__ import annotations

import torch
from torchao.quantization.pt2e.quantizer import Quantizer

from pipeline.quant.annotators import ANNOTATORS, Rules, is_annotated
from pipeline.quant.coverage import annotate_rest
from pipeline.quant.front_end import front_end_nodes
from pipeline.quant.schemes import get_scheme


class EthosUQuantizer(Quantizer):
    """Annotates the operators the TOSA lowering supports with the chosen scheme, then every
    other node that takes or makes a float tensor (``coverage.py``), so no program stays float.

    ``rules``: FX target -> the quantization rules its operator file declares (the caller
    reads them from the operator registry, ``pipeline.tosa.registry.quant_rules``: this room
    sits below the lowering and never imports it)."""

    def __init__(self, scheme: str = "int8", observer: str = "mse", weights: str = "per_channel",
                 *, rules: Rules, front_end: str = "a16w8"):
        super().__init__()
        self.scheme = get_scheme(scheme, observer=observer, weights=weights)
        # A signal front end (stft .. log, front_end.py) needs int16 whatever the network has.
        self.front_end = get_scheme(front_end, observer=observer if observer != "histogram"
                                    else "mse", weights=weights)
        self.rules = rules

    def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
        front = front_end_nodes(model)
        for node in model.graph.nodes:
            if node.op != "call_function" or is_annotated(node):
                continue
            scheme = self.front_end if node in front else self.scheme
            for annotator in ANNOTATORS:
                if annotator(node, scheme, self.rules):
                    break
        for node in model.graph.nodes:  # after every pattern: they may claim a later node
            annotate_rest(node, self.front_end if node in front else self.scheme)
        return model

    def validate(self, model: torch.fx.GraphModule) -> None:
        """Nothing to check: operators without a lowering are reported by the lowering."""
