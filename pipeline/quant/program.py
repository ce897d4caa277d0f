"""Load and save ExportedPrograms that may hold quantize/dequantize operators."""

from __future__ import annotations

import os
from pathlib import Path

import torch

# Registers torch.ops.quantized_decomposed.*: torch.export.load cannot resolve the q/dq
# operators of a quantized program without it.
import torch.ao.quantization.fx._decomposed  # noqa: F401
from torch.export import ExportedProgram


def load_program(path: Path) -> ExportedProgram:
    return torch.export.load(path)


def save_program(program: ExportedProgram, path: Path) -> None:
    """torch.export.save to a temporary file, then rename: readers never see half a file."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.pt2")  # save wants a .pt2 name
    torch.export.save(program, tmp)
    os.replace(tmp, path)
