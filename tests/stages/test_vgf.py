"""The VGF stage and the Vulkan set-up, on small TOSA graphs written as MLIR and serialised by
tosa-tools' tosa-opt: the real model converter, scenario runner, emulation layer and lavapipe.

The whole example models go through the two VGF targets in tests/e2e/test_vgf_build.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pipeline.errors import StageError, UserError
from pipeline.vgf.convert import convert, tool
from pipeline.vgf.check import _run_vgf
from pipeline.vgf.vulkan import (
    LAYERS,
    driver_fingerprint,
    emulation_layer_deploy,
    find_lavapipe,
    vulkan_environment,
)

pytestmark = [pytest.mark.needs_tosa_ref, pytest.mark.needs_vulkan]

SHAPE = (1, 2, 2, 4)
ADD = """module {
  func.func @main(%x: tensor<1x2x2x4xf32>, %y: tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32> {
    %0 = tosa.add %x, %y : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
    return %0 : tensor<1x2x2x4xf32>
  }
}
"""
# tosa.custom without a mapping (--custom-op-domain-to-opcode): the converter refuses it.
CUSTOM = """module {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = tosa.custom %x {domain_name = "example", implementation_attrs = "",
                         operator_name = "mystery"} : (tensor<1x4xf32>) -> tensor<1x4xf32>
    return %0 : tensor<1x4xf32>
  }
}
"""


def flatbuffer(mlir: str, folder: Path) -> Path:
    """A TOSA flatbuffer from MLIR text, through tosa-opt (as the pipeline's graphs are)."""
    (folder / "graph.mlir").write_text(mlir)
    out = folder / "graph.tosa"
    subprocess.run([tool("tosa-opt"), "--pass-pipeline=builtin.module(tosa-serialize"
                    f"{{tosa-flatbuffer-filename={out}}})", str(folder / "graph.mlir"),
                    "-o", os.devnull], check=True, capture_output=True)
    return out


def io_json(folder: Path) -> Path:
    entry = {"dtype": "float32", "shape": list(SHAPE), "scale": None, "zero_point": None,
             "layout": "NHWC", "dim_order": [0, 1, 2, 3]}
    desc = {"inputs": [{**entry, "name": "x"}, {**entry, "name": "y"}],
            "outputs": [{**entry, "name": "sum"}], "tosa_spec": "TOSA-1.0+FP"}
    (folder / "io.json").write_text(json.dumps(desc))
    return folder / "io.json"


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("add")
    return convert(flatbuffer(ADD, folder), io_json(folder), folder / "out", where="t/vgf")


def test_convert_writes_vgf_scenario_io_and_figures(converted):
    scenario = json.loads(converted["scenario"].read_text())
    assert list(scenario["commands"][0]) == ["dispatch_vgf"]  # not the deprecated name
    sources = [r["tensor"].get("src") or r["tensor"]["dst"] for r in scenario["resources"]
               if "tensor" in r]
    assert sources == ["input_0.npy", "input_1.npy", "output_0.npy"]
    graph = next(r["graph"] for r in scenario["resources"] if "graph" in r)
    assert graph["src"] == "model.vgf"
    io = json.loads(converted["vgf_io"].read_text())
    assert [(e["name"], e["vgf_name"], e["binding"], e["vk_format"]) for e in io["inputs"]] == [
        ("x", "input_0", 0, "VK_FORMAT_R32_SFLOAT"), ("y", "input_1", 1, "VK_FORMAT_R32_SFLOAT")]
    assert io["outputs"][0]["vgf_name"] == "output_0" and io["outputs"][0]["layout"] == "NHWC"
    figures = json.loads(converted["figures"].read_text())
    assert figures["vgf_bytes"] == converted["vgf"].stat().st_size > 0
    assert figures["model_converter"] == "0.11.0" and figures["constants"] == 0


def test_converter_failure_names_the_rejected_operator(tmp_path):
    graph = flatbuffer(CUSTOM, tmp_path)
    with pytest.raises(StageError, match=r"^t/vgf: the ML SDK model converter must convert every "
                       r"TOSA operator; it rejected tosa\.custom\n  command: .*model-converter"):
        convert(graph, tmp_path / "unused.json", tmp_path / "out", where="t/vgf")
    assert not (tmp_path / "out" / "model.vgf").exists()


def test_io_that_does_not_match_the_vgf_is_refused(tmp_path):
    graph = flatbuffer(ADD, tmp_path)
    desc = json.loads(io_json(tmp_path).read_text())
    desc["inputs"][1]["dtype"] = "int8"
    (tmp_path / "io.json").write_text(json.dumps(desc))
    with pytest.raises(StageError, match=r"input 'y' \(input_1\) must be \[1, 2, 2, 4\] "
                       r"VK_FORMAT_R8_SINT in the .vgf as in the TOSA graph; got \[1, 2, 2, 4\] "
                       r"VK_FORMAT_R32_SFLOAT"):
        convert(graph, tmp_path / "io.json", tmp_path / "out", where="t/vgf")


def test_missing_vulkan_driver_is_one_line_naming_the_package(tmp_path):
    with pytest.raises(UserError) as caught:
        find_lavapipe([tmp_path])  # a machine whose ICD folders hold no lavapipe
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("running a .vgf needs Mesa's CPU Vulkan driver (lavapipe")
    assert message.endswith("Install it: apt-get install mesa-vulkan-drivers libvulkan1")


def test_driver_fingerprint_is_the_lavapipe_library_digest(tmp_path):
    assert driver_fingerprint((str(tmp_path),)) == "missing"
    digest = driver_fingerprint()
    assert len(digest) == 64 and int(digest, 16) >= 0


def _samples(count: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(3)
    return [[rng.uniform(-1, 1, SHAPE).astype(np.float32) for _ in range(2)]
            for _ in range(count)]


def _naive_environment() -> dict[str, str]:
    """The emulation layer's own instructions: one manifest folder, the order in
    VK_INSTANCE_LAYERS, the libraries on LD_LIBRARY_PATH."""
    deploy = emulation_layer_deploy()
    return {**os.environ, "LD_LIBRARY_PATH": str(deploy / "lib"),
            "VK_LAYER_PATH": str(deploy / "share" / "vulkan" / "explicit_layer.d"),
            "VK_INSTANCE_LAYERS": ":".join(name for _, name in LAYERS),
            "VK_ICD_FILENAMES": str(find_lavapipe())}


def test_layer_order_pitfall_breaks_the_naive_setup_and_not_ours(converted, tmp_path,
                                                                  monkeypatch):
    folder = converted["vgf"].parent
    x, y = _samples(1)[0]
    np.save(folder / "input_0.npy", x)
    np.save(folder / "input_1.npy", y)
    command = [tool("scenario_runner"), "--scenario", str(converted["scenario"]),
               "--output", str(tmp_path)]
    naive = subprocess.run(command, env=_naive_environment(), capture_output=True, text=True)
    assert naive.returncode != 0
    assert "requires extension: VK_ARM_tensors" in naive.stdout + naive.stderr
    # The same command in our environment, built on top of the naive one.
    ours = vulkan_environment(tmp_path / "layers", base=_naive_environment())
    run = subprocess.run(command, env=ours, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "output_0.npy"), x + y)
    # The run check's in-process runner, with the naive settings in the build's environment.
    for name, value in _naive_environment().items():
        monkeypatch.setenv(name, value)
    samples = _samples(3)
    results = _run_vgf(converted["scenario"], samples, "t/vgf_check")
    for s, (a, b) in enumerate(samples):
        np.testing.assert_array_equal(results[f"s{s}_output_0"], a + b)
    assert len(results["timing"]) == 1 + len(samples)  # one pipeline build, then each sample


def test_layer_manifests_are_split_graph_first_with_absolute_libraries(tmp_path):
    env = vulkan_environment(tmp_path, base={"VK_ADD_LAYER_PATH": "/elsewhere", "HOME": "/h"})
    folders = env["VK_LAYER_PATH"].split(os.pathsep)
    assert [Path(f).name for f in folders] == ["Graph", "Tensor"]
    for folder in folders:
        (manifest,) = Path(folder).glob("*.json")
        library = Path(json.loads(manifest.read_text())["layer"]["library_path"])
        assert library.is_absolute() and library.is_file()
    assert "VK_ADD_LAYER_PATH" not in env and env["HOME"] == "/h"


def test_run_checks_of_one_process_share_one_runner(converted, tmp_path, monkeypatch):
    """The scenario runner is started once per build process and reused (it keeps the
    emulation layers loaded); a change of the Vulkan environment, or a runner that died,
    starts another; the outputs stay right throughout."""
    from pipeline.vgf.check import _Runner

    def check(seed: int) -> int:
        samples = _samples(2 + seed)
        results = _run_vgf(converted["scenario"], samples, "t/vgf_check")
        for s, (a, b) in enumerate(samples):
            np.testing.assert_array_equal(results[f"s{s}_output_0"], a + b)
        return _Runner.current.proc.pid

    first = check(0)
    assert check(1) == first
    _Runner.current.proc.kill()
    _Runner.current.proc.wait()
    second = check(0)
    assert second != first
    monkeypatch.setenv("MESA_SHADER_CACHE_DIR", str(tmp_path / "shaders"))
    third = check(1)
    assert third != second and check(0) == third
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # a stage's scratch folder: not a change
    assert check(1) == third


def test_a_runner_error_fails_the_check_and_the_runner_goes_on(converted):
    from pipeline.vgf.check import _Runner

    wrong = [[np.zeros((1, 4, 2, 2), np.float32), np.zeros(SHAPE, np.float32)]]  # NCHW for NHWC
    with pytest.raises(StageError, match=r"^t/vgf_check: the scenario runner must run the \.vgf "
                       r"on lavapipe with the ML emulation layer; it failed\n(.|\n)*"
                       r"scenario runner: \w+: .*shape"):
        _run_vgf(converted["scenario"], wrong, "t/vgf_check")
    pid = _Runner.current.proc.pid
    samples = _samples(1)
    results = _run_vgf(converted["scenario"], samples, "t/vgf_check")
    np.testing.assert_array_equal(results["s0_output_0"], samples[0][0] + samples[0][1])
    assert _Runner.current.proc.pid == pid
