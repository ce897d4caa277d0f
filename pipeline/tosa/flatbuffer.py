"""The one TOSA flatbuffer reader, with the ``tosa`` package's generated classes: tensors
(name, type, shape, constant data when asked), operators (name, inputs, outputs, location,
attributes) and the main block's inputs and outputs; plus the two byte-level edits that add
graph outputs (verify's debug copies) and name a cut-out segment's inputs and outputs.

Attributes are decoded by reflection over the generated attribute classes, never a table per
operator: every field accessor of the operator's attribute table, by its schema name in
snake case (``RoundingMode`` -> ``rounding_mode``). Vectors become lists of ints, strings
``str``, and a field whose type is one of the schema's enums (named ``<Field>``,
``<Operator><Field>`` or, for ``*Type``, ``DType``) its member's name as a ``Named``: a
``str`` that keeps the member's number in ``.code``. The placement rules, the error bounds
and the CPU graph writer all read these.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType

import numpy as np
from tosa.Attribute import Attribute
from tosa.DType import DType
from tosa.Op import Op
from tosa.TosaGraph import TosaGraph

from pipeline.errors import UnreadableInput
from pipeline.tosa.header import tosa_problem

_OP_NAMES = {v: k for k, v in vars(Op).items() if not k.startswith("_")}
_DTYPE_NAMES = {v: k.lower() for k, v in vars(DType).items() if not k.startswith("_")}
_ATTRIBUTE_NAMES = {v: k for k, v in vars(Attribute).items() if not k.startswith("_")}
_OUTPUTS_FIELD = 12  # vtable offset of TosaBasicBlock.outputs (tosa/TosaBasicBlock.py)
_CONSTANT_OPS = ("CONST", "CONST_SHAPE")


class Named(str):
    """An enum field's member name (``"SINGLE_ROUND"``) that keeps its number in ``code``."""

    code: int

    def __new__(cls, name: str, code: int) -> Named:
        named = super().__new__(cls, name)
        named.code = code
        return named


@dataclass(frozen=True)
class Tensor:
    dtype: str  # lower-case TOSA type: int8, int32, int48, shape, fp32, ...
    shape: tuple[int, ...]
    data: np.ndarray | None  # constants only (int48 as int64), in ``shape``; None unless asked
    name: str = ""


@dataclass(frozen=True)
class Operator:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict  # the attribute table's fields (module doc)
    location: str = ""  # "<FX node> @ <file>:<line> (<code>)" as the lowering wrote it


@dataclass(frozen=True)
class Resolved:
    """A computing operator with its tensors in place of their names (what rules read)."""

    op: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    location: str  # as ``Operator.location``, else its first output's name
    attrs: dict
    # The operator that wrote each input (None: a constant or a graph input).
    producers: tuple[Resolved | None, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class Block:
    tensors: dict[str, Tensor]
    operators: list[Operator]
    inputs: list[str]
    outputs: list[str]

    def resolved(self) -> list[Resolved]:
        """The computing operators (constants left out), in order, with their tensors."""
        done: list[Resolved] = []
        writer: dict[str, Resolved] = {}
        for op in self.operators:
            if op.op in _CONSTANT_OPS:
                continue
            tensors = [tuple(self.tensors.get(n) or Tensor("shape", (), None, n) for n in names)
                       for names in (op.inputs, op.outputs)]  # fmt: skip
            resolved = Resolved(op.op, *tensors, op.location or op.outputs[0], op.attrs,
                                tuple(writer.get(n) for n in op.inputs))
            done.append(resolved)
            writer.update(dict.fromkeys(op.outputs, resolved))
        return done


# --- attributes, by reflection over the generated classes -------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _enum(candidates: list[str]) -> dict[int, str] | None:
    """number -> member name of the first schema enum among ``candidates``, or None."""
    for name in candidates:
        try:
            enum = getattr(importlib.import_module(f"tosa.{name}"), name)
        except (ImportError, AttributeError):
            continue
        members = {v: k for k, v in vars(enum).items() if not k.startswith("_")}
        if members and all(isinstance(v, int) for v in members):
            return members
    return None


@functools.cache
def _reader(attribute_type: int):
    """(class, [(key, accessor, how, enum)]) of an attribute type; ``how``: scalar, numbers
    (a vector with ``AsNumpy``) or items (a vector read one by one)."""
    class_name = _ATTRIBUTE_NAMES.get(attribute_type, "")
    try:
        cls = getattr(importlib.import_module(f"tosa.{class_name}"), class_name)
    except (ImportError, AttributeError, ValueError):
        return None, []
    methods = {n for n, f in vars(cls).items() if isinstance(f, FunctionType)}
    prefix = class_name.removesuffix("Attribute")
    fields = []
    for name in sorted(methods):
        if not name[0].isupper() or name == "Init" or name.endswith(("Length", "IsNone",
                                                                          "AsNumpy")):
            continue
        how = ("numbers" if f"{name}AsNumpy" in methods else
               "items" if f"{name}Length" in methods else "scalar")  # fmt: skip
        dtype = ["DType"] if name.endswith("Type") else []
        fields.append((_snake(name), name, how, _enum([name, prefix + name, *dtype])))
    return cls, fields


def _value(table, accessor: str, how: str, enum):
    if how == "numbers":
        values = getattr(table, f"{accessor}AsNumpy")()
        return [int(v) for v in values.reshape(-1)] if isinstance(values, np.ndarray) else []
    if how == "items":
        items = [getattr(table, accessor)(j) for j in range(getattr(table, f"{accessor}Length")())]
        return [v.decode() if isinstance(v, bytes) else v for v in items]
    value = getattr(table, accessor)()
    if isinstance(value, bytes):
        return value.decode()
    if enum is not None and isinstance(value, int) and not isinstance(value, bool):
        return Named(enum.get(value, "UNKNOWN"), value)
    return value


def _attrs(raw) -> dict:
    """Every field of the operator's attribute table, by its snake-case schema name."""
    cls, fields = _reader(raw.AttributeType())
    table = raw.Attribute()
    if cls is None or table is None:
        return {}
    attribute = cls()
    attribute.Init(table.Bytes, table.Pos)
    return {key: _value(attribute, accessor, how, enum) for key, accessor, how, enum in fields}


# --- tensors and the block ---------------------------------------------------------------------
_NUMPY = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "shape": "<i8", "fp32": "<f4"}


