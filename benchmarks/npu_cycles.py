"""Shared by the operator benchmarks: compile a lowered case for each NPU from that NPU's
variant of the graph and return its cycles, or the rule or error that stopped it."""

from __future__ import annotations

import json
import re
from pathlib import Path

ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
_RULE = re.compile(r"TOSA (\w+) on ethos-\S+ must (.*)$")


def max_diff(report: dict) -> int:
    """The largest |diff| over a verify report's outputs (output LSBs for quantized ones)."""
    return max(o.get("max_abs_diff_int", o.get("max_abs_diff", 0)) for o in report["outputs"])


def broken_rules(message: str) -> list[str]:
    """``<OP> must <rule>; got <value>`` of each violation a pre-Vela check message lists."""
    found = [_RULE.search(line) for line in message.splitlines()]
    return list(dict.fromkeys(f"{m[1]} must {m[2]}" for m in found if m))


def compile_on_npus(case, folder: Path, accelerators=ACCELERATORS) -> dict[str, dict]:
    """Accelerator -> ``{"cycles", "share"}`` (NPU cycles, NPU operator share), or
    ``{"rules"}`` (the pre-Vela check refused it) or ``{"error"}`` (the last line of any
    other failure); every accelerator is tried whatever the others give."""
    from pipeline.errors import UserError
    from pipeline.ethosu.vela import run_vela
    from pipeline.ethosu.placement import check_npu_constraints
    from tests.models.networks import vela_args

    results = {}
    for accelerator in accelerators:
        tosa = case.variant("u55" if "u55" in accelerator or "u65" in accelerator else "u85")
        try:
            check_npu_constraints(tosa, accelerator)
        except UserError as exc:
            results[accelerator] = {"rules": broken_rules(str(exc)), "error": _last(exc)}
            continue
        try:
            outputs = run_vela(tosa, folder / accelerator, vela_args(accelerator))
        except Exception as exc:  # a cell says why, the other NPU still runs
            results[accelerator] = {"error": _last(exc)}
            continue
        figures = json.loads(outputs["figures"].read_text())
        results[accelerator] = {"cycles": figures["cycles_npu"], "share": figures["npu_op_share"]}
    return results


def _last(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[-1].strip() if lines else type(exc).__name__
