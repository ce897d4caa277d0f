"""The example networks (models/*.py) end to end: int8 quantize -> lower -> verify in the TOSA
reference model -> Vela for Ethos-U55-128 and Ethos-U85-256, every operator on the NPU.

Few calibration/test samples keep each network to seconds; benchmarks/example_networks.py
compiles the same networks with more samples and prints the figures.
"""

import pytest

from models.cases.networks import ACCELERATORS, NETWORKS, compile_network

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]

# The TOSA operators the networks lower to, all integer operators Ethos-U runs. The CNNs
# need no layout TRANSPOSE and no PAD (folded into their convolutions).
ALLOWED_OPS = {
    "CONV2D", "DEPTHWISE_CONV2D", "RESCALE", "ADD", "SUB", "MUL", "AVG_POOL2D", "RESHAPE",
    "SLICE", "TABLE", "MATMUL", "TRANSPOSE", "REDUCE_MAX", "REDUCE_SUM",
}  # fmt: skip
TOKEN_MODELS = ("transformer_block",)


@pytest.fixture(scope="module", params=list(NETWORKS))
def compiled(request, tmp_path_factory):
    name = request.param
    return name, compile_network(name, tmp_path_factory.mktemp(name))


def test_verify_passes_against_torch(compiled):
    _, result = compiled
    report = result["verify"]
    assert report["passed"], report
    # Layer by layer: every quantized layer within its bound (exact where nothing rounds).
    assert len(report["layers"]) > 3
    assert all(layer["beyond_bound"] == 0 for layer in report["layers"])
    assert all(layer["max_abs_diff_int"] == 0 for layer in report["layers"]
               if layer["check"] == "exact")
    output = report["outputs"][0]  # end to end: figures, SQNR gated against torch's
    assert output["sqnr_db_vs_float"] is None or output["sqnr_db_vs_float"] > 20


def test_lowers_to_npu_operators_only(compiled):
    name, result = compiled
    assert set(result["tosa_ops"]) <= ALLOWED_OPS
    if name not in TOKEN_MODELS:
        assert "TRANSPOSE" not in result["tosa_ops"]


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_vela_runs_every_operator_on_the_npu(compiled, accelerator):
    _, result = compiled
    figures = result["vela"][accelerator]
    assert figures["cpu_operators"] == 0
    assert figures["npu_op_share"] == 1.0
    assert 0 < figures["cycles_npu"] <= figures["cycles_total"]
