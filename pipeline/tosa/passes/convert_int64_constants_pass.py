"""Narrow int64 constants to int32: TOSA has no int64 tensors (index and shape constants that
torch keeps as int64 fit int32 in practice; one that does not is an error, never a wrap)."""

from __future__ import annotations

import torch
from torch import fx

from pipeline.errors import UserError
from pipeline.tosa.passes.context import PassContext

_INT32 = torch.iinfo(torch.int32)


def run(gm: fx.GraphModule, ctx: PassContext) -> None:
    for node in gm.graph.nodes:
        value = node.meta.get("const")
        if value is None or value.dtype != torch.int64 or not node.users:
            continue
        if value.numel() and (value.min() < _INT32.min or value.max() > _INT32.max):
            raise UserError(
                f"{ctx.where}: {node.name}: int64 constant values must fit int32 "
                f"[{_INT32.min}, {_INT32.max}]; got [{int(value.min())}, "
                f"{int(value.max())}]"
            )
        node.meta["const"] = value.to(torch.int32)
