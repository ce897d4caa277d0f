"""Vela: a lowered graph compiled for one Ethos-U configuration, as a target builds it."""

from __future__ import annotations

import json
from pathlib import Path


def npu_config(npu):
    """``npu`` as an ``NpuConfig``: one already, or an accelerator name (``ethos-u85-256``)
    with the defaults a target's ``npu: {config: <name>}`` gets (system config, memory mode)."""
    from pipeline.config.npu import NpuConfig

    return npu if isinstance(npu, NpuConfig) else NpuConfig.model_validate({"config": npu})


def vela_args(npu) -> list[str]:
    """Vela's options for ``npu`` (an ``NpuConfig`` or an accelerator name)."""
    return npu_config(npu).vela_args()


def vela(tosa: Path, npu, out_dir: Path, *, where: str = "") -> dict:
    """Compile ``tosa`` for ``npu`` (an ``NpuConfig`` or an accelerator name) with the Vela
    stage's tool run (``pipeline.ethosu.vela.run_vela``: the NPU's placement rules checked
    first, every operator on the NPU); its outputs go to ``out_dir``.

    Returns:
        The figures (``figures.json``): cycles, SRAM and flash use, NPU operator share.

    Raises:
        UserError: an operator breaks the NPU's rules (names the model line and the rule).
        StageError: Vela failed, or left an operator on the CPU.
    """
    from pipeline.ethosu.vela import run_vela

    outputs = run_vela(tosa, out_dir, vela_args(npu), where=where)
    return json.loads(outputs["figures"].read_text())
