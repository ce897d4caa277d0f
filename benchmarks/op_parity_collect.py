#!/usr/bin/env python3
"""Collect the operator test cases of ExecuTorch's Arm backend (run under .venv-executorch).

Usage: .venv-executorch/bin/python benchmarks/op_parity_collect.py OUT_DIR [--filter REGEX]

Imports every ``backends/arm/test/ops/test_*.py`` with the reference's test pipelines replaced
by recorders, calls each test function once per parameter set (``common.parametrize`` hands
them to pytest as ``parametrize`` marks), and records what each pipeline was given: the
module and its inputs (``torch.export``ed, saved with ``torch.export.save``: the same torch
as .venv, so ``bench_op_parity.py`` loads them there), the quantization the test asked for and
what the reference expects of the case. Nothing of the reference's own flow runs: a test that
drives its tester, partitioner or quantizer by hand is recorded as such and skipped.

Writes ``OUT_DIR/index.json`` (one record per case) and ``OUT_DIR/programs/<key>.pt2`` plus
``<key>.inputs.pt`` (one per distinct program, shared by the cases that test it).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import io
import itertools
import json
import os
import random
import re
import sys
import traceback
import warnings
from pathlib import Path

import torch

INDEX_VERSION = 1
# Reference pipelines -> the kind of case they make; None: recorded, never a case.
KINDS = {
    "TosaPipelineINT": "tosa",
    "EthosU55PipelineINT": "u55",
    "EthosU65PipelineINT": "u65",
    "EthosU85PipelineINT": "u85",
    "TosaPipelineFP": "fp",
    "OpNotSupportedPipeline": None,  # kind from its quantize / u55_subset arguments
}
# Names a test may call to drive the reference flow itself: such a test is not a pipeline case.
REFERENCE_FLOW = ("ArmTester", "to_edge_transform_and_lower", "to_edge", "prepare_pt2e",
                  "convert_pt2e", "prepare_qat_pt2e")
# Test functions worth calling: the INT/FP TOSA and Ethos-U ones (VGF and pass tests are not).
TESTED = re.compile(r"(tosa|u55|u65|u85)", re.IGNORECASE)


class NotAPipelineCase(Exception):
    """The test drives the reference's tester or quantizer itself."""


class Sink:
    """Absorbs whatever a test does to a pipeline besides building and running it."""

    def __getattr__(self, name):
        return Sink()

    def __call__(self, *args, **kwargs):
        return Sink()

    def __getitem__(self, key):
        return Sink()

    def __iter__(self):
        return iter(())


class ReferenceFlow(Sink):
    """Stands in for the reference's tester, lowering and quantize calls: using one makes
    the test something other than a pipeline case."""

    def __call__(self, *args, **kwargs):
        raise NotAPipelineCase


class QuantizerRecorder(Sink):
    """``pipeline.quantizer``: remembers the global and IO configurations set."""

    def __init__(self):
        self.configs: dict[str, object] = {}

    def set_global(self, config):
        self.configs["global"] = config
        return self

    def set_io(self, config):
        self.configs["io"] = config
        return self


class Recorder:
    """Stands in for one reference pipeline class: records its constructor arguments."""

    made: list[Recorder] = []
    name = "?"

    def __class_getitem__(cls, _item):
        return cls

    def __init__(self, module, test_data, *args, **kwargs):
        self.module, self.test_data, self.args, self.kwargs = module, test_data, args, kwargs
        self.quantizer = QuantizerRecorder()
        self.changed: list[str] = []
        self.ran = False
        Recorder.made.append(self)

    def run(self, *args, **kwargs):
        self.ran = True

    def change_args(self, stage, *args, **kwargs):
        self.changed.append(stage)

    def __getattr__(self, name):
        return Sink()

    @property
    def kind(self) -> str | None:
        if self.name != "OpNotSupportedPipeline":
            return KINDS.get(self.name)
        if not self.kwargs.get("quantize", False):
            return "fp"
        return "u55" if self.kwargs.get("u55_subset", False) else "tosa"


def recorder_class(name: str) -> type:
    return type(name, (Recorder,), {"name": name})


def install_recorders() -> None:
    """Every pipeline class of the reference's ``test_pipeline`` becomes a recorder, before
    any test module imports one."""
    from executorch.backends.arm.test.tester import test_pipeline

    for name in dir(test_pipeline):
        if name.endswith("Pipeline") or name.endswith("PipelineINT") or name.endswith("PipelineFP"):
            setattr(test_pipeline, name, recorder_class(name))


def environment_marks():
    """The reference's marks that only say a tool (FVP, model converter) is missing."""
    from executorch.backends.arm.test import common

    marks = [common.XfailIfNoCorstone300, common.XfailIfNoCorstone300_u65,
             common.XfailIfNoCorstone320, common.SkipIfNoModelConverter,
             common.XfailfNoVKMLEmulationLayer]
    return [m.mark for m in marks]