def _data(tensor, dtype: str, shape: tuple[int, ...]) -> np.ndarray | None:
    if not tensor.DataLength():
        return None
    raw = tensor.DataAsNumpy()
    if dtype == "int48":  # 6 little-endian bytes, sign-extended
        six = raw.reshape(-1, 6).astype(np.int64)
        values = sum(six[:, i] << (8 * i) for i in range(6))
        return _frozen(np.where(values >= 1 << 47, values - (1 << 48), values).reshape(shape))
    if dtype not in _NUMPY:
        return None
    values = raw.view(_NUMPY[dtype])
    return _frozen(values.astype(np.float32 if dtype == "fp32" else np.int64).reshape(shape))


def _frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)  # blocks are shared (read_block): a write would leak
    return values


# What reading garbage through the generated accessors raises (they check no bounds).
_GARBAGE = (struct.error, IndexError, ValueError, TypeError, UnicodeDecodeError, KeyError,
            AttributeError, OverflowError, RecursionError, MemoryError)


def untrusted(read: Callable) -> Callable:
    """A reader of a TOSA file (its first argument) that fails with ``UnreadableInput``
    naming the file, never a traceback from the generated accessors, when the file is not
    a TOSA flatbuffer (a forged store entry, a file replaced by hand)."""

    @functools.wraps(read)
    def checked(path, *args, **kwargs):
        why = tosa_problem(Path(path))
        if why is not None:
            raise UnreadableInput(path, "a TOSA flatbuffer", why)
        try:
            return read(path, *args, **kwargs)
        except _GARBAGE as error:
            raise UnreadableInput(path, "a TOSA flatbuffer",
                                  f"unreadable bytes ({type(error).__name__}: {error})") from None

    return checked


def _main_block(path: Path):
    return TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)


def _tensors(block, data: bool) -> dict[str, Tensor]:
    tensors = {}
    for i in range(block.TensorsLength()):
        tensor = block.Tensors(i)
        name, dtype = tensor.Name().decode(), _DTYPE_NAMES.get(tensor.Type(), "unknown")
        shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        tensors[name] = Tensor(dtype, shape, _data(tensor, dtype, shape) if data else None, name)
    for i in range(block.ShapesLength()):  # CONST_SHAPE values live apart from tensors
        shape = block.Shapes(i)
        values = None
        if data and shape.DataLength():
            values = _frozen(shape.DataAsNumpy().view("<i8").astype(np.int64))
        name = shape.Name().decode()
        tensors[name] = Tensor("shape", (shape.Rank(),), values, name)
    return tensors


