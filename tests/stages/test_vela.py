"""Vela stage with the real ethos-u-vela on a graph lowered by the project."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pipeline.errors import StageError
from pipeline.ethosu.vela import run_vela, vela_command
from tests.tosa.lowering_cases import lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


class Add(torch.nn.Module):
    def forward(self, x, y):
        return x + y


@pytest.fixture(scope="module")
def tosa(tmp_path_factory):
    return lower_case(Add(), [(1, 4, 4, 8), (1, 4, 4, 8)], tmp_path_factory.mktemp("add")).tosa


@pytest.mark.parametrize("accelerator, cop", [("ethos-u55-128", b"COP1"), ("ethos-u85-256", b"COP1")])
def test_outputs_and_figures(tosa, tmp_path, accelerator, cop):
    out = run_vela(tosa, tmp_path, ["--accelerator-config", accelerator])
    with np.load(out["npz"]) as npz:
        assert npz["cmd_data"].tobytes()[:4] == cop
        assert list(npz["input_shape"][0]) == [1, 1, 1, 4, 8, 4]  # NCHW (1,4,4,8) as NHWC
    figures = json.loads(out["figures"].read_text())
    assert figures["cpu_operators"] == 0 and figures["npu_operators"] == 1
    assert figures["npu_op_share"] == 1.0
    assert figures["cycles_total"] >= figures["cycles_npu"] > 0
    assert figures["accelerator_configuration"] == accelerator.replace("ethos-u", "Ethos_U").replace("-", "_")


def test_direct_drive_options_give_cop2_with_separate_io(tosa, tmp_path):
    out = run_vela(tosa, tmp_path, ["--accelerator-config", "ethos-u85-256", "--cop-format",
                                    "COP2", "--separate-io-regions"])
    with np.load(out["npz"]) as npz:
        assert npz["cmd_data"].tobytes()[:4] == b"COP2"
        assert list(npz["input_region"]) == [3, 3] and list(npz["output_region"]) == [4]


def test_vela_failure_names_where_the_command_and_stderr(tosa, tmp_path):
    with pytest.raises(StageError) as err:
        run_vela(tosa, tmp_path, ["--accelerator-config", "ethos-u85-256", "--separate-io-regions"],
                 where="u85-linux/vela")
    text = str(err.value)
    assert text.startswith("u85-linux/vela: vela must compile the network; it exited 2")
    assert "--separate-io-regions" in text and "COP2" in text
    assert not any(tmp_path.iterdir())


def test_vela_is_found_beside_the_interpreter():
    assert vela_command()[0].endswith("vela")


def test_the_stage_checks_placement_without_importing_torch(tmp_path_factory, tmp_path):
    """The Vela stage reads the lowering's placement.json (the verdicts of the operator files'
    NPU rules) instead of importing the operator files, which import torch: run its ``run``
    in a fresh interpreter on a lowered graph and look at what it loaded."""
    import subprocess
    import sys
    from pathlib import Path

    from pipeline.stages.lower import write_placement

    case = lower_case(Add(), [(1, 4, 4, 8), (1, 4, 4, 8)], tmp_path_factory.mktemp("add"))
    placement = tmp_path / "placement.json"
    write_placement({v: case.variant(v) for v in ("u55", "u85")}, placement)
    script = f"""
import sys
from pathlib import Path
from pipeline.config.vela_ini import default_vela_ini
from pipeline.stages.vela import run
out = Path({str(tmp_path / 'out')!r}); out.mkdir()
run({{"tosa": Path({str(case.variant('u85'))!r}), "placement": Path({str(placement)!r}),
     "vela_ini": default_vela_ini()}},
    {{"npz": out / "model_vela.npz"}}, {{"npu": {{"config": "ethos-u85-256",
                                                "memory_mode": "Sram_Only"}}}},
    {{"vela_args": ["--accelerator-config", "ethos-u85-256"]}}, "t/vela")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "torchao")))
"""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "figures.json").exists()
    assert (tmp_path / "out" / "roofline.json").exists()


def test_a_forked_compile_writes_what_the_vela_executable_writes(tosa, tmp_path):
    """pipeline/ethosu/vela_process.py compiles in a fork of a process that imported Vela once:
    the same files, byte for byte, and the same printed report as the ``vela`` executable,
    compile after compile."""
    import subprocess

    from pipeline.ethosu.vela_process import run_vela_command

    args = ["--accelerator-config", "ethos-u55-128", "--output-format", "raw",
            "--verbose-performance", str(tosa)]
    reference = subprocess.run([*vela_command(), *args, "--output-dir", str(tmp_path / "exe")],
                               capture_output=True, text=True, check=True)
    for run in ("first", "second"):
        status, stdout, _ = run_vela_command([*args, "--output-dir", str(tmp_path / run)])
        assert status == 0
        assert stdout.replace(run, "exe") == reference.stdout
        names = sorted(p.name for p in (tmp_path / "exe").iterdir())
        assert sorted(p.name for p in (tmp_path / run).iterdir()) == names
        for name in names:
            assert (tmp_path / run / name).read_bytes() == (tmp_path / "exe" / name).read_bytes()


def test_a_failing_forked_compile_returns_vela_s_status_and_message(tmp_path):
    from pipeline.ethosu.vela_process import run_vela_command

    status, _, stderr = run_vela_command(["--accelerator-config", "ethos-u99", "x.tosa"])
    assert status == 2 and "invalid choice: 'ethos-u99'" in stderr
    garbage = tmp_path / "garbage.tosa"
    garbage.write_bytes(b"not a flatbuffer")
    status, stdout, stderr = run_vela_command(["--output-dir", str(tmp_path), str(garbage)])
    assert status != 0 and (stdout + stderr).strip()


def test_the_vela_server_is_restarted_after_a_stop_and_not_shared_with_a_forked_copy(tosa,
                                                                                     tmp_path):
    """The stage time limit kills the server with the stage's other descendants: the next
    compile starts a new one. A forked copy of the process (doit's workers) starts its own
    instead of writing into its parent's pipe."""
    import os

    from pipeline.ethosu import vela_process

    args = ["--accelerator-config", "ethos-u85-256", str(tosa), "--output-dir"]
    assert vela_process.run_vela_command([*args, str(tmp_path / "a")])[0] == 0
    first = vela_process._server[1]
    first.kill()
    first.wait()
    assert vela_process.run_vela_command([*args, str(tmp_path / "b")])[0] == 0
    second = vela_process._server[1]
    assert second is not first and second.poll() is None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the forked copy: compile, report (status, whether its server is its own)
        try:
            status = vela_process.run_vela_command([*args, str(tmp_path / "c")])[0]
            own = vela_process._server[1] is not second
            os.write(write, f"{status} {own}".encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 100).decode() == "0 True"
    os.close(read)
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == sorted(
        p.name for p in (tmp_path / "a").iterdir())
    assert vela_process.run_vela_command([*args, str(tmp_path / "d")])[0] == 0
    assert vela_process._server[1] is second
