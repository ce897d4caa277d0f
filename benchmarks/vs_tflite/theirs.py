"""Their flow: TFLite + Vela. The float model -> torch.export -> litert-torch's own PT2E
quantizer (int8 activations, per-channel int8 weights, static) calibrated on the calibration
samples our export stage drew -> ``litert_torch.convert`` -> .tflite -> Vela per NPU, with the
same Vela options as our builds (accelerator, vela.ini, system config, memory mode, the rest).

Each model is converted twice: with its inputs as the model takes them (``nchw``) and with
every float input (and output) of rank >= 3 channel-last (``nhwc``, litert-torch's
``to_channel_last_io``): a product feeds the NPU whichever layout costs less, so a boundary
TRANSPOSE does not count against them. Per NPU the better layout is kept: fewer operators off
the NPU first, then fewer NPU cycles.

A static PT2E .tflite keeps float inputs and outputs: a QUANTIZE after each float input and a
DEQUANTIZE before each float output, which Vela leaves to the CPU. They are the boundary our
runtime does too (from io_meta), so they are not counted as CPU operators (like
``bench_vs_executorch``); every other operator Vela leaves on the CPU is.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.vs_executorch.env import quiet

LAYOUTS = ("nchw", "nhwc")
# Vela's line for each operator it leaves on the CPU.
_CPU_OP = re.compile(r"^Warning \(supported operators\) operator: (\w+)", re.MULTILINE)


@dataclass
class Converted:
    """One layout's .tflite, or why it could not be made."""

    layout: str
    tflite: Path | None = None
    boundary_ops: int = 0  # float-input QUANTIZE and float-output DEQUANTIZE
    op_types: list = field(default_factory=list)  # operator type per TFLite operator
    seconds: float = 0.0
    sqnr_torch: float | None = None  # their q/dq program run by torch, vs float
    error: str | None = None


@dataclass
class TheirsNpu:
    """Their figures on one NPU: the better layout's, and each layout's NPU cycles."""

    layout: str | None = None
    figures: dict = field(default_factory=dict)
    cpu_ops: int = 0  # operators Vela left on the CPU, boundary quantize/dequantize aside
    cpu_op_types: list = field(default_factory=list)  # their types, as Vela names them
    npu_share: float | None = None
    by_layout: dict = field(default_factory=dict)  # layout -> NPU cycles or error
    seconds: float | None = None  # the kept layout's quantize + convert + this NPU's Vela
    error: str | None = None


def channel_last(value):
    """A tensor of rank >= 3 moved from (N, C, ...) to (N, ..., C); anything else as is."""
    import torch

    if torch.is_tensor(value) and value.is_floating_point() and value.ndim >= 3:
        return value.permute(0, *range(2, value.ndim), 1).contiguous()
    return value


