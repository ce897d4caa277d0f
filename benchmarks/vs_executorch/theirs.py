"""Their flow: ExecuTorch's Arm Ethos-U AOT flow, per NPU, timed from torch.export to the
.pte written; Vela runs inside it, tapped for its figures and the TOSA it was given. Nothing
else in their flow is changed."""

from __future__ import annotations

import contextlib
import io
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .env import quiet
from .figures import sum_figures
from .models import ModelEntry, draw_inputs, load_model
from .sqnr import their_tosa_sqnr, torch_sqnr


@dataclass
class TheirsResult:
    seconds: float = 0.0
    figures: dict = field(default_factory=dict)
    non_delegated_ops: list = field(default_factory=list)
    delegates: int = 0
    sqnr_tosa: float | None = None
    sqnr_torch: float | None = None
    pte_bytes: int = 0
    error: str | None = None
    sqnr_many: float | None = None  # torch SQNR over the SQNR inputs


class _VelaTap:
    """Wraps ethosu.vela.vela.main while their flow runs: figures and TOSA of each call."""

    def __init__(self, keep: Path):
        self.keep = keep
        self.calls: list[dict] = []
        self.tosa_files: list[Path] = []

    def __enter__(self):
        import ethosu.vela.vela as vela_module

        from pipeline.ethosu.vela import parse_figures

        self._module, self._main = vela_module, vela_module.main
        original = self._main

        def main(argv=None):
            argv = list(argv or [])
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):
                code = original(argv)
            out_dir = next((a.split("=", 1)[1] for a in argv if a.startswith("--output-dir=")),
                           None)
            summaries = sorted(Path(out_dir).glob("*_summary_*.csv")) if out_dir else []
            if summaries:
                self.calls.append(parse_figures(summaries[0], captured.getvalue()))
            network = next((Path(a) for a in reversed(argv) if a.endswith(".tosa")), None)
            if network is not None and network.is_file():
                self.keep.mkdir(parents=True, exist_ok=True)
                kept = self.keep / f"delegate_{len(self.tosa_files)}.tosa"
                shutil.copyfile(network, kept)
                self.tosa_files.append(kept)
            return code

        vela_module.main = main
        return self

    def __exit__(self, *exc):
        self._module.main = self._main
        return False


def _edge_io(program) -> tuple[list, list, list[str], int]:
    """From the lowered edge program: (input q params, output dq params, CPU op names,
    delegate count). q params are (scale, zero_point, qmin, qmax) per delegate argument /
    delegate output in order, or None where the boundary is not a plain q / dq node."""
    graph = program.graph_module.graph
    cpu_ops, delegates, in_q, out_dq = [], [], [], []
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        target = str(node.target)
        if "executorch_call_delegate" in target:
            delegates.append(node)
        elif target == "<built-in function getitem>" or target.endswith("getitem"):
            continue
        elif "quantize_per_tensor" in target and "dequantize" not in target and \
                node.args[0].op == "placeholder":
            continue  # input quantize: the runtime's job on both sides
        elif "dequantize_per_tensor" in target and all(u.op == "output" for u in node.users):
            continue  # output dequantize: likewise
        else:
            cpu_ops.append(target.split(".")[-2] if "." in target else target)
    if len(delegates) == 1:
        call = delegates[0]
        for arg in call.args[1:]:
            ok = hasattr(arg, "target") and "quantize_per_tensor" in str(arg.target)
            in_q.append(tuple(arg.args[1:5]) if ok else None)
        for user in sorted(call.users, key=lambda u: u.args[1]):
            dq = next(iter(user.users), None)
            ok = dq is not None and "dequantize_per_tensor" in str(dq.target)
            out_dq.append(tuple(dq.args[1:5]) if ok else None)
    return in_q, out_dq, cpu_ops, len(delegates)


def run_theirs(model, npu: str, example: tuple, calibration: list, tests: list,
               work: Path, *, with_sqnr: bool = True, sqnr_inputs: list | None = None,
               sqnr_only: bool = False) -> TheirsResult:
    """ExecuTorch's Ethos-U AOT flow for one NPU; timed from torch.export to the .pte.
    With ``sqnr_only``: their quantizer only, and the torch SQNR over ``sqnr_inputs``."""
    import torch
    from executorch.backends.arm.ethosu import EthosUCompileSpec, EthosUPartitioner
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    res = TheirsResult()
    work.mkdir(parents=True, exist_ok=True)
    try:
        with quiet(), _VelaTap(work / "tosa") as tap:
            start = time.perf_counter()
            spec = EthosUCompileSpec(npu)
            quantizer = EthosUQuantizer(spec)
            quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
            exported = torch.export.export(model, example)
            prepared = prepare_pt2e(exported.module(), quantizer)
            for sample in calibration:
                prepared(*sample)
            converted = convert_pt2e(prepared)
            if sqnr_only:
                res.seconds = time.perf_counter() - start
                res.sqnr_many = torch_sqnr(model, converted, sqnr_inputs or tests)
                return res
            quantized = torch.export.export(converted, example)
            edge = to_edge_transform_and_lower(quantized, partitioner=[EthosUPartitioner(spec)])
            paused = time.perf_counter()  # read the partition before to_executorch plans memory
            in_q, out_dq, res.non_delegated_ops, res.delegates = _edge_io(edge.exported_program())
            start += time.perf_counter() - paused
            program = edge.to_executorch()
            (work / "model.pte").write_bytes(program.buffer)
            res.seconds = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - their flow failing is a result to print
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        res.error = f"{type(exc).__name__}: {first}"
        return res
    res.pte_bytes = (work / "model.pte").stat().st_size
    res.figures = sum_figures(tap.calls)
    if not with_sqnr:
        return res
    with quiet():
        qfn = quantized.module()
        res.sqnr_torch = torch_sqnr(model, qfn, tests)
        if sqnr_inputs:
            res.sqnr_many = torch_sqnr(model, qfn, sqnr_inputs)
    if len(tap.tosa_files) == 1:
        try:
            with quiet():
                res.sqnr_tosa = their_tosa_sqnr(tap.tosa_files[0], in_q, out_dq, model, tests)
        except Exception as exc:  # noqa: BLE001 - an SQNR we cannot measure shows as n/a
            print(f"  note: their TOSA SQNR not measured: {type(exc).__name__}: {exc}")
    return res


def their_flow_only(entries: list[ModelEntry], npus, scratch: Path) -> int:
    """The subprocess of --end-to-end: their flow only, the inputs drawn like our export's."""
    failed = 0
    for entry in entries:
        with quiet():
            model = load_model(entry)
            example, calibration = draw_inputs(entry)
        for npu in npus:
            res = run_theirs(model, npu, example, calibration, [example],
                             scratch / entry.name / npu, with_sqnr=False)
            print(f"{entry.name}/{npu}: {res.error or f'{res.seconds:.1f} s'}")
            failed += res.error is not None
    return 1 if failed else 0
