"""The Vela option search (pipeline/ethosu/search.py): the example CNN compiled by the real Vela
for Ethos-U85-256 with each candidate option set; the fewest cycles win (there: ``--optimise
Size``), the operations of every candidate are the target's own, and what the target sets is
never varied (docs/search.md)."""

import json
from pathlib import Path

import pytest

from models.cnn import SmallCNN
from pipeline.config.load import load_config
from pipeline.config.npu import NpuConfig
from pipeline.config.vela_ini import read_vela_ini
from pipeline.ethosu.search import arithmetic, search_vela
from pipeline.ethosu.vela import run_vela
from tests.e2e.runner import ROOT
from tests.tosa.lowering_cases import lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]

TARGETS = """\
models:
  cnn: {source: %s:SmallCNN, inputs: [{name: image, shape: [1, 3, 32, 32]}]}
defaults:
  models: [cnn]
targets:
  u55:
    cpu: cortex-m55
    npu: {config: ethos-u55-128}
  u55-small:
    extends: u55
    npu: {config: ethos-u55-128, optimise: Size}
  u85-full:
    cpu: cortex-m85
    npu: {config: ethos-u85-256, search: full, tensor_allocator: Greedy}
  u85-once:
    cpu: cortex-m85
    npu: {config: ethos-u85-256, search: off}
""" % (ROOT / "models" / "cnn.py")


def _targets(tmp_path: Path, text: str = TARGETS):
    (tmp_path / "targets.yaml").write_text(text)
    return load_config(tmp_path / "targets.yaml").targets


@pytest.mark.quick
def test_the_search_varies_only_what_the_target_leaves_open(tmp_path):
    targets = _targets(tmp_path)
    assert targets["u55"].npu.searched() == {"optimise": ("Performance", "Size")}
    assert targets["u55-small"].npu.searched() == {}  # optimise set: nothing left to vary
    assert targets["u85-full"].npu.searched() == {"optimise": ("Performance", "Size")}
    assert targets["u85-once"].npu.searched() == {}
    candidates = targets["u55"].npu.vela_candidates()
    assert candidates[0] == targets["u55"].npu.vela_args()  # the target's own first
    assert [c[c.index("--optimise") + 1] for c in candidates] == ["Performance", "Size"]
    assert targets["u55-small"].npu.vela_candidates() == [targets["u55-small"].npu.vela_args()]
    full = targets["u85-full"].npu.vela_candidates()
    assert {c[c.index("--tensor-allocator") + 1] for c in full} == {"Greedy"}


@pytest.mark.quick
def test_an_unknown_effort_is_one_line_naming_the_file_and_line(tmp_path):
    from pipeline.errors import ConfigError

    text = TARGETS.replace("search: off", "search: fast")
    with pytest.raises(ConfigError) as err:
        _targets(tmp_path, text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "search: fast" in row)
    assert (f"targets.yaml:{line}: targets.u85-once.npu.search: must be one of off, quick, "
            "full; got 'fast'") in str(err.value)


@pytest.fixture(scope="module")
def cnn_u85(tmp_path_factory) -> tuple[Path, NpuConfig, dict]:
    folder = tmp_path_factory.mktemp("cnn")
    case = lower_case(SmallCNN(), [(1, 3, 32, 32)], folder)
    npu = NpuConfig.model_validate({"config": "ethos-u85-256", "search": "full"})
    return case.variant("u85"), npu, read_vela_ini(npu.config_file).memory_modes[npu.memory_mode]


def test_full_search_keeps_the_fewest_cycles_then_the_least_sram(cnn_u85, tmp_path, capsys):
    tosa, npu, memory_mode = cnn_u85
    record = search_vela(tosa, tmp_path, npu.vela_candidates(), effort="full",
                         memory_mode=memory_mode, progress=True, where="cnn")
    tried = record["candidates"]
    assert len(tried) == 6 and all(c["same_operations"] for c in tried)
    best = min(tried, key=lambda c: (c["cycles_total"], c["sram_memory_used"]))
    assert record["won"] == best["options"]
    assert record["cycles_saved"] == tried[0]["cycles_total"] - best["cycles_total"]
    # What the folder holds is the winner's compile: its figures and its roofline.
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["cycles_total"] == best["cycles_total"]
    roofline = json.loads((tmp_path / "roofline.json").read_text())
    assert roofline["cycles"] == best["cycles_total"]
    lines = [x for x in capsys.readouterr().err.splitlines() if "vela search cnn" in x]
    assert len(lines) == 6 and lines[-1].endswith("KiB SRAM")


def test_the_winner_is_the_same_compile_as_vela_with_its_options(cnn_u85, tmp_path):
    """The kept command stream is byte for byte Vela's with the winning options, and its
    operations equal the target's own options' (only the schedule differs)."""
    tosa, npu, memory_mode = cnn_u85
    quick = npu.model_copy(update={"search": "quick"})
    record = search_vela(tosa, tmp_path / "search", quick.vela_candidates(), effort="quick",
                         memory_mode=memory_mode)
    won = npu.model_copy(update=record["won"])
    alone = run_vela(tosa, tmp_path / "alone", won.vela_args(), memory_mode=memory_mode,
                     debug_db=tmp_path / "alone.xml")
    run_vela(tosa, tmp_path / "own", npu.vela_args(), memory_mode=memory_mode,
             debug_db=tmp_path / "own.xml")
    assert (tmp_path / "search" / "model_vela.npz").read_bytes() == alone["npz"].read_bytes()
    assert arithmetic(tmp_path / "alone.xml") == arithmetic(tmp_path / "own.xml")
    cycles = [c["cycles_total"] for c in record["candidates"]]
    assert record["candidates"][record["won_index"]]["cycles_total"] == min(cycles)
