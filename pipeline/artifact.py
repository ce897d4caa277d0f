"""The block format every artifact is made of (the Vela bin-stream's): blocks of a 32-byte
header ``{char name[16]; u32 size; u8 external; u8 reserved[11]}`` and a payload zero-padded
to 16 bytes; and ``io_meta``, the block naming the IO's names, dtypes, shapes and
quantization. The NPU artifact (``ethosu/package.py``), the CPU artifact (``cpu/artifact.py``)
and the sequence artifact (``ethosu/mixed.py``) are lists of such blocks.
"""

from __future__ import annotations

import struct

HEADER = struct.Struct("<16sIB11s")
IO_META_HEADER = struct.Struct("<IHHII")
IO_META_RECORD = struct.Struct("<32sIII6ifiI")
IO_META_MAGIC = 0x444D4F49  # b"IOMD"
DTYPES = {"int8": 1, "uint8": 2, "int16": 3, "int32": 4, "bool": 5, "float32": 6}
ELEM_SIZE = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "bool": 1, "float32": 4}
LAYOUTS = {"torch": 0, "NHWC": 1}  # io.json "layout": torch order, or NHWC for NCHW tensors

def pad16(n: int) -> int:
    return (n + 15) & ~15


def block(name: str, payload: bytes) -> bytes:
    """One block: header + payload padded to 16 bytes."""
    header = HEADER.pack(name.encode()[:15], len(payload), 0, bytes(11))
    return header + payload + bytes(pad16(len(payload)) - len(payload))


def io_meta(io: dict) -> bytes:
    records = []
    for entry in io["inputs"] + io["outputs"]:
        shape = [int(d) for d in entry["shape"]]
        records.append(IO_META_RECORD.pack(
            entry["name"].encode()[:31], DTYPES[entry["dtype"]],
            LAYOUTS[entry.get("layout", "torch")], len(shape), *(shape + [0] * (6 - len(shape))),
            float(entry.get("scale", 1.0)), int(entry.get("zero_point", 0)), 0))
    header = IO_META_HEADER.pack(IO_META_MAGIC, 1, 0, len(io["inputs"]), len(io["outputs"]))
    return header + b"".join(records)


def walk_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """Every block of an artifact in order, (name, payload), each header and payload checked
    to lie inside ``data``; ValueError naming the first that does not."""
    blocks = []
    pos = 0
    while pos < len(data):
        if pos + HEADER.size > len(data):
            raise ValueError(f"block header at {pos} must fit in {len(data)} bytes")
        raw_name, size, external, _ = HEADER.unpack_from(data, pos)
        name = raw_name.rstrip(b"\0").decode(errors="replace")
        if external or pos + HEADER.size + size > len(data):
            raise ValueError(f"block {name!r} at {pos}: size {size} must fit in {len(data)} bytes")
        blocks.append((name, data[pos + HEADER.size:pos + HEADER.size + size]))
        pos += HEADER.size + pad16(size)
    return blocks


def blocks_problem(path, first: str, last: str, io_path) -> str | None:
    """Why the artifact at ``path`` cannot be one the build wrote for the IO of ``io_path``:
    its blocks must lie inside the file, open with ``first``, close with ``io_meta`` and
    ``last``, and its ``io_meta`` be io.json's. None when it can. (Restore checks: stdlib
    only, no exception.)"""
    import json
    from pathlib import Path

    try:
        names = walk_blocks(Path(path).read_bytes())
        io = json.loads(Path(io_path).read_text())
        if [n for n, _ in names[:1]] != [first] or [n for n, _ in names[-2:]] != ["io_meta", last]:
            return f"blocks {', '.join(n for n, _ in names) or 'none'}; must open with {first} " \
                   f"and end with io_meta, {last}"
        if names[-2][1] != io_meta(io):
            return "an io_meta block that is not io.json's"
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        return str(error)
    return None


def read_artifact(data: bytes, order: tuple[str, ...]) -> dict[str, bytes]:
    """Split an artifact into its blocks (name -> payload), checking every bound and that
    the blocks are ``order``.

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
        pos += HEADER.size + pad16(size)
    if list(blocks) != list(order):
        raise ValueError(f"blocks must be {', '.join(order)}; got {', '.join(blocks)}")
    return blocks



def io_staging_bytes(data: bytes, runner: str) -> int:
    """The bytes a bare-metal runner stages the IO of an artifact in (``data``: any with an
    ``io_meta`` block), each buffer 16-byte aligned, per input and output: the NPU runner
    (``runner="npu"``) holds the tensor twice (the NPU's and the reference copy), the CPU
    runner (``"cpu"``) the tensor and its float32 values (``--float-io``). The firmware's
    static IO buffer (``ETHOSU_RT_IO_BYTES``) is built exactly this big, so no model's IO
    can outgrow it.

    Raises:
        ValueError: the artifact has no well-formed ``io_meta`` block.
    """
    pos, meta = 0, None
    while pos + HEADER.size <= len(data):
        raw_name, size, _, _ = HEADER.unpack_from(data, pos)
        if raw_name.rstrip(b"\0") == b"io_meta":
            meta = data[pos + HEADER.size:pos + HEADER.size + size]
            break
        pos += HEADER.size + pad16(size)
    if meta is None or len(meta) < IO_META_HEADER.size:
        raise ValueError("the artifact must hold an io_meta block; got none")
    magic, _, _, inputs, outputs = IO_META_HEADER.unpack_from(meta)
    count = inputs + outputs
    if magic != IO_META_MAGIC or len(meta) < IO_META_HEADER.size + count * IO_META_RECORD.size:
        raise ValueError(f"io_meta must hold {count} records after its magic; got {len(meta)} bytes")
    sizes = {code: ELEM_SIZE[name] for name, code in DTYPES.items()}
    total = 0
    for k in range(count):
        record = IO_META_RECORD.unpack_from(meta, IO_META_HEADER.size + k * IO_META_RECORD.size)
        dtype, rank, dims = record[1], record[3], record[4:10]
        elements = 1
        for d in dims[:rank]:
            elements *= max(int(d), 0)
        tensor = elements * sizes.get(dtype, 4)
        total += pad16(tensor) + pad16(tensor if runner == "npu" else elements * 4)
    return max(total, 16)
