"""What the package stage needs of Vela's raw output (``model_vela.npz``), checked without
numpy: every array it reads is there, of plain bytes or integers, of the right rank, with all
its bytes (``.npy`` headers read by hand). It runs on every restore of a vela entry
(``stages/vela.py``) and before ``package`` reads the file, so a forged or damaged file is
one line naming it, never a traceback from numpy. A module of its own: the vela stage's key
covers its import closure, which should not hold the packaging code."""

from __future__ import annotations

import ast
import struct
import zipfile
from pathlib import Path

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
        if count[1] != 6 or any(  # Vela pads every shape to 6 dimensions
                shapes[f"{prefix}_{f}"] != count[:1] for f in ("elem_size", "offset", "region")):
            return f"{prefix} tables of shapes that disagree ({prefix}_shape {count})"
    return None
