import pytest
import torch
from torch import nn

from pipeline.errors import UserError

pytestmark = pytest.mark.needs_torch


def program_and_samples():
    module = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval()
    samples = [(torch.rand(1, 3, 6, 6) * 2 - 1,) for _ in range(3)]
    return torch.export.export(module, samples[0]), samples


def constants(program):
    return {**program.state_dict, **program.constants}


@pytest.mark.parametrize("scheme, act_dtype", [("int8", torch.int8), ("a16w8", torch.int16)])
def test_quantized_program_holds_qdq_and_int_weights(scheme, act_dtype):
    from pipeline.chain.quantize import quantize_program

    program, samples = program_and_samples()
    quantized = quantize_program(program, samples, scheme)
    targets = [str(n.target) for n in quantized.graph.nodes if n.op == "call_function"]
    assert "quantized_decomposed.dequantize_per_channel.default" in targets
    q = next(
        n
        for n in quantized.graph.nodes
        if str(n.target) == "quantized_decomposed.quantize_per_tensor.default"
    )
    assert q.args[-1] == act_dtype
    if scheme == "a16w8":
        assert q.args[2] == 0  # symmetric
    ints = [v for v in constants(quantized).values() if v.dtype == torch.int8]
    assert ints and all(int(v.min()) >= -127 for v in ints)
    assert any(v.dtype == torch.int32 for v in constants(quantized).values())  # bias


def test_sample_arity_is_checked():
    from pipeline.chain.quantize import quantize_program

    program, samples = program_and_samples()
    with pytest.raises(
        UserError,
        match=r"t/quantize: calibration sample 0 must be a tuple of 1 "
        r"tensors \(one per model input\); got 2",
    ):
        quantize_program(program, [(samples[0][0], samples[0][0])], where="t/quantize")
    with pytest.raises(UserError, match=r"calibration samples must be at least 1; got 0"):
        quantize_program(program, [], where="t/quantize")
