"""Verify stage: the TOSA graph in the TOSA reference model against torch on the same inputs.

Integer outputs are compared with the torch q/dq graph (the quantizer's own reference) and
SQNR is reported against the float model. Imports torch/numpy inside the functions.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from pipeline.errors import VerificationError

# Ops that round in integer arithmetic, where torch's q/dq reference rounds float32 values:
# RESCALE rounds half up on multiplier * 2**-shift (31-bit multiplier), AVG_POOL2D divides with
# a reciprocal multiplier; torch rounds the float32 result half to even. At (near-)ties the
# two legitimately differ by 1, so graphs holding these ops are compared with tolerance 1.
ROUNDING_OPS = ("RESCALE", "AVG_POOL2D")
ROUNDING_REASON = (
    "graph rounds in integer arithmetic ({ops}); torch's q/dq reference rounds "
    "float32 values half to even, so results may differ by 1 at rounding ties"
)
# Off-by-one results must stay rare: a systematic +-1 is a zero-point or rounding bug.
MIN_EXACT_FRACTION = 0.8
SCALE16_REASON = (
    "; {n} RESCALE(s) of int48 accumulators use 16-bit multipliers (TOSA forbids scale32 on "
    "int48): up to 2**-15 relative scale error, about 1 LSB at int16 magnitudes per RESCALE, "
    "which compounds across layers - so the tolerance is 1 LSB per such RESCALE and the "
    "exact-match fraction is reported, not enforced"
)
TABLE_REASON = (
    "; the graph has int8 lookup TABLEs behind rounding operators: a +-1 tie difference at a "
    "TABLE's input moves its output by up to the table's largest step ({step}, e.g. "
    "reciprocal near its steep end), and a later rounding may add 1: tolerance {tolerance}"
)
INTERPOLATED_REASON = (
    "; int16 TABLEs interpolate between entries 128 input steps apart, each rounded to "
    "int16, so up to half an LSB off before the final rounding: the exact-match fraction is "
    "reported, not enforced"
)
# Whatever the tolerance, the TOSA output may not be further from the float model than torch's
# own quantized graph is (a systematic error would show here even within tolerance). Near-
# perfect outputs (int16 at ~90 dB) are exempt when the extra noise is below the output's own
# quantization noise (LSB**2 / 12 per value): a systematic +-1 everywhere adds ~LSB**2.
MAX_SQNR_LOSS_DB = 1.0
FLOAT_RTOL = 1e-3  # FP profile: max |diff| relative to max |reference|


def tolerance_policy(
    operators: list[str], rescale_inputs: list[str], tables: list[tuple[str, int]] = ()
) -> tuple[int, float, str]:
    """(max |diff|, min exact-match fraction, why) for a graph's integer outputs.

    ``tables``: per TABLE, its type and output step per input step (``table_max_steps``).
    """
    rounding = sorted({op for op in operators if op in ROUNDING_OPS})
    if not rounding:
        return 0, 1.0, "graph has no rounding operators: integer outputs must match exactly"
    reason = ROUNDING_REASON.format(ops=", ".join(rounding))
    scale16 = rescale_inputs.count("int48")
    if scale16:
        return max(1, scale16), 0.0, reason + SCALE16_REASON.format(n=scale16)
    if tables:
        step = max(1, *(s for _, s in tables))
        reason += TABLE_REASON.format(step=step, tolerance=step + 1)
        if any(dtype == "int16" for dtype, _ in tables):
            return step + 1, 0.0, reason + INTERPOLATED_REASON
        return step + 1, MIN_EXACT_FRACTION, reason
    return 1, MIN_EXACT_FRACTION, reason


def _to_tosa(x, entry: dict):
    """A torch input tensor as the TOSA graph's input array (quantized, TOSA dim order)."""
    import numpy as np
    import torch

    if entry["dtype"].startswith("int"):
        x = torch.ops.quantized_decomposed.quantize_per_tensor(
            x.float(),
            entry["scale"],
            entry["zero_point"],
            entry["qmin"],
            entry["qmax"],
            getattr(torch, entry["dtype"]),
        )
    return np.transpose(x.detach().numpy(), entry["dim_order"])


