"""Shared by the operator benchmarks: compile an operator case as the operator tests do
(``pipeline.chain.run``), then for each NPU from that NPU's variant of the graph, and return
its cycles, or the rule or error that stopped it."""

from __future__ import annotations

import re
from pathlib import Path

ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
_RULE = re.compile(r"TOSA (\w+) on ethos-\S+ must (.*)$")


def compile_case(module, specs, dtype: str, folder: Path, where: str = "bench"):
    """``module`` on inputs drawn from ``specs`` (``models.cases``: the example, 4 calibration
    and 2 test input sets), quantized with ``dtype`` (``fp``: kept float) and lowered to the
    scheme's narrowest spec with its NPU variants; not yet verified (``Compiled.verify``)."""
    from models.cases import FP, SPECS, case_inputs
    from pipeline.chain.run import compile_model

    example, calibration, tests = case_inputs(specs)
    return compile_model(module, example, calibration, tests, folder,
                         scheme=None if dtype == FP else dtype, spec=SPECS[dtype], check=False,
                         where=where)


def max_diff(report: dict) -> int:
    """The largest |diff| over a verify report's outputs (output LSBs for quantized ones)."""
    return max(o.get("max_abs_diff_int", o.get("max_abs_diff", 0)) for o in report["outputs"])


def broken_rules(message: str) -> list[str]:
    """``<OP> must <rule>; got <value>`` of each violation a pre-Vela check message lists."""
    found = [_RULE.search(line) for line in message.splitlines()]
    return list(dict.fromkeys(f"{m[1]} must {m[2]}" for m in found if m))


def compile_on_npus(compiled, folder: Path, accelerators=ACCELERATORS) -> dict[str, dict]:
    """Accelerator -> ``{"cycles", "share"}`` (NPU cycles, NPU operator share), or
    ``{"rules"}`` (the pre-Vela check refused it) or ``{"error"}`` (the last line of any
    other failure); every accelerator is tried whatever the others give."""
    from pipeline.chain.vela import npu_config, vela
    from pipeline.errors import StageError, UserError

    results = {}
    for accelerator in accelerators:
        tosa = compiled.variant(npu_config(accelerator).variant)
        try:
            figures = vela(tosa, accelerator, folder / accelerator)
        except StageError as exc:  # Vela itself failed: a cell says why, the other NPU runs
            results[accelerator] = {"error": _last(exc)}
            continue
        except UserError as exc:  # the NPU's placement rules, checked before Vela
            results[accelerator] = {"rules": broken_rules(str(exc)), "error": _last(exc)}
            continue
        except Exception as exc:  # noqa: BLE001 - any other failure is a cell too
            results[accelerator] = {"error": _last(exc)}
            continue
        results[accelerator] = {"cycles": figures["cycles_npu"], "share": figures["npu_op_share"]}
    return results


def _last(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[-1].strip() if lines else type(exc).__name__