def _marks_of(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    return marks if isinstance(marks, list) else [marks]


def expectation(marks: list, ignored: list) -> tuple[str, str]:
    """What the reference expects of a case from its marks: ``pass``, ``xfail`` or ``skip``
    (with the reason); marks that only name a missing tool do not count."""
    for mark in marks:
        if mark.name not in ("xfail", "skip", "skipif") or any(mark == m for m in ignored):
            continue
        condition = mark.args[0] if mark.args else mark.kwargs.get("condition", True)
        if mark.name == "skip" or condition:
            kind = "xfail" if mark.name == "xfail" else "skip"
            return kind, str(mark.kwargs.get("reason", ""))
    return "pass", ""


def parameter_sets(func) -> list[tuple[str, dict, list]]:
    """(id, arguments, marks) for every combination of the function's parametrize marks."""
    axes = []
    for mark in _marks_of(func):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in (mark.args[0].split(",") if isinstance(mark.args[0], str)
                                     else mark.args[0])]
        ids = mark.kwargs.get("ids")
        axis = []
        for i, value in enumerate(mark.args[1]):
            values, marks, pid = (value.values, list(value.marks), value.id) \
                if hasattr(value, "values") and hasattr(value, "marks") else ((value,), [], None)
            if len(names) == 1 and not hasattr(value, "values"):
                values = (value,)
            pid = pid or (ids[i] if isinstance(ids, (list, tuple)) else str(i))
            axis.append((str(pid), dict(zip(names, values)), marks))
        axes.append(axis)
    if not axes:
        return [("", {}, [])]
    combos = []
    for combo in itertools.product(*axes):
        pid = "-".join(c[0] for c in reversed(combo))  # pytest joins the innermost first
        args = {k: v for c in combo for k, v in c[1].items()}
        combos.append((pid, args, [m for c in combo for m in c[2]]))
    return combos


def _qspec(spec) -> dict:
    if spec is None:
        return {}
    return {"dtype": str(spec.dtype).removeprefix("torch."),
            "qscheme": str(getattr(spec, "qscheme", "")).removeprefix("torch."),
            "quant_min": getattr(spec, "quant_min", None),
            "quant_max": getattr(spec, "quant_max", None)}


def quantization(recorder: Recorder) -> dict:
    """The case's quantization: our scheme (``int8``/``a16w8``) and what the reference set."""
    per_channel = recorder.kwargs.get("per_channel_quantization", True)
    extensions = list(recorder.kwargs.get("tosa_extensions") or [])
    found = {"weights": "per_channel" if per_channel else "per_tensor",
             "tosa_extensions": extensions}
    # The pipelines' own choice: int16 activations with the int16 extension (TOSA) or
    # a16w8_quantization (Ethos-U); a configuration the test sets overrides it.
    a16w8 = "int16" in extensions or recorder.kwargs.get("a16w8_quantization", False)
    config = recorder.quantizer.configs.get("global")
    if config is not None:
        activation, weight = _qspec(config.input_activation), _qspec(config.weight)
        found["activation"], found["weight"] = activation, weight
        if "per_channel" in weight.get("qscheme", "per_channel"):
            found["weights"] = "per_channel"
        elif weight:
            found["weights"] = "per_tensor"
        if weight.get("quant_max") is not None and weight["quant_max"] < 127:
            found["weight_bits"] = 4
    if "io" in recorder.quantizer.configs:
        found["io_config"] = True
    if "quantize" in recorder.changed:
        found["custom_quantizer"] = True
    activation = found.get("activation", {}).get("dtype", "int16" if a16w8 else "int8")
    found["scheme"] = "a16w8" if activation == "int16" else "int8"
    if activation not in ("int8", "int16"):
        found["activation_dtype"] = activation
    return found


def program_key(program, inputs: tuple) -> str:
    """Equal for equal graphs, weights and inputs (so tests of one module share a program)."""
    digest = hashlib.sha256(program.graph_module.print_readable(False).encode())
    values = {**program.state_dict, **program.constants}
    for name in sorted(values):
        value = values[name]
        digest.update(name.encode())
        if isinstance(value, torch.Tensor):
            digest.update(str((value.dtype, tuple(value.shape))).encode())
            digest.update(value.detach().contiguous().cpu().view(-1).view(torch.uint8).numpy()
                          .tobytes() if value.numel() else b"")
    buffer = io.BytesIO()
    torch.save(inputs, buffer)
    digest.update(buffer.getvalue())
    return digest.hexdigest()[:20]


def _describe_inputs(inputs: tuple) -> list[str]:
    return [f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}" if isinstance(x, torch.Tensor)
            else repr(x)[:40] for x in inputs]