def _from_tosa(array, entry: dict):
    """A TOSA output array in torch's dim order."""
    import numpy as np

    return np.transpose(array, np.argsort(entry["dim_order"]))


def _sqnr_db(reference, estimate) -> float | None:
    import numpy as np

    noise = float(np.sum((reference - estimate) ** 2))
    signal = float(np.sum(reference**2))
    if noise == 0.0:
        return None  # identical: infinite SQNR
    return 10.0 * math.log10(max(signal, 1e-30) / noise)


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _run_all(float_model: Path, quantized: Path, tosa: Path, desc: dict, samples, where: str):
    """Per output: lists of (tosa array, torch-quantized float, float model) per sample."""
    import torch

    from pipeline.quant.program import load_program
    from pipeline.tosa.reference_model import run_reference_model

    float_fn = load_program(float_model).module(check_guards=False)
    quant_fn = load_program(quantized).module(check_guards=False)
    names = [e["name"] for e in desc["outputs"]]
    results = [[] for _ in names]
    for sample in samples:
        # An input renamed after targets.yaml keeps its graph tensor name in "tosa_name".
        feeds = {e.get("tosa_name", e["name"]): _to_tosa(x, e)
                 for x, e in zip(sample, desc["inputs"])}
        got = run_reference_model(tosa, feeds, names, where=where)
        with torch.no_grad():
            reference = _as_tuple(quant_fn(*sample))
            ideal = _as_tuple(float_fn(*sample))
        for i, entry in enumerate(desc["outputs"]):
            results[i].append(
                (
                    _from_tosa(got[entry["name"]], entry),
                    reference[i].detach().double().numpy(),
                    ideal[i].detach().double().numpy(),
                )
            )
    return results


def _compare_int(entry: dict, runs, tolerance: int, min_exact: float) -> dict:
    import numpy as np

    scale, zp = entry["scale"], entry["zero_point"]
    got = np.concatenate([g.reshape(-1).astype(np.int64) for g, _, _ in runs])
    expected = np.concatenate(
        [np.round(r.reshape(-1) / scale).astype(np.int64) + zp for _, r, _ in runs]
    )
    ideal = np.concatenate([f.reshape(-1) for _, _, f in runs])
    diff = np.abs(got - expected)
    exact = float(np.mean(diff == 0))
    sqnr = _sqnr_db(ideal, (got - zp) * scale)
    sqnr_torch = _sqnr_db(ideal, (expected - zp) * scale)
    extra_noise = float(
        np.mean(((got - zp) * scale - ideal) ** 2) - np.mean(((expected - zp) * scale - ideal) ** 2)
    )
    sqnr_ok = (
        sqnr is None
        or sqnr_torch is None
        or sqnr >= sqnr_torch - MAX_SQNR_LOSS_DB
        or extra_noise <= scale**2 / 12
    )
    return {
        "name": entry["name"],
        "elements": int(diff.size),
        "max_abs_diff_int": int(diff.max()),
        "exact_match_fraction": exact,
        "off_by_one_count": int(np.sum(diff == 1)),
        "beyond_tolerance_count": int(np.sum(diff > tolerance)),
        "tolerance": tolerance,
        "min_exact_match_fraction": min_exact,
        "sqnr_db_vs_float": sqnr,
        "sqnr_db_torch_quantized_vs_float": sqnr_torch,
        "passed": bool(diff.max() <= tolerance and exact >= min_exact and sqnr_ok),
    }


def _compare_float(entry: dict, runs) -> dict:
    import numpy as np

    got = np.concatenate([g.reshape(-1).astype(np.float64) for g, _, _ in runs])
    ideal = np.concatenate([f.reshape(-1) for _, _, f in runs])
    allowed = FLOAT_RTOL * max(float(np.abs(ideal).max()), 1e-12)
    diff = float(np.abs(got - ideal).max())
    return {
        "name": entry["name"],
        "elements": int(got.size),
        "max_abs_diff": diff,
        "tolerance": allowed,
        "sqnr_db_vs_float": _sqnr_db(ideal, got),
        "passed": diff <= allowed,
    }


