"""Read a lowered TOSA flatbuffer into what the CPU graph writer needs: tensors with constant
data, and operators whose scalar operands (zero points, MUL's shift, SLICE/PAD/RESIZE shapes)
are folded into integer attrs (``graph_format.ATTRS`` lists them per operator)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tosa.TosaGraph import TosaGraph

from pipeline.errors import UserError
from pipeline.tosa import flatbuffer
from pipeline.tosa.serialize import attribute_method

# Operand positions that are scalars or shapes: constants turned into attrs.
_FOLDED = {
    "CONV2D": (3, 4), "DEPTHWISE_CONV2D": (3, 4), "TRANSPOSE_CONV2D": (3, 4), "MATMUL": (2, 3),
    "AVG_POOL2D": (1, 2), "RESCALE": (3, 4), "MUL": (2,), "NEGATE": (1, 2), "PAD": (1, 2),
    "SLICE": (1, 2), "RESHAPE": (1,), "TILE": (1,), "RESIZE": (1, 2, 3),
}  # fmt: skip
_ACCESSOR_SKIP = {"Init", "GetRootAs", "GetRootAsAttribute"}


class CpuGraphError(UserError):
    """The TOSA graph cannot become a CPU graph (an operator or type the kernels lack)."""


@dataclass(frozen=True)
class CpuTensor:
    dtype: str
    shape: tuple[int, ...]
    data: np.ndarray | None


@dataclass(frozen=True)
class CpuOp:
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: tuple[int, ...]


@dataclass(frozen=True)
class CpuTosaGraph:
    tensors: dict[str, CpuTensor]
    ops: list[CpuOp]
    inputs: list[str]
    outputs: list[str]


def _attribute_fields(raw_op, op: str) -> dict:
    """Every field of the operator's attribute table by its schema name (vectors as arrays)."""
    table = raw_op.Attribute()
    if table is None:
        return {}
    name = attribute_method(op)
    try:
        cls = getattr(importlib.import_module(f"tosa.{name}"), name)
    except (ImportError, AttributeError):
        return {}
    attribute = cls()
    attribute.Init(table.Bytes, table.Pos)
    fields = {}
    for accessor in dir(cls):
        if (not accessor[0].isupper() or accessor in _ACCESSOR_SKIP or accessor.endswith(
                ("Length", "IsNone")) or accessor.startswith(name)):
            continue
        if accessor.endswith("AsNumpy"):
            value = getattr(attribute, accessor)()
            fields[accessor[: -len("AsNumpy")]] = value if isinstance(value, np.ndarray) else []
        elif accessor + "AsNumpy" not in dir(cls):
            try:
                fields[accessor] = getattr(attribute, accessor)()
            except TypeError:  # a builder function, not an accessor
                continue
    return fields


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _scalar(tensors: dict, name: str, where: str) -> list[int]:
    tensor = tensors[name]
    if tensor.data is None:
        raise CpuGraphError(f"{where}: operand {name} must be a constant; got a computed tensor")
    return _ints(tensor.data)


def _attrs(op: str, fields: dict, folded: list[list[int]], in_dtype: str, rank: int) -> list[int]:
    f = fields
    if op in ("CONV2D", "DEPTHWISE_CONV2D"):
        return [*_ints(f["Pad"]), *_ints(f["Stride"]), *_ints(f["Dilation"]),
                folded[0][0], folded[1][0]]  # fmt: skip
    if op == "TRANSPOSE_CONV2D":
        return [*_ints(f["OutPad"]), *_ints(f["Stride"]), folded[0][0], folded[1][0]]
    if op == "MATMUL":
        return [folded[0][0], folded[1][0]]
    if op == "AVG_POOL2D":
        return [*_ints(f["Kernel"]), *_ints(f["Stride"]), *_ints(f["Pad"]),
                folded[0][0], folded[1][0]]  # fmt: skip
    if op == "MAX_POOL2D":
        return [*_ints(f["Kernel"]), *_ints(f["Stride"]), *_ints(f["Pad"])]
    if op == "RESCALE":
        return [int(f["Scale32"]), int(f["RoundingMode"]), int(f["PerChannel"]), folded[0][0],
                folded[1][0], int(f["InputUnsigned"]), int(f["OutputUnsigned"])]
    if op == "CLAMP":
        width = {"int8": 1, "int16": 2, "int32": 4}[in_dtype]
        return [int.from_bytes(np.asarray(f[k], np.uint8).tobytes()[:width], "little",
                               signed=True) for k in ("MinVal", "MaxVal")]  # fmt: skip
    if op == "MUL":
        return [folded[0][0]]
    if op == "ARITHMETIC_RIGHT_SHIFT":
        return [int(f["Round"])]
    if op == "NEGATE":
        return [folded[0][0], folded[1][0]]
    if op in ("ARGMAX", "CONCAT", "REVERSE") or op.startswith("REDUCE_"):
        return [int(f["Axis"])]
    if op == "SLICE":
        return folded[0]
    if op == "PAD":
        return [*folded[0], folded[1][0]]
    if op == "TRANSPOSE":
        return _ints(f["Perms"])
    if op == "RESIZE":
        return [int(f["Mode"]), *folded[0], *folded[1], *folded[2]]
    return []


def read_graph(path: Path) -> CpuTosaGraph:
    """The main block of ``path`` as tensors and CPU operators (see the module doc)."""
    block = flatbuffer.read_block(path)
    raw = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)
    tensors = {n: CpuTensor(t.dtype, t.shape, t.data) for n, t in block.tensors.items()}
    ops = []
    for i, op in enumerate(block.operators):
        if op.op in ("CONST", "CONST_SHAPE"):
            continue
        where = f"{path}: operator {i} ({op.op})"
        folded_at = _FOLDED.get(op.op, ())
        folded = [_scalar(tensors, op.inputs[j], where) for j in folded_at if j < len(op.inputs)]
        kept = tuple(n for j, n in enumerate(op.inputs) if j not in folded_at)
        in_dtype = tensors[op.inputs[0]].dtype if op.inputs else ""
        if op.op == "RESCALE":
            fields = _attribute_fields(raw.Operators(i), op.op)
            mask = 0xFF if in_dtype == "int8" else 0xFFFF
            if fields.get("InputUnsigned"):
                folded[0] = [folded[0][0] & mask]
            out_dtype = tensors[op.outputs[0]].dtype
            if fields.get("OutputUnsigned"):
                folded[1] = [folded[1][0] & (0xFF if out_dtype == "int8" else 0xFFFF)]
        else:
            fields = _attribute_fields(raw.Operators(i), op.op)
        rank = len(tensors[op.inputs[0]].shape) if op.inputs else 0
        attrs = _attrs(op.op, fields, folded, in_dtype, rank)
        ops.append(CpuOp(op.op, kept, op.outputs, tuple(attrs)))
    return CpuTosaGraph(tensors, ops, block.inputs, block.outputs)
