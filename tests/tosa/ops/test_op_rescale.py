"""tosa.rescale: a dequantize -> quantize requantization becomes one RESCALE."""

import pytest
import torch
from torch import nn

from tests.tosa.lowering_cases import Case, random_inputs, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

qd = torch.ops.quantized_decomposed


class Requantize(nn.Module):
    """A hand-written q/dq graph: int8 (s1, z1) -> int8 or int16 (s2, z2)."""

    def __init__(self, s1, z1, s2, z2, dtype):
        super().__init__()
        self.args = (s1, z1, s2, z2, dtype)

    def forward(self, x):
        s1, z1, s2, z2, dtype = self.args
        info = torch.iinfo(dtype)
        q = qd.quantize_per_tensor(x, s1, z1, -128, 127, torch.int8)
        x = qd.dequantize_per_tensor(q, s1, z1, -128, 127, torch.int8)
        q = qd.quantize_per_tensor(x, s2, z2, info.min, info.max, dtype)
        return qd.dequantize_per_tensor(q, s2, z2, info.min, info.max, dtype)


@pytest.mark.parametrize(
    "s1, z1, s2, z2, dtype, spec",
    [
        pytest.param(0.02, 3, 0.013, -7, torch.int8, "TOSA-1.0+INT", id="int8_to_int8"),
        pytest.param(0.01, 0, 0.05, 10, torch.int8, "TOSA-1.0+INT", id="int8_coarser_saturates"),
        pytest.param(0.02, -5, 0.0001, 0, torch.int16, "TOSA-1.0+INT+int16", id="int8_to_int16"),
    ],
)
def test_requantize_is_one_rescale(s1, z1, s2, z2, dtype, spec, tmp_path):
    import pipeline.programs  # noqa: F401  (registers the q/dq operators)
    from pipeline.stages.lower import lower
    from pipeline.tosa.flatbuffer import operator_names

    module, shapes = Requantize(s1, z1, s2, z2, dtype), [((1, 3, 4, 5), 2.0)]
    program = torch.export.export(module, random_inputs(shapes, 0))
    torch.export.save(program, tmp_path / "model.pt2")
    torch.save([random_inputs(shapes, i) for i in range(2)], tmp_path / "test_inputs.pt")
    (tmp_path / "program").write_text("model.pt2")
    lower(tmp_path / "model.pt2", tmp_path / "model.tosa", tmp_path / "io.json", spec=spec)
    assert [op for op in operator_names(tmp_path / "model.tosa") if op == "RESCALE"] == ["RESCALE"]
    report = verify_case(Case(tmp_path))
    assert report["passed"]
