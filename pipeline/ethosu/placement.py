"""Ethos-U operator constraints, checked on a TOSA flatbuffer before Vela runs.

Vela compiles TOSA without CPU fallback: an operator outside the NPU's constraints is a
compiler error (``Non-passthrough operation (AvgPool) could not run on NPU``) that names
neither the model line nor the rule. This check names both. The rules are Vela 5.2's own
(``vela --supported-ops-report``, TOSA sections), kept to those Vela does not work around
itself: it splits pooling/convolution strides above 3 and large kernels, for example, so
those are not errors here. Ethos-U85 takes the whole TOSA 1.0 PRO-INT profile; Ethos-U55
and -U65 add the rules below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tosa.ArgMaxAttribute import ArgMaxAttribute
from tosa.Attribute import Attribute
from tosa.AvgPool2dAttribute import AvgPool2dAttribute
from tosa.Conv2dAttribute import Conv2dAttribute
from tosa.DepthwiseConv2dAttribute import DepthwiseConv2dAttribute
from tosa.DType import DType
from tosa.Op import Op
from tosa.ReduceSumAttribute import ReduceSumAttribute
from tosa.ResizeAttribute import ResizeAttribute
from tosa.ResizeMode import ResizeMode
from tosa.TosaGraph import TosaGraph
from tosa.TransposeConv2dAttribute import TransposeConv2dAttribute

from pipeline.errors import UserError, see

_OP_NAMES = {v: k for k, v in vars(Op).items() if not k.startswith("_")}
_DTYPE_NAMES = {v: k.lower() for k, v in vars(DType).items() if not k.startswith("_")}
_RESIZE_MODES = {v: k for k, v in vars(ResizeMode).items() if not k.startswith("_")}
_FLOAT_TYPES = {"fp32", "fp16", "bf16", "fp8e4m3", "fp8e5m2"}
# Vela 5.2 "Ethos-U55 and Ethos-U65 TOSA Not Supported Operators".
U55_UNSUPPORTED = frozenset(
    {
        "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "BITWISE_NOT", "INTDIV", "LOGICAL_AND",
        "LOGICAL_RIGHT_SHIFT", "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT", "SELECT", "EQUAL",
        "GREATER", "GREATER_EQUAL", "REDUCE_ALL", "REDUCE_ANY", "GATHER", "SCATTER",
    }
)  # fmt: skip
MAX_PADDED_AVG_POOL_KERNEL = 8  # U55/U65 AVG_POOL2D with padding: kernel_x, kernel_y <= 8


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    values: tuple[int, ...] = ()  # a small integer constant's values (zero points, ...)


@dataclass(frozen=True)
class Operator:
    op: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    location: str  # "<FX node> @ <file>:<line> (<code>)" as the lowering wrote it
    attrs: dict = field(default_factory=dict)


def _avg_pool_attrs(raw) -> dict:
    table = AvgPool2dAttribute()
    table.Init(raw.Bytes, raw.Pos)
    return {
        "kernel": [table.Kernel(i) for i in range(table.KernelLength())],
        "pad": [table.Pad(i) for i in range(table.PadLength())],
    }


def _transpose_conv_attrs(raw) -> dict:
    table = TransposeConv2dAttribute()
    table.Init(raw.Bytes, raw.Pos)
    return {"stride": [table.Stride(i) for i in range(table.StrideLength())]}


def _conv_attrs(kind):
    def read(raw) -> dict:
        table = kind()
        table.Init(raw.Bytes, raw.Pos)
        return {"stride": [table.Stride(i) for i in range(table.StrideLength())],
                "pad": [table.Pad(i) for i in range(table.PadLength())]}  # fmt: skip

    return read


def _resize_attrs(raw) -> dict:
    table = ResizeAttribute()
    table.Init(raw.Bytes, raw.Pos)
    return {"mode": _RESIZE_MODES.get(table.Mode(), "UNKNOWN")}


def _reduce_sum_attrs(raw) -> dict:
    table = ReduceSumAttribute()
    table.Init(raw.Bytes, raw.Pos)
    return {"axis": table.Axis()}


def _argmax_attrs(raw) -> dict:
    table = ArgMaxAttribute()
    table.Init(raw.Bytes, raw.Pos)
    return {"axis": table.Axis()}


_SMALL_CONSTANT = {"int8": np.int8, "int16": np.int16, "int32": np.int32}


def _values(t, dtype: str) -> tuple[int, ...]:
    """The values of a constant of at most four integers (zero points, shifts)."""
    if dtype not in _SMALL_CONSTANT or t.DataIsNone() or t.DataLength() > 16:
        return ()
    data = np.frombuffer(t.DataAsNumpy().tobytes(), _SMALL_CONSTANT[dtype])
    return tuple(int(v) for v in data[:4])


def _note_producers(operators: list[Operator]) -> None:
    """REDUCE_SUM: whether its input is a RESCALE that subtracts a zero point (Vela then runs
    the pair as one CONV2D, with that operator's limits)."""
    producers = {t.name: op for op in operators for t in op.outputs}
    for op in operators:
        source = producers.get(op.inputs[0].name) if op.op == "REDUCE_SUM" else None
        if source is not None and source.op == "RESCALE" and len(source.inputs) > 3:
            op.attrs["input_zero_point"] = next(iter(source.inputs[3].values), 0)


def _tensor(tensors: dict, name: bytes) -> Tensor:
    """A tensor of the block, or a ``shape`` value (TOSA keeps those in a list of their own)."""
    return tensors.get(name.decode()) or Tensor(name.decode(), "shape", ())


def read_operators(path: Path) -> list[Operator]:
    """The operators of a TOSA flatbuffer's main block (constants left out) with their
    tensors and locations."""
    block = TosaGraph.GetRootAs(Path(path).read_bytes(), 0).Regions(0).Blocks(0)
    tensors = {}
    for i in range(block.TensorsLength()):
        t = block.Tensors(i)
        shape = tuple(t.Shape(j) for j in range(t.ShapeLength()))
        dtype = _DTYPE_NAMES[t.Type()]
        tensors[t.Name().decode()] = Tensor(t.Name().decode(), dtype, shape, _values(t, dtype))
    operators = []
    for i in range(block.OperatorsLength()):
        raw = block.Operators(i)
        if _OP_NAMES.get(raw.Op(), "").startswith("CONST"):
            continue
        location = raw.Location()
        text = location.Text().decode() if location is not None and location.Text() else ""
        attrs = {}
        if raw.AttributeType() == Attribute.AvgPool2dAttribute:
            attrs = _avg_pool_attrs(raw.Attribute())
        elif raw.AttributeType() == Attribute.ResizeAttribute:
            attrs = _resize_attrs(raw.Attribute())
        elif raw.AttributeType() == Attribute.TransposeConv2dAttribute:
            attrs = _transpose_conv_attrs(raw.Attribute())
        elif raw.AttributeType() == Attribute.Conv2dAttribute:
            attrs = _conv_attrs(Conv2dAttribute)(raw.Attribute())
        elif raw.AttributeType() == Attribute.DepthwiseConv2dAttribute:
            attrs = _conv_attrs(DepthwiseConv2dAttribute)(raw.Attribute())
        elif raw.AttributeType() == Attribute.ReduceSumAttribute:
            attrs = _reduce_sum_attrs(raw.Attribute())
        elif raw.AttributeType() == Attribute.ArgMaxAttribute:
            attrs = _argmax_attrs(raw.Attribute())
        operators.append(
            Operator(
                _OP_NAMES.get(raw.Op(), "UNKNOWN"),
                tuple(_tensor(tensors, raw.Inputs(j)) for j in range(raw.InputsLength())),
                tuple(_tensor(tensors, raw.Outputs(j)) for j in range(raw.OutputsLength())),
                text or raw.Outputs(0).decode(),
                attrs,
            )
        )
    _note_producers(operators)
    return operators


# A rule: (operator) -> (constraint it breaks, what it has) or None.
Rule = Callable[[Operator], "tuple[str, str] | None"]


def _integer_only(op: Operator):
    floats = sorted({t.dtype for t in (*op.inputs, *op.outputs) if t.dtype in _FLOAT_TYPES})
    if floats:
        return "use integer tensors only (TOSA PRO-INT)", f"{', '.join(floats)} tensors"
    return None


# Why the masking and lookup operators are missing there, and what to do instead.
# The U55/U65 variant rewrites masks (replace_bools_pass) and int8 lookups
# (replace_gather_pass); these name what it leaves.
_NO_MASKS = (
    "Ethos-U55/U65 have no comparison, logical or select operators, and their variant "
    "computes masks as integers only where no graph input or output is bool: pass masks as "
    "integer (0/1) inputs and return no bools"
)
_U55_INSTEAD = {
    **dict.fromkeys(("EQUAL", "GREATER", "GREATER_EQUAL", "SELECT", "LOGICAL_AND",
                     "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT"), _NO_MASKS),
    "GATHER": "Ethos-U55/U65 have no GATHER and their variant looks up int8 and int16 "
    "values only: look other rows up outside the model and pass the looked-up tensor as the "
    "input",
    "SCATTER": "Ethos-U55/U65 have no SCATTER and their variant writes rows at constant "
    "indices only: make the indices constants (a buffer, torch.arange) or write outside the "
    "model",
}  # fmt: skip


def _u55_supported(op: Operator):
    if op.op in U55_UNSUPPORTED:
        why = _U55_INSTEAD.get(op.op)
        return "be an operator Ethos-U55/U65 supports" + (f" ({why})" if why else ""), op.op
    return None


def _u55_no_bool(op: Operator):
    """Vela 5.2 runs no U55/U65 operator on bool tensors (CAST, TILE, RESHAPE, ...)."""
    if op.op not in U55_UNSUPPORTED and any(t.dtype == "bool" for t in (*op.inputs, *op.outputs)):
        return f"use no bool tensors ({_NO_MASKS})", "a bool tensor"
    return None


def _u55_avg_pool(op: Operator):
    if op.op != "AVG_POOL2D":
        return None
    kernel, pad = op.attrs.get("kernel", []), op.attrs.get("pad", [])
    if any(pad) and max(kernel) > MAX_PADDED_AVG_POOL_KERNEL:
        limit = MAX_PADDED_AVG_POOL_KERNEL
        must = f"have a kernel of at most {limit}x{limit} when it pads"
        return must, f"kernel {kernel[0]}x{kernel[1]} with pad {pad}"
    return None


def _u55_int8_only(op: Operator):
    # Vela's table lists TABLE as int8-only too, but Vela 5.2 compiles int16 TABLEs for U55.
    if op.op == "MATMUL" and any(t.dtype != "int8" for t in op.inputs[:2]):
        return "take int8 inputs", ", ".join(t.dtype for t in op.inputs[:2])
    return None


def _u55_transpose(op: Operator):
    if op.op == "TRANSPOSE" and op.inputs[0].dtype == "int32" and len(op.inputs[0].shape) > 4:
        return "have rank <= 4 for int32", f"rank {len(op.inputs[0].shape)}"
    return None


def _u55_resize(op: Operator):
    if op.op != "RESIZE":
        return None
    sizes = list(zip(op.inputs[0].shape[1:3], op.outputs[0].shape[1:3]))
    if any(o % i or o // i not in (2, 4, 8) for i, o in sizes):
        found = " and ".join(f"{i} to {o}" for i, o in sizes)
        return "upscale both axes by a power of two 2..8", found
    # Vela 5.2 lists BILINEAR (followed by a RESCALE) for U55/U65, yet rejects every valid
    # TOSA form of it ("Non-passthrough operation (Resize) could not run on NPU"). The U55/U65
    # variant has bilinear by 2/4/8 as NEAREST + DEPTHWISE_CONV2D (split_bilinear_resize_pass),
    # so after the factor rule above this only names a graph other than that variant.
    if op.attrs.get("mode") == "BILINEAR":
        return "use NEAREST mode (Vela 5.2 does not compile BILINEAR for it)", "BILINEAR"
    return None


def _u55_transpose_conv(op: Operator):
    # The U55/U65 variant splits strided and int16 ones into CONV2Ds
    # (split_transpose_conv_pass); these are the ones it could not.
    if op.op != "TRANSPOSE_CONV2D":
        return None
    if op.inputs[0].dtype != "int8":  # Vela 5.2 fuses no RESCALE into it: int48 stays
        return "take int8 input (Vela 5.2 cannot rescale its int48 accumulator)", op.inputs[0].dtype
    stride, (_, height, width, _) = op.attrs.get("stride", [1, 1]), op.inputs[0].shape
    kernel = op.inputs[1].shape[1:3]
    allowed = stride in ([1, 1], [2, 2]) or (stride == [1, 2] and height == kernel[0] == 1)
    if not allowed and not (stride == [2, 1] and width == kernel[1] == 1):
        return "have stride 1x1, 2x2, or 2 along a one-pixel axis", f"stride {stride}"
    return None


# What Vela 5.2 rejects on U55/U65 beyond its table's wording, each measured against Vela
# itself, found by benchmarks/bench_op_parity.py.
MAX_AXIS = 65536


def _u55_transpose_size(op: Operator):
    """Any axis over 65536 fails; from rank 5 so do three axes over 65536 elements together
    (Vela's table says 'any N-2 axes', but lets rank 4 pass with two axes of 300 and rank 6
    with four axes of 128,000 elements; three axes is where it fails, measured)."""
    if op.op != "TRANSPOSE":
        return None
    shape = op.inputs[0].shape
    if max(shape, default=1) > MAX_AXIS:
        return f"have no axis over {MAX_AXIS}", f"shape {list(shape)}"
    if len(shape) >= 5 and math.prod(sorted(shape)[-3:]) > MAX_AXIS:
        return f"have at most {MAX_AXIS} elements in any three axes from rank 5", (
            f"shape {list(shape)}"
        )
    return None


def _u55_reduce_sum(op: Operator):
    """Along a non-channel axis, the axes before it and the axes after it must each hold at
    most 65536 values (Vela's table); when the sum's input RESCALE subtracts a zero point Vela
    runs the pair as one CONV2D, and then the reduced axis must be at most 65536 too
    (measured: with zero point 0 it sums 140,000 values)."""
    if op.op != "REDUCE_SUM" or "axis" not in op.attrs:
        return None
    shape, axis = op.inputs[0].shape, op.attrs["axis"]
    before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    if axis != len(shape) - 1 and max(before, after) > MAX_AXIS:
        return f"have at most {MAX_AXIS} values before and after a non-channel axis it sums", (
            f"shape {list(shape)} summed along axis {axis}"
        )
    zero_point = op.attrs.get("input_zero_point", 0)
    if zero_point and shape[axis] > MAX_AXIS:
        return f"sum at most {MAX_AXIS} values of an input with a zero point", (
            f"{shape[axis]} values with zero point {zero_point}"
        )
    return None


def _u55_reduce_max_min(op: Operator):
    if op.op in ("REDUCE_MAX", "REDUCE_MIN") and op.inputs[0].dtype not in ("int8", "int16"):
        return "take int8 or int16 values", op.inputs[0].dtype
    return None


def _u55_resize_batch(op: Operator):
    """Vela runs a RESIZE as an upscaling AVG_POOL2D of batch 1 (it does not split the batch
    as it does for a pool of its own): 'Non-passthrough operation (AvgPool)'."""
    if op.op == "RESIZE" and op.inputs[0].shape[0] != 1:
        return "have batch 1", f"batch {op.inputs[0].shape[0]}"
    return None


def _u55_argmax(op: Operator):
    """Vela 5.2 runs ARGMAX on Ethos-U55/U65 of int8 values along the innermost (channel)
    axis only ('Non-passthrough operation (ArgMax)' otherwise, measured)."""
    if op.op == "ARGMAX" and op.inputs[0].dtype != "int8":
        return "take int8 values", op.inputs[0].dtype
    if op.op == "ARGMAX" and op.attrs.get("axis") != len(op.inputs[0].shape) - 1:
        return (
            "search the innermost axis",
            f"axis {op.attrs.get('axis')} of rank {len(op.inputs[0].shape)}",
        )
    return None


def _u55_left_shift(op: Operator):
    """Vela 5.2 shifts int32 only on Ethos-U55/U65 ('Non-passthrough operation (SHL)',
    measured); their variant shifts int8/int16 in int32 and wraps (replace_int_ops_pass)."""
    if op.op == "LOGICAL_LEFT_SHIFT" and op.inputs[0].dtype != "int32":
        return "shift int32 values", op.inputs[0].dtype
    return None


def _u55_large_stride(op: Operator):
    """Vela 5.2 runs no padded CONV2D and no DEPTHWISE_CONV2D at all with a stride over 3 on
    Ethos-U55/U65 (measured); their variant borders the input and makes the depthwise one a
    CONV2D (pad_strided_conv_pass)."""
    stride, pad = op.attrs.get("stride", [1, 1]), op.attrs.get("pad", [0, 0, 0, 0])
    if op.op == "DEPTHWISE_CONV2D" and max(stride) > 3:
        return "have strides of at most 3", f"stride {stride}"
    if op.op == "CONV2D" and max(stride) > 3 and any(pad):
        return "pad nothing when a stride is over 3", f"stride {stride} with pad {pad}"
    return None


_U55 = (
    _integer_only, _u55_supported, _u55_no_bool, _u55_avg_pool, _u55_int8_only,
    _u55_transpose, _u55_resize, _u55_transpose_conv, _u55_transpose_size, _u55_reduce_sum,
    _u55_reduce_max_min, _u55_resize_batch, _u55_argmax, _u55_left_shift, _u55_large_stride,
)  # fmt: skip
RULES: dict[str, tuple[Rule, ...]] = {
    "u55": _U55,
    "u65": _U55,
    "u85": (_integer_only,),
}


def family(accelerator: str) -> str:
    """``u55``, ``u65`` or ``u85`` of an accelerator name like ``ethos-u55-128``."""
    parts = accelerator.split("-")
    if len(parts) != 3 or parts[1] not in RULES:
        raise UserError(
            f"accelerator must be ethos-<{'|'.join(RULES)}>-<macs>; got {accelerator!r}"
        )
    return parts[1]


def violations(operators: list[Operator], accelerator: str) -> Iterator[str]:
    """One message per broken rule: ``<location>: TOSA <OP> on <accelerator> must ...``."""
    for op in operators:
        for rule in RULES[family(accelerator)]:
            broken = rule(op)
            if broken:
                must, got = broken
                yield f"{op.location}: TOSA {op.op} on {accelerator} must {must}; got {got}"


def check_npu_constraints(tosa: Path, accelerator: str, where: str = "") -> None:
    """Raise if any operator of ``tosa`` breaks ``accelerator``'s constraints (all listed).

    Raises:
        UserError: every violation, each naming the FX node, its source line, the target
            NPU and the constraint.
    """
    found = list(violations(read_operators(tosa), accelerator))
    if found:
        prefix = f"{where}: " if where else ""
        raise UserError(
            f"{prefix}{len(found)} operator(s) outside the {accelerator} constraints of "
            "Vela (no CPU fallback for TOSA):\n  " + "\n  ".join(found)
            + f"\n  {see('docs/errors.md#npu-placement')}"
        )
