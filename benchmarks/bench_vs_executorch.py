#!/usr/bin/env python3
"""Side by side: ExecuTorch 1.5.1's Arm Ethos-U AOT flow and ours, on a targets file's models.

Usage: .venv-executorch/bin/python benchmarks/bench_vs_executorch.py [--targets targets.yaml]
       [--models cnn,ds_cnn] [--npus ethos-u55-128,ethos-u85-256] [--repeat N] [--keep DIR]
       [--json FILE] [--end-to-end] [--observers minmax,histogram,mse] [--sqnr-inputs N]
       [--sqnr-only]

The models are those of ``--targets`` (default: this project's targets.yaml), every one under
``models:`` or the ``--models`` named: their source, inputs (specs or factory), calibration
samples and observer, as the build would use them. A model whose own code fails is skipped
with a note.

Needs an environment holding both flows: `benchmarks/setup_executorch.sh` makes
`.venv-executorch` (torch, torchao, tosa-tools and ethos-u-vela at this project's pins, plus
executorch 1.5.1 and this project). Started from another interpreter without executorch, the
script re-runs itself in `.venv-executorch` when that exists; otherwise it says what is missing
and exits 2.

Both flows run in this one process, on the same float model, the same 16 calibration samples
and the same 4 test inputs (drawn by our export stage), and Vela 5.2.0 with the same options
(ExecuTorch's defaults for each NPU are the system config / memory mode our targets use, and
the other Vela options are Vela's defaults on both sides). Before anything is timed, both flows
run once on a tiny conv model so lazy imports and first-call set-up are paid by neither. With
`--repeat N` the flows alternate N times per model and each flow's time is its fastest run
(the machine has 2 cores: anything else running skews a single run).

- ours: the stage functions, cold (no store): export, quantize (with the calibration observer
  the targets file gives the model, the default if none), lower, verify once per model,
  then vela + package per NPU. AOT time of a row = shared stages + that NPU's vela + package.
- theirs: per NPU (its quantizer depends on the compile spec): torch.export, EthosUQuantizer +
  prepare_pt2e / calibrate / convert_pt2e, torch.export, to_edge_transform_and_lower with
  EthosUPartitioner, to_executorch, .pte written. Vela runs inside it; ethosu.vela.vela.main is
  wrapped to read Vela's summary CSV and operator counts from each call (and to keep the TOSA
  it was given) - nothing else in their flow is changed.

Figures (Vela's summary, parsed by our own parse_figures for both): NPU cycles (`cycles_npu`),
total cycles, SRAM used and flash used (on-chip + off-chip) in KiB. NPU op share: ours is
Vela's NPU operators / all operators; theirs also counts every operator ExecuTorch left
outside its delegates as a CPU operator (the quantize of each input and dequantize of each
output are not counted on either side: our runtime does those from io_meta).

SQNR vs the float model over the 4 test inputs (the minimum over outputs):
- `tosa` columns: the integer TOSA graph run in the TOSA reference model (ours: our verify
  stage; theirs: the TOSA flatbuffer their backend handed to Vela, fed the inputs quantized
  with the scale / zero point of the quantize node in front of the delegate and dequantized
  with the dequantize node after it; only when one delegate holds the whole graph),
- `torch` columns: the quantized (q/dq) ExportedProgram run by torch (ours: verify's
  `sqnr_db_torch_quantized_vs_float`; theirs: the converted PT2E program re-exported).

SQNR of the quantized (q/dq) graphs run by torch over more inputs (`--sqnr-inputs`, default
64: the 4 test inputs and more drawn the same way), where one rounding flip in a few logits
no longer moves the figure by a decibel: ours with the model's observer and, with
`--observers`, with each observer named; theirs. `--sqnr-only` measures only these (no
lowering, no Vela, on either side): a quick quantization comparison.

`--end-to-end` adds one more comparison: a `doit verify package` cold build of every selected
model for both NPUs with a fresh store (a subprocess: interpreter start, imports, doit, store)
against a subprocess that runs only their flow over the same models and NPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ET_VENV = ROOT / ".venv-executorch"
EXECUTORCH_VERSION = "1.5.1"
DEFAULT_TARGETS = ROOT / "targets.yaml"
NPUS = ("ethos-u55-128", "ethos-u85-256")
SQNR_INPUTS = 64
_SQNR_SEED_OFFSET = 5000  # the extra SQNR inputs: seeds the export stage never draws

# Goals this benchmark reports against.
GOAL_CYCLES_RATIO = 1.00  # our NPU cycles <= 1.00x theirs on every row
GOAL_NPU_SHARE = 1.0  # 100% of our operators on the NPU
GOAL_TIME_RATIO = 0.35  # our cold AOT time for both NPUs <= 0.35x theirs

# The warm-up model (written to the scratch folder: our export stage imports from a file).
_WARMUP_SOURCE = '''
import torch
class Tiny(torch.nn.Module):
    example_shapes = ((1, 3, 8, 8),)
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))
'''


@dataclass(frozen=True)
class ModelEntry:
    """One model of a targets file, as the build's export and quantize stages see it."""

    name: str
    path: Path
    attr: str
    inputs: tuple = ()  # input spec dicts (shape, dtype, range), or () with a factory
    factory: tuple | None = None  # (file, function) making one input tuple
    seed: int = 0
    calibration: dict = field(default_factory=lambda: {"samples": 16, "seed": 1})
    observer: str = "mse"  # the calibration observer the build would use
    techniques: dict = field(default_factory=dict)  # calibration.equalization / bias_correction

    def export_options(self) -> dict:
        """Keyword options of our export stage for this model."""
        folder = self.calibration.get("folder")
        return {"inputs": [dict(s) for s in self.inputs] or None,
                "input_factory": self.factory, "seed": self.seed,
                "calibration_samples": self.calibration.get("samples") or 16,
                "calibration_seed": self.calibration.get("seed") or 1,
                "calibration_folder": Path(folder) if folder else None}


