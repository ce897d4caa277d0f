"""Real model families (models/zoo: torchvision/timm-style classifiers, keyword spotters,
Hugging Face encoders) built end to end for Ethos-U55-128 and Ethos-U85-256 through the
build's own stage invocations: export (normalised), int8 quantize, lower, verify in the TOSA
reference model, Vela with every operator on the NPU, package.

benchmarks/bench_real_models.py builds the same list and prints the figures, with each model's
own calibration (16 samples); the test calibrates on 4, as what it checks - every stage builds,
the integers match the reference model, every operator on the NPU - does not depend on how
good the ranges are, and a quarter of the samples takes a quarter off the build (gru_kws:
47.9 -> 34.9 s of CPU)."""

import pytest

from models.zoo.runner import ZOO, build_model, model_names

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref, pytest.mark.needs_vela]


@pytest.mark.slow
@pytest.mark.parametrize("name", model_names(ZOO))
def test_real_model_builds_for_both_npus(name, tmp_path):
    result = build_model(name, tmp_path, samples=4)
    assert result["blocker"] is None, result["blocker"]
    assert result["verify"]["passed"]
    assert sorted(result["vela"]) == ["ethos-u55-128", "ethos-u85-256"]
    for config, figures in result["vela"].items():
        assert figures["npu_op_share"] == 1.0, (config, figures)
        assert figures["cycles_npu"] > 0


def test_stft_front_end_gets_a_clear_error(tmp_path):
    """A log-mel front end computed with torch.stft (complex tensors) is out of scope: the
    build names the operator, the model line and what to do - no traceback."""
    from pipeline.errors import UnsupportedOperatorError
    from pipeline.export.program import load_attr
    from tests.tosa.lowering_cases import lower_case

    model = load_attr(ZOO.parent / "audio.py", "logmel_kws", "test")()
    with pytest.raises(UnsupportedOperatorError) as info:
        lower_case(model, [(1, 4000)], tmp_path, where="zoo/lower")
    message = str(info.value)
    assert "aten.stft" in message or "complex" in message, message
    assert "audio.py:" in message and "torch.stft(wave" in message
    assert "Complex tensors (stft, fft) have no TOSA form" in message
