"""The ``vgf:`` block of a target: what it resolves to and the rules that tie it to cpu/tosa/npu."""

from __future__ import annotations

import pytest

from pipeline.config import load_config
from tests.graph.test_plan import ROOT


@pytest.mark.parametrize(("body", "tosa", "scheme"), [
    ("cpu: cortex-a55\nvgf: {}", "TOSA-1.0+INT+int16", "int8"),
    ("cpu: cortex-a55\ntosa: TOSA-1.0+FP\nquantization: none\nvgf: {}", "TOSA-1.0+FP", "none"),
    ("cpu: cortex-a76\ntosa: TOSA-1.0+INT\nvgf: {}", "TOSA-1.0+INT", "int8"),
    ("cpu: cortex-a55\nquantization: a16w8\nvgf: {}", "TOSA-1.0+INT+int16", "a16w8"),
], ids=["int8", "fp", "int-without-int16", "a16w8"])
def test_vgf_targets_resolve(load, target_yaml, body, tosa, scheme):
    target = load(target_yaml(body)).targets["t"]
    assert (str(target.tosa), target.quantization, target.npu) == (tosa, scheme, None)
    assert (target.platform, target.toolchain) == ("linux", "aarch64-linux-gnu-gcc")
    assert target.vgf.converter_args() == []


def test_npu_defaults_to_null_with_vgf(load):
    config = load("""\
        models: {add: {source: models/add.py:AddModel, inputs: [{shape: [1, 8, 8, 16]}]}}
        targets: {t: {cpu: cortex-a55, vgf: {}, models: [add]}}
        """)
    assert config.targets["t"].npu is None


def test_converter_options(load, target_yaml):
    body = "cpu: cortex-a55\nvgf: {emit_debug_info: true, replicated_composites: false}"
    vgf = load(target_yaml(body)).targets["t"].vgf
    assert vgf.converter_args() == ["--emit-debug-info", "--disable-replicated-composites"]


@pytest.mark.parametrize(("body", "expected"), [
    pytest.param("cpu: cortex-m55\nvgf: {}", [
        "targets.yaml:9: targets.t.cpu: must be a Cortex-A (Linux) CPU with vgf (a Vulkan ML "
        "device is driven from Linux); got 'cortex-m55'"], id="cortex-m"),
    pytest.param("cpu: host\nvgf: {}", [
        "targets.yaml:9: targets.t.cpu: must be a Cortex-A (Linux) CPU with vgf (a Vulkan ML "
        "device is driven from Linux); got 'host'"], id="host"),
    pytest.param("cpu: cortex-a55\nnpu: {config: ethos-u85-256}\nvgf: {}", [
        "targets.yaml:10: targets.t.npu: must be null when vgf is set (a target deploys to one "
        "family: Ethos-U or a Vulkan ML device); got an npu block"], id="npu-and-vgf"),
    pytest.param("cpu: cortex-a55\ntosa: TOSA-1.0+INT+int4\nvgf: {}", [
        "targets.yaml:10: targets.t.tosa: must be one of TOSA-1.0+FP, TOSA-1.0+INT, "
        "TOSA-1.0+INT+int16 with vgf (the specs the ML SDK model converter takes from this "
        "lowering); got 'TOSA-1.0+INT+int4'"], id="extension"),
    pytest.param("cpu: cortex-a55\nvgf: {debug: true}", [
        "targets.yaml:10: targets.t.vgf.debug: unknown field; must be one of emit_debug_info, "
        "replicated_composites"], id="unknown-field"),
    pytest.param("cpu: cortex-a55\nvgf: 1", [
        "targets.yaml:10: targets.t.vgf: must be a mapping; got 1"], id="not-a-mapping"),
])
def test_invalid_vgf_targets_report_exact_lines(issues, target_yaml, body, expected):
    assert issues(target_yaml(body)) == expected


def test_shipped_vgf_targets():
    config = load_config(ROOT / "targets.yaml")
    fp, int8 = config.targets["vgf-fp"], config.targets["vgf-int8"]
    assert (str(fp.tosa), fp.quantization, fp.npu) == ("TOSA-1.0+FP", "none", None)
    assert (str(int8.tosa), int8.quantization, int8.npu) == ("TOSA-1.0+INT+int16", "int8", None)
    assert fp.vgf is not None and int8.vgf is not None
