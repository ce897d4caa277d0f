import json
import struct

import numpy as np
import pytest

from pipeline.artifact import HEADER, IO_META_HEADER, IO_META_MAGIC, IO_META_RECORD
from pipeline.errors import StageError
from pipeline.ethosu.package import BLOCK_ORDER, package, read_artifact


def _npz(path, *, cmd=b"COP1" + bytes(60), weights=b"\x00", scratch=2048, fast=0,
         inputs=((1, 1, 1, 8, 8, 16),), outputs=((1, 1, 1, 8, 8, 16),), elem=1):
    np.savez(path, cmd_data=np.array(cmd, dtype=f"S{len(cmd)}"),
             weight_data=np.array(weights, dtype=f"S{len(weights)}"),
             scratch_shape=np.array([scratch]), scratch_fast_shape=np.array([fast]),
             input_shape=np.array(inputs), input_elem_size=np.array([elem] * len(inputs)),
             input_offset=np.array([1024] * len(inputs)), input_region=np.array([1] * len(inputs)),
             output_shape=np.array(outputs), output_elem_size=np.array([elem] * len(outputs)),
             output_offset=np.array([0] * len(outputs)), output_region=np.array([1] * len(outputs)))
    return path


def _io(path, n_in=1, shape=(1, 8, 8, 16), dtype="int8"):
    entry = {"name": "x", "dtype": dtype, "shape": list(shape), "scale": 0.5, "zero_point": -3,
             "layout": "NHWC"}
    path.write_text(json.dumps({"inputs": [entry] * n_in, "outputs": [dict(entry, name="out")]}))
    return path


def test_artifact_blocks_are_in_order_and_aligned(tmp_path):
    out = package(_npz(tmp_path / "m.npz"), _io(tmp_path / "io.json"), tmp_path / "m.bin")
    data = out.read_bytes()
    assert len(data) % 16 == 0
    blocks = read_artifact(data)
    assert tuple(blocks) == BLOCK_ORDER
    assert blocks["cmd_data"][:4] == b"COP1"
    assert struct.unpack("<I", blocks["scratch_size"]) == (2048,)
    assert struct.unpack("<I", blocks["scratch_fast"]) == (0,)
    count, *io = struct.unpack("<i6iiii", blocks["inputs"])
    assert (count, io) == (1, [1, 1, 1, 8, 8, 16, 1, 1024, 1])
    assert data[-HEADER.size:].startswith(b"vela_end_stream")


def test_io_meta_carries_names_dtypes_shapes_and_quantization(tmp_path):
    out = package(_npz(tmp_path / "m.npz"), _io(tmp_path / "io.json"), tmp_path / "m.bin")
    meta = read_artifact(out.read_bytes())["io_meta"]
    magic, version, flags, n_in, n_out = IO_META_HEADER.unpack_from(meta)
    assert (magic, version, flags, n_in, n_out) == (IO_META_MAGIC, 1, 0, 1, 1)
    name, dtype, layout, rank, *rest = IO_META_RECORD.unpack_from(meta, IO_META_HEADER.size)
    shape, scale, zp, reserved = rest[:6], rest[6], rest[7], rest[8]
    assert name.rstrip(b"\0") == b"x"
    assert (dtype, layout, rank, shape) == (1, 1, 4, [1, 8, 8, 16, 0, 0])
    assert (scale, zp, reserved) == (0.5, -3, 0)
    assert len(meta) == IO_META_HEADER.size + 2 * IO_META_RECORD.size


def test_weight_block_keeps_exact_bytes_including_trailing_zeros(tmp_path):
    weights = b"\x01\x02\x00\x00"
    out = package(_npz(tmp_path / "m.npz", weights=weights), _io(tmp_path / "io.json"),
                  tmp_path / "m.bin")
    assert read_artifact(out.read_bytes())["weight_data"] == weights


def test_io_count_mismatch_is_an_error_naming_the_target(tmp_path):
    with pytest.raises(StageError, match=r"u85/package: Vela's input count must equal the "
                                         r"lowered graph's 2; got 1"):
        package(_npz(tmp_path / "m.npz"), _io(tmp_path / "io.json", n_in=2), tmp_path / "m.bin",
                where="u85/package")
    assert not (tmp_path / "m.bin").exists()


