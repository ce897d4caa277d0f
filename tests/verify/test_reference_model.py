import pytest

from pipeline.errors import StageError
from pipeline.verify.reference_model import find_reference_model, run_reference_model

pytestmark = pytest.mark.needs_tosa_ref


def test_binary_is_found():
    assert find_reference_model().is_file()


def test_failure_names_the_command(tmp_path):
    bad = tmp_path / "broken.tosa"
    bad.write_bytes(b"not a flatbuffer")
    with pytest.raises(StageError, match=r"t/verify: the TOSA reference model must run the graph"):
        run_reference_model(bad, {}, ["out"], where="t/verify")