def model_entries(targets: Path) -> list[ModelEntry]:
    """Every model under ``models:`` of a targets file, in file order.

    Raises:
        ConfigError: the file is not a valid targets file (every problem listed).
    """
    from pipeline.config import load_config

    entries = []
    for name, model in load_config(targets).models.items():
        factory = model.input_factory
        calibration = model.calibration
        entries.append(ModelEntry(
            name, model.source_path, model.source_attr,
            tuple(s.model_dump(mode="json") for s in model.input_specs or ()),
            (factory.path, factory.attr) if factory is not None else None, model.seed,
            {"samples": calibration.samples, "seed": calibration.seed,
             "folder": str(calibration.folder) if calibration.folder else None},
            calibration.observer,
            {"equalization": calibration.equalization,
             "bias_correction": calibration.bias_correction}))
    return entries


# --------------------------------------------------------------------------------------------
# Environment


def _executorch_problem() -> str | None:
    """Why ExecuTorch's Arm Ethos-U flow cannot run in this interpreter, or None."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError as exc:  # pragma: no cover
        return str(exc)
    try:
        found = version("executorch")
    except PackageNotFoundError:
        return "executorch is not installed"
    if found != EXECUTORCH_VERSION:
        return f"executorch must be {EXECUTORCH_VERSION}; got {found}"
    try:
        with _quiet():
            import ethosu.vela.vela  # noqa: F401
            import tosa_serializer  # noqa: F401
            from executorch.backends.arm.ethosu import (  # noqa: F401
                EthosUCompileSpec,
                EthosUPartitioner,
            )
            from executorch.backends.arm.quantizer import EthosUQuantizer  # noqa: F401
            from executorch.exir import to_edge_transform_and_lower  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure: the backend cannot run
        return f"ExecuTorch's Arm Ethos-U backend does not import: {type(exc).__name__}: {exc}"
    return None


def _reexec_in_et_venv() -> None:
    """Run this script again with .venv-executorch's Python, when that is another interpreter."""
    python = ET_VENV / "bin" / "python"
    if python.exists() and Path(sys.prefix).resolve() != ET_VENV.resolve():
        print(f"bench_vs_executorch: executorch is not in {sys.executable}; "
              f"re-running with {python}", flush=True)
        os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])


