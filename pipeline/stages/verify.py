"""Verify stage: the TOSA graph in the TOSA reference model against torch on the same inputs.

An integer graph is checked layer by layer (``verify_layers.py``): every quantized layer's
integers against torch's q/dq math for the same node fed the TOSA graph's own integers, within
the error bound of the layer's TOSA operators - a deep network's rounding differences cannot
compound, and the first wrong layer is named. End to end, each output's SQNR against the float
model may be at most ``MAX_SQNR_LOSS_DB`` below torch's own quantized graph's; the exact-match
figures against torch's quantized graph are reported. A float graph is compared end to end
with a relative tolerance. Imports torch inside the functions.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

from pipeline.errors import VerificationError

# End to end (reported, not enforced): what a graph's outputs would meet if rounding
# differences did not compound, as in a graph of a few layers.
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
FLOAT_REASON = (
    "float graph: each output must match the float model within 1e-3 of its largest "
    "magnitude (TOSA FP operators and torch's float32 kernels sum in different orders and "
    "approximate transcendental functions differently)"
)
END_TO_END_REASON = "end to end, reported (layers and SQNR gate the build): "


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
    """A torch input tensor as the TOSA graph's input array (quantized, TOSA dim order).
    Integer inputs that are not quantized (ids, masks) take the graph's type: int64 -> int32."""
    import numpy as np
    import torch

    if entry["dtype"].startswith("int") and entry.get("qmin") is None:
        x = x.to(getattr(torch, entry["dtype"]))
    elif entry["dtype"].startswith("int"):
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


def _torch_runs(float_model: Path, program, samples) -> list[tuple[tuple, tuple]]:
    """Per sample: (torch's quantized graph outputs, float model outputs), float32."""
    import torch

    from pipeline.quant.program import load_program

    float_fn = load_program(float_model).module(check_guards=False)
    runs = []
    with torch.no_grad():
        for sample in samples:
            runs.append((_as_tuple(program(*sample)), _as_tuple(float_fn(*sample))))
    return runs


def _feeds(desc: dict, samples) -> list[dict]:
    # An input renamed after targets.yaml keeps its graph tensor name in "tosa_name".
    return [
        {e.get("tosa_name", e["name"]): _to_tosa(x, e) for x, e in zip(sample, desc["inputs"])}
        for sample in samples
    ]


def _compare_int(entry: dict, runs, tolerance: int) -> dict:
    import numpy as np

    scale, zp = entry["scale"], entry["zero_point"]
    got = np.concatenate([g.reshape(-1).astype(np.int64) for g, _, _ in runs])
    expected = np.concatenate(
        [np.round(r.reshape(-1) / scale).astype(np.int64) + zp for _, r, _ in runs]
    )
    ideal = np.concatenate([f.reshape(-1) for _, _, f in runs])
    diff = np.abs(got - expected)
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
        "exact_match_fraction": float(np.mean(diff == 0)),
        "off_by_one_count": int(np.sum(diff == 1)),
        "tolerance": tolerance,
        "within_tolerance": bool(diff.max() <= tolerance),
        "sqnr_db_vs_float": sqnr,
        "sqnr_db_torch_quantized_vs_float": sqnr_torch,
        # Integers and bools that are not quantized (masks, ids, comparisons) never round.
        "passed": bool(sqnr_ok and (entry.get("qmin", 0) is not None or diff.max() == 0)),
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


def _output_failure(where: str, result: dict, samples: int) -> VerificationError:
    if "max_abs_diff_int" in result:
        allowed = (
            f"an SQNR vs float at most {MAX_SQNR_LOSS_DB} dB below torch's quantized graph's "
            "(or added noise under one quantization step's)"
        )
        got = (
            f"{_db(result['sqnr_db_vs_float'])} (torch quantized: "
            f"{_db(result['sqnr_db_torch_quantized_vs_float'])}), max |diff| "
            f"{result['max_abs_diff_int']}, exact-match fraction "
            f"{result['exact_match_fraction']:.4f}"
        )
    else:
        allowed = f"to match the float model within {result['tolerance']:.3g}"
        got = f"max |diff| {result['max_abs_diff']:.3g}"
    return VerificationError(
        f"{where}: output {result['name']} of the TOSA reference model must have {allowed}; "
        f"got {got} over {samples} input sets"
    )


def _layer_failure(where: str, layer: dict, samples: int) -> VerificationError:
    at = f" at {layer['source']}" if layer["source"] else ""
    if layer["check"] == "exact":
        allowed = "exactly (no TOSA operator of the layer rounds)"
    else:
        allowed = (
            f"within its error bound {layer['bound']:g} of the exact q/dq value "
            f"(+-{layer['tolerance']} from torch's integer at rounding ties only)"
        )
    return VerificationError(
        f"{where}: layer {layer['node']} ({layer['op']}; TOSA {layer['tosa'] or '-'}){at}, the "
        f"first that differs, must match torch fed the same integers {allowed}; got "
        f"{layer['beyond_bound']} values beyond it, max |diff| {layer['max_abs_diff_int']}, "
        f"exact-match fraction {layer['exact_match_fraction']:.4f} over {samples} input sets"
    )


