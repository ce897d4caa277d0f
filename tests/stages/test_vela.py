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