def _db(value: float | None) -> str:
    return "inf dB" if value is None else f"{value:.2f} dB"


def _failure(where: str, result: dict, samples: int) -> VerificationError:
    if "max_abs_diff_int" in result:
        got = (
            f"max |diff| {result['max_abs_diff_int']}, exact-match fraction "
            f"{result['exact_match_fraction']:.4f}, {result['beyond_tolerance_count']} of "
            f"{result['elements']} values beyond tolerance"
        )
        got += f", SQNR vs float {_db(result['sqnr_db_vs_float'])} (torch quantized: " + (
            f"{_db(result['sqnr_db_torch_quantized_vs_float'])})"
        )
        allowed = (
            f"within +-{result['tolerance']} with exact-match fraction >= "
            f"{result['min_exact_match_fraction']} and SQNR at most {MAX_SQNR_LOSS_DB} dB "
            "below torch's (or added noise under one quantization step's)"
        )
    else:
        got = f"max |diff| {result['max_abs_diff']:.3g}"
        allowed = f"within {result['tolerance']:.3g}"
    return VerificationError(
        f"{where}: output {result['name']} of the TOSA reference model must "
        f"match torch {allowed}; got {got} over {samples} input sets"
    )


def verify(
    float_model: Path,
    quantized: Path,
    tosa: Path,
    io: Path,
    test_inputs: Path,
    out_report: Path,
    *,
    variants: dict[str, Path] | None = None,
    where: str = "",
) -> dict:
    """Run every test input set through the TOSA reference model and torch; write the report.

    Args:
        float_model: the float ExportedProgram (SQNR reference).
        quantized: the q/dq ExportedProgram the TOSA graph was lowered from (the integer
            reference; for an FP-profile graph, the float program).
        tosa, io: the lowered graph and its io.json.
        test_inputs: torch.save'd list of input tuples.
        out_report: JSON report (per output figures, tolerance and why, overall ``passed``).
        variants: NPU variant name -> its graph (``model.<variant>.tosa``). A variant whose
            bytes differ from ``tosa`` is checked the same way and reported under
            ``variants``; an identical one is reported as ``"same graph"``.

    Returns:
        The report.

    Raises:
        VerificationError: an output differs beyond tolerance (names where, output, figures).
    """
    import torch

    from pipeline.tosa.flatbuffer import operator_names, rescale_input_types, table_max_steps

    desc = json.loads(Path(io).read_text())
    samples = torch.load(test_inputs, weights_only=True)
    def check(graph: Path) -> tuple[str, list[dict]]:
        tolerance, min_exact, reason = tolerance_policy(
            operator_names(graph), rescale_input_types(graph), table_max_steps(graph)
        )
        runs = _run_all(float_model, quantized, graph, desc, samples, where)
        return reason, [
            _compare_int(e, r, tolerance, min_exact)
            if e["dtype"].startswith("int")
            else _compare_float(e, r)
            for e, r in zip(desc["outputs"], runs)
        ]

    reason, results = check(tosa)
    checked = {}
    for name, graph in (variants or {}).items():
        if Path(graph).read_bytes() == Path(tosa).read_bytes():
            checked[name] = "same graph"
            continue
        variant_reason, variant_results = check(graph)
        checked[name] = {"tolerance_reason": variant_reason, "outputs": variant_results,
                         "passed": all(r["passed"] for r in variant_results)}
    failures = [(where, r) for r in results if not r["passed"]] + [
        (f"{where} ({name} variant)", r)
        for name, v in checked.items() if isinstance(v, dict)
        for r in v["outputs"] if not r["passed"]
    ]
    report = {
        "where": where,
        "tosa_spec": desc.get("tosa_spec"),
        "samples": len(samples),
        "tolerance_reason": reason,
        "outputs": results,
        **({"variants": checked} if checked else {}),
        "passed": not failures,
    }
    tmp = out_report.with_name(f".{out_report.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out_report)
    for place, result in failures:
        raise _failure(place, result, len(samples))
    return report
