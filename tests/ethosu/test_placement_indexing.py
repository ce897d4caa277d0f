"""Masks, lookups and integer tensors compiled by Vela: Ethos-U85-256 places every operator
on the NPU; Ethos-U55-128 does too (additive masks from integer inputs, TILE, integer-to-float
casts, and in its variant masks as int32 0/1 and int8 lookups as one-hot products), and the
pre-Vela check names the rule and the model line where it has not (bool graph inputs and
outputs)."""

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from models import cases
from pipeline.errors import UserError
from pipeline.ethosu.vela import run_vela
from pipeline.chain.vela import vela_args
from tests.tosa.lowering_cases import booleans, integers, lower_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela]

SCORES, T = ((1, 2, 16, 16), 4.0), 16
MASK = booleans((1, T), dtype=torch.int64)  # an int64 attention mask
NO_MASKS = "no comparison, logical or select operators"


class Fn(cases.Fn):
    """models.cases.Fn with its forward in this file, on purpose: the U55 errors must name a
    line of this file, and the operators run in Fn.forward."""

    def forward(self, *xs):
        return self.fn(self.layers, *xs)


def _additive(m, scores, mask):
    return torch.softmax(scores + (1.0 - mask[:, None, None, :].float()) * -10000.0, -1)


def _eager(m, scores, mask):
    bias = torch.where(mask.bool()[:, None, None, :], 0.0, torch.finfo(torch.float32).min)
    return torch.softmax(scores + bias, -1)


# name -> (module, input specs, what Ethos-U55 says: None when it runs there)
CASES = {
    "masked_fill_softmax": (
        Fn(lambda m, s, k: s.masked_fill(k[:, None, None, :] == 0, -1e9).softmax(-1)),
        [SCORES, MASK],
        None,
    ),
    "additive_mask_from_int64": (Fn(_additive), [SCORES, MASK], None),
    "hf_eager_mask": (Fn(_eager), [SCORES, MASK], None),
    "token_and_position_embedding": (
        Fn(lambda m, ids: m[0](ids) + m[1](torch.arange(ids.shape[1])),
           nn.Embedding(100, 32, padding_idx=0), nn.Embedding(T, 32)),
        [integers((1, T), 100)],
        None,
    ),
    "gather_tokens": (
        Fn(lambda m, x, i: x.gather(1, i[..., None].expand(-1, -1, 32))),
        [(1, T, 32), integers((1, 4), T)],
        None,
    ),
    "index_select_rows": (Fn(lambda m, x, i: x.index_select(1, i)), [(1, T, 32), integers((6,), T)],
                          None),
    "compare_ids": (Fn(lambda m, ids: (ids != 0) & (ids < 50)), [integers((1, T), 100)],
                    "TOSA EQUAL .* " + NO_MASKS),  # a bool output
    "compare_ids_as_mask": (Fn(lambda m, x, ids: x * ((ids != 0) & (ids < 50)).float()),
                            [(1, T), integers((1, T), 100)], None),
    "repeat_expand": (
        Fn(lambda m, x: x.repeat(1, 2, 1) + x.mean(1, keepdim=True).expand(-1, 2 * T, -1)),
        [(1, T, 32)],
        None,
    ),
    "mask_to_float": (Fn(lambda m, x, k: x * k.float()), [(1, T), MASK], None),
    "expand_bool_mask": (Fn(lambda m, k: k[:, None, :].expand(1, T, T)), [booleans((1, T))],
                         "TOSA .* must use no bool tensors"),
}  # fmt: skip


@pytest.fixture(scope="module", params=list(CASES))
def lowered(request, tmp_path_factory):
    module, shapes, _ = CASES[request.param]
    return request.param, lower_case(module, shapes, tmp_path_factory.mktemp(request.param))


def test_ethos_u85_runs_everything(lowered, tmp_path):
    name, case = lowered
    outputs = run_vela(case.variant("u85"), tmp_path, vela_args("ethos-u85-256"), where=name)
    figures = json.loads(outputs["figures"].read_text())
    print(name, "ethos-u85-256 cycles", figures["cycles_npu"], figures["cycles_total"])


def test_ethos_u55_runs_or_names_the_rule(lowered, tmp_path):
    name, case = lowered
    refused = CASES[name][2]
    if refused is None:
        outputs = run_vela(case.variant("u55"), tmp_path, vela_args("ethos-u55-128"), where=name)
        figures = json.loads(outputs["figures"].read_text())
        print(name, "ethos-u55-128 cycles", figures["cycles_npu"], figures["cycles_total"])
        return
    with pytest.raises(UserError, match=refused) as error:
        run_vela(case.variant("u55"), tmp_path, vela_args("ethos-u55-128"), where=name)
    assert Path(__file__).name in str(error.value)  # the model line
