"""What a visitor sees while lowering one FX node: the TOSA graph under construction, the spec,
the TOSA tensor of every FX value, and helpers for constants, shapes and user errors.

FX node metadata the passes leave for visitors:
  ``meta["val"]``            torch's fake tensor (torch shape, float dtype before quantization)
  ``meta["const"]``          the tensor value of a constant (parameter, buffer, folded weight)
  ``meta["qparams"]``        ``QParams`` of the node's integer output (absent: float tensor)
  ``meta["tosa_dim_order"]`` permutation from torch dims to TOSA dims (NHWC for 4-D tensors)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import fx

from pipeline.errors import UnsupportedOperatorError
from pipeline.fx import source_of, target_name
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.quant_math import QParams
from pipeline.tosa.spec import TosaSpec

_TORCH_TO_TOSA = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    # TOSA has no int64: int64 values (ids, masks, indices) are int32 in the graph and in io.json
    # (constants are narrowed with a range check by convert_int64_constants_pass).
    torch.int64: "int32",
    torch.bool: "bool",
}


def dim_order(node: fx.Node) -> tuple[int, ...]:
    rank = len(node.meta["val"].shape)
    return tuple(node.meta.get("tosa_dim_order", range(rank)))


def torch_shape(node: fx.Node) -> tuple[int, ...]:
    return tuple(int(d) for d in node.meta["val"].shape)


def tosa_shape(node: fx.Node) -> tuple[int, ...]:
    shape = torch_shape(node)
    return tuple(shape[d] for d in dim_order(node))


@dataclass
class LoweringContext:
    graph: TosaGraph
    spec: TosaSpec
    where: str
    tensors: dict[fx.Node, str] = field(default_factory=dict)

    # --- errors -------------------------------------------------------------------------------
    def node_where(self, node: fx.Node, with_source: bool = False) -> str:
        """``<where>: <node>`` (and `` (<file>:<line> ...)`` for errors that do not add it)."""
        text = f"{self.where}: {node.name}" if self.where else node.name
        source = source_of(node) if with_source else ""
        return f"{text} ({source})" if source else text

    def unsupported(
        self, node: fx.Node, detail: str = "", allowed: str = "", hint: str = ""
    ) -> UnsupportedOperatorError:
        """An error naming the op (and what about it is unsupported) and the user's line."""
        op = target_name(node.target) + (f" with {detail}" if detail else "")
        return UnsupportedOperatorError(self.node_where(node), op, source_of(node), allowed, hint)

    def location(self, node: fx.Node) -> str:
        source = source_of(node)
        return f"{node.name} @ {source}" if source else node.name

    # --- values --------------------------------------------------------------------------------
    def qparams(self, node: fx.Node) -> QParams | None:
        return node.meta.get("qparams")

    def dtype(self, node: fx.Node) -> str:
        """TOSA type of the node's output: the quantized type, else torch's own dtype."""
        qparams = self.qparams(node)
        if qparams is not None:
            return qparams.dtype
        if "const" in node.meta:
            return _TORCH_TO_TOSA.get(node.meta["const"].dtype, str(node.meta["const"].dtype))
        return _TORCH_TO_TOSA.get(node.meta["val"].dtype, str(node.meta["val"].dtype))

    def const_value(self, node: fx.Node) -> torch.Tensor | None:
        return node.meta.get("const") if isinstance(node, fx.Node) else None

    def tensor(self, node: fx.Node) -> str:
        """The TOSA tensor of an FX value; constants are materialized on first use."""
        if node not in self.tensors:
            value = self.const_value(node)
            if value is None:
                raise KeyError(f"{node.name} was used before it was lowered")
            data = value.detach().numpy().transpose(dim_order(node))
            self.tensors[node] = self.graph.add_const(
                node.name, data, self.dtype(node), self.node_where(node, True)
            )
        return self.tensors[node]

    def define(self, node: fx.Node, dtype: str | None = None, shape=None) -> str:
        """Create (and record) the TOSA output tensor of ``node``."""
        name = self.graph.add_tensor(
            node.name,
            tosa_shape(node) if shape is None else shape,
            dtype or self.dtype(node),
            self.node_where(node, True),
        )
        self.tensors[node] = name
        return name

    def const(self, hint: str, data, dtype: str) -> str:
        return self.graph.add_const(hint, np.asarray(data), dtype)

    def zero_point(self, hint: str, value: int, dtype: str) -> str:
        """A one-element zero-point constant (TOSA 1.0 passes zero points as inputs)."""
        return self.const(hint, [0.0 if dtype.startswith(("fp", "bf")) else value], dtype)

    def emit(self, op: str, inputs: list[str], outputs: list[str], node: fx.Node, **attrs):
        return self.graph.add_op(op, inputs, outputs, self.location(node), **attrs)

    def temp(self, node: fx.Node, suffix: str, shape, dtype: str) -> str:
        where = self.node_where(node, True)
        return self.graph.add_tensor(f"{node.name}_{suffix}", shape, dtype, where)
