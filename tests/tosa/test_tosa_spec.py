import pytest

from pipeline.errors import UserError
from pipeline.tosa.spec import parse_spec


@pytest.mark.parametrize(
    "text, profiles, extensions, rounding",
    [
        pytest.param("TOSA-1.0+INT", {"INT"}, set(), "SINGLE_ROUND", id="int"),
        pytest.param("TOSA-1.0+INT+int16", {"INT"}, {"int16"}, "SINGLE_ROUND", id="int16"),
        pytest.param(
            "TOSA-1.0+INT+int16+doubleround",
            {"INT"},
            {"int16", "doubleround"},
            "DOUBLE_ROUND",
            id="doubleround",
        ),
        pytest.param("TOSA-1.0+FP", {"FP"}, set(), "SINGLE_ROUND", id="fp"),
    ],
)
def test_parse(text, profiles, extensions, rounding):
    spec = parse_spec(text)
    assert spec.version == "1.0" and spec.major_minor == (1, 0)
    assert spec.profiles == profiles and spec.extensions == extensions
    assert spec.rounding_mode == rounding
    assert parse_spec(str(spec)) == spec


@pytest.mark.parametrize(
    "text, dtype, allowed",
    [
        ("TOSA-1.0+INT", "int8", True),
        ("TOSA-1.0+INT", "int16", False),
        ("TOSA-1.0+INT+int16", "int48", True),
        ("TOSA-1.0+INT", "fp32", False),
        ("TOSA-1.0+FP", "fp32", True),
        ("TOSA-1.0+FP", "int8", False),
    ],
)
def test_dtypes_follow_profiles_and_extensions(text, dtype, allowed):
    assert parse_spec(text).supports_dtype(dtype) is allowed


@pytest.mark.parametrize(
    "text, message",
    [
        pytest.param("TOSA-2.0+INT", r"u85/lower: tosa spec must name TOSA version 1.0; "
                     r"got 'TOSA-2.0\+INT'", id="version"),
        pytest.param("TOSA-1.0+INT+int99", r"tosa spec extensions must be among .*; "
                     r"got 'int99' in 'TOSA-1.0\+INT\+int99'", id="extension"),
        pytest.param("TOSA-1.0+FP+int16", r"tosa spec must use the INT profile for extension "
                     r"int16; got 'TOSA-1.0\+FP\+int16'", id="extension_profile"),
        pytest.param("tosa 1.0", r"tosa spec must be TOSA-<version>\+<INT\|FP>.*; "
                     r"got 'tosa 1.0'", id="syntax"),
    ],
)
def test_bad_specs_name_what_is_allowed(text, message):
    with pytest.raises(UserError, match=message):
        parse_spec(text, where="u85/lower")
