"""The quantization of a signal front end (pipeline/quant/front_end.py): the two-scale form is
the float function, the front end is int16 inside an int8 network, and its log keeps >= 40 dB
against float on speech-like audio (torch's q/dq graph; the TOSA graph of the same front end
is verified in tests/models/test_real_models.py)."""

import pytest
import torch

from models.zoo import front_ends
from pipeline.chain.export import export
from pipeline.chain.quantize import quantize
from pipeline.quant.front_end import front_end_nodes, split_front_ends

pytestmark = pytest.mark.needs_torch

CALIBRATION = [(front_ends.speech_like(4000, 1, seed),) for seed in range(4)]
HELD_OUT = (front_ends.speech_like(4000, 1, 10),)

FRONT_ENDS = {
    "log_mel": lambda: front_ends.LogMel(n_fft=256, hop_length=128, n_mels=32),
    "whisper": lambda: front_ends.WhisperLogMel(n_mels=40),
    "mfcc": lambda: front_ends.MFCC(n_fft=256, hop_length=128),
    "hand_stft": lambda: front_ends.HandStft(),
}


@pytest.fixture(scope="module", params=sorted(FRONT_ENDS))
def quantized(request):
    """(name, float module, normalised program, q/dq program, quantize record) of an int8
    network's front end."""
    module = FRONT_ENDS[request.param]().eval()
    program = export(module, CALIBRATION[0], "test/export")
    q, record = quantize(program, CALIBRATION, "int8", where="test/quantize")
    return request.param, module, program, q, record


def test_two_scales_are_the_float_function(quantized):
    """Exact but where a mel power is below the fine scale's floor (Tm / 32767, above the
    model's eps): there the log takes the floor, less than a few thousandths off."""
    _, module, program, _, _ = quantized
    gm = program.module(check_guards=False)
    assert split_front_ends(gm, CALIBRATION)
    want = module(*HELD_OUT)
    diff = (gm(*HELD_OUT) - want).abs()
    close = diff <= 1e-4 * want.abs() + 1e-4 * float(want.abs().max())
    assert float(close.float().mean()) > 0.99 and float(diff.max()) < 0.05


def test_front_end_log_keeps_40_db(quantized):
    name, _, _, _, record = quantized
    logs = record["front_end"]["logs"]
    assert len(logs) == 1 and logs[0]["split_weights"] >= 1
    assert logs[0]["sqnr_db"] >= 40, (name, logs)


def test_front_end_is_int16_in_an_int8_network(quantized):
    """Every quantize node of a front-end value is int16; the rest of the graph int8."""
    _, _, _, q, _ = quantized
    dtypes = {}
    for node in q.graph.nodes:
        if node.target == torch.ops.quantized_decomposed.quantize_per_tensor.default:
            dtypes[node.args[0].name] = node.args[-1]
    assert torch.int16 in dtypes.values(), dtypes
    log_outputs = [n for n, d in dtypes.items() if n.startswith("log")]
    assert log_outputs and all(dtypes[n] == torch.int16 for n in log_outputs), dtypes


def test_region_without_a_log_reaches_the_mel_product():
    program = export(front_ends.MelSpectrogram(n_fft=256, hop_length=128, n_mels=32).eval(),
                     CALIBRATION[0], "test/export")
    gm = program.module(check_guards=False)
    region = front_end_nodes(gm)
    assert any(n.target == torch.ops.aten.matmul.default for n in region)
    assert split_front_ends(gm, CALIBRATION) == []  # no log: nothing to split
