"""The elementwise operators (TABLE family, rounding, division, add/sub forms, integer
bitwise and shift operators) compiled by Vela for Ethos-U55-128 and -U85-256, each from
its NPU's variant of the graph: the pre-Vela check passes and Vela places every operator
on the NPU - int8 and a16w8 (``benchmarks/bench_elementwise.py`` prints their cycles)."""

import pytest

from pipeline.ethosu.vela import run_vela
from pipeline.ethosu.placement import check_npu_constraints
from models.cases.networks import ACCELERATORS
from pipeline.chain.vela import vela_args
from models.cases.elementwise import integer_cases, quantized_cases
from tests.tosa.lowering_cases import A16W8, INT8, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]

SHAPE = (1, 4, 8, 8)
QUANTIZED = quantized_cases(SHAPE)
INTEGER = integer_cases(SHAPE)
CASES = ([(n, INT8) for n in QUANTIZED] + [(n, A16W8) for n in QUANTIZED]
         + [(n, INT8) for n in INTEGER])  # fmt: skip


@pytest.fixture(scope="module", params=CASES, ids=[f"{n}-{d}" for n, d in CASES])
def lowered(request, tmp_path_factory):
    name, dtype = request.param
    module, specs = (QUANTIZED.get(name) or INTEGER[name][:2])
    folder = tmp_path_factory.mktemp(f"{name}_{dtype}")
    return name, lower_case(module, specs, folder, dtype)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_every_operator_runs_on_the_npu(lowered, accelerator, tmp_path):
    name, case = lowered
    tosa = case.variant("u55" if "u55" in accelerator else "u85")
    if "u55" in accelerator and name in INTEGER and not INTEGER[name][2]:
        with pytest.raises(Exception, match="Ethos-U55/U65 supports"):  # no U55 form: named
            check_npu_constraints(tosa, accelerator, where="test/vela")
        return
    check_npu_constraints(tosa, accelerator, where="test/vela")
    run_vela(tosa, tmp_path, vela_args(accelerator), where="test/vela")
    figures = (tmp_path / "figures.json").read_text()
    assert '"npu_op_share": 1.0' in figures
