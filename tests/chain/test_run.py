"""The compile chain in memory (``pipeline.chain.run``) lowers what a build lowers: the copy
the lowering gets (``copied``) gives the graph, the IO description and the NPU variants that
the program saved by the quantize stage and loaded by the lower stage gives, byte for byte."""

from __future__ import annotations


import pytest
import torch
from torch import nn

from models.cases import case_inputs
from pipeline.chain.export import export
from pipeline.chain.lower import lower
from pipeline.chain.quantize import quantize
from pipeline.chain.run import copied
from pipeline.config.npu import NPU_VARIANTS
from pipeline.programs import load_program, save_program

pytestmark = [pytest.mark.needs_torch]


class Named(nn.Module):
    """A forward argument named after a builtin (``input``: FX renames such a placeholder
    when it copies a graph), in-place ops, dropout and a mask, as users write them."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.drop = nn.Dropout(0.1)

    def forward(self, input, mask):
        x = self.conv(input)
        x += 1.0
        x = self.drop(x.relu_())
        return x * mask[:, None, None, :].float()


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(10, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


CASES = {
    "named_int8": (Named, [(1, 4, 8, 8), lambda g: torch.rand(1, 8, generator=g) < 0.7], "int8"),
    "recurrent_a16w8": (Recurrent, [(1, 6, 10)], "a16w8"),
    "named_fp": (Named, [(1, 4, 8, 8), lambda g: torch.rand(1, 8, generator=g) < 0.7], None),
}


def _outputs(lowering, folder) -> dict[str, bytes]:
    folder.mkdir()
    variants = {v: folder / f"model.{v}.tosa" for v in lowering.variants}
    lowering.write(folder / "model.tosa", folder / "io.json", variants)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("name", list(CASES))
def test_a_copy_lowers_as_the_saved_program_does(name, tmp_path):
    make, shapes, scheme = CASES[name]
    torch.manual_seed(0)
    example, calibration, _ = case_inputs(shapes, 2, 1)
    program = export(make().eval(), example, "t/export")
    spec, variants = "TOSA-1.0+FP", ()
    if scheme is not None:
        program, _ = quantize(program, calibration, scheme, where="t/quantize")
        spec, variants = "TOSA-1.0+INT+int16", NPU_VARIANTS
    save_program(program, tmp_path / "quantized.pt2")
    from_file = lower(load_program(tmp_path / "quantized.pt2"), spec, variants=variants)
    from_copy = lower(copied(program), spec, variants=variants)
    assert _outputs(from_copy, tmp_path / "copy") == _outputs(from_file, tmp_path / "file")
    # the copy left the program alone: lowering it again gives the same graph
    again = lower(copied(program), spec, variants=variants)
    assert _outputs(again, tmp_path / "again") == _outputs(from_copy, tmp_path / "copy2")