@contextlib.contextmanager
def _quiet():
    """Silence warnings and library logging (torchao, ExecuTorch, torch.export) while inside."""
    import logging

    os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    names = ("torchao", "torch.utils._pytree", "executorch", "torch._export", "torch.export")
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
        for n, lvl in saved.items():
            logging.getLogger(n).setLevel(lvl)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("torch", "torchao", "executorch", "ethos-u-vela", "tosa-tools"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    return out


# --------------------------------------------------------------------------------------------
# Shared helpers


def _sqnr_db(reference, estimate) -> float:
    import numpy as np

    reference, estimate = np.asarray(reference, np.float64), np.asarray(estimate, np.float64)
    noise = float(np.sum((reference - estimate) ** 2))
    if noise == 0.0:
        return math.inf
    return 10.0 * math.log10(max(float(np.sum(reference**2)), 1e-30) / noise)


def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _load_model(entry: ModelEntry):
    """The entry's nn.Module in eval mode; raises on any problem."""
    from pipeline.export.program import load_attr

    return load_attr(entry.path, entry.attr, f"{entry.name}/import")().eval()


def sqnr_inputs(entry: ModelEntry, tests: list, count: int) -> list:
    """``count`` input tuples: our export's test inputs, then more drawn the same way from
    seeds the export never uses."""
    import torch

    from pipeline.export.program import load_attr, random_inputs

    seeds = [entry.seed + _SQNR_SEED_OFFSET + i for i in range(max(0, count - len(tests)))]
    if entry.factory is None:
        more = [random_inputs(entry.inputs, seed) for seed in seeds]
    else:
        make, more = load_attr(*entry.factory, f"{entry.name}/inputs"), []
        for seed in seeds:
            torch.manual_seed(seed)
            more.append(_as_tuple(make()))
    return list(tests)[:count] + more


def varying_share(float_fn, inputs: list) -> float:
    """The share of the first output's power that changes from input to input. Near 0 the
    output is a constant, and its SQNR measures how that constant happens to round."""
    import torch

    with torch.no_grad():
        out = torch.stack([_as_tuple(float_fn(*s))[0].double() for s in inputs])
    power = float((out**2).mean())
    return float(out.var(dim=0, unbiased=False).mean()) / power if power else 0.0


def torch_sqnr(float_fn, quantized_fn, inputs: list) -> float:
    """SQNR (dB) of ``quantized_fn`` against ``float_fn`` over every input, the minimum over
    outputs."""
    import numpy as np
    import torch

    with torch.no_grad():
        ref = [[r.detach().double().numpy() for r in _as_tuple(float_fn(*s))] for s in inputs]
        got = [[r.detach().double().numpy() for r in _as_tuple(quantized_fn(*s))]
               for s in inputs]
    return min(_sqnr_db(np.concatenate([r[i].reshape(-1) for r in ref]),
                        np.concatenate([g[i].reshape(-1) for g in got]))
               for i in range(len(ref[0])))


def _vela_args(npu: str) -> list[str]:
    from pipeline.config.npu import NpuConfig

    return NpuConfig.model_validate({"config": npu}).vela_args()


def _sum_figures(calls: list[dict]) -> dict:
    """One set of figures from the Vela calls of one flow (several delegates add up)."""
    keys = ("cycles_npu", "cycles_total", "sram_memory_used", "on_chip_flash_memory_used",
            "off_chip_flash_memory_used", "npu_operators", "cpu_operators")
    total = {k: sum(float(c.get(k) or 0) for c in calls) for k in keys}
    total["flash_kib"] = total["on_chip_flash_memory_used"] + total["off_chip_flash_memory_used"]
    total["vela_calls"] = len(calls)
    return total


# --------------------------------------------------------------------------------------------
# Our flow


@dataclass
class OursResult:
    shared_s: dict = field(default_factory=dict)  # stage -> seconds (export..verify)
    per_npu_s: dict = field(default_factory=dict)  # npu -> seconds (vela + package)
    figures: dict = field(default_factory=dict)  # npu -> summed figures
    errors: dict = field(default_factory=dict)  # npu or "shared" -> message
    sqnr_tosa: float | None = None
    sqnr_torch: float | None = None
    verified: bool | None = None
    test_inputs: list = field(default_factory=list)
    calibration: list = field(default_factory=list)
    sqnr_inputs: list = field(default_factory=list)
    sqnr_many: dict = field(default_factory=dict)  # observer -> torch SQNR over sqnr_inputs
    varying: float | None = None  # share of the float output's power that varies by input


# Post-training techniques --observers may also name (calibration: settings of targets.yaml).
TECHNIQUES = {
    "+cle": {"equalization": True},
    "+bc": {"bias_correction": True},
    "+both": {"equalization": True, "bias_correction": True},
}


def _observer_sqnr(res: OursResult, entry: ModelEntry, out: dict, qdir: Path, observers,
                   where: str) -> None:
    """Torch SQNR over the SQNR inputs of the program quantized with the model's observer
    (already in ``qdir``) and with each of ``observers`` (quantized here, untimed)."""
    from pipeline.programs import load_program
    from pipeline.stages.quantize import quantize

    float_fn = load_program(out["model"]).module()
    res.varying = varying_share(float_fn, res.sqnr_inputs)
    for observer in dict.fromkeys([entry.observer, *observers]):
        path = qdir / "model.pt2" if observer == entry.observer else qdir / observer / "model.pt2"
        # A technique ("+cle", "+bc", "+both") runs on top of the model's observer.
        options = TECHNIQUES.get(observer, {"observer": observer})
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            quantize(out["model"], out["calibration"], path, scheme="int8",
                     **{"observer": entry.observer, **entry.techniques, **options}, where=where)
        res.sqnr_many[observer] = torch_sqnr(float_fn, load_program(path).module(),
                                             res.sqnr_inputs)


def run_ours(entry: ModelEntry, npus, work: Path, observers=(), sqnr_count: int = SQNR_INPUTS,
             sqnr_only: bool = False) -> OursResult:
    """Our stages, cold: export, quantize, lower, verify once; vela + package per NPU (with
    ``sqnr_only``: export and quantize). Then the torch SQNR of the model's observer and of
    each of ``observers``."""
    import torch

    from pipeline.config.npu import NpuConfig
    from pipeline.errors import UserError
    from pipeline.stages.export import export
    from pipeline.ethosu.package import package
    from pipeline.stages.quantize import quantize
    from pipeline.ethosu.vela import run_vela

    res = OursResult()
    where = f"bench/{entry.name}"
    exp, qdir, ldir = work / "export", work / "quantize", work / "lower"
    for folder in (qdir, ldir):
        folder.mkdir(parents=True, exist_ok=True)

    def timed(name, fn, *args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            res.shared_s[name] = time.perf_counter() - start

    try:
        with _quiet():
            out = timed("export", export, entry.path, entry.attr, exp,
                        **entry.export_options(), where=where)
            timed("quantize", quantize, out["model"], out["calibration"], qdir / "model.pt2",
                  scheme="int8", observer=entry.observer, **entry.techniques, where=where)
            res.test_inputs = torch.load(out["test_inputs"], weights_only=True)
            res.calibration = torch.load(out["calibration"], weights_only=True)
            res.sqnr_inputs = sqnr_inputs(entry, res.test_inputs, sqnr_count)
            if not sqnr_only:
                variants = _lower_and_verify(res, out, qdir, ldir, work, timed, where)
            _observer_sqnr(res, entry, out, qdir, observers, where)
    except UserError as exc:
        res.errors["shared"] = str(exc)
        return res
    for npu in [] if sqnr_only else npus:
        vdir = work / "vela" / npu
        start = time.perf_counter()
        try:
            tosa = variants[NpuConfig.model_validate({"config": npu}).variant]
            paths = run_vela(tosa, vdir, _vela_args(npu), where=f"{where}/{npu}")
            package(paths["npz"], ldir / "io.json", vdir / "model.bin", where=f"{where}/{npu}")
            figures = json.loads(paths["figures"].read_text())
            res.figures[npu] = _sum_figures([figures])
        except UserError as exc:
            res.errors[npu] = str(exc).strip().splitlines()[0]
        res.per_npu_s[npu] = time.perf_counter() - start
    return res


def _lower_and_verify(res: OursResult, out: dict, qdir: Path, ldir: Path, work: Path, timed,
                      where: str) -> dict:
    """Lower (the shipped default spec, and one graph per NPU family, as `doit build` does)
    and verify; the verify report's SQNR into ``res``. Returns the NPU variants' TOSA paths."""
    from pipeline.config.npu import NPU_VARIANTS
    from pipeline.config.tosa_spec import DEFAULT_TOSA
    from pipeline.errors import VerificationError
    from pipeline.stages.lower import lower
    from pipeline.verify.check import verify

    variants = {v: ldir / f"model.{v}.tosa" for v in NPU_VARIANTS}
    timed("lower", lower, qdir / "model.pt2", ldir / "model.tosa", ldir / "io.json",
          spec=str(DEFAULT_TOSA), variants=variants, where=where)
    report_path = work / "verify.json"
    try:
        timed("verify", verify, out["model"], qdir / "model.pt2", ldir / "model.tosa",
              ldir / "io.json", out["test_inputs"], report_path, variants=variants, where=where)
        res.verified = True
    except VerificationError as exc:  # the report is written before the raise
        res.verified, res.errors["verify"] = False, str(exc)
    report = json.loads(report_path.read_text())
    tosa = [o.get("sqnr_db_vs_float") for o in report["outputs"]]
    torch_q = [o.get("sqnr_db_torch_quantized_vs_float") for o in report["outputs"]]
    res.sqnr_tosa = min(math.inf if v is None else v for v in tosa)
    res.sqnr_torch = min(math.inf if v is None else v for v in torch_q)
    return variants


# --------------------------------------------------------------------------------------------
# Their flow


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


def _tosa_io(path: Path) -> tuple[list[tuple[str, list[int]]], list[tuple[str, list[int]]]]:
    """(name, shape) of the TOSA graph's inputs and outputs."""
    from tosa.TosaGraph import TosaGraph

    block = TosaGraph.GetRootAs(path.read_bytes(), 0).Regions(0).Blocks(0)
    tensors = {block.Tensors(i).Name().decode(): block.Tensors(i)
               for i in range(block.TensorsLength())}

    def shaped(name: bytes):
        name = name.decode()
        return name, [int(d) for d in tensors[name].ShapeAsNumpy()]

    return ([shaped(block.Inputs(i)) for i in range(block.InputsLength())],
            [shaped(block.Outputs(i)) for i in range(block.OutputsLength())])


def _to_layout(array, shape: list[int]):
    """``array`` (torch order) as ``shape``: unchanged, or NCHW -> NHWC when that fits."""
    import numpy as np

    if list(array.shape) == shape:
        return array
    if array.ndim == 4 and list(np.transpose(array, (0, 2, 3, 1)).shape) == shape:
        return np.transpose(array, (0, 2, 3, 1))
    raise ValueError(f"TOSA tensor shape {shape} fits neither {list(array.shape)} nor NHWC")


def _from_layout(array, torch_shape: list[int]):
    import numpy as np

    if list(array.shape) == list(torch_shape):
        return array
    if array.ndim == 4:
        back = np.transpose(array, (0, 3, 1, 2))
        if list(back.shape) == list(torch_shape):
            return back
    raise ValueError(f"TOSA output shape {list(array.shape)} does not fit {torch_shape}")


def _their_tosa_sqnr(tosa: Path, in_q, out_dq, float_fn, samples) -> float | None:
    """Their TOSA graph in the TOSA reference model vs the float model, or None if the IO
    cannot be matched (partial delegation, a boundary that is not a plain q / dq)."""
    import numpy as np
    import torch

    from pipeline.verify.reference_model import run_reference_model

    if not in_q or not out_dq or None in in_q or None in out_dq:
        return None
    inputs, outputs = _tosa_io(tosa)
    if len(inputs) != len(in_q) or len(outputs) != len(out_dq):
        return None
    got, ideal = [[] for _ in outputs], [[] for _ in outputs]
    for sample in samples:
        feeds = {}
        for (name, shape), x, (scale, zp, qmin, qmax) in zip(inputs, sample, in_q):
            q = np.clip(np.round(x.double().numpy() / scale) + zp, qmin, qmax).astype(np.int8)
            feeds[name] = _to_layout(q, shape)
        result = run_reference_model(tosa, feeds, [n for n, _ in outputs], where="bench/theirs")
        with torch.no_grad():
            reference = [r.detach().double().numpy() for r in _as_tuple(float_fn(*sample))]
        for i, ((name, _), (scale, zp, _, _)) in enumerate(zip(outputs, out_dq)):
            values = _from_layout(result[name], list(reference[i].shape))
            got[i].append(((values.astype(np.float64) - zp) * scale).reshape(-1))
            ideal[i].append(reference[i].reshape(-1))
    return min(_sqnr_db(np.concatenate(f), np.concatenate(g)) for f, g in zip(ideal, got))


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
        with _quiet(), _VelaTap(work / "tosa") as tap:
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
    res.figures = _sum_figures(tap.calls)
    if not with_sqnr:
        return res
    with _quiet():
        qfn = quantized.module()
        res.sqnr_torch = torch_sqnr(model, qfn, tests)
        if sqnr_inputs:
            res.sqnr_many = torch_sqnr(model, qfn, sqnr_inputs)
    if len(tap.tosa_files) == 1:
        try:
            with _quiet():
                res.sqnr_tosa = _their_tosa_sqnr(tap.tosa_files[0], in_q, out_dq, model, tests)
        except Exception as exc:  # noqa: BLE001 - an SQNR we cannot measure shows as n/a
            print(f"  note: their TOSA SQNR not measured: {type(exc).__name__}: {exc}")
    return res


# --------------------------------------------------------------------------------------------
# The run


def _warm_up(scratch: Path, npus) -> None:
    """Run both flows once on a tiny conv model: imports and first-call costs, untimed."""
    source = scratch / "warmup_model.py"
    source.write_text(_WARMUP_SOURCE)
    entry = ModelEntry("warmup", source, "Tiny", ({"shape": [1, 3, 8, 8]},))
    model = _load_model(entry)
    ours = run_ours(entry, npus[:1], scratch / "warmup" / "ours", sqnr_count=1)
    if ours.errors:
        print(f"  note: warm-up of our flow: {ours.errors}")
    theirs = run_theirs(model, npus[0], ours.test_inputs[0], ours.calibration[:2],
                        ours.test_inputs[:1], scratch / "warmup" / "theirs")
    if theirs.error:
        print(f"  note: warm-up of their flow: {theirs.error}")


def _fmt_num(value, spec: str = ",.0f") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, spec)


def _share(figures: dict, extra_cpu: int = 0) -> float | None:
    if not figures:
        return None
    npu = figures["npu_operators"]
    total = npu + figures["cpu_operators"] + extra_cpu
    return npu / total if total else None


def _their_inputs(ours: OursResult, entry: ModelEntry) -> tuple[tuple, list, list]:
    """(example, calibration, test inputs) our export drew; drawn its way if it failed."""
    if ours.test_inputs:
        return ours.test_inputs[0], ours.calibration, ours.test_inputs
    example, calibration = draw_inputs(entry)
    return example, calibration, [example]


def _merge_min(first: OursResult, other: OursResult) -> None:
    """Keep the stage times of the faster run as a whole (the figures stay the first run's),
    so our time is a run's total, like theirs, not a sum of per-stage best cases."""
    def total(r: OursResult) -> float:
        return sum(r.shared_s.values()) + sum(r.per_npu_s.values())

    if not other.errors and total(other) < total(first):
        first.shared_s, first.per_npu_s = dict(other.shared_s), dict(other.per_npu_s)


def bench(entries: list[ModelEntry], npus, scratch: Path, warm_up: bool,
          repeat: int = 1, observers=(), sqnr_count: int = SQNR_INPUTS,
          sqnr_only: bool = False) -> list[dict]:
    """Both flows on every model; with ``repeat`` > 1 the flows alternate and each flow's
    time is its fastest run (the figures and SQNR come from the first run). With
    ``sqnr_only`` both flows only quantize (their quantizer for the first NPU)."""
    rows = []
    if warm_up and not sqnr_only:
        print("warming up both flows on a tiny conv model (untimed) ...", flush=True)
        _warm_up(scratch, npus)
    for entry in entries:
        print(f"{entry.name}: ", end="", flush=True)
        try:
            with _quiet():
                model = _load_model(entry)
        except Exception as exc:  # noqa: BLE001 - the model's own code failing: skip it
            print(f"skipped: {entry.path.name}:{entry.attr} does not build: "
                  f"{type(exc).__name__}: {exc}")
            continue
        ours, theirs = None, {}
        their_npus = npus[:1] if sqnr_only else npus
        for run in range(1 if sqnr_only else repeat):
            print(f"ours#{run + 1} ", end="", flush=True)
            result = run_ours(entry, npus, scratch / entry.name / f"ours{run}",
                              observers=observers if run == 0 else (),
                              sqnr_count=sqnr_count, sqnr_only=sqnr_only)
            if ours is None:
                ours = result
                if "shared" in ours.errors:
                    print(f"\n  our flow failed: {ours.errors['shared']}")
            else:
                _merge_min(ours, result)
            example, calibration, tests = _their_inputs(ours, entry)
            for npu in their_npus:
                print(f"theirs:{npu}#{run + 1} ", end="", flush=True)
                result = run_theirs(model, npu, example, calibration, tests,
                                    scratch / entry.name / f"theirs{run}" / npu,
                                    with_sqnr=run == 0, sqnr_inputs=ours.sqnr_inputs,
                                    sqnr_only=sqnr_only)
                if npu not in theirs:
                    theirs[npu] = result
                elif not result.error and not theirs[npu].error:
                    theirs[npu].seconds = min(theirs[npu].seconds, result.seconds)
        for npu in their_npus:
            rows.append(_row(entry, npu, ours, theirs[npu]))
        print("done", flush=True)
    return rows


def _row(entry: ModelEntry, npu: str, ours: OursResult, t: TheirsResult) -> dict:
    ours_s = (sum(ours.shared_s.values()) + ours.per_npu_s.get(npu, 0.0)
              if "shared" not in ours.errors else None)
    return {
        "model": entry.name, "npu": npu, "observer": entry.observer,
        "sqnr_inputs": len(ours.sqnr_inputs),
        "ours": {"aot_s": ours_s, "shared_s": ours.shared_s,
                 "npu_s": ours.per_npu_s.get(npu), "figures": ours.figures.get(npu, {}),
                 "npu_share": _share(ours.figures.get(npu, {})),
                 "sqnr_tosa_db": ours.sqnr_tosa, "sqnr_torch_db": ours.sqnr_torch,
                 "sqnr_many_db": ours.sqnr_many, "varying": ours.varying,
                 "verified": ours.verified,
                 "error": ours.errors.get(npu) or ours.errors.get("shared")
                 or ours.errors.get("verify")},
        "theirs": {"aot_s": t.seconds if not t.error else None,
                   "figures": t.figures,
                   "npu_share": _share(t.figures, len(t.non_delegated_ops)),
                   "non_delegated_ops": t.non_delegated_ops,
                   "delegates": t.delegates, "pte_bytes": t.pte_bytes,
                   "sqnr_tosa_db": t.sqnr_tosa, "sqnr_torch_db": t.sqnr_torch,
                   "sqnr_many_db": t.sqnr_many, "error": t.error},
    }


GOAL_SQNR_MARGIN_DB = 0.1  # our SQNR (model's observer) >= theirs - 0.1 dB on every model


def print_sqnr_table(rows: list[dict]) -> dict:
    """Per model: torch SQNR over the SQNR inputs, ours (the model's observer, then each
    observer asked for) and theirs, and the verdict of the SQNR goal."""
    models = {}
    for r in rows:
        models.setdefault(r["model"], r)
    observers = list(dict.fromkeys(o for r in models.values()
                                   for o in r["ours"]["sqnr_many_db"]))
    count = max((r["sqnr_inputs"] for r in models.values()), default=0)
    print()
    print(f"SQNR (dB) of the quantized graphs run by torch, vs float, over {count} inputs "
          "(ours: the model's observer, then each observer; theirs: ExecuTorch's quantizer; "
          "varying: the share of the output's power that changes with the input - near 0% the "
          "output is a constant and its SQNR says how that constant rounds)")
    head = (f"{'model':17} {'varying':>7} {'observer':>9} | {'ours':>6} | "
            + " ".join(f"{o:>9}" for o in observers) + f" | {'ET':>6} | {'ours-ET':>7}")
    print(head)
    print("-" * len(head))
    missed, deltas = [], {}
    for name, r in models.items():
        many, theirs = r["ours"]["sqnr_many_db"], r["theirs"]["sqnr_many_db"]
        mine = many.get(r["observer"])
        delta = None if mine is None or theirs is None else mine - theirs
        deltas[name] = delta
        if delta is None or delta < -GOAL_SQNR_MARGIN_DB:
            missed.append(f"{name} ({_fmt_num(delta, '+.2f')} dB)")
        varying = r["ours"]["varying"]
        print(f"{name:17} {_fmt_num(varying and 100 * varying, '6.1f'):>6}% "
              f"{r['observer']:>9} | {_fmt_num(mine, '6.2f'):>6} | "
              + " ".join(f"{_fmt_num(many.get(o), '9.2f'):>9}" for o in observers)
              + f" | {_fmt_num(theirs, '6.2f'):>6} | {_fmt_num(delta, '+7.2f'):>7}")
    goal = f"our SQNR >= theirs - {GOAL_SQNR_MARGIN_DB} dB on every model"
    state = "MET" if models and not missed else "MISSED"
    print(f"  {state:6} {goal}" + (f": missed on {', '.join(missed)}" if missed else ""))
    return {"deltas_db": deltas, "goal": {"met": state == "MET", "missed": missed}}


def _ratio(a, b) -> float | None:
    if a is None or b is None or not b:
        return None
    return a / b


def print_table(rows: list[dict]) -> dict:
    """Print the per model x NPU table, the per-model both-NPU times and the goal verdicts."""
    head = (f"{'model':17} {'npu':13} | {'AOT s':>6} {'ET s':>6} | {'NPU cyc':>9} {'ET cyc':>9} "
            f"{'ratio':>5} {'tot.r':>5} | {'SRAM KiB':>8} {'ET SRAM':>8} | {'flash KiB':>9} "
            f"{'ET flash':>8} | {'NPU op':>6} {'ET op':>6} | {'SQNR tosa':>9} {'ET tosa':>7} "
            f"{'torch':>6} {'ET torch':>8}")
    print()
    print("per model x NPU (ours first, then ExecuTorch = ET; ratio = our NPU cycles / theirs, "
          "tot.r = total cycles ratio; SQNR in dB vs float)")
    print(head)
    print("-" * len(head))
    for r in rows:
        o, t = r["ours"], r["theirs"]
        of, tf = o["figures"], t["figures"]
        print(f"{r['model']:17} {r['npu']:13} | {_fmt_num(o['aot_s'], '6.1f'):>6} "
              f"{_fmt_num(t['aot_s'], '6.1f'):>6} | {_fmt_num(of.get('cycles_npu')):>9} "
              f"{_fmt_num(tf.get('cycles_npu')):>9} "
              f"{_fmt_num(_ratio(of.get('cycles_npu'), tf.get('cycles_npu')), '.2f'):>5} "
              f"{_fmt_num(_ratio(of.get('cycles_total'), tf.get('cycles_total')), '.2f'):>5} | "
              f"{_fmt_num(of.get('sram_memory_used'), '.1f'):>8} "
              f"{_fmt_num(tf.get('sram_memory_used'), '.1f'):>8} | "
              f"{_fmt_num(of.get('flash_kib'), '.1f'):>9} "
              f"{_fmt_num(tf.get('flash_kib'), '.1f'):>8} | "
              f"{_fmt_num(o['npu_share'] and 100 * o['npu_share'], '5.1f'):>5}% "
              f"{_fmt_num(t['npu_share'] and 100 * t['npu_share'], '5.1f'):>5}% | "
              f"{_fmt_num(o['sqnr_tosa_db'], '.2f'):>9} {_fmt_num(t['sqnr_tosa_db'], '.2f'):>7} "
              f"{_fmt_num(o['sqnr_torch_db'], '.2f'):>6} {_fmt_num(t['sqnr_torch_db'], '.2f'):>8}")
        for side, data in (("ours", o), ("ExecuTorch", t)):
            if data.get("error"):
                print(f"{'':31}^ {side}: {data['error'][:160]}")
        if t.get("non_delegated_ops"):
            print(f"{'':31}^ ExecuTorch left on the CPU: {', '.join(t['non_delegated_ops'])}")
        if t.get("delegates", 1) > 1:
            print(f"{'':31}^ ExecuTorch made {t['delegates']} delegates (figures summed)")

    # Both NPUs together, per model: our shared stages once + vela/package per NPU.
    print()
    print("cold AOT time for both NPUs together (ours: export/quantize/lower/verify once, "
          "vela + package per NPU; theirs: the whole flow per NPU)")
    print(f"{'model':17} | {'ours s':>7} {'(shared':>8} {'per-NPU)':>9} | {'theirs s':>8} | "
          f"{'ours/theirs':>11}")
    models = list(dict.fromkeys(r["model"] for r in rows))
    sums = [0.0, 0.0]
    per_model = {}
    for m in models:
        mine = [r for r in rows if r["model"] == m]
        shared = mine[0]["ours"]["shared_s"]
        shared_s = sum(shared.values()) if shared else None
        npu_s = [r["ours"]["npu_s"] for r in mine]
        theirs = [r["theirs"]["aot_s"] for r in mine]
        ours_total = None if shared_s is None or None in npu_s else shared_s + sum(npu_s)
        theirs_total = None if None in theirs else sum(theirs)
        ratio = _ratio(ours_total, theirs_total)
        per_model[m] = {"ours_s": ours_total, "theirs_s": theirs_total, "ratio": ratio,
                        "ours_stages_s": shared}
        if ours_total is not None and theirs_total is not None:
            sums[0] += ours_total
            sums[1] += theirs_total
        stages = " ".join(f"{k} {v:.1f}" for k, v in shared.items())
        print(f"{m:17} | {_fmt_num(ours_total, '7.1f'):>7} {_fmt_num(shared_s, '8.1f'):>8} "
              f"{_fmt_num(sum(npu_s) if None not in npu_s else None, '9.1f'):>9} | "
              f"{_fmt_num(theirs_total, '8.1f'):>8} | {_fmt_num(ratio, '11.2f'):>11}   [{stages}]")
    total_ratio = _ratio(sums[0], sums[1])
    print(f"{'all models':17} | {sums[0]:7.1f} {'':8} {'':9} | {sums[1]:8.1f} | "
          f"{_fmt_num(total_ratio, '11.2f'):>11}")

    # Goals.
    cycle_rows = [(r, _ratio(r["ours"]["figures"].get("cycles_npu"),
                             r["theirs"]["figures"].get("cycles_npu"))) for r in rows]
    cycles_missed = [
        f"{r['model']}/{r['npu']} ({_fmt_num(x, '.3f')}"
        + (f"; theirs leaves {', '.join(r['theirs']['non_delegated_ops'])} on the CPU, "
           "outside its cycles)" if r["theirs"]["non_delegated_ops"] else ")")
        for r, x in cycle_rows if x is None or x > GOAL_CYCLES_RATIO]
    share_missed = [f"{r['model']}/{r['npu']}" for r in rows
                    if r["ours"]["npu_share"] is None or r["ours"]["npu_share"] < GOAL_NPU_SHARE]
    time_missed = [f"{m} ({_fmt_num(v['ratio'], '.2f')})" for m, v in per_model.items()
                   if v["ratio"] is None or v["ratio"] > GOAL_TIME_RATIO]
    print()
    print("goals")
    verdicts = {
        f"our NPU cycles <= {GOAL_CYCLES_RATIO:.2f}x theirs on every row": cycles_missed,
        "100% of our operators on the NPU": share_missed,
        f"our cold AOT time, both NPUs, <= {GOAL_TIME_RATIO:.2f}x theirs (per model)": time_missed,
    }
    for goal, missed in verdicts.items():
        state = "MET" if rows and not missed else "MISSED"
        print(f"  {state:6} {goal}" + (f": missed on {', '.join(missed)}" if missed else ""))
    print(f"         (all models together: ours/theirs time = {_fmt_num(total_ratio, '.2f')})")
    return {"per_model": per_model, "total_time_ratio": total_ratio,
            "goals": {g: {"met": bool(rows) and not m, "missed": m} for g, m in verdicts.items()}}


# --------------------------------------------------------------------------------------------
# End to end (subprocesses)


def _scratch_targets_yaml(entries: list[ModelEntry], npus) -> str:
    """A targets file of the entries (absolute paths) with one bare-metal target per NPU."""
    lines = ["models:"]
    for entry in entries:
        lines.append(f"  {entry.name}:")
        lines.append(f"    source: {entry.path}:{entry.attr}")
        factory = f"{entry.factory[0]}:{entry.factory[1]}" if entry.factory else None
        lines.append(f"    inputs: {factory or json.dumps([dict(s) for s in entry.inputs])}")
        lines.append(f"    seed: {entry.seed}")
        calibration = {k: v for k, v in entry.calibration.items() if v is not None}
        lines.append(f"    calibration: {json.dumps({**calibration, 'observer': entry.observer})}")
    lines.append("defaults:")
    lines.append(f"  models: [{', '.join(e.name for e in entries)}]")
    lines.append("targets:")
    for npu in npus:
        cpu = "cortex-m55" if "u55" in npu else "cortex-m85"
        lines.append(f"  {npu}:")
        lines.append(f"    cpu: {cpu}")
        lines.append(f"    npu: {{config: {npu}}}")
    return "\n".join(lines) + "\n"


def end_to_end(entries: list[ModelEntry], npus, scratch: Path, targets: Path) -> dict:
    """Cold `doit verify package` (fresh store) vs a subprocess running only their flow."""
    project = scratch / "e2e"
    project.mkdir(parents=True, exist_ok=True)
    (project / "targets.yaml").write_text(_scratch_targets_yaml(entries, npus))
    names = ",".join(e.name for e in entries)
    ours_cmd = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT),
                "verify", "package", f"targets={project / 'targets.yaml'}",
                f"store={project / 'store'}", f"build={project / 'build'}"]
    theirs_cmd = [sys.executable, str(Path(__file__).resolve()), "--their-flow-only",
                  "--targets", str(targets), "--models", names, "--npus", ",".join(npus),
                  "--keep", str(project / "theirs")]
    result = {}
    for side, cmd in (("ours", ours_cmd), ("theirs", theirs_cmd)):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        result[side] = time.perf_counter() - start
        if proc.returncode != 0:
            result[f"{side}_error"] = (proc.stdout + proc.stderr).strip()[-600:]
    print()
    print("end to end, cold, both NPUs, every model above (subprocess: interpreter start, imports)")
    print(f"  ours  : doit verify package, fresh store   {result['ours']:7.1f} s"
          + (" FAILED" if "ours_error" in result else ""))
    print(f"  theirs: their flow per NPU, .pte written   {result['theirs']:7.1f} s"
          + (" FAILED" if "theirs_error" in result else ""))
    ratio = _ratio(result["ours"], result["theirs"])
    print(f"  ours/theirs = {_fmt_num(ratio, '.2f')} (goal <= {GOAL_TIME_RATIO:.2f})")
    for side in ("ours", "theirs"):
        if f"{side}_error" in result:
            print(f"  {side} output tail:\n{result[f'{side}_error']}")
    result["ratio"] = ratio
    return result


