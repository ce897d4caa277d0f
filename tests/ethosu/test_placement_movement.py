"""Indexing, scatter and data-movement operators compiled by Vela: every operator on the NPU
of Ethos-U85-256 and of Ethos-U55-128 (its variant: constant-row GATHER/SCATTER as one-hot
CONV2Ds or SLICEs + CONCAT, REVERSE of the W axis, strided slices as pooling), int8 and
a16w8; what U55 cannot run (writes at run-time indices) is named with the model line.
``-s`` prints Vela's cycles (NPU, total) per case (docs/operators.md's cycles come from benchmarks/bench_operators.py)."""

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from pipeline.errors import UserError
from pipeline.ethosu.vela import run_vela
from pipeline.chain.vela import vela_args
from tests.tosa.lowering_cases import A16W8, INT8, integers, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]


class Fn(nn.Module):
    """lowering_cases.Fn's twin, kept here on purpose: the U55 errors must name a line of this
    file."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def write_rows(x, v):
    x = x.clone()
    x[:, torch.arange(0, 64, 2)] = v  # constant rows, many runs: SCATTER / one-hot CONV2D
    return x


def write_strided(x, y):
    x = x.clone()
    x[:, 1::2] += y
    return x


def write_column(x, v):
    x = x.clone()
    x[:, 0] = v
    return x


def write_at(x, i, v):
    x = x.clone()
    x[i] = v
    return x


TOKENS = (1, 64, 32)
# name -> (function, input specs, what Ethos-U55 says: None when it runs there)
CASES = {
    "index_constant_rows": (lambda x: x[:, torch.tensor([5, 0, 9, 3])], [TOKENS], None),
    "index_runtime_rows": (lambda x, i: x[:, i], [TOKENS, integers((8,), 64)], None),
    "index_bool_constant": (lambda x: x[:, torch.arange(64) % 3 == 0], [TOKENS], None),
    "index_select_runtime": (lambda x, i: x.index_select(1, i), [TOKENS, integers((8,), 64)],
                             None),
    "gather_dim1": (lambda x, i: torch.gather(x, 1, i), [TOKENS, integers((1, 8, 32), 64)],
                    None),
    "index_put_constant": (write_rows, [TOKENS, (1, 32, 32)], None),
    "index_put_runtime": (write_at, [(64, 32), lambda g: torch.randperm(64, generator=g)[:8],
                                     (8, 32)], "TOSA SCATTER .* constant indices"),
    "index_copy": (lambda x, v: x.index_copy(1, torch.tensor([3, 9, 20]), v),
                   [TOKENS, (1, 3, 32)], None),
    "slice_step2": (lambda x: x[:, ::2], [TOKENS], None),
    "slice_step2_channels": (lambda x: x[:, 1::2], [(1, 16, 8, 8)], None),
    "slice_scatter_strided": (write_strided, [TOKENS, (1, 32, 32)], None),
    "select_scatter": (write_column, [TOKENS, (1, 32)], None),
    "unfold": (lambda x: x.unfold(1, 4, 2), [TOKENS], None),
    "flip_tokens": (lambda x: x.flip(1), [TOKENS], None),
    "flip_channels": (lambda x: x.flip(1), [(1, 16, 8, 8)], None),
    "repeat": (lambda x: x.repeat(1, 2, 1), [TOKENS], None),
    "expand": (lambda x: x.mean(1, keepdim=True).expand(-1, 64, -1), [TOKENS], None),
    "stack": (lambda x, y: torch.stack([x, y], 1), [TOKENS, TOKENS], None),
    "pixel_shuffle": (lambda x: nn.functional.pixel_shuffle(x, 2), [(1, 16, 8, 8)], None),
    "pixel_unshuffle": (lambda x: nn.functional.pixel_unshuffle(x, 2), [(1, 4, 16, 16)], None),
    "unflatten": (lambda x: x.unflatten(2, (4, 8)), [TOKENS], None),
    "select_copy": (lambda x: torch.select_copy(x, 1, 3), [TOKENS], None),
    "cumsum_tokens": (lambda x: torch.cumsum(x, 1), [TOKENS], None),
    "cumsum_channels": (lambda x: torch.cumsum(x, -1), [TOKENS], None),
    "roll": (lambda x: torch.roll(x, 5, 1), [TOKENS], None),
    "narrow": (lambda x: x.narrow(1, 3, 40), [TOKENS], None),
    "split_uneven": (lambda x: x.split([10, 20, 34], 1)[2], [TOKENS], None),
    "tril": (lambda x: torch.tril(x), [(1, 32, 32)], None),
}  # fmt: skip


@pytest.fixture(scope="module", params=[(n, d) for n in CASES for d in (INT8, A16W8)],
                ids=lambda p: f"{p[0]}-{p[1]}")  # fmt: skip
def lowered(request, tmp_path_factory):
    name, dtype = request.param
    fn, shapes, _ = CASES[name]
    folder = tmp_path_factory.mktemp(f"{name}_{dtype}")
    return name, dtype, lower_case(Fn(fn), shapes, folder, dtype, spec="TOSA-1.0+INT+int16")


def _cycles(outputs) -> str:
    figures = json.loads(outputs["figures"].read_text())
    return f"{figures['cycles_npu']} npu / {figures['cycles_total']} total"


def test_ethos_u85_runs_everything(lowered, tmp_path):
    name, dtype, case = lowered
    outputs = run_vela(case.variant("u85"), tmp_path, vela_args("ethos-u85-256"), where=name)
    print(name, dtype, "ethos-u85-256", _cycles(outputs))


def test_ethos_u55_runs_or_names_the_rule(lowered, tmp_path):
    name, dtype, case = lowered
    refused = CASES[name][2]
    if refused is None:
        outputs = run_vela(case.variant("u55"), tmp_path, vela_args("ethos-u55-128"), where=name)
        print(name, dtype, "ethos-u55-128", _cycles(outputs))
        return
    with pytest.raises(UserError, match=refused) as error:
        run_vela(case.variant("u55"), tmp_path, vela_args("ethos-u55-128"), where=name)
    assert Path(__file__).name in str(error.value)  # the model line
