"""A cheap look at a TOSA flatbuffer's frame, for files restored from a store: the ``TOSA``
identifier, the root table and its vtable, the version table and the regions vector all
inside the file. Stdlib only (no numpy, no ``tosa`` package): it runs on every restore. A
file that passes and is still garbage deeper down is caught by the reader
(``flatbuffer.py``), which names the file."""

from __future__ import annotations

import struct
from pathlib import Path

IDENTIFIER = b"TOSA"
_VERSION, _REGIONS = 0, 1  # TosaGraph's fields, in schema order


def _table(data: bytes, at: int) -> tuple[int, list[int]]:
    """``(table position, field offsets)`` of the table at ``at``; ValueError out of bounds."""
    if not 0 <= at <= len(data) - 4:
        raise ValueError(f"a table at {at} outside the file")
    vtable = at - struct.unpack_from("<i", data, at)[0]
    if not 0 <= vtable <= len(data) - 4:
        raise ValueError(f"a vtable at {vtable} outside the file")
    size, table_size = struct.unpack_from("<HH", data, vtable)
    if size < 4 or size % 2 or vtable + size > len(data) or at + table_size > len(data):
        raise ValueError(f"a vtable at {vtable} of impossible sizes ({size}, {table_size})")
    fields = list(struct.unpack_from(f"<{(size - 4) // 2}H", data, vtable + 4))
    if any(f >= table_size for f in fields):
        raise ValueError(f"a table at {at} with a field beyond its {table_size} bytes")
    return at, fields


def _follow(data: bytes, table: int, fields: list[int], index: int) -> int:
    """Where the offset field ``index`` of a table points."""
    if index >= len(fields) or not fields[index]:
        raise ValueError(f"no field {index} in the table at {table}")
    at = table + fields[index]
    return at + struct.unpack_from("<I", data, at)[0]


def tosa_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a TOSA flatbuffer, or None when its frame holds."""
    try:
        data = Path(path).read_bytes()
        if len(data) < 8 or data[4:8] != IDENTIFIER:
            return "no TOSA flatbuffer identifier"
        root, fields = _table(data, struct.unpack_from("<I", data, 0)[0])
        _table(data, _follow(data, root, fields, _VERSION))
        regions = _follow(data, root, fields, _REGIONS)
        if not 0 <= regions <= len(data) - 4:
            raise ValueError("a regions vector outside the file")
        count = struct.unpack_from("<I", data, regions)[0]
        if count < 1 or regions + 4 + 4 * count > len(data):
            raise ValueError(f"{count} regions in a file of {len(data)} bytes")
        for i in range(count):
            at = regions + 4 + 4 * i
            _table(data, at + struct.unpack_from("<I", data, at)[0])
    except (OSError, ValueError, struct.error) as error:
        return str(error)
    return None
