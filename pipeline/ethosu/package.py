"""Package stage: Vela's raw output + IO metadata -> one model artifact.

The artifact is the Vela bin-stream block format (docs/artifacts.md#model-artifact):
blocks of a 32-byte header ``{char name[16]; u32 size; u8 external; u8 reserved[11]}`` and
a payload zero-padded to 16 bytes, in the order ``vela_bin_stream, cmd_data, weight_data,
scratch_size, inputs, outputs, scratch_fast, io_meta, vela_end_stream``. The first seven
are the layout ExecuTorch's Arm backend uses; ``scratch_fast`` carries the fast-scratch size
Vela asks for, and ``io_meta`` the names, dtypes, shapes and quantization of the IO.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from pipeline import artifact
from pipeline.artifact import ELEM_SIZE, block, io_meta
from pipeline.errors import StageError, UnreadableInput
from pipeline.ethosu.vela_npz import npz_problem
from pipeline.files import write_atomic

VELA_IO = struct.Struct("<6iiii")
BLOCK_ORDER = ("vela_bin_stream", "cmd_data", "weight_data", "scratch_size", "inputs",
               "outputs", "scratch_fast", "io_meta", "vela_end_stream")


def _vela_io(npz, prefix: str) -> bytes:
    shapes, sizes = npz[f"{prefix}_shape"], npz[f"{prefix}_elem_size"]
    offsets, regions = npz[f"{prefix}_offset"], npz[f"{prefix}_region"]
    body = struct.pack("<i", len(shapes))
    for shape, size, offset, region in zip(shapes, sizes, offsets, regions):
        body += VELA_IO.pack(*[int(d) for d in shape], int(size), int(offset), int(region))
    return body


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

    why = npz_problem(Path(npz_path))
    if why is not None:
        raise UnreadableInput(npz_path, "Vela's raw output (an .npz of its arrays)", why)
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
            block("io_meta", io_meta(io)),
            block("vela_end_stream", b""),
        ])



def read_artifact(data: bytes, order: tuple[str, ...] = BLOCK_ORDER) -> dict[str, bytes]:
    """Split a model artifact into its blocks (``pipeline.artifact.read_artifact``)."""
    return artifact.read_artifact(data, order)


def artifact_problem(path: Path, io_path: Path) -> str | None:
    """Why ``path`` cannot be the model artifact ``package`` writes for the IO of
    ``io_path``: its blocks must parse in their order, its IO metadata be io.json's and its
    input and output tables the IO's sizes; None when it can."""
    try:
        blocks = artifact.read_artifact(Path(path).read_bytes(), BLOCK_ORDER)
        io = json.loads(Path(io_path).read_text())
        if blocks["io_meta"] != io_meta(io):
            return "an io_meta block that is not io.json's"
        for prefix, table in (("input", blocks["inputs"]), ("output", blocks["outputs"])):
            entries = io[f"{prefix}s"]
            (count,) = struct.unpack_from("<i", table, 0)
            if count != len(entries) or len(table) != 4 + count * VELA_IO.size:
                return f"{count} {prefix}s in its {prefix}s block; io.json has {len(entries)}"
            for i, entry in enumerate(entries):
                *shape, size, _, _ = VELA_IO.unpack_from(table, 4 + i * VELA_IO.size)
                got, want = size, ELEM_SIZE[entry["dtype"]]
                for d in shape:
                    got *= d
                for d in entry["shape"]:
                    want *= int(d)
                if got != want:
                    return f"{prefix} {i} of {got} bytes; io.json's {entry['name']} has {want}"
        if len(blocks["scratch_size"]) != 4 or len(blocks["scratch_fast"]) != 4:
            return "a scratch size block that is not 4 bytes"
        if not blocks["cmd_data"] or len(blocks["cmd_data"]) % 4:
            return f"a command stream of {len(blocks['cmd_data'])} bytes (a multiple of 4 > 0)"
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        return str(error)
    return None
