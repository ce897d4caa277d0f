"""Split a lowered TOSA graph into NPU and CPU segments (``npu: {fallback: cpu}``).

Placement: an operator runs on the NPU unless it breaks one of the NPU's rules
(``placement.broken``: the generic rules and those its operator file declares, the same rules
that fail a build without fallback), or a tensor it
shares with a CPU operator is not int8, int16 or int32 (a Vela network's inputs and outputs are
of those types): it reads such a tensor from a CPU operator, or writes one a CPU operator
reads (repeated until nothing moves). Segments are maximal runs of one placement in the
graph's (topological) operator order. Each segment becomes a TOSA flatbuffer of its own, cut
out of the original bytes (``subgraph``): its operators and the constants they read, with the
tensors that cross its border as the sub-graph's inputs and outputs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from tosa.TosaGraph import TosaGraph

from pipeline.tosa import flatbuffer
from pipeline.ethosu.placement import broken, family, read_operators

# vtable offsets of TosaBasicBlock's fields (tosa/TosaBasicBlock.py): 4 + 2 * field index.
_OPERATORS, _TENSORS, _INPUTS, _OUTPUTS, _SHAPES = 6, 8, 10, 12, 14
_CONSTANT_OPS = ("CONST", "CONST_SHAPE")
# Tensor types a Vela network takes as an input.
_NPU_INPUT_TYPES = ("int8", "int16", "int32")


@dataclass(frozen=True)
class Placed:
    index: int  # position among the graph's non-constant operators
    op: str
    location: str
    outputs: tuple[str, ...]
    runs_on: str  # "npu" or "cpu"
    reason: str  # why it runs on the CPU ("" on the NPU)


@dataclass(frozen=True)
class Segment:
    runs_on: str
    ops: tuple[Placed, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def place(tosa: Path, accelerator: str, known: list | None = None) -> list[Placed]:
    """Where each operator of ``tosa`` runs on ``accelerator`` with CPU fallback, and why
    (``known``: ``placement.verdicts(tosa, family)`` when already computed)."""
    name = family(accelerator)
    operators = read_operators(tosa)
    if known is None:
        known = [broken(op, name) for op in operators]
    reasons = [[f"must {must}; got {got}" for must, got in rules] for rules in known]
    types = f"{', '.join(_NPU_INPUT_TYPES)}"
    moved = True
    while moved:  # each pass moves at least one operator to the CPU, or ends
        moved = False
        written = {t.name: i for i, op in enumerate(operators) for t in op.outputs}
        for i, op in enumerate(operators):
            if reasons[i]:
                continue
            for t in op.inputs:
                j = written.get(t.name)
                if j is not None and reasons[j] and t.dtype not in _NPU_INPUT_TYPES:
                    reasons[i].append(f"reads {t.dtype} tensor {t.name} from a CPU operator "
                                      f"(an NPU segment's inputs must be {types})")
            for t in op.outputs:
                readers = [k for k, o in enumerate(operators) if reasons[k] and k != i
                           and any(x.name == t.name for x in o.inputs)]
                if readers and t.dtype not in _NPU_INPUT_TYPES:
                    reasons[i].append(f"writes {t.dtype} tensor {t.name} a CPU operator reads "
                                      f"(an NPU segment's outputs must be {types})")
            moved = moved or bool(reasons[i])
    return [Placed(i, op.op, op.location, tuple(t.name for t in op.outputs),
                   "cpu" if reasons[i] else "npu", "; ".join(reasons[i]))
            for i, op in enumerate(operators)]


def segments(tosa: Path, placed: list[Placed]) -> list[Segment]:
    """Maximal runs of one placement, with the tensors crossing each one's border (graph
    inputs/outputs in graph order first, then the others in the order they are written)."""
    block = flatbuffer.read_block(tosa)
    ops = [op for op in block.operators if op.op not in _CONSTANT_OPS]
    runs: list[list[int]] = []
    for p in placed:
        if runs and placed[runs[-1][0]].runs_on == p.runs_on:
            runs[-1].append(p.index)
        else:
            runs.append([p.index])
    done = []
    for run in runs:
        inside = set(run)
        written = [n for i in run for n in ops[i].outputs]
        read = [n for i in run for n in ops[i].inputs
                if block.tensors[n].data is None and n not in written]
        later = {n for i, op in enumerate(ops) if i not in inside and i > run[-1]
                 for n in op.inputs}
        inputs = [n for n in block.inputs if n in read]
        inputs += [n for n in dict.fromkeys(read) if n not in inputs]
        outputs = [n for n in block.outputs if n in written]
        outputs += [n for n in written if n in later and n not in outputs]
        done.append(Segment(placed[run[0]].runs_on, tuple(placed[i] for i in run),
                            tuple(inputs), tuple(outputs)))
    return done


def _shrink(data: bytearray, field: int, keep: list[int]) -> None:
    """Rewrite a vector of offsets in place to the ``keep`` elements (by index): it only
    shrinks, so each kept element's slot moves to an earlier place and its offset (which
    points forward) stays positive."""
    tab = TosaGraph.GetRootAs(bytes(data), 0).Regions(0).Blocks(0)._tab
    vector = tab.Vector(tab.Offset(field))
    targets = [vector + 4 * i + struct.unpack_from("<I", data, vector + 4 * i)[0] for i in keep]
    struct.pack_into("<I", data, vector - 4, len(keep))
    for j, target in enumerate(targets):
        struct.pack_into("<I", data, vector + 4 * j, target - (vector + 4 * j))


def subgraph(tosa: Path, segment: Segment) -> bytes:
    """The flatbuffer of one segment: its operators, the constant operators whose outputs
    they read, the tensors those use, and the segment's inputs and outputs."""
    raw = Path(tosa).read_bytes()
    block = flatbuffer.read_block(tosa)
    computed = [i for i, op in enumerate(block.operators) if op.op not in _CONSTANT_OPS]
    chosen = {computed[p.index] for p in segment.ops}
    used = {n for i in chosen for n in (*block.operators[i].inputs, *block.operators[i].outputs)}
    keep_ops = [i for i, op in enumerate(block.operators)
                if i in chosen or (op.op in _CONSTANT_OPS and set(op.outputs) & used)]
    names = TosaGraph.GetRootAs(raw, 0).Regions(0).Blocks(0)
    tensor_names = [names.Tensors(i).Name().decode() for i in range(names.TensorsLength())]
    keep_tensors = [i for i, n in enumerate(tensor_names) if n in used]
    # The reference model refuses a graph with a tensor or shape nothing uses.
    keep_shapes = [i for i in range(names.ShapesLength())
                   if names.Shapes(i).Name().decode() in used]
    data = bytearray(raw)
    _shrink(data, _OPERATORS, keep_ops)
    _shrink(data, _TENSORS, keep_tensors)
    if names.ShapesLength():
        _shrink(data, _SHAPES, keep_shapes)
    flatbuffer.set_main_block_strings(data, _INPUTS, list(segment.inputs))
    flatbuffer.set_main_block_strings(data, _OUTPUTS, list(segment.outputs))
    return bytes(data)
