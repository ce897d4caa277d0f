"""Target-level fields, derived defaults and cross-field rules (pipeline/config/schema.py).

Target bodies are written at line 9 of the file (see conftest.HEADER).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import TargetConfig

M_PAIR = "Cortex-M goes with platform baremetal and toolchain arm-none-eabi-gcc"
A_PAIR = ("Cortex-A goes with platform linux and toolchain aarch64-linux-gnu-gcc or "
          "aarch64-linux-musl-zig")
HOST_PAIR = "cpu host goes with platform host and toolchain host"

VALID = [
    pytest.param("cpu: cortex-m55", {
        "isa": "mve", "platform": "baremetal", "toolchain": "arm-none-eabi-gcc",
        "quantization": "int8", "build_type": "Release", "npu": None, "description": ""},
        id="cortex-m55-defaults"),
    pytest.param("cpu: cortex-m33", {"isa": "dsp"}, id="cortex-m33-default-dsp"),
    pytest.param("cpu: cortex-m33\nisa: scalar", {"isa": "scalar"}, id="cortex-m33-scalar"),
    pytest.param("cpu: cortex-m0plus", {"isa": "scalar"}, id="cortex-m0plus-scalar"),
    pytest.param("cpu: cortex-m7", {"isa": "dsp"}, id="cortex-m7-dsp"),
    pytest.param("cpu: cortex-m85\nisa: null", {"isa": "mve"}, id="null-isa-means-default"),
    pytest.param("cpu: cortex-a55", {
        "isa": None, "platform": "linux", "toolchain": "aarch64-linux-gnu-gcc"},
        id="cortex-a55-defaults"),
    pytest.param("cpu: cortex-a320\ntoolchain: aarch64-linux-musl-zig",
                 {"toolchain": "aarch64-linux-musl-zig"}, id="cortex-a320-zig"),
    pytest.param("cpu: host", {"isa": None, "platform": "host", "toolchain": "host"}, id="host"),
    pytest.param("cpu: host\ntosa: TOSA-1.0+FP", {"quantization": "none"}, id="fp-means-none"),
    pytest.param("cpu: host\ntosa: TOSA-1.0+INT+int16\nquantization: a16w8",
                 {"quantization": "a16w8"}, id="a16w8-with-int16"),
    pytest.param("cpu: cortex-m55\nbuild_type: MinSizeRel", {"build_type": "MinSizeRel"},
                 id="build-type"),
    pytest.param("cpu: cortex-m4\nnpu: {config: ethos-u55-64}", {"isa": "dsp"}, id="m4-u55"),
]


@pytest.mark.parametrize(("body", "expected"), VALID)
def test_valid_target_resolves(load, target_yaml, body, expected):
    target = load(target_yaml(body)).targets["t"]
    assert {k: getattr(target, k) for k in expected} == expected
    assert target.models == ("add",)


def test_tosa_is_parsed_and_defaulted(load, target_yaml):
    target = load(target_yaml("cpu: host")).targets["t"]
    assert str(target.tosa) == "TOSA-1.0+INT+int16"
    assert (target.tosa.version, target.tosa.profile, target.tosa.extensions) == (
        "1.0", "INT", ("int16",))


@pytest.mark.parametrize(("cpu", "npu", "cop", "separate"), [
    ("cortex-m55", "ethos-u55-128", "COP1", False),
    ("cortex-m85", "ethos-u85-256", "COP1", False),
    ("cortex-m33", "ethos-u65-256", "COP1", False),
    ("cortex-a55", "ethos-u65-512", "COP2", True),
    ("cortex-a320", "ethos-u85-256", "COP2", True),
], ids=lambda v: str(v))
def test_driver_payload_follows_the_cpu(load, target_yaml, cpu, npu, cop, separate):
    target = load(target_yaml(f"cpu: {cpu}\nnpu: {{config: {npu}}}")).targets["t"]
    assert (target.npu.cop_format, target.npu.separate_io_regions) == (cop, separate)


def _core_driver(folder: Path) -> None:
    (folder / "include").mkdir(parents=True)
    (folder / "include" / "ethosu_driver.h").write_text("")
    (folder / "CMakeLists.txt").write_text("")


def test_ethosu_sdk_is_resolved_against_the_yaml_folder(load, target_yaml, project):
    _core_driver(project / "sdk")
    target = load(target_yaml("cpu: cortex-m55\nethosu_sdk: sdk")).targets["t"]
    assert target.ethosu_sdk == project / "sdk"


@pytest.mark.parametrize("layout", [".", "core_driver", "core_software/core_driver",
                                    "ethos-u-core-driver"])
def test_ethosu_sdk_layouts_the_firmware_build_accepts(load, target_yaml, project, layout):
    _core_driver(project / "sdk" / layout)
    assert load(target_yaml("cpu: cortex-m55\nethosu_sdk: sdk")).targets["t"].ethosu_sdk


def test_the_test_suites_fake_sdk_is_an_sdk(load, target_yaml):
    fake = Path(__file__).parents[1] / "runtime" / "cortex_m" / "fake_sdk"
    target = load(target_yaml(f"cpu: cortex-m55\nethosu_sdk: {fake}")).targets["t"]
    assert target.ethosu_sdk == fake


@pytest.mark.parametrize("sdk", ["sdk", "/usr"])
def test_ethosu_sdk_without_a_core_driver_is_refused(issues, target_yaml, project, sdk):
    (project / "sdk" / "core_driver" / "include").mkdir(parents=True)  # no ethosu_driver.h
    (project / "sdk" / "core_driver" / "CMakeLists.txt").write_text("")
    assert issues(target_yaml(f"cpu: cortex-m55\nethosu_sdk: {sdk}")) == [
        (f"targets.yaml:10: targets.t.ethosu_sdk: must be an Ethos-U SDK or core driver "
         f"checkout, with include/ethosu_driver.h and CMakeLists.txt in it or in one of "
         f"core_driver/, core_software/core_driver/, ethos-u-core-driver/; got '{sdk}' (none of "
         f"them has both)")]


def test_cpu_flags_method(load, target_yaml):
    target = load(target_yaml("cpu: cortex-m33\nisa: scalar")).targets["t"]
    assert target.cpu_flags() == ["-mthumb", "-mcpu=cortex-m33+nodsp", "-mfpu=fpv5-sp-d16",
                                  "-mfloat-abi=hard"]
    assert target.cpu_info.arch == "armv8-m.main"


INVALID = [
    pytest.param("cpu: cortex-a55\nisa: mve", [
        ("targets.yaml:10: targets.t.isa: must be null for cortex-a55 (isa is for Cortex-M only); "
        "got 'mve'")], id="isa-on-cortex-a"),
    pytest.param("cpu: host\nisa: scalar", [
        ("targets.yaml:10: targets.t.isa: must be null for cpu host (isa is for Cortex-M only); "
        "got 'scalar'")], id="isa-on-host"),
    pytest.param("cpu: cortex-m33\nisa: mve", [
        "targets.yaml:10: targets.t.isa: must be scalar or dsp for cortex-m33; got 'mve'"],
        id="m33-has-no-mve"),
    pytest.param("cpu: cortex-m4\nisa: scalar", [
        ("targets.yaml:10: targets.t.isa: must be dsp for cortex-m4 (the DSP extension is always "
        "part of cortex-m4); got 'scalar'")], id="m4-always-dsp"),
    pytest.param("cpu: cortex-m0\nisa: dsp", [
        "targets.yaml:10: targets.t.isa: must be scalar for cortex-m0; got 'dsp'"], id="m0-scalar"),
    pytest.param("cpu: cortex-m55\nisa: helium", [
        "targets.yaml:10: targets.t.isa: must be one of scalar, dsp, mve; got 'helium'"],
        id="isa-literal"),
    pytest.param("cpu: cortex-m99\nisa: mve", [
        ("targets.yaml:9: targets.t.cpu: must be one of cortex-m0, cortex-m0plus, cortex-m3, "
        "cortex-m4, cortex-m7, cortex-m23, cortex-m33, cortex-m35p, cortex-m52, cortex-m55, "
        "cortex-m85, cortex-a53, cortex-a55, cortex-a72, cortex-a76, cortex-a320, host; "
        "got 'cortex-m99'")], id="cpu-literal-skips-cpu-rules"),
    pytest.param("description: no cpu", [
        "targets.yaml:7: targets.t.cpu: must be set; got nothing"], id="cpu-missing"),
    pytest.param("cpu: cortex-m55\nplatform: linux", [
        (f"targets.yaml:10: targets.t.platform: must be baremetal for cortex-m55 ({M_PAIR}); "
        "got 'linux'")], id="platform-for-cortex-m"),
    pytest.param("cpu: cortex-a55\ntoolchain: arm-none-eabi-gcc", [
        ("targets.yaml:10: targets.t.toolchain: must be aarch64-linux-gnu-gcc or "
        f"aarch64-linux-musl-zig for cortex-a55 ({A_PAIR}); got 'arm-none-eabi-gcc'")],
        id="toolchain-for-cortex-a"),
    pytest.param("cpu: host\ntoolchain: aarch64-linux-gnu-gcc", [
        (f"targets.yaml:10: targets.t.toolchain: must be host for cpu host ({HOST_PAIR}); "
        "got 'aarch64-linux-gnu-gcc'")], id="toolchain-for-host"),
    pytest.param("cpu: cortex-a55\nplatform: baremetal\ntoolchain: arm-none-eabi-gcc", [
        (f"targets.yaml:10: targets.t.platform: must be linux for cortex-a55 ({A_PAIR}); "
        "got 'baremetal'"),
        ("targets.yaml:11: targets.t.toolchain: must be aarch64-linux-gnu-gcc or "
        f"aarch64-linux-musl-zig for cortex-a55 ({A_PAIR}); got 'arm-none-eabi-gcc'")],
        id="platform-and-toolchain"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u55-128}", [
        ("targets.yaml:10: targets.t.npu.config: must be an ethos-u65-* or ethos-u85-* for "
        "cortex-a55 (Ethos-U55 is driven from a Cortex-M only); got 'ethos-u55-128'")],
        id="u55-needs-cortex-m"),
    pytest.param("cpu: host\nnpu: {config: ethos-u85-256}", [
        ("targets.yaml:10: targets.t.npu: must be null for cpu host (the host cannot drive an "
        "Ethos-U); got 'ethos-u85-256'")], id="no-npu-on-host"),
    pytest.param("cpu: cortex-m55\nnpu: {config: ethos-u85-256, cop_format: COP2}", [
        ("targets.yaml:10: targets.t.npu.cop_format: must be COP1 for cortex-m55 (the Ethos-U core "
        "driver only accepts COP1); got 'COP2'")], id="cop2-on-cortex-m"),
    pytest.param("cpu: cortex-m55\nnpu:\n  config: ethos-u85-256\n  separate_io_regions: true", [
        ("targets.yaml:12: targets.t.npu.separate_io_regions: must be false for cortex-m55 "
        "(separate IO regions need COP2, which the Ethos-U core driver does not accept); "
        "got true")], id="separate-io-on-cortex-m"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u85-256, cop_format: COP1}", [
        ("targets.yaml:10: targets.t.npu.cop_format: must be COP2 for cortex-a55 (Linux direct "
        "drive only accepts COP2); got 'COP1'")], id="cop1-on-cortex-a"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u85-256, separate_io_regions: false}", [
        ("targets.yaml:10: targets.t.npu.separate_io_regions: must be true for cortex-a55 (Linux "
        "direct drive passes inputs and outputs as buffers of their own); got false")],
        id="shared-io-on-cortex-a"),
    pytest.param("cpu: cortex-m85\nnpu: {config: ethos-u85-256, driver: ethosu-driver-stack}", [
        ("targets.yaml:10: targets.t.npu.driver: must be null for cortex-m85 (a Cortex-M drives "
        "the NPU through the Ethos-U core driver; accel and ethosu-driver-stack are Linux drivers "
        "for a Cortex-A); got 'ethosu-driver-stack'")], id="driver-stack-on-cortex-m"),
    pytest.param("cpu: cortex-m85\nnpu: {config: ethos-u85-256, driver: accel}", [
        ("targets.yaml:10: targets.t.npu.driver: must be null for cortex-m85 (a Cortex-M drives "
        "the NPU through the Ethos-U core driver; accel and ethosu-driver-stack are Linux drivers "
        "for a Cortex-A); got 'accel'")], id="accel-on-cortex-m"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u65-256, driver: ethosu-driver-stack}", [
        ("targets.yaml:10: targets.t.npu.config: must be an ethos-u85-* with driver "
        "ethosu-driver-stack (the driver stack's direct mode drives an Ethos-U85); got "
        "'ethos-u65-256'")], id="driver-stack-needs-u85"),
    pytest.param("cpu: cortex-a320\nnpu:\n  config: ethos-u85-256\n  driver: ethosu-driver-stack\n"
                 "  cop_format: COP1", [
        ("targets.yaml:13: targets.t.npu.cop_format: must be COP2 for cortex-a320 (the driver "
        "stack's kernel driver parses COP2 in direct mode); got 'COP1'")],
        id="driver-stack-needs-cop2"),
    pytest.param("cpu: cortex-a320\nnpu:\n  config: ethos-u85-256\n  driver: ethosu-driver-stack\n"
                 "  separate_io_regions: false", [
        ("targets.yaml:13: targets.t.npu.separate_io_regions: must be true for cortex-a320 (the "
        "driver stack passes inputs and outputs as buffers of their own (regions 3 and 4)); "
        "got false")], id="driver-stack-needs-separate-io"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u85-256, driver: drm}", [
        ("targets.yaml:10: targets.t.npu.driver: must be one of accel, ethosu-driver-stack; "
        "got 'drm'")], id="unknown-driver"),
    pytest.param("cpu: cortex-m55\nnpu: {config: ethos-u85-256}\ntosa: TOSA-1.0+FP", [
        ("targets.yaml:11: targets.t.tosa: must use the INT profile when npu is set (Ethos-U runs "
        "integer graphs only); got 'TOSA-1.0+FP'")], id="fp-with-npu"),
    pytest.param("cpu: host\ntosa: TOSA-1.0+INT\nquantization: a16w8", [
        ("targets.yaml:11: targets.t.quantization: must be int8 unless tosa has the int16 "
        "extension; got 'a16w8' with TOSA-1.0+INT. Use tosa: TOSA-1.0+INT+int16")],
        id="a16w8-needs-int16"),
    pytest.param("cpu: host\ntosa: TOSA-1.0+INT\nquantization: none", [
        ("targets.yaml:11: targets.t.quantization: must be int8 or a16w8 with TOSA-1.0+INT (an INT "
        "graph is quantized); got 'none'. For a float graph use tosa: TOSA-1.0+FP")],
        id="none-needs-fp"),
    pytest.param("cpu: host\ntosa: TOSA-1.0+FP\nquantization: int8", [
        ("targets.yaml:11: targets.t.quantization: must be none with TOSA-1.0+FP (an FP graph is "
        "not quantized); got 'int8'")], id="fp-is-not-quantized"),
    pytest.param("cpu: host\ntosa: TOSA-2.0+INT", [
        "targets.yaml:10: targets.t.tosa: must name TOSA version 1.0; got 'TOSA-2.0+INT'"],
        id="tosa-version"),
    pytest.param("cpu: cortex-m55\nbuild_type: Relase", [
        ("targets.yaml:10: targets.t.build_type: must be one of Release, Debug, RelWithDebInfo, "
        "MinSizeRel; got 'Relase'")], id="build-type"),
    pytest.param("cpu: host\nplatfrom: host", [
        "targets.yaml:10: targets.t.platfrom: unknown field; did you mean 'platform'?"],
        id="did-you-mean"),
    pytest.param("cpu: host\nfoo: 1", [
        ("targets.yaml:10: targets.t.foo: unknown field; must be one of build_type, cpu, "
        "description, ethosu_sdk, extends, isa, models, npu, platform, quantization, toolchain, "
        "tosa, vgf")], id="unknown-field-lists-fields"),
    pytest.param("cpu: cortex-m55\ndescription: 5", [
        "targets.yaml:10: targets.t.description: must be a string; got 5"], id="strict-string"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u55-128, optimise: Speed}", [
        ("targets.yaml:10: targets.t.npu.config: must be an ethos-u65-* or ethos-u85-* for "
        "cortex-a55 (Ethos-U55 is driven from a Cortex-M only); got 'ethos-u55-128'"),
        "targets.yaml:10: targets.t.npu.optimise: must be one of Performance, Size; got 'Speed'"],
        id="target-rules-still-run-when-npu-fails"),
    pytest.param("cpu: cortex-a55\nisa: mve\nbuild_type: Fast\nnpu: 3", [
        ("targets.yaml:10: targets.t.isa: must be null for cortex-a55 (isa is for Cortex-M only); "
        "got 'mve'"),
        ("targets.yaml:11: targets.t.build_type: must be one of Release, Debug, RelWithDebInfo, "
        "MinSizeRel; got 'Fast'"),
        "targets.yaml:12: targets.t.npu: must be a mapping; got 3"], id="all-at-once"),
]


@pytest.mark.parametrize(("body", "expected"), INVALID)
def test_invalid_target_reports_exact_lines(issues, target_yaml, body, expected):
    assert issues(target_yaml(body)) == expected


@pytest.mark.parametrize(("cpu", "driver"), [
    ("cortex-a320", "accel"), ("cortex-a55", "accel"), ("cortex-m85", None)])
def test_linux_driver_defaults_to_accel_on_cortex_a(load, target_yaml, cpu, driver):
    target = load(target_yaml(f"cpu: {cpu}\nnpu: {{config: ethos-u85-256}}")).targets["t"]
    assert (target.npu.driver, target.npu.driver_stack) == (driver, None)


def test_driver_stack_needs_nothing_else_from_the_user(load, target_yaml):
    """The options direct mode needs follow from the driver: COP2 and separate IO regions."""
    target = load(target_yaml("cpu: cortex-a320\nnpu: {config: ethos-u85-256, "
                              "driver: ethosu-driver-stack}")).targets["t"]
    args = target.npu.vela_args()
    assert args[args.index("--cop-format") + 1] == "COP2" and "--separate-io-regions" in args


def test_the_test_suites_fake_driver_stack_is_a_checkout(load, target_yaml):
    fake = Path(__file__).parents[1] / "runtime" / "cortex_a" / "fake_driver_stack"
    target = load(target_yaml(f"cpu: cortex-a320\nnpu: {{config: ethos-u85-256, driver: "
                              f"ethosu-driver-stack, driver_stack: {fake}}}")).targets["t"]
    assert target.npu.driver_stack == fake


def test_driver_stack_folder_must_be_a_checkout_of_the_stack(issues, target_yaml, project):
    (project / "stack" / "driver_library" / "include").mkdir(parents=True)
    (project / "stack" / "driver_library" / "include" / "ethosu.hpp").write_text("")
    assert issues(target_yaml("cpu: cortex-a320\nnpu:\n  config: ethos-u85-256\n"
                              "  driver: ethosu-driver-stack\n  driver_stack: stack")) == [
        ("targets.yaml:13: targets.t.npu.driver_stack: must be a checkout of Arm's "
         "ethos-u-linux-driver-stack, with driver_library/include/ethosu.hpp, "
         "driver_library/src/ethosu.cpp, kernel/include/uapi/ethosu.h in it; got 'stack' "
         "(driver_library/src/ethosu.cpp, kernel/include/uapi/ethosu.h missing)")]


def test_driver_stack_folder_only_with_the_driver_stack(issues, target_yaml):
    fake = Path(__file__).parents[1] / "runtime" / "cortex_a" / "fake_driver_stack"
    assert issues(target_yaml(f"cpu: cortex-a320\nnpu:\n  config: ethos-u85-256\n"
                              f"  driver_stack: {fake}")) == [
        (f"targets.yaml:12: targets.t.npu.driver_stack: must be null unless driver is "
         f"ethosu-driver-stack (the checkout is what that driver's runtime is built against); "
         f"got '{fake}' with driver 'accel'")]


def test_missing_sdk_folder_names_the_absolute_path(issues, target_yaml, project):
    assert issues(target_yaml("cpu: cortex-m55\nethosu_sdk: sdk")) == [
        (f"targets.yaml:10: targets.t.ethosu_sdk: must be an existing folder; got 'sdk' "
        f"({project / 'sdk'} is not one)")]


def test_target_config_can_be_built_in_python():
    target = TargetConfig(cpu="cortex-m85", npu=None, models=["add"])
    assert (target.isa, target.platform, target.quantization) == ("mve", "baremetal", "int8")
    with pytest.raises(ValueError, match="must be dsp for cortex-m4"):
        TargetConfig(cpu="cortex-m4", isa="scalar", npu=None, models=["add"])


def test_tosa_spec_ending_in_a_newline_is_refused(issues, target_yaml):
    assert issues(target_yaml('cpu: host\ntosa: "TOSA-1.0+INT\\n"')) == [
        ("targets.yaml:10: targets.t.tosa: must be TOSA-<version>+<INT|FP>[+<extension>...], "
         "e.g. TOSA-1.0+INT+int16; got 'TOSA-1.0+INT\\n'")]


def test_ethosu_sdk_path_the_system_refuses(issues, target_yaml):
    found = issues(target_yaml(f"cpu: cortex-m55\nethosu_sdk: {'s' * 300}"))
    assert found == [
        (f"targets.yaml:10: targets.t.ethosu_sdk: must be a path the system can look up; got "
         f"'{'s' * 99}… (302 characters) (File name too long: a name in it has 300 bytes, over "
         "the system's 255)")]
