"""Ethos-U constraints before Vela: each rule against a real Vela failure or success."""

import pytest
from torch import nn

from pipeline.errors import UserError
from pipeline.ethosu.placement import check_npu_constraints, family, read_operators
from pipeline.chain.vela import vela_args
from tests.tosa.lowering_cases import FP, lower_case

pytestmark = [pytest.mark.needs_torch]


def test_operators_carry_the_fx_node_and_source_line(tmp_path):
    case = lower_case(nn.Sequential(nn.Conv2d(3, 4, 3)), [(1, 3, 6, 6)], tmp_path)
    operators = read_operators(case.tosa)
    assert [op.op for op in operators] == ["CONV2D", "RESCALE"]
    assert operators[0].location.startswith("conv2d")
    assert operators[0].inputs[0].dtype == "int8"


@pytest.mark.needs_vela
def test_padded_avg_pool_above_8x8_fails_on_u55_only(tmp_path):
    """Vela's own error here is 'Non-passthrough operation (AvgPool) could not run on NPU'."""
    from pipeline.ethosu.vela import run_vela

    pool = nn.AvgPool2d(9, 1, 4, count_include_pad=False)
    case = lower_case(pool, [(1, 4, 12, 12)], tmp_path / "case")
    with pytest.raises(
        UserError, match=r"AVG_POOL2D on ethos-u55-128 must have a kernel of at most 8x8"
    ):
        check_npu_constraints(case.tosa, "ethos-u55-128", where="test/vela")
    # The Vela stage runs the check first, so the build fails with the rule, not Vela's text.
    with pytest.raises(UserError, match=r"u55/vela: 1 operator\(s\) outside the ethos-u55-128"):
        run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"), where="u55/vela")
    check_npu_constraints(case.tosa, "ethos-u85-256")
    run_vela(case.tosa, tmp_path / "u85", vela_args("ethos-u85-256"))


@pytest.mark.needs_vela
def test_batched_avg_pool_passes_where_vela_splits_the_batch(tmp_path):
    """Vela's table says N=1 for AVG_POOL2D on U55, but it splits the batch itself: no error."""
    from pipeline.ethosu.vela import run_vela

    case = lower_case(nn.AvgPool2d(2), [(2, 4, 8, 8)], tmp_path / "case")
    check_npu_constraints(case.tosa, "ethos-u55-128")
    run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"))


def test_padded_avg_pool_up_to_8x8_passes(tmp_path):
    pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
    case = lower_case(pool, [(1, 4, 12, 12)], tmp_path)
    check_npu_constraints(case.tosa, "ethos-u55-128")


def test_float_graph_is_rejected_on_every_npu(tmp_path):
    case = lower_case(nn.Conv2d(3, 4, 3), [(1, 3, 6, 6)], tmp_path, FP)
    for accelerator in ("ethos-u55-128", "ethos-u85-256"):
        with pytest.raises(UserError, match=r"conv2d.*CONV2D on .* must use integer tensors only"):
            check_npu_constraints(case.tosa, accelerator)


def test_unknown_accelerator_is_a_user_error():
    assert family("ethos-u65-512") == "u65"
    with pytest.raises(UserError, match="accelerator must be ethos-<u55|u65|u85>-<macs>"):
        family("ethos-u99-1")