def _operator(raw) -> Operator:
    location = raw.Location()
    text = location.Text().decode() if location is not None and location.Text() else ""
    return Operator(
        _OP_NAMES.get(raw.Op(), "UNKNOWN"),
        tuple(raw.Inputs(j).decode() for j in range(raw.InputsLength())),
        tuple(raw.Outputs(j).decode() for j in range(raw.OutputsLength())),
        _attrs(raw),
        text,
    )


@untrusted
def read_block(path: Path, data: bool = True) -> Block:
    """Tensors (with constant data unless ``data`` is False), operators, inputs and outputs
    of the main block. Read once per file while its size and time hold: a stage asks for the
    same graph several times (placement per NPU family, verification), and a 6,000-operator
    graph takes seconds to walk. The block is shared: never change it."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if (key, data) in _BLOCKS:
        return _BLOCKS[(key, data)]
    block = _read_block(path, data)
    if len(_BLOCKS) >= _BLOCKS_KEPT:
        del _BLOCKS[next(iter(_BLOCKS))]
    _BLOCKS[(key, data)] = block
    return block


_BLOCKS: dict[tuple, Block] = {}  # (file identity, data) -> block, oldest first
_BLOCKS_KEPT = 4


def _read_block(path: Path, data: bool) -> Block:
    block = _main_block(path)
    return Block(
        _tensors(block, data),
        [_operator(block.Operators(i)) for i in range(block.OperatorsLength())],
        [block.Inputs(i).decode() for i in range(block.InputsLength())],
        [block.Outputs(i).decode() for i in range(block.OutputsLength())],
    )


def operator_names(path: Path) -> list[str]:
    """The operators of the first basic block of the main region, in order."""
    return [op.op for op in read_block(path, data=False).operators]


@untrusted
def version(path: Path) -> tuple[int, int, int, bool]:
    """(major, minor, patch, draft) the flatbuffer declares."""
    v = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Version()
    return v._Major(), v._Minor(), v._Patch(), v._Draft()


def rescale_input_types(path: Path) -> list[str]:
    """The input tensor type of every RESCALE (``int48`` ones use 16-bit multipliers)."""
    block = read_block(path, data=False)
    return [block.tensors[op.inputs[0]].dtype for op in block.operators if op.op == "RESCALE"]


def table_max_steps(path: Path) -> list[tuple[str, int]]:
    """Per TABLE operator, its table type and how far its output can move when its input
    moves by one: the largest difference between adjacent entries (int8), that over the 128
    input steps between entries (int16, interpolated), rounded up."""
    block = read_block(path)
    steps = []
    for op in block.operators:
        if op.op == "TABLE" and len(op.inputs) > 1:
            table = block.tensors[op.inputs[1]]
            values = table.data.reshape(-1) if table.data is not None else np.zeros(0, np.int64)
            step = int(np.abs(np.diff(values)).max()) if values.size > 1 else 0
            steps.append(("int16", -(-step // 128)) if table.dtype == "int16" else ("int8", step))
    return steps


def clamp_bounds(op: Operator, dtype: str) -> tuple[int, int] | None:
    """An integer CLAMP's (min_val, max_val), read back for a tensor of ``dtype`` (the
    attribute holds the input type's bytes, 8-byte padded)."""
    width = {"int8": 1, "int16": 2, "int32": 4}.get(dtype)
    raw = (op.attrs.get("min_val"), op.attrs.get("max_val"))
    if width is None or None in raw:
        return None
    low, high = (int.from_bytes(bytes(b[:width]), "little", signed=True) for b in raw)
    return low, high


# --- byte-level edits ------------------------------------------------------------------------


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


@untrusted
def with_outputs(path: Path, names: list[str]) -> bytes:
    """The flatbuffer of ``path`` with ``names`` (intermediate tensors) also graph outputs, so
    the reference model writes them.

    A flatbuffer refers forward only (unsigned offsets), so the new outputs vector and its
    strings are appended at the end and the block's ``outputs`` field is pointed at them;
    everything else stays byte for byte.
    """
    data = bytearray(Path(path).read_bytes())
    block = TosaGraph.GetRootAs(bytes(data), 0).Regions(0).Blocks(0)
    if not block._tab.Offset(_OUTPUTS_FIELD):
        raise ValueError(f"{path}: the main block must have an outputs vector; got none")
    current = [block.Outputs(i).decode() for i in range(block.OutputsLength())]
    set_main_block_strings(data, _OUTPUTS_FIELD, current + [n for n in names if n not in current])
    return bytes(data)