def export_case(recorder: Recorder, programs: Path) -> dict:
    """torch.export the recorder's module on its inputs; save both once per distinct program."""
    inputs = recorder.test_data if isinstance(recorder.test_data, tuple) else (recorder.test_data,)
    found = {"inputs": _describe_inputs(inputs)}
    try:
        module = recorder.module
        if isinstance(module, torch.nn.Module):
            module = module.eval()
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.export.export(module, inputs)
        key = program_key(program, inputs)
        path = programs / f"{key}.pt2"
        if not path.exists():
            torch.export.save(program, programs / f".{key}.tmp.pt2")
            torch.save(inputs, programs / f"{key}.inputs.pt")
            os.replace(programs / f".{key}.tmp.pt2", path)
        found["program"] = key
    except Exception as exc:  # noqa: BLE001 - recorded: the case cannot be exported
        found["export_error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}" \
            if str(exc).strip() else type(exc).__name__
    return found


def call_test(func, args: dict) -> tuple[list[Recorder], str]:
    """Call one parametrized test; the recorders it made and how it ended."""
    Recorder.made = []
    torch.manual_seed(0)
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass
    ended = ""
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            func(**args)
    except NotAPipelineCase:
        ended = "drives the reference flow itself"
    except BaseException as exc:  # noqa: BLE001 - pytest.skip/fail raise BaseExceptions
        if isinstance(exc, KeyboardInterrupt):
            raise
        ended = f"raised {type(exc).__name__}: {str(exc).strip()[:200]}"
    return Recorder.made, ended


def collect_module(path: Path, programs: Path, ignored: list, pattern) -> list[dict]:
    """Every case of one test file."""
    name = f"executorch.backends.arm.test.ops.{path.stem}"
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        return [{"id": path.stem, "file": path.stem, "kind": None,
                 "collect_error": f"import: {type(exc).__name__}: {exc}"[:300]}]
    for flow in REFERENCE_FLOW:
        if flow in vars(module):
            setattr(module, flow, ReferenceFlow())
    records = []
    for test_name, func in sorted(vars(module).items()):
        if not (test_name.startswith("test_") and callable(func) and TESTED.search(test_name)):
            continue
        if getattr(func, "__module__", None) != name:
            continue
        func_expect = expectation(_marks_of(func), ignored)
        for pid, args, marks in parameter_sets(func):
            case_id = f"{path.stem}::{test_name}" + (f"[{pid}]" if pid else "")
            if pattern and not pattern.search(case_id):
                continue
            expect, reason = expectation(marks, ignored)
            if expect == "pass":
                expect, reason = func_expect
            made, ended = call_test(func, args)
            for i, recorder in enumerate(made):
                kind = recorder.kind
                if kind is None:
                    continue
                record = {"id": case_id + (f"#{i}" if len(made) > 1 else ""), "file": path.stem,
                          "test": test_name, "kind": kind, "expect": expect, "reason": reason,
                          "pipeline": recorder.name}
                if recorder.name == "OpNotSupportedPipeline":
                    record["expect"], record["reason"] = "cpu", "OpNotSupportedPipeline"
                if "raised" in ended:
                    record["test_ended"] = ended
                if kind != "fp":
                    record["quantization"] = quantization(recorder)
                    record.update(export_case(recorder, programs))
                records.append(record)
            if not made and ended:
                records.append({"id": case_id, "file": path.stem, "test": test_name,
                                "kind": None, "collect_error": ended})
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for index.json and programs/")
    parser.add_argument("--filter", help="regex on case ids (test_add::test_add_tensor_tosa_INT...)")
    args = parser.parse_args()
    os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")
    torch.set_num_threads(1)
    install_recorders()
    from executorch.backends.arm.test import ops

    folder = Path(ops.__path__[0])
    sys.path.insert(0, str(folder.parent))  # test_transpose_conv2d imports their conftest
    programs = args.out / "programs"
    programs.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(args.filter) if args.filter else None
    ignored = environment_marks()
    records = []
    for path in sorted(folder.glob("test_*.py")):
        found = collect_module(path, programs, ignored, pattern)
        records += found
        cases = [r for r in found if r.get("kind") not in (None, "fp")]
        print(f"{path.stem}: {len(cases)} INT cases, "
              f"{sum('export_error' in r for r in cases)} not exported", flush=True)
    from importlib.metadata import version

    index = {"version": INDEX_VERSION, "executorch": version("executorch"),
             "torch": torch.__version__, "filter": args.filter, "cases": records}
    tmp = args.out / ".index.json.tmp"
    tmp.write_text(json.dumps(index, indent=1))
    os.replace(tmp, args.out / "index.json")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # a bug here: show it whole
        traceback.print_exc()
        sys.exit(1)