@pytest.mark.needs_vela
def test_int16_matmul_fails_on_u55_only(tmp_path):
    from pipeline.ethosu.vela import run_vela
    from tests.tosa.lowering_cases import A16W8

    class Matmul(nn.Module):
        def forward(self, a, b):
            return a @ b

    case = lower_case(Matmul(), [(1, 4, 8), (1, 8, 4)], tmp_path / "case", A16W8)
    with pytest.raises(UserError, match=r"matmul.*MATMUL on ethos-u55-128 must take int8 inputs"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
    # The Vela stage runs the check first, so the build fails with the rule, not Vela's text.
    with pytest.raises(UserError, match=r"u55/vela: 1 operator\(s\) outside the ethos-u55-128"):
        run_vela(case.tosa, tmp_path / "u55", vela_args("ethos-u55-128"), where="u55/vela")
    check_npu_constraints(case.tosa, "ethos-u85-256")


def u55_variant(module, shape, folder):
    """The common graph of ``module`` and its Ethos-U55/U65 variant (``model.u55.tosa``)."""
    from pipeline.stages.lower import lower

    case = lower_case(module, [shape], folder)
    variant = case.path("model.u55.tosa")
    program = case.path(case.path("program").read_text())
    lower(program, case.tosa, case.path("io.json"), variants={"u55": variant})
    return case.tosa, variant


@pytest.mark.parametrize(
    "module, error",
    [
        pytest.param(nn.Upsample(scale_factor=2, mode="bilinear"), None, id="bilinear_x2"),
        pytest.param(nn.Upsample(scale_factor=(4, 8), mode="bilinear"), None, id="bilinear_x4_x8"),
        pytest.param(nn.Upsample(scale_factor=8), None, id="nearest_x8"),
        pytest.param(nn.Upsample(scale_factor=3), "3 to 9 and 4 to 12", id="nearest_x3"),
        pytest.param(
            nn.Upsample(scale_factor=(2, 3), mode="bilinear"),
            "3 to 6 and 4 to 12",
            id="bilinear_x2_x3",
        ),
    ],
)
def test_u55_resize_upscales_by_2_4_8_in_nearest_mode(module, error, tmp_path):
    """Vela runs RESIZE on U55/U65 only by 2/4/8 and only NEAREST; the U55 variant has
    bilinear by those factors as NEAREST + depthwise filter (split_bilinear_resize), so
    what remains for the rule is other factors, in either mode."""
    common, u55 = u55_variant(module, (1, 2, 3, 4), tmp_path)
    check_npu_constraints(common, "ethos-u85-256")
    if error is None:
        check_npu_constraints(u55, "ethos-u55-128")
        return
    factor_rule = (
        rf"RESIZE on ethos-u55-128 must upscale both axes by a power of two 2..8; got {error}"
    )
    with pytest.raises(UserError, match=factor_rule):
        check_npu_constraints(u55, "ethos-u55-128")


def test_u55_names_a_bilinear_resize(tmp_path):
    """The common graph keeps RESIZE BILINEAR (one NPU operation on U85); given to a U55
    check, it is named before Vela's 'Non-passthrough operation (Resize)'."""
    common, _ = u55_variant(nn.Upsample(scale_factor=2, mode="bilinear"), (1, 2, 4, 4), tmp_path)
    with pytest.raises(UserError, match="RESIZE on ethos-u55-128 must use NEAREST mode"):
        check_npu_constraints(common, "ethos-u55-128")


@pytest.mark.needs_vela
def test_int16_transpose_conv_fails_on_u55_unless_split(tmp_path):
    """The common graph's int16 TRANSPOSE_CONV2D: Vela 5.2 cannot rescale its int48
    accumulator for U55 ('Non-passthrough operation (Conv2D) could not run on NPU'); the U55
    variant's phase CONV2Ds (split_transpose_conv_pass) compile."""
    from pipeline.ethosu.vela import run_vela
    from tests.tosa.lowering_cases import A16W8

    deconv = nn.ConvTranspose2d(8, 4, 4, 2, 1)
    case = lower_case(deconv, [(1, 8, 6, 6)], tmp_path / "case", A16W8)
    with pytest.raises(UserError, match=r"TRANSPOSE_CONV2D on ethos-u55-128 must take int8 input"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
    check_npu_constraints(case.variant("u55"), "ethos-u55-128")
    run_vela(case.variant("u55"), tmp_path / "u55", vela_args("ethos-u55-128"))
    check_npu_constraints(case.tosa, "ethos-u85-256")


@pytest.mark.needs_vela
def test_int8_left_shift_is_named_on_u55_and_the_variant_compiles(tmp_path):
    """Vela 5.2 shifts int32 only on U55: an int8 LOGICAL_LEFT_SHIFT fails there
    ('Non-passthrough operation (SHL)'); the check names it first, and the U55 variant (a
    wrapped int32 shift) compiles."""
    import torch

    from pipeline.errors import StageError
    from pipeline.ethosu.vela import run_vela
    from models.cases import Lambda
    from tests.tosa.lowering_cases import integers

    case = lower_case(Lambda(lambda a: a.to(torch.int8) << 2), [integers((2, 16), 100)], tmp_path)
    with pytest.raises(UserError, match="LOGICAL_LEFT_SHIFT on ethos-u55-128 must shift int32"):
        check_npu_constraints(case.tosa, "ethos-u55-128")
    raw = ["--accelerator-config=ethos-u55-128", *vela_args("ethos-u55-128")[2:]]  # unchecked
    with pytest.raises(StageError, match=r"Non-passthrough operation \(SHL\)"):
        run_vela(case.tosa, tmp_path / "common", raw)
    check_npu_constraints(case.variant("u55"), "ethos-u55-128")
    run_vela(case.variant("u55"), tmp_path / "u55", vela_args("ethos-u55-128"))
    check_npu_constraints(case.tosa, "ethos-u85-256")


SEGMENTATION_LIBRARY = '''\
import torch.nn.functional as F
from torch import nn


def _resize(features, size):
    return F.interpolate(features, size=size, mode="bilinear", align_corners=False)


class Segmenter(nn.Module):
    """A segmentation head as a model library writes it: 16x16 features resized to 256x256."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Conv2d(3, 8, 3, stride=16, padding=1)
        self.classifier = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        out = self.classifier(F.relu(self.backbone(x)))
        return _resize(out, x.shape[-2:])
'''


def _library_segmenter(folder):
    """A ``Segmenter`` imported from a site-packages folder: a model library's code, as
    torchvision's DeepLabV3 is (torchvision itself is not installed here)."""
    import importlib.util

    library = folder / "site-packages" / "seglib.py"
    library.parent.mkdir(parents=True)
    library.write_text(SEGMENTATION_LIBRARY)
    spec = importlib.util.spec_from_file_location("seglib", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Segmenter


@pytest.mark.usefixtures("canary")  # nothing outside the build is touched (issue 28)
def test_u55_resize_by_16_names_the_users_line_and_cpu_fallback(tmp_path):
    """DeepLabV3-MobileNetV3 on U55 (issue 28 #13): its 16x resize breaks the rule; the error
    names the user's wrapper line (not the library's resize, nor torch's), and says that
    `npu: {fallback: cpu}` runs it (the CPU kernels run RESIZE)."""
    segmenter = _library_segmenter(tmp_path)

    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = segmenter()

        def forward(self, image):
            logits = self.model(image)  # the user's line
            return logits

    torch_manual_seed()
    _, u55 = u55_variant(Wrapper(), (1, 3, 256, 256), tmp_path / "case")
    with pytest.raises(UserError) as caught:
        check_npu_constraints(u55, "ethos-u55-128", where="seg-u55/vela")
    lines = str(caught.value).splitlines()
    assert lines[0] == ("seg-u55/vela: 1 operator(s) outside the ethos-u55-128 constraints of "
                        "Vela (this target has no CPU fallback):")
    assert lines[1].endswith("test_placement.py:"
                             f"{_line_of('logits = self.model(image)  # the user')} (logits = "
                             "self.model(image)  # the user's line): TOSA RESIZE on "
                             "ethos-u55-128 must upscale both axes by a power of two 2..8; got "
                             "16 to 256 and 16 to 256")
    assert lines[2] == ("  Set `npu: {fallback: cpu}` on the target to run RESIZE on its CPU, "
                        "or rewrite those lines with what the NPU takes (docs/operators.md) or "
                        "pick an NPU that takes them")
    assert len(lines) == 4 and lines[3].strip() == "(see docs/errors.md#npu-placement)"


def test_cpu_fallback_is_not_suggested_where_the_cpu_kernels_cannot_run_it(tmp_path):
    case = lower_case(nn.Conv2d(3, 4, 3), [(1, 3, 6, 6)], tmp_path, FP)
    with pytest.raises(UserError, match=r"Rewrite those lines .* \(`npu: \{fallback: cpu\}` "
                                        r"would not help: the CPU kernels do not run CONV2D "
                                        r"of fp32"):
        check_npu_constraints(case.tosa, "ethos-u55-128")


def torch_manual_seed():
    import torch

    torch.manual_seed(0)


def _line_of(text: str) -> int:
    from pathlib import Path

    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)
