import re
import subprocess

import pytest

from pipeline.errors import StageError
from pipeline.runtime.c_array import write_c_array

CHECK_MAIN = r"""
#include <stdint.h>
#include <stdio.h>
#include <stddef.h>
extern const uint8_t %(s)s[];
extern const size_t %(s)s_size;
int main(void) {
  if (((uintptr_t)%(s)s) %% 16 != 0) return 2;
  fwrite(%(s)s, 1, %(s)s_size, stdout);
  return 0;
}
"""


def test_array_compiles_aligned_and_holds_the_exact_bytes(tmp_path):
    data = bytes(range(256)) * 3 + b"\x00\x01\x02"  # not a multiple of 16, trailing zeros kept
    (tmp_path / "m.bin").write_bytes(data)
    write_c_array(tmp_path / "m.bin", tmp_path / "m.c", symbol="ethosu_model")
    (tmp_path / "main.c").write_text(CHECK_MAIN % {"s": "ethosu_model"})
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-o", tmp_path / "check",
                    tmp_path / "m.c", tmp_path / "main.c"], check=True)
    out = subprocess.run([tmp_path / "check"], capture_output=True, check=True).stdout
    assert out == data


def test_header_names_the_source_and_its_digest(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"\x10" * 20)
    write_c_array(tmp_path / "model.bin", tmp_path / "out" / "model.c", symbol="net")
    text = (tmp_path / "out" / "model.c").read_text()
    assert "from model.bin" in text and "(20 bytes, sha256 " in text
    assert "__attribute__((aligned(16))) const uint8_t net[20] = {" in text
    assert "const size_t net_size = sizeof(net);" in text
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["model.c"]  # no temp files left


@pytest.mark.parametrize("symbol", ["1model", "my-model", "", "int", "a b"])
def test_symbol_must_be_a_c_identifier(tmp_path, symbol):
    (tmp_path / "m.bin").write_bytes(b"x")
    with pytest.raises(StageError, match=re.escape(
            "symbol must be a C identifier that is not a keyword ([A-Za-z_][A-Za-z0-9_]*); got "
            + repr(symbol))):
        write_c_array(tmp_path / "m.bin", tmp_path / "m.c", symbol=symbol)
    assert not (tmp_path / "m.c").exists()


def test_missing_or_empty_artifact(tmp_path):
    with pytest.raises(StageError, match=r"c_array: artifact must be a readable file; got .*none"):
        write_c_array(tmp_path / "none", tmp_path / "m.c", symbol="m")
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(StageError, match="artifact must not be empty; got 0 bytes"):
        write_c_array(tmp_path / "empty.bin", tmp_path / "m.c", symbol="m")


def test_an_existing_file_is_replaced_whole(tmp_path):
    (tmp_path / "m.bin").write_bytes(b"\x01\x02")
    (tmp_path / "m.c").write_text("old")
    write_c_array(tmp_path / "m.bin", tmp_path / "m.c", symbol="m")
    assert "0x01,0x02," in (tmp_path / "m.c").read_text()
