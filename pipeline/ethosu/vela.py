"""Vela stage: compile a TOSA flatbuffer for one Ethos-U configuration (raw output).

Outputs: ``model_vela.npz`` (command stream, weights, IO layout), ``summary.csv`` (Vela's
per-network figures), ``per_layer.csv`` (Vela's per-layer estimates: cycles, MACs, memory
accesses of each NPU operator; the report's costliest layers), ``figures.json`` (the
figures the target report shows) and, when asked, ``roofline.json`` (each operation against
the NPU's bound, from Vela's debug database: ``pipeline/ethosu/roofline.py``).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.errors import StageError
from pipeline.ethosu.roofline import roofline
from pipeline.ethosu.vela_process import run_vela_command, vela_command

_OPERATORS = re.compile(r"^(CPU|NPU) operators = (\d+) \(([\d.]+)%\)", re.MULTILINE)

# Vela summary columns copied into the report, with the unit each is in.
_FIGURES = {
    "cycles_npu": "cycles", "cycles_total": "cycles", "inference_time": "s",
    "inferences_per_second": "1/s", "nn_macs": "MACs", "sram_memory_used": "KiB",
    "dram_memory_used": "KiB", "on_chip_flash_memory_used": "KiB",
    "off_chip_flash_memory_used": "KiB", "total_npu_encoded_weights": "bytes",
    "accelerator_configuration": "", "system_config": "", "memory_mode": "",
}


def run_vela(tosa: Path, out_dir: Path, vela_args: Sequence[str], *, where: str = "",
             known: list | None = None, checked: bool = False,
             memory_mode: Mapping[str, str] | None = None,
             debug_db: Path | None = None) -> dict[str, Path]:
    """Compile ``tosa`` with Vela and collect its outputs.

    Args:
        tosa: the TOSA flatbuffer.
        out_dir: folder receiving ``model_vela.npz``, ``summary.csv``, ``per_layer.csv``,
            ``figures.json``.
        vela_args: options from the target's NPU config (accelerator, ini, system config, ...).
        known: the placement verdicts of ``tosa`` for the accelerator's family
            (``placement.verdicts``), when the lower stage computed them.
        checked: the caller checked placement already (the NPU segments of a mixed graph).
        memory_mode: the build's ``[Memory_Mode.*]`` section of vela.ini; given, the
            roofline of the compile is written to ``roofline.json``.
        debug_db: where to keep Vela's debug database (the search compares the operations
            of its candidates, ``search.py``); None: not kept.

    Returns:
        Output role -> path.

    Raises:
        UserError: an operator breaks the NPU's constraints (checked before Vela, naming the
            model line and the rule).
        StageError: Vela failed, or placed any operator on the CPU (no silent fallback).
    """
    from pipeline.ethosu.placement import check_npu_constraints

    if "--accelerator-config" in vela_args and not checked:
        accelerator = vela_args[list(vela_args).index("--accelerator-config") + 1]
        check_npu_constraints(tosa, accelerator, where, known)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vela-") as tmp:
        network = Path(tmp) / "model.tosa"
        shutil.copyfile(tosa, network)
        # --verbose-performance also writes <network>_per-layer.csv (the per-layer estimates);
        # --enable-debug-db <network>_debug.xml (shapes, types, memories, weight bytes and the
        # TOSA operator of each NPU operation: the roofline's inputs). Neither changes the npz.
        argv = [*vela_args, "--output-format", "raw", "--verbose-performance",
                *(["--enable-debug-db"] if memory_mode is not None or debug_db else []),
                "--output-dir", str(Path(tmp) / "out"), str(network)]
        command = [*vela_command(), *argv]
        status, stdout, stderr = run_vela_command(argv)
        if status != 0:
            raise StageError(where, f"vela must compile the network; it exited {status}",
                             command, stderr or stdout)
        npz = Path(tmp) / "out" / "model_vela.npz"
        summaries = sorted((Path(tmp) / "out").glob("model_summary_*.csv"))
        per_layer = Path(tmp) / "out" / "model_per-layer.csv"
        debug_db_file = Path(tmp) / "out" / "model_debug.xml"
        if (not npz.is_file() or not summaries or not per_layer.is_file()
                or ((memory_mode is not None or debug_db) and not debug_db_file.is_file())):
            raise StageError(where, "vela must write model_vela.npz, a summary, per-layer "
                             "estimates (and, for the roofline, its debug database); got "
                             f"{sorted(p.name for p in (Path(tmp) / 'out').iterdir())}", command)
        figures = parse_figures(summaries[0], stdout)
        if figures["cpu_operators"]:
            raise StageError(where, "every operator must run on the NPU; Vela left "
                             f"{figures['cpu_operators']} on the CPU", command, stdout)
        outputs = {"npz": out_dir / "model_vela.npz", "summary": out_dir / "summary.csv",
                   "layers": out_dir / "per_layer.csv", "figures": out_dir / "figures.json"}
        shutil.copyfile(npz, outputs["npz"])
        shutil.copyfile(per_layer, outputs["layers"])
        shutil.copyfile(summaries[0], outputs["summary"])
        if memory_mode is not None:
            outputs["roofline"] = out_dir / "roofline.json"
            figures_of = roofline(debug_db_file, summaries[0], tosa, memory_mode)
            outputs["roofline"].write_text(json.dumps(figures_of, indent=1, sort_keys=True))
        if debug_db is not None:
            shutil.copyfile(debug_db_file, debug_db)
    outputs["figures"].write_text(json.dumps(figures, indent=2, sort_keys=True))
    return outputs


def read_figures(path: Path) -> dict:
    """A compile's ``figures.json``."""
    return json.loads(path.read_text())


def parse_figures(summary_csv: Path, stdout: str) -> dict:
    """Per-network figures from Vela's summary CSV and its operator counts from stdout."""
    with open(summary_csv, newline="") as handle:
        row = next(csv.DictReader(handle))
    figures: dict = {}
    for name in _FIGURES:
        value = row.get(name, "")
        try:
            number = float(value)
            figures[name] = int(number) if number.is_integer() and "time" not in name else number
        except ValueError:
            figures[name] = value
    counts = {kind.lower(): int(n) for kind, n, _ in _OPERATORS.findall(stdout)}
    figures["cpu_operators"] = counts.get("cpu", 0)
    figures["npu_operators"] = counts.get("npu", 0)
    total = figures["cpu_operators"] + figures["npu_operators"]
    figures["npu_op_share"] = figures["npu_operators"] / total if total else 1.0
    return figures
