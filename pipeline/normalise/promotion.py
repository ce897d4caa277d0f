"""Type promotion made explicit: an integer or bool tensor that an elementwise operator
computes with in float (``x + torch.ones(n, dtype=torch.int64)``, ``torch.eye(n,
dtype=torch.int32) + x``, ``ids * 0.5``, ``torch.div(x_int8, 9.5, rounding_mode="floor")``,
``x < int_tensor``) is converted by a ``_to_copy`` of its own, which is what torch does
inside the operator (``torch.result_type``).

Every later stage then sees operands of one type: a constant converted so is folded into a
float constant (``constants.py``) that the quantizer gives exact qparams
(``pipeline/quant/constants.py``), a run-time integer tensor becomes a float of its own
quantization (``op_cast.py``: int8/int16 ones keep their integers as codes). Without this an
operator would meet a float value and an unquantized integer tensor at once.
"""

from __future__ import annotations

import torch
from torch import fx

COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
# Operator -> positions of its operands that take part in torch's type promotion.
_PAIR = (0, 1)
PROMOTING = {
    **{f"aten.{op}.Tensor": _PAIR for op in ("add", "sub", "mul", "div", "remainder", "fmod",
                                             *COMPARISONS)},
    "aten.div.Tensor_mode": _PAIR,
    "aten.rsub.Tensor": _PAIR,
    "aten.pow.Tensor_Tensor": _PAIR,
    "aten.minimum.default": _PAIR,
    "aten.maximum.default": _PAIR,
    "aten.atan2.default": _PAIR,
    "aten.where.self": (1, 2),
}  # fmt: skip


def _operands(node: fx.Node) -> list:
    positions = PROMOTING.get(str(node.target), ()) if node.op == "call_function" else ()
    return [node.args[i] for i in positions if i < len(node.args)]


def _value(arg):
    return arg.meta.get("val") if isinstance(arg, fx.Node) else arg


def _promoted(node: fx.Node) -> list[tuple[fx.Node, torch.dtype]]:
    """The integer/bool tensor operands of ``node`` that torch converts to a float type."""
    operands = list(dict.fromkeys(_operands(node)))  # x * x: one operand
    values = [_value(a) for a in operands]
    if len(values) != 2 or not all(isinstance(v, (torch.Tensor, int, float)) for v in values):
        return []  # x * x, or an operand of no known type
    tensors = sum(isinstance(v, torch.Tensor) for v in values)
    if tensors == 0 or (tensors == 1 and str(node.target).split(".")[1] in COMPARISONS):
        return []  # ids > 2.5 compares integers exactly (op_compare.py)
    dtype = torch.result_type(*values)
    if not dtype.is_floating_point:
        return []
    return [(a, dtype) for a, v in zip(operands, values)
            if isinstance(v, torch.Tensor) and not v.dtype.is_floating_point]  # fmt: skip


def promotions(gm: fx.GraphModule) -> list[fx.Node]:
    """The nodes ``promote_operands`` would rewrite."""
    return [n for n in gm.graph.nodes if _promoted(n)]


def promote_operands(gm: fx.GraphModule) -> int:
    """Give every integer/bool operand that an elementwise operator promotes to float a
    ``_to_copy`` to that type; returns how many were inserted."""
    count = 0
    for node in promotions(gm):
        for operand, dtype in _promoted(node):
            with gm.graph.inserting_before(node):
                cast = gm.graph.call_function(
                    torch.ops.aten._to_copy.default, (operand,), {"dtype": dtype}
                )
            cast.meta.update(
                {k: v for k, v in node.meta.items() if k in ("stack_trace", "nn_module_stack")},
                val=operand.meta["val"].to(dtype),
            )
            node.replace_input_with(operand, cast)
            count += 1
    return count
