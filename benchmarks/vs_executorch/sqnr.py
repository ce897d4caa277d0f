"""SQNR against the float model: of a program run by torch, and of their TOSA graph run in
the TOSA reference model (ours comes from our verify stage's report)."""

from __future__ import annotations

import math
from pathlib import Path

from .models import as_tuple


def sqnr_db(reference, estimate) -> float:
    import numpy as np

    reference, estimate = np.asarray(reference, np.float64), np.asarray(estimate, np.float64)
    noise = float(np.sum((reference - estimate) ** 2))
    if noise == 0.0:
        return math.inf
    return 10.0 * math.log10(max(float(np.sum(reference**2)), 1e-30) / noise)


def varying_share(float_fn, inputs: list) -> float:
    """The share of the first output's power that changes from input to input. Near 0 the
    output is a constant, and its SQNR measures how that constant happens to round."""
    import torch

    with torch.no_grad():
        out = torch.stack([as_tuple(float_fn(*s))[0].double() for s in inputs])
    power = float((out**2).mean())
    return float(out.var(dim=0, unbiased=False).mean()) / power if power else 0.0


def torch_sqnr(float_fn, quantized_fn, inputs: list) -> float:
    """SQNR (dB) of ``quantized_fn`` against ``float_fn`` over every input, the minimum over
    outputs."""
    import numpy as np
    import torch

    with torch.no_grad():
        ref = [[r.detach().double().numpy() for r in as_tuple(float_fn(*s))] for s in inputs]
        got = [[r.detach().double().numpy() for r in as_tuple(quantized_fn(*s))]
               for s in inputs]
    return min(sqnr_db(np.concatenate([r[i].reshape(-1) for r in ref]),
                        np.concatenate([g[i].reshape(-1) for g in got]))
               for i in range(len(ref[0])))


def _tosa_io(path: Path) -> tuple[list[tuple[str, list[int]]], list[tuple[str, list[int]]]]:
    """(name, shape) of the TOSA graph's inputs and outputs."""
    from tosa.TosaGraph import TosaGraph

    block = TosaGraph.GetRootAs(path.read_bytes(), 0).Regions(0).Blocks(0)
    tensors = {block.Tensors(i).Name().decode(): block.Tensors(i)
               for i in range(block.TensorsLength())}

    def shaped(name: bytes):
        name = name.decode()
        return name, [int(d) for d in tensors[name].ShapeAsNumpy()]

    return ([shaped(block.Inputs(i)) for i in range(block.InputsLength())],
            [shaped(block.Outputs(i)) for i in range(block.OutputsLength())])


def _to_layout(array, shape: list[int]):
    """``array`` (torch order) as ``shape``: unchanged, or NCHW -> NHWC when that fits."""
    import numpy as np

    if list(array.shape) == shape:
        return array
    if array.ndim == 4 and list(np.transpose(array, (0, 2, 3, 1)).shape) == shape:
        return np.transpose(array, (0, 2, 3, 1))
    raise ValueError(f"TOSA tensor shape {shape} fits neither {list(array.shape)} nor NHWC")


def _from_layout(array, torch_shape: list[int]):
    import numpy as np

    if list(array.shape) == list(torch_shape):
        return array
    if array.ndim == 4:
        back = np.transpose(array, (0, 3, 1, 2))
        if list(back.shape) == list(torch_shape):
            return back
    raise ValueError(f"TOSA output shape {list(array.shape)} does not fit {torch_shape}")


def their_tosa_sqnr(tosa: Path, in_q, out_dq, float_fn, samples) -> float | None:
    """Their TOSA graph in the TOSA reference model vs the float model, or None if the IO
    cannot be matched (partial delegation, a boundary that is not a plain q / dq)."""
    import numpy as np
    import torch

    from pipeline.verify.reference_model import run_reference_model

    if not in_q or not out_dq or None in in_q or None in out_dq:
        return None
    inputs, outputs = _tosa_io(tosa)
    if len(inputs) != len(in_q) or len(outputs) != len(out_dq):
        return None
    got, ideal = [[] for _ in outputs], [[] for _ in outputs]
    for sample in samples:
        feeds = {}
        for (name, shape), x, (scale, zp, qmin, qmax) in zip(inputs, sample, in_q):
            q = np.clip(np.round(x.double().numpy() / scale) + zp, qmin, qmax).astype(np.int8)
            feeds[name] = _to_layout(q, shape)
        result = run_reference_model(tosa, feeds, [n for n, _ in outputs], where="bench/theirs")
        with torch.no_grad():
            reference = [r.detach().double().numpy() for r in as_tuple(float_fn(*sample))]
        for i, ((name, _), (scale, zp, _, _)) in enumerate(zip(outputs, out_dq)):
            values = _from_layout(result[name], list(reference[i].shape))
            got[i].append(((values.astype(np.float64) - zp) * scale).reshape(-1))
            ideal[i].append(reference[i].reshape(-1))
    return min(sqnr_db(np.concatenate(f), np.concatenate(g)) for f, g in zip(ideal, got))
