"""Verify stage: the TOSA graph in the TOSA reference model against torch on the same inputs.

An integer graph is checked layer by layer (``verify_layers.py``): every quantized layer's
integers against torch's q/dq math for the same node fed the TOSA graph's own integers, within
the error bound of the layer's TOSA operators - a deep network's rounding differences cannot
compound, and the first wrong layer is named. End to end (``verify_outputs.py``), each
output's SQNR against the float model may be at most 1 dB below torch's own quantized
graph's; the exact-match figures against torch's quantized graph are reported. A float graph
is compared end to end with a relative tolerance. Imports torch inside the functions.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from pipeline.errors import VerificationError
from pipeline.verify.outputs import (
    END_TO_END_REASON,
    FLOAT_REASON,
    compare_float,
    compare_int,
    noise_allowance,
    output_failure,
    tolerance_policy,
)


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


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _torch_runs(float_program, program, samples) -> list[tuple[tuple, tuple]]:
    """Per sample: (torch's quantized graph outputs, float model outputs), float32."""
    import torch

    float_fn = float_program.module(check_guards=False)
    runs = []
    with torch.no_grad():
        for sample in samples:
            quantized = _undefined_as_nan(program, sample)
            runs.append((quantized, _as_tuple(float_fn(*sample))))
    return runs


_QUANTIZE = "quantized_decomposed.quantize_per_tensor"


def _undefined_as_nan(program, sample) -> tuple:
    """torch's quantized graph's outputs, NaN where the value its last quantize received was
    NaN (acosh of a code that dequantizes below 1): quantizing a NaN to an integer is not
    defined (x86 gives one code, another machine another), so no integer is right there."""
    import torch

    output = next(n for n in reversed(program.graph.nodes) if n.op == "output")
    sources = {}  # output position -> the quantize node feeding its dequantize
    for i, value in enumerate(_as_tuple(output.args[0])):
        q = value.args[0] if isinstance(value, torch.fx.Node) and value.args else None
        if isinstance(q, torch.fx.Node) and str(q.target).startswith(_QUANTIZE):
            sources[i] = q.args[0]
    if not sources:
        return _as_tuple(program(*sample))
    seen: dict = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            if node in sources.values():
                seen[node] = result
            return result

    outputs = list(_as_tuple(Recorder(program).run(*sample)))
    for i, source in sources.items():
        before = seen.get(source)
        if isinstance(before, torch.Tensor) and before.shape == outputs[i].shape:
            outputs[i] = torch.where(torch.isnan(before), torch.nan, outputs[i])
    return tuple(outputs)


def _feeds(desc: dict, samples) -> list[dict]:
    # An input renamed after targets.yaml keeps its graph tensor name in "tosa_name".
    return [
        {e.get("tosa_name", e["name"]): _to_tosa(x, e) for x, e in zip(sample, desc["inputs"])}
        for sample in samples
    ]


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

    from pipeline.verify.layers import CHECKS, LayerCheck
    from pipeline.tosa.flatbuffer import read_block, with_outputs
    from pipeline.verify.reference_model import run_reference_model

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
        results = [compare_float(e, r) for e, r in zip(desc["outputs"], runs)]
        return {"tolerance_reason": FLOAT_REASON, "outputs": results,
                "passed": all(r["passed"] for r in results)}  # fmt: skip
    operators = [op.op for op in block.operators]
    rescale_inputs = rescale_input_types(graph)
    tolerance, min_exact, reason = tolerance_policy(
        operators, rescale_inputs, table_max_steps(graph)
    )
    noise = noise_allowance(min_exact, rescale_inputs.count("int48"))
    results = [
        compare_int(e, r, tolerance, noise)
        if e["dtype"].startswith("int") or e["dtype"] == "bool"  # bool: exactly torch's
        else compare_float(e, r)
        for e, r in zip(desc["outputs"], runs)
    ]
    summaries = [layer.summary() for layer in layers.layers]
    used = {s["check"] for s in summaries}
    return {
        "tolerance_reason": END_TO_END_REASON + reason,
        "layer_checks": {k: v for k, v in checks.items() if k in used},
        "layers": summaries,
        # layers whose tensor this graph (an NPU variant) lacks: checked with the next one
        **({"layers_merged": layers.merged} if layers.merged else {}),
        "outputs": results,
        "passed": all(r["passed"] for r in results)
        and all(s["beyond_bound"] == 0 for s in summaries),
    }  # fmt: skip


def _failures(where: str, checked: dict, samples: int) -> list[VerificationError]:
    """The first failing layer, then failing outputs, of one checked graph."""
    layer = next((s for s in checked.get("layers", []) if s["beyond_bound"]), None)
    errors = [_layer_failure(where, layer, samples)] if layer else []
    return errors + [
        output_failure(where, r, samples) for r in checked["outputs"] if not r["passed"]
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

    from pipeline.programs import load_program

    samples = torch.load(test_inputs, weights_only=True)
    return verify_programs(load_program(float_model), load_program(quantized), tosa, io,
                           samples, out_report, variants=variants, where=where)


def verify_programs(float_program, quantized, tosa: Path, io: Path, samples, out_report: Path,
                    *, variants: dict[str, Path] | None = None, where: str = "") -> dict:
    """``verify`` over the float and the q/dq ExportedPrograms and the test inputs in memory
    (the compile chain's objects: nothing saved and loaded back); same report, same errors."""
    desc = json.loads(Path(io).read_text())
    with _one_torch_thread():
        program = quantized.module(check_guards=False)
        torch_runs = _torch_runs(float_program, program, samples)
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
