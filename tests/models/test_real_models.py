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


def test_stft_front_end_builds_for_both_npus(tmp_path):
    """A log-mel KWS net with its torch.stft front end inside (complex tensors, reflect
    padding, a mel matmul, a log): normalised into real operators, the front end in int16
    (two scales, pipeline/quant/front_end.py) and the classifier in int8, verified per layer
    in the reference model, every operator on the NPU of Ethos-U55 and -U85."""
    from pipeline.export.program import load_attr
    from pipeline.graph.report import front_end_summary
    from pipeline.quant.front_end import front_end_names
    from tests.tosa.lowering_cases import lower_case, run_vela, verify_case

    model = load_attr(ZOO.parent / "audio.py", "logmel_kws", "test")()
    case = lower_case(model, [(1, 4000)], tmp_path, spec="TOSA-1.0+INT+int16")
    report = verify_case(case)
    assert report["passed"]
    assert report["outputs"][0]["sqnr_db_vs_float"] > 30, report["outputs"]
    ops = case.ops()
    assert "CONV2D" in ops and "TABLE" in ops, ops
    names = front_end_names(case.held("quantized.pt2").graph_module)
    assert any(n.startswith("log") for n in names) and "linear_4" not in names, names
    for variant, accelerator in (("u55", "ethos-u55-128"), ("u85", "ethos-u85-256")):
        figures = run_vela(case.variant(variant), accelerator, tmp_path / accelerator)
        assert figures["npu_op_share"] == 1.0, (accelerator, figures)
        assert figures["cycles_npu"] > 0
        # report.json's front_end: its share of the per-layer cycles (the classifier's not)
        front = front_end_summary({"nodes": names, "logs": []},
                                  tmp_path / accelerator / "per_layer.csv")
        assert 0.5 < front["share_of_cycles"] < 1, (accelerator, front)


@pytest.mark.needs_vulkan
def test_stft_front_end_runs_as_vgf(tmp_path):
    """The same net as a float TOSA graph (the +FP profile VGF and host targets take),
    converted by the ML SDK model converter and run by the scenario runner against the
    reference model."""
    from models.cases import FP
    from pipeline.export.program import load_attr
    from pipeline.vgf.check import run_check
    from pipeline.vgf.convert import convert
    from tests.tosa.lowering_cases import run_case

    model = load_attr(ZOO.parent / "audio.py", "logmel_kws", "test")()
    case, report = run_case(model, [(1, 4000)], tmp_path, FP)
    assert report["passed"] and report["outputs"][0]["sqnr_db_vs_float"] > 100, report["outputs"]
    out = convert(case.tosa, case.path("io.json"), tmp_path / "vgf", where="test/vgf")
    check = run_check(out["vgf"], out["scenario"], out["vgf_io"], case.tosa,
                      case.path("test_inputs.pt"), tmp_path / "vgf" / "check.json",
                      where="test/vgf_check")
    assert check["passed"]


@pytest.mark.needs_cmake
def test_stft_front_end_runs_on_the_cpu_kernels(tmp_path, request):
    """The same int8 net with its int16 front end as a CPU graph (a CPU-only target's
    artifact) run by the kernel library on the host, bit-exact with the reference model."""
    import numpy as np

    from models.zoo.front_ends import speech_like
    from pipeline.cpu.graph_format import write_cpu_graph
    from pipeline.export.program import load_attr
    from tests.cpu.cpu_helpers import assert_bit_exact, build_tool, compare
    from tests.tosa.lowering_cases import lower_case

    model = load_attr(ZOO.parent / "audio.py", "logmel_kws", "test")()
    case = lower_case(model, [(1, 4000)], tmp_path, spec="TOSA-1.0+INT+int16")
    info = write_cpu_graph(case.tosa, tmp_path / "model.tcg")
    (wave,) = info.inputs
    scale = case.io()["inputs"][0]["scale"]
    codes = np.clip(np.round(speech_like(4000).numpy() / scale), -32767, 32767)
    assert_bit_exact(compare(build_tool(request), case.tosa,
                             {wave.name: codes.astype(np.int16).reshape(wave.shape)}))