def _check(graph: Path, desc: dict, samples, program, torch_runs, feeds, where: str) -> dict:
    """Run ``graph`` on every sample; compare its layers (integer graphs) and outputs."""
    import tempfile

    from pipeline.stages.verify_layers import CHECKS, LayerCheck
    from pipeline.tosa.flatbuffer import read_block, with_outputs
    from pipeline.tosa.reference_model import run_reference_model

    block = read_block(graph)
    fp = not any(e.get("qmin") is not None for e in [*desc["inputs"], *desc["outputs"]])
    layers = None if fp else LayerCheck(program, block, desc.get("layers", []), where)
    outputs = [e["name"] for e in desc["outputs"]]
    wanted = outputs + [t for t in (layers.tensors if layers else []) if t not in block.inputs]
    names = list(dict.fromkeys(wanted))
    runs = [[] for _ in outputs]
    with tempfile.TemporaryDirectory(prefix="verify-") as tmp:
        debug = Path(tmp) / "layers.tosa"  # the graph with every layer tensor an output
        debug.write_bytes(with_outputs(graph, names))
        for sample, feed, (reference, ideal) in zip(samples, feeds, torch_runs):
            got = run_reference_model(debug, feed, names, where=where)
            if layers is not None:
                layers.add(sample, {**feed, **got})
            for i, entry in enumerate(desc["outputs"]):
                runs[i].append((_from_tosa(got[entry["name"]], entry),
                                reference[i].detach().double().numpy(),
                                ideal[i].detach().double().numpy()))  # fmt: skip
    return _results(graph, desc, block, layers, runs, CHECKS)


def _results(graph: Path, desc: dict, block, layers, runs, checks: dict) -> dict:
    from pipeline.tosa.flatbuffer import rescale_input_types, table_max_steps

    if layers is None:
        results = [_compare_float(e, r) for e, r in zip(desc["outputs"], runs)]
        return {"tolerance_reason": FLOAT_REASON, "outputs": results,
                "passed": all(r["passed"] for r in results)}  # fmt: skip
    operators = [op.op for op in block.operators]
    tolerance, _, reason = tolerance_policy(
        operators, rescale_input_types(graph), table_max_steps(graph)
    )
    results = [
        _compare_int(e, r, tolerance)
        if e["dtype"].startswith("int") or e["dtype"] == "bool"  # bool: exactly torch's
        else _compare_float(e, r)
        for e, r in zip(desc["outputs"], runs)
    ]
    summaries = [layer.summary() for layer in layers.layers]
    return {
        "tolerance_reason": END_TO_END_REASON + reason,
        "layer_checks": {k: v for k, v in checks.items() if any(s["check"] == k for s in summaries)},
        "layers": summaries,
        # layers whose tensor this graph (an NPU variant) lacks: checked with the next one
        **({"layers_merged": layers.merged} if layers.merged else {}),
        "outputs": results,
        "passed": all(r["passed"] for r in results) and all(s["beyond_bound"] == 0 for s in summaries),
    }  # fmt: skip


def _failures(where: str, checked: dict, samples: int) -> list[VerificationError]:
    """The first failing layer, then failing outputs, of one checked graph."""
    layer = next((s for s in checked.get("layers", []) if s["beyond_bound"]), None)
    errors = [_layer_failure(where, layer, samples)] if layer else []
    return errors + [
        _output_failure(where, r, samples) for r in checked["outputs"] if not r["passed"]
    ]


@contextlib.contextmanager
def _one_torch_thread():
    """torch on one thread while verifying: intra-op threads only synchronise on tensors of
    batch 1, and when doit runs stages side by side they oversubscribe the cores (measured:
    mobilenet_v1's 4 test inputs take 0.1 s on one thread, seconds on two of a busy machine)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


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
            reference, whose quantize nodes io.json's ``layers`` name; for an FP-profile
            graph, the float program).
        tosa, io: the lowered graph and its io.json.
        test_inputs: torch.save'd list of input tuples.
        out_report: JSON report: per layer (integer graphs) the check, its error bound and
            figures; per output the end-to-end figures and SQNR; overall ``passed``.
        variants: NPU variant name -> its graph (``model.<variant>.tosa``). A variant whose
            bytes differ from ``tosa`` is checked the same way (the layers whose tensors it
            still has) and reported under ``variants``; an identical one as ``"same graph"``.

    Returns:
        The report.

    Raises:
        VerificationError: a layer differs beyond its bound (names the first such layer, its
            op and source line), or an output's SQNR falls short (FP: an output differs).
    """
    import torch

    from pipeline.quant.program import load_program

    desc = json.loads(Path(io).read_text())
    samples = torch.load(test_inputs, weights_only=True)
    with _one_torch_thread():
        program = load_program(quantized).module(check_guards=False)
        torch_runs = _torch_runs(float_model, program, samples)
        feeds = _feeds(desc, samples)
        checked = _check(tosa, desc, samples, program, torch_runs, feeds, where)
        others = {}
        for name, graph in (variants or {}).items():
            if Path(graph).read_bytes() == Path(tosa).read_bytes():
                others[name] = "same graph"
            else:
                others[name] = _check(graph, desc, samples, program, torch_runs, feeds, where)
    failures = _failures(where, checked, len(samples)) + [
        error
        for name, v in others.items() if isinstance(v, dict)
        for error in _failures(f"{where} ({name} variant)", v, len(samples))
    ]  # fmt: skip
    report = {
        "where": where,
        "tosa_spec": desc.get("tosa_spec"),
        "samples": len(samples),
        **checked,
        **({"variants": others} if others else {}),
        "passed": not failures,
    }
    tmp = out_report.with_name(f".{out_report.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out_report)
    if failures:
        raise failures[0]
    return report
