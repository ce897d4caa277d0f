"""Package stage: Vela's raw output + IO metadata -> one model artifact.

The artifact is the Vela bin-stream block format (docs/artifacts.md#model-artifact):
blocks of a 32-byte header ``{char name[16]; u32 size; u8 external; u8 reserved[11]}`` and
a payload zero-padded to 16 bytes, in the order ``vela_bin_stream, cmd_data, weight_data,
scratch_size, inputs, outputs, scratch_fast, io_meta, vela_end_stream``. The first seven
are the layout ExecuTorch's Arm backend uses; ``scratch_fast`` carries the fast-scratch size
Vela asks for, and ``io_meta`` the names, dtypes, shapes and quantization of the IO.
"""

from __future__ import annotations

import ast
import json
import struct
import zipfile
from pathlib import Path

from pipeline import artifact
from pipeline.artifact import ELEM_SIZE, block, io_meta
from pipeline.errors import StageError, UnreadableInput
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


# What package reads of Vela's .npz: name -> rank.
NPZ_ARRAYS = {"cmd_data": 0, "weight_data": 0, "scratch_shape": 1, "scratch_fast_shape": 1}
NPZ_ARRAYS.update({f"{p}_{f}": 1 for p in ("input", "output")
                   for f in ("elem_size", "offset", "region")})
NPZ_ARRAYS.update({"input_shape": 2, "output_shape": 2})
_NPY_MAGIC = b"\x93NUMPY"


def _npy_header(archive: zipfile.ZipFile, name: str) -> dict:
    """The header of one .npy member, read by hand (no numpy import on a restore) without
    reading the array's data."""
    length = archive.getinfo(name).file_size
    with archive.open(name) as member:
        data = member.read(12)
        if len(data) < 12 or data[:6] != _NPY_MAGIC or data[6] not in (1, 2, 3):
            raise ValueError("not an .npy array")
        size, start = (struct.unpack_from("<H", data, 8)[0], 10) if data[6] == 1 else \
            (struct.unpack_from("<I", data, 8)[0], 12)
        text = (data[start:] + member.read(start + size - len(data)))[:size]
    header = ast.literal_eval(text.decode("latin1"))
    if not isinstance(header, dict) or not isinstance(header.get("shape"), tuple):
        raise TypeError("its header has no shape")
    descr = header.get("descr")
    if not (isinstance(descr, str) and len(descr) > 2 and descr[1] in "iubSV"
            and descr[2:].isdigit()):
        raise ValueError(f"its type must be plain bytes or integers; got {descr!r}")
    count = 1
    for d in header["shape"]:
        count *= int(d)
    if length != start + size + count * int(descr[2:]):
        raise ValueError(f"{length} bytes do not hold its {header['shape']} {descr} data")
    return header


def npz_problem(path: Path) -> str | None:
    """Why ``path`` cannot be Vela's raw output as ``model_artifact`` reads it (every array
    it reads there, integer, of the right rank, its bytes all present), or None."""
    shapes = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for name, rank in NPZ_ARRAYS.items():
                try:
                    shapes[name] = _npy_header(archive, f"{name}.npy")["shape"]
                except KeyError:
                    return f"no {name} array"
                except (ValueError, TypeError, SyntaxError, struct.error,
                        UnicodeDecodeError) as error:
                    return f"{name}: {error}"
                if len(shapes[name]) != rank:
                    return f"{name} of rank {len(shapes[name])}, not {rank}"
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as error:
        return f"not a zip archive ({error})"
    for name in ("scratch_shape", "scratch_fast_shape"):
        if shapes[name][0] < 1:
            return f"an empty {name}"
    for prefix in ("input", "output"):
        count = shapes[f"{prefix}_shape"]
        if count[1] != VELA_IO.size // 4 - 3 or any(
                shapes[f"{prefix}_{f}"] != count[:1] for f in ("elem_size", "offset", "region")):
            return f"{prefix} tables of shapes that disagree ({prefix}_shape {count})"
    return None


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
