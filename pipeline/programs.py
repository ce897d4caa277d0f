"""Load and save ExportedPrograms that may hold quantize/dequantize operators."""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import torch

# Registers torch.ops.quantized_decomposed.*: torch.export.load cannot resolve the q/dq
# operators of a quantized program without it.
import torch.ao.quantization.fx._decomposed  # noqa: F401
from torch.export import ExportedProgram

# torch 2.13 warns of its own deprecated LeafSpec whenever it copies an output spec (each
# ExportedProgram.module() of a model with a tuple output): noise in every build's output
# that no user can act on.
warnings.filterwarnings("ignore", r".*isinstance\(treespec, LeafSpec\)", FutureWarning)


def load_program(path: Path) -> ExportedProgram:
    return torch.export.load(path)


def save_program(program: ExportedProgram, path: Path) -> None:
    """torch.export.save, byte for byte the same for the same program in any process (so the
    next stage's inputs repeat and doit's checksum check stops an unchanged rebuild there),
    to a temporary folder, then renamed: readers never see half a file."""
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                # torch's provenance record: ids of graph objects, new in every process
                node.meta.pop("from_node", None)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        # The archive's inner folder is named after the file: save under the final name.
        torch.export.save(program, tmp / path.name)
        os.replace(tmp / path.name, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
