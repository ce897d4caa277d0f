"""The CPU graph (``.tcg``): a lowered INT TOSA graph in the compact form the kernel library
(``runtime/tosa_cpu``) runs, with its memory plan computed here, ahead of time.

Layout (little-endian, every field 32 bits; docs/artifacts.md#cpu-graph-tcg is the reference):

    header   64 B  magic "TCPU", version, file bytes, arena bytes, tensor count + offset,
                   op count + offset + bytes, input count + offset, output count + offset,
                   constants offset + bytes, reserved
    tensors  44 B each: dtype (TOSA DType number), rank, shape[6], storage (0 arena,
                   1 constant), offset (in the arena or the constants section), bytes
    ops      variable: op (TOSA Op number), n_inputs, n_outputs, n_attrs, tensor indices
                   (inputs then outputs), attrs (int32, per operator: ``ATTRS`` below)
    inputs, outputs   tensor indices
    constants         raw little-endian data, 16-byte aligned; int48 stored as int64

Scalars that TOSA 1.0 passes as tensors (zero points, MUL's shift, shapes of SLICE, PAD, RESIZE)
become attrs; tensor operands (weights, bias, RESCALE multiplier/shift, TABLE) stay tensors.
Activations live in one arena: each gets a 16-byte aligned offset, and two share bytes only when
their lifetimes (producer .. last consumer; graph inputs from the start, outputs to the end)
do not overlap - greedy first fit, largest first. RESHAPE and IDENTITY copy (no aliasing).
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.cpu.tosa_read import CpuGraphError, CpuOp, CpuTensor, CpuTosaGraph, read_graph

MAGIC = b"TCPU"
VERSION = 1
MAX_RANK = 6
ALIGN = 16
HEADER = struct.Struct("<4s15I")
TENSOR = struct.Struct(f"<2I{MAX_RANK}i3I")
DTYPES = {"bool": 1, "int8": 3, "int16": 4, "int32": 5, "int48": 6}
ITEMSIZE = {"bool": 1, "int8": 1, "int16": 2, "int32": 4, "int48": 8}
NUMPY = {"bool": "|b1", "int8": "<i1", "int16": "<i2", "int32": "<i4", "int48": "<i8"}
ARENA, CONSTANT = 0, 1
MAX_INPUTS, MAX_OUTPUTS = 16, 4  # operands of one operator (runtime/tosa_cpu/src/graph.cc)
# TOSA Op numbers (tosa/Op.py of tosa-tools 1.0; the C++ side mirrors them in ops.h).
OPS = {
    "ARGMAX": 1, "AVG_POOL2D": 2, "CONV2D": 3, "DEPTHWISE_CONV2D": 5, "MATMUL": 7,
    "MAX_POOL2D": 8, "TRANSPOSE_CONV2D": 10, "CLAMP": 11, "ADD": 15,
    "ARITHMETIC_RIGHT_SHIFT": 16, "BITWISE_AND": 17, "BITWISE_OR": 18, "BITWISE_XOR": 19,
    "INTDIV": 20, "LOGICAL_AND": 21, "LOGICAL_LEFT_SHIFT": 22, "LOGICAL_RIGHT_SHIFT": 23,
    "LOGICAL_OR": 24, "LOGICAL_XOR": 25, "MAXIMUM": 26, "MINIMUM": 27, "MUL": 28, "SUB": 30,
    "TABLE": 31, "ABS": 32, "BITWISE_NOT": 33, "CLZ": 35, "LOGICAL_NOT": 40, "NEGATE": 41,
    "SELECT": 45, "EQUAL": 46, "GREATER": 47, "GREATER_EQUAL": 48, "REDUCE_ALL": 49,
    "REDUCE_ANY": 50, "REDUCE_MAX": 51, "REDUCE_MIN": 52,
    "REDUCE_SUM": 54, "CONCAT": 55, "PAD": 56, "RESHAPE": 57, "REVERSE": 58, "SLICE": 59,
    "TILE": 60, "TRANSPOSE": 61, "GATHER": 62, "SCATTER": 63, "RESIZE": 64, "CAST": 65,
    "RESCALE": 66, "IDENTITY": 68,
}  # fmt: skip
# Per operator: the attrs words in order (documented in docs/artifacts.md); ops not listed have none.
ATTRS = {
    "CONV2D": "pad[4] stride[2] dilation[2] input_zp weight_zp",
    "DEPTHWISE_CONV2D": "pad[4] stride[2] dilation[2] input_zp weight_zp",
    "TRANSPOSE_CONV2D": "out_pad[4] stride[2] input_zp weight_zp",
    "MATMUL": "a_zp b_zp",
    "AVG_POOL2D": "kernel[2] stride[2] pad[4] input_zp output_zp",
    "MAX_POOL2D": "kernel[2] stride[2] pad[4]",
    "RESCALE": "scale32 rounding_mode per_channel input_zp output_zp input_unsigned "
               "output_unsigned",
    "CLAMP": "min max",
    "MUL": "shift",
    "ARITHMETIC_RIGHT_SHIFT": "round",
    "NEGATE": "input_zp output_zp",
    "ARGMAX": "axis", "CONCAT": "axis", "REVERSE": "axis",
    "REDUCE_ALL": "axis", "REDUCE_ANY": "axis", "REDUCE_MAX": "axis", "REDUCE_MIN": "axis",
    "REDUCE_SUM": "axis",
    "SLICE": "start[rank]",
    "PAD": "padding[2*rank] pad_const",
    "TRANSPOSE": "perms[rank]",
    "RESIZE": "mode scale[4] offset[2] border[2]",
}  # fmt: skip


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str  # bool, int8, int16, int32, int48 (int48 stored as int64)


@dataclass(frozen=True)
class CpuGraphInfo:
    """What a CPU graph needs and holds (report.json takes it as ``asdict``)."""

    version: int
    file_bytes: int
    arena_bytes: int
    constant_bytes: int
    tensor_bytes: int  # every activation's size summed: what the arena would be unplanned
    op_counts: dict[str, int]
    inputs: list[TensorInfo] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)


def _align(value: int, to: int = ALIGN) -> int:
    return -(-value // to) * to


def _nbytes(tensor: CpuTensor) -> int:
    return int(np.prod(tensor.shape, dtype=np.int64)) * ITEMSIZE[tensor.dtype]


def plan_arena(tensors: dict[str, CpuTensor], ops: list[CpuOp], inputs: list[str],
               outputs: list[str]) -> tuple[dict[str, int], int]:
    """Arena offset of every non-constant tensor and the arena size (see the module doc)."""
    first, last = {}, {}
    for name in inputs:
        first[name] = last[name] = -1
    for step, op in enumerate(ops):
        for name in op.inputs:
            if tensors[name].data is None:
                last[name] = step
        for name in op.outputs:
            first.setdefault(name, step)
            last[name] = max(last.get(name, step), step)
    for name in outputs:
        last[name] = len(ops)
    order = sorted(first, key=lambda n: (-_nbytes(tensors[n]), first[n], n))
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    offsets, arena = {}, 0
    for name in order:
        size = _align(max(_nbytes(tensors[name]), 1))
        busy = sorted((o, e) for o, e, f, la in placed if f <= last[name] and first[name] <= la)
        offset = 0
        for start, end in busy:
            if offset + size <= start:
                break
            offset = max(offset, end)
        offsets[name] = offset
        placed.append((offset, offset + size, first[name], last[name]))
        arena = max(arena, offset + size)
    return offsets, arena


def check_supported(tensors: dict[str, CpuTensor], ops: list[CpuOp], where: str) -> None:
    """Every operator, operand count, tensor type and rank the kernels run, else all of what
    they do not, at once.

    Raises:
        CpuGraphError: names each operator/tensor the kernel library does not run.
    """
    problems = [f"{op.op}" for op in ops if op.op not in OPS]
    problems += [f"{op.op} with {len(op.inputs)} inputs (at most {MAX_INPUTS})" for op in ops
                 if len(op.inputs) > MAX_INPUTS]  # fmt: skip
    problems += [f"{op.op} with {len(op.outputs)} outputs (at most {MAX_OUTPUTS})" for op in ops
                 if len(op.outputs) > MAX_OUTPUTS]  # fmt: skip
    used = {n for op in ops for n in (*op.inputs, *op.outputs)}
    problems += [f"tensor {name} of type {tensors[name].dtype}" for name in sorted(used)
                 if tensors[name].dtype not in DTYPES]  # fmt: skip
    problems += [f"tensor {name} of rank {len(tensors[name].shape)}" for name in sorted(used)
                 if len(tensors[name].shape) > MAX_RANK]  # fmt: skip
    if problems:
        allowed = ", ".join(sorted(OPS))
        raise CpuGraphError(
            f"{where}: every operator and tensor must be one the CPU kernels run (INT profile "
            f"operators {allowed}; types {', '.join(DTYPES)}; rank <= {MAX_RANK}); got "
            + ", ".join(sorted(set(problems)))
        )


def encode(tosa: Path | CpuTosaGraph, where: str = "") -> tuple[bytes, CpuGraphInfo]:
    """The CPU graph bytes of ``tosa`` (a TOSA flatbuffer, or a graph ``read_graph`` made and
    a caller may have cut into segments) and their info.

    Raises:
        CpuGraphError: an operator, type or rank the kernel library does not run.
    """
    if isinstance(tosa, CpuTosaGraph):
        graph, where = tosa, where or "cpu graph"
    else:
        graph, where = read_graph(Path(tosa)), where or str(tosa)
    check_supported(graph.tensors, graph.ops, where)
    offsets, arena = plan_arena(graph.tensors, graph.ops, graph.inputs, graph.outputs)
    used = {n for op in graph.ops for n in (*op.inputs, *op.outputs)}
    used |= set(graph.inputs) | set(graph.outputs)
    names = [n for n in graph.tensors if n in used]
    index = {n: i for i, n in enumerate(names)}

    constants = bytearray()
    records = []
    for name in names:
        tensor = graph.tensors[name]
        shape = list(tensor.shape) + [0] * (MAX_RANK - len(tensor.shape))
        if tensor.data is not None:
            constants += bytes(-len(constants) % ALIGN)
            storage, offset = CONSTANT, len(constants)
            constants += np.ascontiguousarray(tensor.data, dtype=NUMPY[tensor.dtype]).tobytes()
        elif name in offsets:
            storage, offset = ARENA, offsets[name]
        else:
            raise CpuGraphError(f"{where}: tensor {name} must be an input, a constant or an "
                                "operator output; got a tensor nothing writes")
        records.append(TENSOR.pack(DTYPES[tensor.dtype], len(tensor.shape), *shape, storage,
                                   offset, _nbytes(tensor)))

    op_words = bytearray()
    for op in graph.ops:
        op_words += struct.pack(f"<4I{len(op.inputs) + len(op.outputs)}I{len(op.attrs)}i",
                                OPS[op.op], len(op.inputs), len(op.outputs), len(op.attrs),
                                *(index[n] for n in (*op.inputs, *op.outputs)), *op.attrs)

    tensors_off = HEADER.size
    ops_off = tensors_off + TENSOR.size * len(records)
    inputs_off = ops_off + len(op_words)
    outputs_off = inputs_off + 4 * len(graph.inputs)
    const_off = _align(outputs_off + 4 * len(graph.outputs))
    total = const_off + len(constants)
    header = HEADER.pack(MAGIC, VERSION, total, arena, len(records), tensors_off,
                         len(graph.ops), ops_off, len(op_words), len(graph.inputs), inputs_off,
                         len(graph.outputs), outputs_off, const_off, len(constants), 0)
    body = b"".join([header, *records, op_words,
                     struct.pack(f"<{len(graph.inputs)}I", *(index[n] for n in graph.inputs)),
                     struct.pack(f"<{len(graph.outputs)}I", *(index[n] for n in graph.outputs))])
    blob = body + bytes(const_off - len(body)) + bytes(constants)

    def info(name: str) -> TensorInfo:
        return TensorInfo(name, graph.tensors[name].shape, graph.tensors[name].dtype)

    activations = sum(_nbytes(graph.tensors[n]) for n in offsets)
    return blob, CpuGraphInfo(
        VERSION, len(blob), arena, len(constants), activations,
        dict(Counter(op.op for op in graph.ops)),
        [info(n) for n in graph.inputs], [info(n) for n in graph.outputs],
    )  # fmt: skip


def write_cpu_graph(tosa: Path | CpuTosaGraph, out: Path, where: str = "") -> CpuGraphInfo:
    """Write the CPU graph of ``tosa`` (a path or a ``CpuTosaGraph``) to ``out`` (atomically)
    and return its info.

    Raises:
        CpuGraphError: an operator, type or rank the kernel library does not run.
    """
    blob, info = encode(tosa, where)
    tmp = Path(out).with_name(Path(out).name + ".tmp")
    tmp.write_bytes(blob)
    tmp.replace(out)
    return info


def read_header(path: Path) -> dict:
    """The header fields of a CPU graph file (checks magic and version)."""
    data = Path(path).read_bytes()
    if len(data) < HEADER.size or data[:4] != MAGIC:
        raise CpuGraphError(f"{path}: a CPU graph must start with {MAGIC!r}; got {data[:4]!r}")
    fields = HEADER.unpack_from(data)
    keys = ("version file_bytes arena_bytes tensors tensors_offset ops ops_offset ops_bytes "
            "inputs inputs_offset outputs outputs_offset constants_offset constants_bytes "
            "reserved").split()
    header = dict(zip(keys, fields[1:]))
    if header["version"] != VERSION:
        raise CpuGraphError(f"{path}: CPU graph version must be {VERSION}; "
                            f"got {header['version']}")
    return header
