"""TOSA spec strings (pipeline/config/tosa_spec.py)."""

from __future__ import annotations

import pytest

from pipeline.config import TosaSpec


@pytest.mark.parametrize(("text", "profile", "extensions", "canonical"), [
    ("TOSA-1.0+INT", "INT", (), "TOSA-1.0+INT"),
    ("TOSA-1.0+INT+int16", "INT", ("int16",), "TOSA-1.0+INT+int16"),
    ("TOSA-1.0+INT+int4+int16", "INT", ("int16", "int4"), "TOSA-1.0+INT+int16+int4"),
    ("TOSA-1.0+FP", "FP", (), "TOSA-1.0+FP"),
    ("TOSA-1.0+FP+bf16+controlflow", "FP", ("bf16", "controlflow"), "TOSA-1.0+FP+bf16+controlflow"),
    ("TOSA-1.0+INT+variable", "INT", ("variable",), "TOSA-1.0+INT+variable"),
])
def test_parse(text, profile, extensions, canonical):
    spec = TosaSpec.parse(text)
    assert (spec.version, spec.profile, spec.extensions, str(spec)) == (
        "1.0", profile, extensions, canonical)
    assert all(spec.has(e) for e in extensions)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("tosa-1.0+INT", "must be TOSA-<version>+<INT|FP>[+<extension>...], e.g. "
                 "TOSA-1.0+INT+int16; got 'tosa-1.0+INT'", id="case"),
    pytest.param("TOSA-1.0", "must be TOSA-<version>+<INT|FP>[+<extension>...], e.g. "
                 "TOSA-1.0+INT+int16; got 'TOSA-1.0'", id="no-profile"),
    pytest.param("TOSA-0.80+BI", "must name TOSA version 1.0; got 'TOSA-0.80+BI'", id="version"),
    pytest.param("TOSA-1.0+BI", "must name profile INT or FP after the version; got 'TOSA-1.0+BI'",
                 id="profile"),
    pytest.param("TOSA-1.0+INT+FP", "extensions must be among int16, int4, doubleround, "
                 "inexactround, bf16, fp8e4m3, fp8e5m2, fft, variable, controlflow, dynamic; "
                 "got 'FP' in 'TOSA-1.0+INT+FP'", id="two-profiles"),
    pytest.param("TOSA-1.0+INT+int12", "extensions must be among int16, int4, doubleround, "
                 "inexactround, bf16, fp8e4m3, fp8e5m2, fft, variable, controlflow, dynamic; "
                 "got 'int12' in 'TOSA-1.0+INT+int12'", id="unknown-extension"),
    pytest.param("TOSA-1.0+FP+int16", "must use the INT profile for extension int16; "
                 "got 'TOSA-1.0+FP+int16'", id="int16-needs-int"),
    pytest.param("TOSA-1.0+INT+bf16", "must use the FP profile for extension bf16; "
                 "got 'TOSA-1.0+INT+bf16'", id="bf16-needs-fp"),
    pytest.param("TOSA-1.0+INT+int16+int16", "must name each extension once; "
                 "got 'TOSA-1.0+INT+int16+int16'", id="repeated"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError) as caught:
        TosaSpec.parse(text)
    assert str(caught.value) == message


def test_tosa_must_be_a_string_in_yaml(issues, target_yaml):
    assert issues(target_yaml("cpu: host\ntosa: 1.0")) == [
        ("targets.yaml:10: targets.t.tosa: must be a string TOSA-<version>+<INT|FP>"
        "[+<extension>...]; got 1.0")]