def draw_inputs(entry: ModelEntry) -> tuple[tuple, list]:
    """(example, calibration samples) drawn as our export stage draws them, without it."""
    import torch

    from pipeline.export.program import load_attr, load_folder, random_inputs

    options = entry.export_options()
    make = load_attr(*entry.factory, f"{entry.name}/inputs") if entry.factory else None

    def draw(seed: int) -> tuple:
        if make is None:
            return random_inputs(entry.inputs, seed)
        torch.manual_seed(seed)
        return _as_tuple(make())

    if options["calibration_folder"] is not None:
        calibration = load_folder(options["calibration_folder"], f"{entry.name}/calibration")
    else:
        calibration = [draw(options["calibration_seed"] + i)
                       for i in range(options["calibration_samples"])]
    return draw(entry.seed), calibration


def their_flow_only(entries: list[ModelEntry], npus, scratch: Path) -> int:
    """The subprocess of --end-to-end: their flow only, the inputs drawn like our export's."""
    failed = 0
    for entry in entries:
        with _quiet():
            model = _load_model(entry)
            example, calibration = draw_inputs(entry)
        for npu in npus:
            res = run_theirs(model, npu, example, calibration, [example],
                             scratch / entry.name / npu, with_sqnr=False)
            print(f"{entry.name}/{npu}: {res.error or f'{res.seconds:.1f} s'}")
            failed += res.error is not None
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------