def convert(model, layout: str, example: tuple, calibration: list, tests: list,
            work: Path) -> Converted:
    """``model`` quantized int8 by litert-torch's PT2E quantizer (calibrated on
    ``calibration``) and converted to ``work/<layout>.tflite``."""
    import litert_torch
    import torch
    from litert_torch.quantize.pt2e_quantizer import (
        PT2EQuantizer,
        get_symmetric_quantization_config,
    )
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from benchmarks.vs_executorch.sqnr import torch_sqnr

    res = Converted(layout)
    work.mkdir(parents=True, exist_ok=True)
    module, samples, checks = model, calibration, tests
    if layout == "nhwc":
        inputs = [i for i, x in enumerate(example) if channel_last(x) is not x]
        with torch.no_grad():
            out = model(*example)
        outs = out if isinstance(out, (list, tuple)) else (out,)
        outputs = [i for i, y in enumerate(outs) if channel_last(y) is not y]
        if not inputs and not outputs:
            res.error = "no float input or output of rank >= 3: the same graph as nchw"
            return res
        module = litert_torch.to_channel_last_io(model, args=inputs, outputs=outputs).eval()
        samples = [tuple(channel_last(x) for x in s) for s in calibration]
        checks = [tuple(channel_last(x) for x in s) for s in tests]
        example = tuple(channel_last(x) for x in example)
    try:
        with quiet():
            start = time.perf_counter()
            quantizer = PT2EQuantizer().set_global(
                get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
            prepared = prepare_pt2e(torch.export.export(module, example).module(), quantizer)
            for sample in samples:
                prepared(*sample)
            converted = convert_pt2e(prepared, fold_quantize=False)
            edge = litert_torch.convert(converted, example,
                                        quant_config=QuantConfig(pt2e_quantizer=quantizer))
            res.tflite = work / f"{layout}.tflite"
            edge.export(str(res.tflite))
            res.seconds = time.perf_counter() - start
            if layout == "nhwc":  # compare against the float model in the same layout
                res.sqnr_torch = torch_sqnr(module, converted, checks)
            else:
                res.sqnr_torch = torch_sqnr(model, converted, checks)
    except Exception as exc:  # noqa: BLE001 - their flow failing is a result to print
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        res.tflite, res.error = None, f"{type(exc).__name__}: {first[:200]}"
        return res
    res.op_types, res.boundary_ops = tflite_ops(res.tflite)
    return res


def tflite_ops(path: Path) -> tuple[list[str], int]:
    """(operator type of each operator, boundary operators): a QUANTIZE reading a float graph
    input or a DEQUANTIZE writing a float graph output."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    ins = {d["index"]: d for d in interpreter.get_input_details()}
    outs = {d["index"]: d for d in interpreter.get_output_details()}
    types, boundary = [], 0
    for op in interpreter._get_ops_details():  # the only per-operator listing it has
        name = op["op_name"]
        types.append(name)
        reads_float_input = any(i in ins and ins[i]["dtype"] == np.float32 for i in op["inputs"])
        writes_float_output = any(o in outs and outs[o]["dtype"] == np.float32
                                  for o in op["outputs"])
        boundary += ((name == "QUANTIZE" and reads_float_input)
                     or (name == "DEQUANTIZE" and writes_float_output))
    return types, boundary


def vela_tflite(tflite: Path, npu: str, out_dir: Path) -> dict:
    """Vela on ``tflite`` with our builds' options for ``npu``; Vela's figures (summary and
    operator counts, parsed as our vela stage parses them).

    Raises:
        RuntimeError: Vela failed (its last output line).
    """
    from pipeline.chain.vela import vela_args
    from pipeline.ethosu.vela import parse_figures, vela_command

    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vela-tflite-") as tmp:
        command = [*vela_command(), *vela_args(npu), "--output-dir", tmp, str(tflite)]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        (out_dir / "vela.log").write_text(proc.stdout + proc.stderr)
        summaries = sorted(Path(tmp).glob("*_summary_*.csv"))
        if proc.returncode != 0 or not summaries:
            lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
            raise RuntimeError(f"vela exited {proc.returncode}: {lines[-1][:200]}")
        figures = parse_figures(summaries[0], proc.stdout)
        figures["cpu_op_types"] = _CPU_OP.findall(proc.stdout)
        return figures


def run_theirs(model, npus, example: tuple, calibration: list, tests: list,
               work: Path) -> tuple[dict[str, TheirsNpu], dict[str, Converted]]:
    """Both layouts converted once, each compiled by Vela per NPU; per NPU the better one."""
    from benchmarks.vs_executorch.figures import sum_figures

    layouts = {layout: convert(model, layout, example, calibration, tests, work)
               for layout in LAYOUTS}
    results = {}
    for npu in npus:
        best, res = None, TheirsNpu()
        for layout, conv in layouts.items():
            if conv.tflite is None:
                res.by_layout[layout] = conv.error
                continue
            start = time.perf_counter()
            try:
                figures = vela_tflite(conv.tflite, npu, work / npu / layout)
            except RuntimeError as exc:
                res.by_layout[layout] = str(exc)
                continue
            seconds = conv.seconds + time.perf_counter() - start
            res.by_layout[layout] = figures["cycles_npu"]
            cpu = max(0, figures["cpu_operators"] - conv.boundary_ops)
            key = (cpu, figures["cycles_npu"])
            if best is None or key < best[0]:
                best = (key, layout, figures, cpu, seconds)
        if best is None:
            res.error = "; ".join(f"{k}: {v}" for k, v in res.by_layout.items())
        else:
            _, res.layout, figures, res.cpu_ops, res.seconds = best
            res.cpu_op_types = figures["cpu_op_types"]
            res.figures = {**sum_figures([figures]), "cycles_npu": figures["cycles_npu"]}
            total = figures["npu_operators"] + res.cpu_ops
            res.npu_share = figures["npu_operators"] / total if total else None
        results[npu] = res
    return results, layouts
