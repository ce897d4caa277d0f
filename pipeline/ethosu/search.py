"""The Vela option search: compile one TOSA graph with each candidate option set and keep the
one with the fewest cycles (docs/search.md).

Every candidate must compute the same integers as the target's own options: Vela's options
searched here change the schedule (cascading, block sizes, buffering) and the memory layout,
never an operation. That is checked, not assumed: the operations of each compile (Vela's
debug database: operator, shapes, data types, kernel, MACs) must equal those of the first
candidate, or the candidate is dropped and the record says so.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.errors import StageError

# The columns of Vela's perf_debug table that define what an operation computes; the others
# (stripes, slices, offsets, memories, buffering, cascade, time) say how it is scheduled.
_ARITHMETIC = ("ifm_shape", "ifm2_shape", "ofm_shape")
_ARITHMETIC_COLUMNS = ("ifm_dtype", "ifm2_dtype", "ofm_dtype", "transpose_type", "reverse_type",
                       "weight_dtype", "kernel_depth_multiplier", "kernel_size_x",
                       "kernel_size_y", "kernel_dilation_x", "kernel_dilation_y",
                       "kernel_stride_x", "kernel_stride_y", "kernel_padding_T",
                       "kernel_padding_B", "kernel_padding_L", "kernel_padding_R")
# Vela option -> the field of the target's ``npu:`` block it comes from.
_FIELDS = {"--optimise": "optimise", "--tensor-allocator": "tensor_allocator"}


def arithmetic(debug_db: Path) -> list[tuple]:
    """What the compiled operations compute, whatever their schedule: one sorted tuple per NPU
    operation (operator, MACs, feature map shapes, data types, kernel) from Vela's debug
    database."""
    from pipeline.ethosu.roofline import read_debug_db

    tables = read_debug_db(debug_db, ("perf", "perf_debug"))
    debug = {row["id"]: row for row in tables["perf_debug"]}
    ops = []
    for row in tables["perf"]:
        detail = debug.get(row["id"], {})
        shapes = tuple(detail.get(f"{name}_{axis}", "") for name in _ARITHMETIC for axis in "nhwc")
        ops.append((row["operator"], row["mac_count"], shapes,
                    tuple(detail.get(column, "") for column in _ARITHMETIC_COLUMNS)))
    return sorted(ops)


def options_of(vela_args: Sequence[str]) -> dict[str, str]:
    """The searched options of one candidate's argv, by the target field they come from."""
    args = list(vela_args)
    return {field: args[args.index(flag) + 1] for flag, field in _FIELDS.items() if flag in args}


def search_vela(tosa: Path, out_dir: Path, candidates: Sequence[Sequence[str]], *,
                effort: str, where: str = "", known: list | None = None,
                memory_mode: Mapping[str, str] | None = None, progress: bool = False) -> dict:
    """Compile ``tosa`` with each of ``candidates`` (Vela argv options, the target's own first)
    and keep the fastest in ``out_dir``.

    The winner has the fewest total cycles; among equals, the least SRAM, then the smallest
    command stream and weights (``model_vela.npz``), then the earlier candidate.

    Returns:
        The search record (``figures.json``'s ``search``): the effort, each candidate's
        options, cycles, SRAM, npz bytes and compile seconds, and the options that won.

    Raises:
        UserError / StageError: as ``run_vela`` for the first candidate; a later candidate that
            Vela rejects is recorded, not fatal.
    """
    from pipeline.ethosu.vela import read_figures, run_vela

    record: dict = {"effort": effort, "candidates": []}
    with tempfile.TemporaryDirectory(prefix="vela-search-") as tmp:
        results = []
        for k, args in enumerate(candidates):
            folder = Path(tmp) / f"candidate{k}"
            entry = {"options": options_of(args)}
            started = time.monotonic()
            try:
                outputs = run_vela(tosa, folder, args, where=where, known=known, checked=k > 0,
                                   memory_mode=memory_mode, debug_db=folder / "debug.xml")
            except StageError as err:
                if k == 0:
                    raise
                entry["failed"] = str(err).splitlines()[0]
                outputs = None
            entry["seconds"] = round(time.monotonic() - started, 2)
            if outputs is not None:
                figures = read_figures(outputs["figures"])
                entry.update(cycles_total=figures["cycles_total"],
                             sram_memory_used=figures["sram_memory_used"],
                             npz_bytes=outputs["npz"].stat().st_size)
                ops = arithmetic(folder / "debug.xml")
                if k == 0:
                    reference = ops
                entry["same_operations"] = ops == reference
                if entry["same_operations"]:
                    results.append((entry["cycles_total"], entry["sram_memory_used"],
                                    entry["npz_bytes"], k, outputs))
            record["candidates"].append(entry)
            if progress:
                print(f"   vela search {where}: {k + 1}/{len(candidates)} "
                      f"{_describe(entry)}", file=sys.stderr, flush=True)
        *_, best, outputs = min(results, key=lambda r: r[:4])
        out_dir.mkdir(parents=True, exist_ok=True)
        for path in outputs.values():
            shutil.copyfile(path, out_dir / path.name)
    record["won"] = record["candidates"][best]["options"]
    record["won_index"] = best
    base = record["candidates"][0]["cycles_total"]
    record["cycles_saved"] = base - record["candidates"][best]["cycles_total"]
    return record


def _describe(entry: dict) -> str:
    options = ", ".join(f"{k}={v}" for k, v in entry["options"].items())
    if "failed" in entry:
        return f"{options}: Vela failed ({entry['failed']})"
    tail = "" if entry["same_operations"] else " (other operations: dropped)"
    return f"{options}: {entry['cycles_total']} cycles, {entry['sram_memory_used']} KiB SRAM{tail}"
