"""``index_put`` with ``accumulate=True`` (``x.index_put_((i, j), v, accumulate=True)``,
``x[idx] += v`` written as an accumulating put): the sum as a product with a one-hot matrix.

With the indexed dims flattened to ``K`` rows (``x`` seen as ``[N, K, C]``) and the ``W``
written rows' values as ``[N, W, C]``, the rows added are ``onehot.T @ values``, where
``onehot[w, k]`` is 1 when write ``w`` goes to row ``k``: repeated indices add up, as torch's
accumulate does. The one-hot is a comparison of the flat row numbers with ``arange(K)``, cast
to float (exactly 0 and 1 in any quantization); the product a MATMUL (for integer tensors, which
TOSA multiplies elementwise only, a MUL and a REDUCE_SUM over the writes), the sum an ADD - all
of them quantized and verified like any other layer, on every Ethos-U (the comparison is
integer arithmetic in the Ethos-U55/U65 variant).
"""

from __future__ import annotations

import math

import torch


def index_put(x, indices, values, accumulate=False):
    if not accumulate:
        return NotImplemented
    given = [i for i, index in enumerate(indices) if index is not None]
    if given != list(range(given[0], given[-1] + 1)) if given else True:
        return NotImplemented
    chosen = [indices[i] for i in given]
    if any(index.dtype == torch.bool for index in chosen):
        return NotImplemented
    first, count, shape = given[0], len(given), tuple(x.shape)
    dims = shape[first : first + count]
    rows = None
    for index, size in zip(torch.broadcast_tensors(*chosen), dims):
        index = torch.where(index < 0, index + size, index)  # torch wraps negative indices
        rows = index if rows is None else rows * size + index
    written = tuple(rows.shape)
    w, k = math.prod(written), math.prod(dims)
    n, c = math.prod(shape[:first]), math.prod(shape[first + count :])
    onehot = (rows.reshape(w, 1) == torch.arange(k, device=x.device)).to(x.dtype)
    placed = values.expand(*shape[:first], *written, *shape[first + count :]).reshape(n, w, c)
    if x.is_floating_point():
        added = torch.matmul(onehot.t(), placed)  # [K, W] @ [N, W, C] -> [N, K, C]
    else:  # integers: TOSA has no int32 MATMUL; the products summed over the writes
        added = (onehot.reshape(1, w, k, 1) * placed.reshape(n, w, 1, c)).sum(1)
    return x + added.reshape(shape)


index_put.applies = lambda node: bool(
    node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False)
)

DECOMPOSITIONS = {torch.ops.aten.index_put.default: index_put}