def select_models(targets: Path, requested: str | None) -> list[ModelEntry]:
    """The models of the targets file, in file order, or those ``requested`` in that order.

    Raises:
        SystemExit: a requested name the file does not list (the message lists them), or a
            targets file that does not load (its problems).
    """
    from pipeline.errors import ConfigError

    try:
        entries = model_entries(targets)
    except ConfigError as exc:
        sys.exit(f"bench_vs_executorch: --targets {targets}: {exc}")
    if not requested:
        return entries
    by_name = {e.name: e for e in entries}
    names = [n for n in requested.split(",") if n]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        sys.exit(f"bench_vs_executorch: --models must name models of {targets} "
                 f"({', '.join(by_name)}); got {', '.join(unknown)}")
    return [by_name[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Set up the environment with benchmarks/setup_executorch.sh.")
    parser.add_argument("--targets", type=Path, default=DEFAULT_TARGETS,
                        help="a targets.yaml whose models to compare (default: this "
                        "project's targets.yaml)")
    parser.add_argument("--models", help="comma-separated names of models of --targets "
                        "(default: every model it lists)")
    parser.add_argument("--npus", default=",".join(NPUS),
                        help=f"comma-separated Ethos-U configs (default: {','.join(NPUS)})")
    parser.add_argument("--keep", type=Path, help="keep the scratch folder here")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run both flows N times, alternating, and keep each time's "
                        "fastest run (default 1; use 3 on a busy machine)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the untimed warm-up run of both flows")
    parser.add_argument("--end-to-end", action="store_true",
                        help="also time a cold `doit verify package` against their flow, "
                        "each in a fresh subprocess")
    parser.add_argument("--observers", default="",
                        help="comma-separated calibration observers (minmax, histogram, mse) "
                        "or post-training techniques on the model's observer (+cle: "
                        "equalization, +bc: bias_correction, +both) whose torch SQNR to add "
                        "to the SQNR table")
    parser.add_argument("--sqnr-inputs", type=int, default=SQNR_INPUTS,
                        help=f"inputs the SQNR table is measured over (default {SQNR_INPUTS})")
    parser.add_argument("--sqnr-only", action="store_true",
                        help="only quantize, on both sides, and print the SQNR table")
    parser.add_argument("--their-flow-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    npus = [n for n in args.npus.split(",") if n]

    problem = _executorch_problem()
    if problem is not None:
        _reexec_in_et_venv()
        print(f"bench_vs_executorch: cannot run ExecuTorch's Arm Ethos-U flow with "
              f"{sys.executable}: {problem}.\n  Make its environment with "
              f"benchmarks/setup_executorch.sh, then run "
              f"{ET_VENV / 'bin' / 'python'} benchmarks/bench_vs_executorch.py", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    entries = select_models(args.targets, args.models)
    if not entries:
        print(f"bench_vs_executorch: {args.targets} lists no model", file=sys.stderr)
        return 2
    observers = [o for o in args.observers.split(",") if o]
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="bench-vs-et-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        if args.their_flow_only:
            return their_flow_only(entries, npus, scratch)
        versions = _versions()
        print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
        print(f"Vela options (both flows): {' '.join(_vela_args(npus[0])[:8])} ... "
              "(ExecuTorch: the same accelerator / system config / memory mode, the rest at "
              "Vela's defaults, which equal ours)")
        print(f"models: {', '.join(e.name for e in entries)}; NPUs: {', '.join(npus)}; "
              f"{os.cpu_count()} CPU cores")
        load_before = os.getloadavg()[0]
        rows = bench(entries, npus, scratch, warm_up=not args.no_warmup,
                     repeat=max(1, args.repeat), observers=observers,
                     sqnr_count=max(1, args.sqnr_inputs), sqnr_only=args.sqnr_only)
        load_after = os.getloadavg()[0]
        if not rows:
            print("bench_vs_executorch: no model could be built", file=sys.stderr)
            return 2
        summary = {} if args.sqnr_only else print_table(rows)
        summary["sqnr"] = print_sqnr_table(rows)
        print(f"load average (1 min) before / after the runs: {load_before:.1f} / "
              f"{load_after:.1f} on {os.cpu_count()} cores"
              + ("  - the machine was busy: times are noisy, prefer --repeat 3"
                 if max(load_before, load_after) > (os.cpu_count() or 1) else ""))
        if all(r["theirs"]["error"] for r in rows):
            print("bench_vs_executorch: ExecuTorch's Arm Ethos-U flow failed on every model: "
                  "it cannot run here (errors above)", file=sys.stderr)
            return 3
        e2e = None
        if args.end_to_end and not args.sqnr_only:
            built = [e for e in entries if any(r["model"] == e.name for r in rows)]
            e2e = end_to_end(built, npus, scratch, args.targets)
        if args.json:
            args.json.write_text(json.dumps({"versions": versions, "rows": rows,
                                             "summary": summary, "end_to_end": e2e},
                                            indent=2, default=str) + "\n")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