def test_io_size_mismatch_is_an_error(tmp_path):
    with pytest.raises(StageError, match=r"input 0 \(x\) must be 1024 elements of 2 bytes; "
                                         r"Vela has 1024 of 1"):
        package(_npz(tmp_path / "m.npz"), _io(tmp_path / "io.json", dtype="int16"),
                tmp_path / "m.bin")


@pytest.mark.parametrize("cut", [1, 31, 40], ids=["one-byte", "header-only", "mid-payload"])
def test_reader_rejects_truncated_artifacts(tmp_path, cut):
    data = package(_npz(tmp_path / "m.npz"), _io(tmp_path / "io.json"),
                   tmp_path / "m.bin").read_bytes()
    with pytest.raises(ValueError, match="must"):
        read_artifact(data[:-cut])


def test_a_real_npz_and_artifact_pass_the_restore_checks(tmp_path):
    from pipeline.ethosu.package import artifact_problem
    from pipeline.ethosu.vela_npz import npz_problem

    npz, io = _npz(tmp_path / "m.npz"), _io(tmp_path / "io.json")
    out = package(npz, io, tmp_path / "m.bin")
    assert npz_problem(npz) is None and artifact_problem(out, io) is None


def _forged_npz(path, how):
    _npz(path)
    if how == "garbage":
        path.write_bytes(b"garbage" * 50)
    elif how == "pickled":
        np.savez(path, cmd_data=np.array([object()], dtype=object))
    elif how == "missing array":
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files if k != "weight_data"}
        np.savez(path, **arrays)
    elif how == "truncated array":
        import zipfile

        with zipfile.ZipFile(path) as archive:
            members = {n: archive.read(n) for n in archive.namelist()}
        members["input_shape.npy"] = members["input_shape.npy"][:-8]
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
    elif how == "empty scratch":
        _npz(path)
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        arrays["scratch_shape"] = np.array([], dtype=np.int64)
        np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("how", ["garbage", "pickled", "missing array", "truncated array",
                                 "empty scratch"])
def test_a_forged_npz_is_refused_in_one_line_naming_it(tmp_path, how):
    from pipeline.errors import UnreadableInput
    from pipeline.ethosu.vela_npz import npz_problem

    npz = _forged_npz(tmp_path / "model_vela.npz", how)
    assert npz_problem(npz) is not None
    with pytest.raises(UnreadableInput) as error:
        package(npz, _io(tmp_path / "io.json"), tmp_path / "m.bin")
    assert str(error.value).startswith(f"{npz}: must be Vela's raw output")
    assert "\n" not in str(error.value) and not (tmp_path / "m.bin").exists()


def _forge_artifact(data: bytes, how: str) -> bytes:
    blocks = read_artifact(data)
    if how == "garbage":
        return b"garbage" * 50
    if how == "truncated":
        return data[:-40]
    if how == "other io_meta":
        blocks["io_meta"] = blocks["io_meta"][:-4] + b"\x01\x00\x00\x00"
    if how == "other input size":
        count, *entry = struct.unpack("<i6iiii", blocks["inputs"])
        entry[5] = 32  # 1x1x1x8x8x32 against io.json's 8x8x16
        blocks["inputs"] = struct.pack("<i6iiii", count, *entry)
    if how == "empty command stream":
        blocks["cmd_data"] = b""
    from pipeline.artifact import block

    return b"".join(block(name, payload) for name, payload in blocks.items())


@pytest.mark.parametrize("how", ["garbage", "truncated", "other io_meta", "other input size",
                                 "empty command stream"])
def test_a_forged_model_bin_is_refused(tmp_path, how):
    from pipeline.ethosu.package import artifact_problem

    io = _io(tmp_path / "io.json")
    out = package(_npz(tmp_path / "m.npz"), io, tmp_path / "m.bin")
    out.write_bytes(_forge_artifact(out.read_bytes(), how))
    assert artifact_problem(out, io) is not None
