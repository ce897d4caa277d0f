"""Read a lowered TOSA flatbuffer into what the CPU graph writer needs: tensors with constant
data, and operators whose scalar operands (zero points, MUL's shift, SLICE/PAD/RESIZE shapes)
are folded into integer attrs (``graph_format.ATTRS`` lists them per operator)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.errors import UserError
from pipeline.tosa import flatbuffer

# Operand positions that are scalars or shapes: constants turned into attrs.
_FOLDED = {
    "CONV2D": (3, 4), "DEPTHWISE_CONV2D": (3, 4), "TRANSPOSE_CONV2D": (3, 4), "MATMUL": (2, 3),
    "AVG_POOL2D": (1, 2), "RESCALE": (3, 4), "MUL": (2,), "NEGATE": (1, 2), "PAD": (1, 2),
    "SLICE": (1, 2), "RESHAPE": (1,), "TILE": (1,), "RESIZE": (1, 2, 3),
}  # fmt: skip


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


def _ints(values) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _scalar(tensors: dict, name: str, where: str) -> list[int]:
    tensor = tensors[name]
    if tensor.data is None:
        raise CpuGraphError(f"{where}: operand {name} must be a constant; got a computed tensor")
    return _ints(tensor.data)


def _code(value) -> int:
    """An enum field's number (``flatbuffer.Named``), or the field itself as an int."""
    return value.code if isinstance(value, flatbuffer.Named) else int(value)


def _attrs(op: str, f: dict, folded: list[list[int]], in_dtype: str) -> list[int]:
    """The integer attrs ``graph_format.ATTRS`` lists for ``op``, from its attribute fields
    (``flatbuffer``'s snake-case names) and its folded scalar operands."""
    if op in ("CONV2D", "DEPTHWISE_CONV2D"):
        return [*_ints(f["pad"]), *_ints(f["stride"]), *_ints(f["dilation"]),
                folded[0][0], folded[1][0]]  # fmt: skip
    if op == "TRANSPOSE_CONV2D":
        return [*_ints(f["out_pad"]), *_ints(f["stride"]), folded[0][0], folded[1][0]]
    if op == "MATMUL":
        return [folded[0][0], folded[1][0]]
    if op == "AVG_POOL2D":
        return [*_ints(f["kernel"]), *_ints(f["stride"]), *_ints(f["pad"]),
                folded[0][0], folded[1][0]]  # fmt: skip
    if op == "MAX_POOL2D":
        return [*_ints(f["kernel"]), *_ints(f["stride"]), *_ints(f["pad"])]
    if op == "RESCALE":
        return [int(f["scale32"]), _code(f["rounding_mode"]), int(f["per_channel"]),
                folded[0][0], folded[1][0], int(f["input_unsigned"]), int(f["output_unsigned"])]
    if op == "CLAMP":
        width = {"int8": 1, "int16": 2, "int32": 4}[in_dtype]
        return [int.from_bytes(np.asarray(f[k], np.uint8).tobytes()[:width], "little",
                               signed=True) for k in ("min_val", "max_val")]  # fmt: skip
    if op == "MUL":
        return [folded[0][0]]
    if op == "ARITHMETIC_RIGHT_SHIFT":
        return [int(f["round"])]
    if op == "NEGATE":
        return [folded[0][0], folded[1][0]]
    if op in ("ARGMAX", "CONCAT", "REVERSE") or op.startswith("REDUCE_"):
        return [int(f["axis"])]
    if op == "SLICE":
        return folded[0]
    if op == "PAD":
        return [*folded[0], folded[1][0]]
    if op == "TRANSPOSE":
        return _ints(f["perms"])
    if op == "RESIZE":
        return [_code(f["mode"]), *folded[0], *folded[1], *folded[2]]
    return []


def read_graph(path: Path) -> CpuTosaGraph:
    """The main block of ``path`` as tensors and CPU operators (see the module doc)."""
    block = flatbuffer.read_block(path)
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
        if op.op == "RESCALE":  # unsigned zero points: the codes of the unsigned type
            if op.attrs.get("input_unsigned"):
                folded[0] = [folded[0][0] & (0xFF if in_dtype == "int8" else 0xFFFF)]
            out_dtype = tensors[op.outputs[0]].dtype
            if op.attrs.get("output_unsigned"):
                folded[1] = [folded[1][0] & (0xFF if out_dtype == "int8" else 0xFFFF)]
        attrs = _attrs(op.op, op.attrs, folded, in_dtype)
        ops.append(CpuOp(op.op, kept, op.outputs, tuple(attrs)))
    return CpuTosaGraph(tensors, ops, block.inputs, block.outputs)
