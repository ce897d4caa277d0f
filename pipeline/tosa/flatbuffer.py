"""Read back a TOSA flatbuffer (operator list, version, the whole main block) with the ``tosa``
schema classes, and add graph outputs to one (verify's debug copy)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tosa.ClampAttribute import ClampAttribute
from tosa.DType import DType
from tosa.Op import Op
from tosa.RescaleAttribute import RescaleAttribute
from tosa.ResizeAttribute import ResizeAttribute
from tosa.TosaGraph import TosaGraph

_OP_NAMES = {v: k for k, v in vars(Op).items() if not k.startswith("_")}
_DTYPE_NAMES = {v: k.lower() for k, v in vars(DType).items() if not k.startswith("_")}
_OUTPUTS_FIELD = 12  # vtable offset of TosaBasicBlock.outputs (tosa/TosaBasicBlock.py)


def operator_names(path: Path) -> list[str]:
    """The operators of the first basic block of the main region, in order."""
    graph = TosaGraph.GetRootAs(Path(path).read_bytes(), 0)
    block = graph.Regions(0).Blocks(0)
    return [
        _OP_NAMES.get(block.Operators(i).Op(), "UNKNOWN") for i in range(block.OperatorsLength())
    ]


def version(path: Path) -> tuple[int, int, int, bool]:
    """(major, minor, patch, draft) the flatbuffer declares."""
    v = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Version()
    return v._Major(), v._Minor(), v._Patch(), v._Draft()


def rescale_input_types(path: Path) -> list[str]:
    """The input tensor type of every RESCALE (``int48`` ones use 16-bit multipliers)."""
    block = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)
    types = {}
    for i in range(block.TensorsLength()):
        tensor = block.Tensors(i)
        types[tensor.Name().decode()] = _DTYPE_NAMES.get(tensor.Type(), "unknown")
    rescales = [block.Operators(i) for i in range(block.OperatorsLength())]
    return [types[op.Inputs(0).decode()] for op in rescales if op.Op() == Op.RESCALE]


def table_max_steps(path: Path) -> list[tuple[str, int]]:
    """Per TABLE operator, its table type and how far its output can move when its input
    moves by one: the largest difference between adjacent entries (int8), that over the 128
    input steps between entries (int16, interpolated), rounded up."""
    block = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)
    data = {}
    for i in range(block.TensorsLength()):
        tensor = block.Tensors(i)
        if tensor.DataLength():
            wide = tensor.Type() == DType.INT16
            values = tensor.DataAsNumpy().view(np.int16 if wide else np.int8)
            data[tensor.Name().decode()] = (values.astype(np.int64), wide)
    steps = []
    for i in range(block.OperatorsLength()):
        op = block.Operators(i)
        if op.Op() == Op.TABLE and op.InputsLength() > 1:
            table, wide = data[op.Inputs(1).decode()]
            step = int(np.abs(np.diff(table)).max()) if table.size > 1 else 0
            steps.append(("int16", -(-step // 128)) if wide else ("int8", step))
    return steps


# --- the whole block, for analyses over the graph (verify's per-layer error bounds) ----------
_NUMPY = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "shape": "<i8", "fp32": "<f4"}
_ROUNDING = {1: "SINGLE_ROUND", 2: "INEXACT_ROUND", 3: "DOUBLE_ROUND"}
_RESIZE_MODES = {1: "NEAREST", 2: "BILINEAR"}


@dataclass(frozen=True)
class Tensor:
    dtype: str  # lower-case TOSA type: int8, int32, int48, shape, fp32, ...
    shape: tuple[int, ...]
    data: np.ndarray | None  # constants only (int48 as int64), in ``shape``


@dataclass(frozen=True)
class Operator:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict  # only what analyses need: RESCALE rounding_mode, RESIZE mode


@dataclass(frozen=True)
class Block:
    tensors: dict[str, Tensor]
    operators: list[Operator]
    inputs: list[str]
    outputs: list[str]


def _data(tensor, dtype: str, shape: tuple[int, ...]) -> np.ndarray | None:
    if not tensor.DataLength():
        return None
    raw = tensor.DataAsNumpy()
    if dtype == "int48":  # 6 little-endian bytes, sign-extended
        six = raw.reshape(-1, 6).astype(np.int64)
        values = sum(six[:, i] << (8 * i) for i in range(6))
        return np.where(values >= 1 << 47, values - (1 << 48), values).reshape(shape)
    if dtype not in _NUMPY:
        return None
    values = raw.view(_NUMPY[dtype])
    return values.astype(np.float32 if dtype == "fp32" else np.int64).reshape(shape)


def _attrs(op) -> dict:
    table = op.Attribute()
    if op.Op() == Op.RESCALE:
        attribute = RescaleAttribute()
        attribute.Init(table.Bytes, table.Pos)
        return {"rounding_mode": _ROUNDING.get(attribute.RoundingMode(), "UNKNOWN")}
    if op.Op() == Op.RESIZE:
        attribute = ResizeAttribute()
        attribute.Init(table.Bytes, table.Pos)
        return {"mode": _RESIZE_MODES.get(attribute.Mode(), "UNKNOWN")}
    if op.Op() == Op.CLAMP:  # integer bounds (raw bytes of the input type, 8-byte padded)
        attribute = ClampAttribute()
        attribute.Init(table.Bytes, table.Pos)
        return {"min_val_bytes": attribute.MinValAsNumpy().tobytes(),
                "max_val_bytes": attribute.MaxValAsNumpy().tobytes()}  # fmt: skip
    return {}


def clamp_bounds(op: Operator, dtype: str) -> tuple[int, int] | None:
    """An integer CLAMP's (min_val, max_val), read back for a tensor of ``dtype``."""
    width = {"int8": 1, "int16": 2, "int32": 4}.get(dtype)
    raw = (op.attrs.get("min_val_bytes"), op.attrs.get("max_val_bytes"))
    if width is None or None in raw:
        return None
    low, high = (int.from_bytes(b[:width], "little", signed=True) for b in raw)
    return low, high


