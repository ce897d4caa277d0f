"""The zoo's cycle check: NPU cycles per (model, NPU config) against a baseline checked into
the repository (``benchmarks/zoo_cycles.json``), so a model getting slower on any NPU is
noticed before the change lands (``bench_real_models.py --check-cycles``).

Standard library only: the comparison is plain data, testable without torch or Vela.

The baseline file::

    {"about": "...", "vela": "5.2.0", "tolerance_pct": 1.0,
     "cycles": {"resnet18": {"ethos-u55-128": 1234567, "ethos-u85-256": 456789}, ...}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

BASELINE = Path(__file__).resolve().parent / "zoo_cycles.json"
DEFAULT_TOLERANCE_PCT = 1.0
ABOUT = ("NPU cycles (Vela's cycles_npu estimate) per zoo model and NPU config, as built by "
         "benchmarks/bench_real_models.py. Checked by --check-cycles; rewritten by "
         "--update-cycles. Estimates from Vela, not measured on hardware.")


@dataclass
class Verdict:
    """The check of one run against the baseline: ``regressed`` fails it (one line per row);
    ``notes`` (faster rows, rows the baseline lacks) only inform."""

    regressed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def measured(results: dict) -> dict[str, dict[str, int]]:
    """Model -> NPU config -> NPU cycles from ``build_model`` results (models that built)."""
    return {name: {npu: int(figures["cycles_npu"]) for npu, figures in r["vela"].items()}
            for name, r in results.items() if r.get("vela")}


def load(path: Path) -> dict:
    """The baseline at ``path``; an empty one when the file does not exist.

    Raises:
        SystemExit: the file is not a baseline (one line: where, what was expected, found).
    """
    if not path.exists():
        return {"cycles": {}}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{path}: must be JSON; got {exc}") from None
    cycles = data.get("cycles") if isinstance(data, dict) else None
    if not isinstance(cycles, dict) or not all(
            isinstance(row, dict) and all(isinstance(v, int) for v in row.values())
            for row in cycles.values()):
        raise SystemExit(f"{path}: must hold \"cycles\": {{model: {{npu config: int}}}}; "
                         f"got {str(cycles)[:120]}")
    return data


def check(baseline: dict, results: dict, tolerance_pct: float) -> Verdict:
    """Each (model, NPU) of the baseline that this run built or tried, against the run.

    A row regresses when its cycles exceed the baseline by more than ``tolerance_pct``
    percent, or when the model no longer builds for that NPU. Models this run did not try
    are not checked (``--models`` picks a subset).
    """
    verdict = Verdict()
    now = measured(results)
    for name, result in results.items():
        before = baseline["cycles"].get(name)
        if before is None:
            got = now.get(name, {})
            verdict.notes.append(f"{name}: not in the baseline"
                                 + (f" ({_cells(got)})" if got else ""))
            continue
        for npu, old in sorted(before.items()):
            new = now.get(name, {}).get(npu)
            if new is None:
                why = (f"blocked at {result.get('stage')}: "
                       f"{str(result.get('blocker')).strip().splitlines()[0][:160]}"
                       if result.get("blocker") else "no Vela figures")
                verdict.regressed.append(f"{name} on {npu}: no longer built ({why}); "
                                         f"baseline {old:,} NPU cycles")
                continue
            change = 100.0 * (new - old) / old if old else 0.0
            line = (f"{name} on {npu}: {new:,} NPU cycles, baseline {old:,} "
                    f"({change:+.1f}%, tolerance {tolerance_pct:g}%)")
            if change > tolerance_pct:
                verdict.regressed.append(line)
            elif change < -tolerance_pct:
                verdict.notes.append(f"faster: {line}; --update-cycles records it")
        for npu in sorted(set(now.get(name, {})) - set(before)):
            verdict.notes.append(f"{name} on {npu}: not in the baseline "
                                 f"({now[name][npu]:,} NPU cycles)")
    return verdict


def updated(baseline: dict, results: dict, vela_version: str) -> dict:
    """The baseline with the rows of this run replaced (models not run are kept; a model
    that did not build keeps its old rows, so an update never hides a blocked model)."""
    cycles = {name: dict(row) for name, row in baseline.get("cycles", {}).items()}
    for name, row in measured(results).items():
        cycles[name] = {**cycles.get(name, {}), **row}
    return {"about": ABOUT, "vela": vela_version,
            "tolerance_pct": baseline.get("tolerance_pct", DEFAULT_TOLERANCE_PCT),
            "cycles": {name: dict(sorted(row.items())) for name, row in sorted(cycles.items())}}


def write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")


def _cells(row: dict[str, int]) -> str:
    return ", ".join(f"{npu} {cycles:,}" for npu, cycles in sorted(row.items()))
