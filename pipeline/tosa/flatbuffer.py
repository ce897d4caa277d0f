"""Read back a TOSA flatbuffer (operator list, version) with the ``tosa`` schema classes."""

from __future__ import annotations

from pathlib import Path

from tosa.DType import DType
from tosa.Op import Op
from tosa.TosaGraph import TosaGraph

_OP_NAMES = {v: k for k, v in vars(Op).items() if not k.startswith("_")}
_DTYPE_NAMES = {v: k.lower() for k, v in vars(DType).items() if not k.startswith("_")}


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
    import numpy as np

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
