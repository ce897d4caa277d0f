"""Write a ``TosaGraph`` as a TOSA flatbuffer with the ``tosa_serializer`` bindings.

The only module that talks to the serializer. Operator attributes are stored in the graph as
plain values keyed by the serializer's argument names; the attribute method is derived from
the operator name (``MAX_POOL2D`` -> ``MaxPool2dAttribute``), so a new operator needs no
change here unless it carries a new kind of enum-valued attribute.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tosa_serializer as ts

from pipeline.tosa.graph import Operator, TosaGraph

_DTYPES = {
    "bool": ts.DType.BOOL,
    "int4": ts.DType.INT4,
    "int8": ts.DType.INT8,
    "int16": ts.DType.INT16,
    "int32": ts.DType.INT32,
    "int48": ts.DType.INT48,
    "fp16": ts.DType.FP16,
    "bf16": ts.DType.BF16,
    "fp32": ts.DType.FP32,
    "shape": ts.DType.SHAPE,
}
# Attribute method names that do not follow CamelCase of the operator name.
_ATTRIBUTE_NAMES = {
    "MATMUL": "MatMulAttribute",
    "INTDIV": "IntDivAttribute",
    "ARGMAX": "ArgMaxAttribute",
}
# Attribute values stored as strings in the graph and converted to serializer enums here.
_ENUM_ATTRS = {
    "acc_type": lambda v: _DTYPES[v],
    "rounding_mode": lambda v: getattr(ts.RoundingMode, v),
    "nan_mode": lambda v: getattr(ts.NanPropagationMode, v),
    "mode": lambda v: getattr(ts.ResizeMode, v),
}
# CLAMP bounds are raw bytes of the input type, padded to 8 bytes like the TOSA tools do.
_BYTE_ATTRS = ("min_val", "max_val")


def attribute_method(op: str) -> str:
    if op in _ATTRIBUTE_NAMES:
        return _ATTRIBUTE_NAMES[op]
    return "".join(part.capitalize() for part in op.split("_")) + "Attribute"


def _as_bytes(value, dtype: str) -> list[int]:
    data = list(ts.TosaSerializer.convertDataToUint8Vec(_DTYPES[dtype], [value]))
    return data + [0] * (-len(data) % 8)


def _attribute(graph: TosaGraph, operator: Operator) -> ts.TosaSerializerAttribute:
    kwargs = {}
    for key, value in operator.attrs.items():
        if key in _ENUM_ATTRS:
            value = _ENUM_ATTRS[key](value)
        elif key in _BYTE_ATTRS:
            value = _as_bytes(value, graph.tensors[operator.inputs[0]].dtype)
        kwargs[key] = value
    attribute = ts.TosaSerializerAttribute()
    getattr(attribute, attribute_method(operator.op))(**kwargs)
    return attribute


def _const_values(data: np.ndarray, dtype: str) -> list:
    flat = data.reshape(-1)
    return [bool(v) for v in flat] if dtype == "bool" else flat.tolist()


def serialize(graph: TosaGraph) -> bytes:
    """The flatbuffer bytes of ``graph`` for its spec's TOSA version (never a draft)."""
    major, minor = graph.spec.major_minor
    ser = ts.TosaSerializer(
        "", targetMajor=major, targetMinor=minor, targetPatch=0, targetDraft=False
    )
    block = ser.currRegion.currBasicBlock
    for name in graph.inputs:
        tensor = graph.tensors[name]
        ser.addInputTensor(ts.TosaSerializerTensor(name, list(tensor.shape), _DTYPES[tensor.dtype]))
    for tensor in graph.tensors.values():
        if tensor.name in graph.inputs:
            continue
        if tensor.is_const:
            ser.addConst(
                list(tensor.shape),
                _DTYPES[tensor.dtype],
                _const_values(tensor.data, tensor.dtype),
                tensor.name,
            )
        else:
            block.addTensor(tensor.name, list(tensor.shape), _DTYPES[tensor.dtype])
    for operator in graph.operators:
        location = ts.TosaOpLocation(operator.location) if operator.location else None
        ser.addOperator(
            getattr(ts.Op, operator.op),
            operator.inputs,
            operator.outputs,
            _attribute(graph, operator),
            location,
        )
    for name in graph.outputs:
        block.addOutput(name)
    return ser.serialize()


def write(graph: TosaGraph, path: Path) -> None:
    """Serialize ``graph`` to ``path`` (atomically: temp file + rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(serialize(graph))
    tmp.replace(path)
