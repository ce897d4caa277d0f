"""Test support: the host build of tosa_cpu_run under ASan and UBSan, single-operator TOSA
graphs, and runs of one graph in both the TOSA reference model and the CPU kernels.

The build directory persists in pytest's cache (``.pytest_cache/d/runtime-tosa-cpu-asan``), so
a later session only rebuilds what changed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from pipeline.cpu.check_cases import random_values as random  # noqa: F401 (shared)
from pipeline.cpu.check_cases import write_check_cases  # noqa: F401 (shared)
from pipeline.cpu.graph_format import write_cpu_graph
from pipeline.tosa import serialize
from pipeline.tosa.graph import TosaGraph
from pipeline.verify.reference_model import run_reference_model
from pipeline.tosa.spec import parse_spec
from tests.runtime.runtime_helpers import build_dir, cmake_build, run

SPEC = "TOSA-1.0+INT+int16"


def build_tool(request) -> Path:
    """tosa_cpu_run built for the host with ASan and UBSan (a failure aborts the run)."""
    folder = cmake_build(build_dir(request, "tosa-cpu-asan"), "host", "host",
                         "-DETHOSU_RT_SANITIZE=ON", build_type="RelWithDebInfo",
                         targets=("tosa_cpu_run",))
    return folder / "bin" / "tosa_cpu_run"


class Graph:
    """A single-operator (or small) TOSA graph and the values of its inputs."""

    def __init__(self):
        self.g = TosaGraph(parse_spec(SPEC))
        self.values: dict[str, np.ndarray] = {}

    def input(self, name: str, array: np.ndarray, dtype: str) -> str:
        name = self.g.add_input(name, array.shape, dtype)
        self.values[name] = array
        return name

    def const(self, data, dtype: str) -> str:
        return self.g.add_const("c", np.asarray(data), dtype)

    def zp(self, value: int, dtype: str) -> str:
        return self.const([value], dtype)

    def shape(self, values) -> str:
        return self.const(list(values), "shape")

    def op(self, op: str, inputs: list[str], shape, dtype: str, **attrs) -> str:
        out = self.g.add_tensor("out", tuple(shape), dtype)
        self.g.add_op(op, inputs, [out], **attrs)
        return out

    def output(self, *names: str) -> Graph:
        self.g.outputs.extend(names)
        return self

    def write(self, path: Path) -> Path:
        serialize.write(self.g, path)
        return path


def run_cpu(tool: Path, tcg: Path, inputs: list[np.ndarray], folder: Path,
            check: bool = True):
    """tosa_cpu_run on ``inputs``; the completed process and the outputs it wrote."""
    files = []
    for i, array in enumerate(inputs):
        files.append(folder / f"cpu_input_{i}.npy")
        np.save(files[-1], np.ascontiguousarray(array))
    result = run([tool, "--graph", tcg, "--input", ",".join(map(str, files)), "--output-dir",
                  folder], check=check, timeout=600)
    outputs = sorted(folder.glob("output_*.npy"), key=lambda p: int(p.stem.split("_")[1]))
    return result, [np.load(p) for p in outputs]


def compare(tool: Path, tosa: Path, values: dict[str, np.ndarray]) -> dict:
    """Run ``tosa`` in the reference model and (as a CPU graph) in the kernels on ``values``;
    returns, per output, the reference and ours as int64 arrays of the reference's shape."""
    with tempfile.TemporaryDirectory(prefix="tosa-cpu-") as tmp:
        folder = Path(tmp)
        info = write_cpu_graph(tosa, folder / "model.tcg")
        names = [t.name for t in info.outputs]
        reference = run_reference_model(tosa, values, names)
        _, ours = run_cpu(tool, folder / "model.tcg", [values[t.name] for t in info.inputs],
                          folder)
    assert len(ours) == len(names)
    return {name: (reference[name].astype(np.int64),
                   ours[i].astype(np.int64).reshape(reference[name].shape))
            for i, name in enumerate(names)}  # fmt: skip


def assert_bit_exact(results: dict) -> None:
    for name, (want, got) in results.items():
        if not np.array_equal(want, got):
            diff = np.abs(want - got)
            raise AssertionError(
                f"output {name}: {(diff > 0).sum()} of {diff.size} values differ from the "
                f"reference model (largest difference {diff.max()}, first at "
                f"{np.unravel_index(np.argmax(diff > 0), diff.shape)}: want "
                f"{want.flat[np.argmax(diff > 0)]}, got {got.flat[np.argmax(diff > 0)]})")
