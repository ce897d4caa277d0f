"""Package stage: Vela's raw output + IO metadata -> one model artifact.

The artifact is the Vela bin-stream block format (see README, "Model artifact format"):
blocks of a 32-byte header ``{char name[16]; u32 size; u8 external; u8 reserved[11]}`` and
a payload zero-padded to 16 bytes, in the order ``vela_bin_stream, cmd_data, weight_data,
scratch_size, inputs, outputs, scratch_fast, io_meta, vela_end_stream``. The first seven
are the layout ExecuTorch's Arm backend uses; ``scratch_fast`` carries the fast-scratch size
Vela asks for, and ``io_meta`` the names, dtypes, shapes and quantization of the IO.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

from pipeline.errors import StageError

HEADER = struct.Struct("<16sIB11s")
VELA_IO = struct.Struct("<6iiii")
IO_META_HEADER = struct.Struct("<IHHII")
IO_META_RECORD = struct.Struct("<32sIII6ifiI")
IO_META_MAGIC = 0x444D4F49  # b"IOMD"
DTYPES = {"int8": 1, "uint8": 2, "int16": 3, "int32": 4, "bool": 5, "float32": 6}
ELEM_SIZE = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "bool": 1, "float32": 4}
LAYOUTS = {"torch": 0, "NHWC": 1}  # io.json "layout": torch order, or NHWC for NCHW tensors
BLOCK_ORDER = ("vela_bin_stream", "cmd_data", "weight_data", "scratch_size", "inputs",
               "outputs", "scratch_fast", "io_meta", "vela_end_stream")


def _pad16(n: int) -> int:
    return (n + 15) & ~15


def block(name: str, payload: bytes) -> bytes:
    """One block: header + payload padded to 16 bytes."""
    header = HEADER.pack(name.encode()[:15], len(payload), 0, bytes(11))
    return header + payload + bytes(_pad16(len(payload)) - len(payload))


def _vela_io(npz, prefix: str) -> bytes:
    shapes, sizes = npz[f"{prefix}_shape"], npz[f"{prefix}_elem_size"]
    offsets, regions = npz[f"{prefix}_offset"], npz[f"{prefix}_region"]
    body = struct.pack("<i", len(shapes))
    for shape, size, offset, region in zip(shapes, sizes, offsets, regions):
        body += VELA_IO.pack(*[int(d) for d in shape], int(size), int(offset), int(region))
    return body


def _io_meta(io: dict) -> bytes:
    records = []
    for entry in io["inputs"] + io["outputs"]:
        shape = [int(d) for d in entry["shape"]]
        records.append(IO_META_RECORD.pack(
            entry["name"].encode()[:31], DTYPES[entry["dtype"]],
            LAYOUTS[entry.get("layout", "torch")], len(shape), *(shape + [0] * (6 - len(shape))),
            float(entry.get("scale", 1.0)), int(entry.get("zero_point", 0)), 0))
    header = IO_META_HEADER.pack(IO_META_MAGIC, 1, 0, len(io["inputs"]), len(io["outputs"]))
    return header + b"".join(records)


def check_io(npz, io: dict, where: str) -> None:
    """The IO Vela compiled must be the IO the lowering described, tensor by tensor."""
    for prefix, entries in (("input", io["inputs"]), ("output", io["outputs"])):
        shapes = npz[f"{prefix}_shape"]
        if len(shapes) != len(entries):
            raise StageError(where, f"Vela's {prefix} count must equal the lowered graph's "
                             f"{len(entries)}; got {len(shapes)}")
        for i, (shape, entry) in enumerate(zip(shapes, entries)):
            want = 1
            for d in entry["shape"]:
                want *= int(d)
            got = 1
            for d in shape:
                got *= int(d)
            size = int(npz[f"{prefix}_elem_size"][i])
            if got != want or size != ELEM_SIZE[entry["dtype"]]:
                raise StageError(where, f"{prefix} {i} ({entry['name']}) must be {want} elements of "
                                 f"{ELEM_SIZE[entry['dtype']]} bytes; Vela has {got} of {size}")


def package(npz_path: Path, io_path: Path, out: Path, *, where: str = "") -> Path:
    """Write the model artifact for one compiled network.

    Args:
        npz_path: Vela's raw output (``*_vela.npz``).
        io_path: the lowering's IO description (io.json).
        out: the artifact path; written to a temporary file and renamed into place.

    Returns:
        ``out``.

    Raises:
        StageError: Vela's IO does not match the lowered graph's.
    """
    io = json.loads(io_path.read_text())
    write_atomic(out, model_artifact(npz_path, io, where))
    return out


def model_artifact(npz_path: Path, io: dict, where: str = "") -> bytes:
    """The model artifact's bytes for Vela's raw output ``npz_path`` and the IO ``io``
    (io.json's form); an NPU segment of a sequence artifact is one too (``mixed.py``)."""
    import numpy as np

    with np.load(npz_path, allow_pickle=False) as npz:
        check_io(npz, io, where)
        return b"".join([
            block("vela_bin_stream", b""),
            block("cmd_data", npz["cmd_data"].tobytes()),
            block("weight_data", npz["weight_data"].tobytes()),
            block("scratch_size", struct.pack("<I", int(npz["scratch_shape"][0]))),
            block("inputs", _vela_io(npz, "input")),
            block("outputs", _vela_io(npz, "output")),
            block("scratch_fast", struct.pack("<I", int(npz["scratch_fast_shape"][0]))),
            block("io_meta", _io_meta(io)),
            block("vela_end_stream", b""),
        ])


def write_atomic(path: Path, data: bytes) -> None:
    """Write bytes through a temporary file in the destination folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_artifact(data: bytes, order: tuple[str, ...] = BLOCK_ORDER) -> dict[str, bytes]:
    """Split an artifact into its blocks (name -> payload), checking every bound and that
    the blocks are ``order`` (the model artifact's by default).

    Raises:
        ValueError: naming the block and the offending values.
    """
    blocks: dict[str, bytes] = {}
    pos = 0
    while pos < len(data):
        if pos + HEADER.size > len(data):
            raise ValueError(f"block header at {pos} must fit in {len(data)} bytes")
        raw_name, size, external, _ = HEADER.unpack_from(data, pos)
        name = raw_name.rstrip(b"\0").decode()
        end = pos + HEADER.size + size
        if external or end > len(data):
            raise ValueError(f"block {name!r} at {pos}: size {size} must fit in {len(data)} bytes")
        blocks[name] = data[pos + HEADER.size:end]
        pos += HEADER.size + _pad16(size)
    if list(blocks) != list(order):
        raise ValueError(f"blocks must be {', '.join(order)}; got {', '.join(blocks)}")
    return blocks