def read_block(path: Path) -> Block:
    """Tensors (with constant data), operators, inputs and outputs of the main block."""
    block = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)
    tensors = {}
    for i in range(block.TensorsLength()):
        tensor = block.Tensors(i)
        dtype = _DTYPE_NAMES.get(tensor.Type(), "unknown")
        shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        tensors[tensor.Name().decode()] = Tensor(dtype, shape, _data(tensor, dtype, shape))
    for i in range(block.ShapesLength()):  # CONST_SHAPE values live apart from tensors
        shape = block.Shapes(i)
        values = shape.DataAsNumpy().view("<i8").astype(np.int64) if shape.DataLength() else None
        tensors[shape.Name().decode()] = Tensor("shape", (shape.Rank(),), values)
    operators = []
    for i in range(block.OperatorsLength()):
        op = block.Operators(i)
        operators.append(Operator(
            _OP_NAMES.get(op.Op(), "UNKNOWN"),
            tuple(op.Inputs(j).decode() for j in range(op.InputsLength())),
            tuple(op.Outputs(j).decode() for j in range(op.OutputsLength())),
            _attrs(op),
        ))  # fmt: skip
    names = [block.Inputs(i).decode() for i in range(block.InputsLength())]
    outputs = [block.Outputs(i).decode() for i in range(block.OutputsLength())]
    return Block(tensors, operators, names, outputs)


def set_main_block_strings(data: bytearray, field: int, names: list[str]) -> None:
    """Point the main block's vector-of-strings ``field`` (its inputs or outputs) at a new
    vector of ``names`` appended at the end of ``data``: offsets point forward, so new data
    goes after everything that refers to it, and the rest stays byte for byte."""
    tab = TosaGraph.GetRootAs(bytes(data), 0).Regions(0).Blocks(0)._tab
    position = tab.Pos + tab.Offset(field)
    data += bytes(-len(data) % 4)
    vector = len(data)
    data += struct.pack(f"<{len(names) + 1}I", len(names), *[0] * len(names))
    for i, name in enumerate(names):
        data += bytes(-len(data) % 4)
        slot = vector + 4 + 4 * i
        struct.pack_into("<I", data, slot, len(data) - slot)
        encoded = name.encode()
        data += struct.pack("<I", len(encoded)) + encoded + b"\0"
    data += bytes(-len(data) % 4)
    struct.pack_into("<I", data, position, vector - position)


def with_outputs(path: Path, names: list[str]) -> bytes:
    """The flatbuffer of ``path`` with ``names`` (intermediate tensors) also graph outputs, so
    the reference model writes them.

    A flatbuffer refers forward only (unsigned offsets), so the new outputs vector and its
    strings are appended at the end and the block's ``outputs`` field is pointed at them;
    everything else stays byte for byte.
    """
    data = bytearray(Path(path).read_bytes())
    block = TosaGraph.GetRootAs(bytes(data), 0).Regions(0).Blocks(0)
    field = block._tab.Offset(_OUTPUTS_FIELD)
    if not field:
        raise ValueError(f"{path}: the main block must have an outputs vector; got none")
    current = [block.Outputs(i).decode() for i in range(block.OutputsLength())]
    set_main_block_strings(data, _OUTPUTS_FIELD, current + [n for n in names if n not in current])
    return bytes(data)
