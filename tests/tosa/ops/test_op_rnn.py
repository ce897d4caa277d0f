"""nn.LSTM and nn.GRU (unrolled by pipeline/normalise/recurrent.py): reference model against torch,
int8 / a16w8 / FP, in the configurations keyword-spotting and sequence models use."""

import json

import pytest
import torch
from torch import nn

from models.cases.networks import ACCELERATORS
from pipeline.chain.vela import vela_args
from pipeline.config.npu import NpuConfig
from pipeline.ethosu.placement import check_npu_constraints
from pipeline.ethosu.vela import run_vela
from tests.tosa.lowering_cases import A16W8, FP, INT8, lower_case, run_case, verify_case

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]


class Recurrent(nn.Module):
    """An LSTM/GRU called as user code does: with or without an initial state input,
    returning the sequence, the final hidden state, or both."""

    def __init__(self, cell, inputs, hidden, layers=1, batch_first=True, state=False,
                 returns="output"):  # fmt: skip
        super().__init__()
        torch.manual_seed(1)  # not 0: the inputs are drawn from seed 0
        self.rnn = getattr(nn, cell)(inputs, hidden, layers, batch_first=batch_first)
        self.state, self.returns = state, returns

    def forward(self, x, *state):
        if self.state:
            state = state if isinstance(self.rnn, nn.LSTM) else state[0]
            output, final = self.rnn(x, state)
        else:
            output, final = self.rnn(x)
        hidden = final[0] if isinstance(final, tuple) else final
        return {"output": output, "hidden": hidden, "both": (output, *_tuple(final))}[self.returns]


def _tuple(value):
    return value if isinstance(value, tuple) else (value,)


class KeywordSpotter(nn.Module):
    """MFCC frames (49 x 10) -> recurrent layer -> linear classifier on the last step."""

    def __init__(self, cell: str, hidden: int = 64):
        super().__init__()
        torch.manual_seed(1)  # not 0: the inputs are drawn from seed 0
        self.rnn = getattr(nn, cell)(10, hidden, batch_first=True)
        self.classify = nn.Linear(hidden, 12)

    def forward(self, frames):
        output, _ = self.rnn(frames)
        return self.classify(output[:, -1])


CASES = [
    pytest.param(Recurrent("LSTM", 10, 32), [(1, 12, 10)], 1, id="lstm_batch_first_sequence"),
    pytest.param(
        Recurrent("LSTM", 16, 24, 2, batch_first=False, state=True, returns="both"),
        [(8, 1, 16), ((2, 1, 24), 0.5), ((2, 1, 24), 0.5)], 2,
        id="lstm_2_layers_seq_first_given_h0_c0_returns_all",
    ),
    pytest.param(
        Recurrent("GRU", 16, 32, 2, returns="both"), [(1, 10, 16)], 2,
        id="gru_2_layers_batch_first_output_and_h_n",
    ),
    pytest.param(
        Recurrent("GRU", 8, 24, batch_first=False, state=True, returns="hidden"),
        [(12, 1, 8), ((1, 1, 24), 0.5)], 1, id="gru_seq_first_given_h0_final_hidden",
    ),
]
# Against the float model. Calibration (4 samples) sets every range, so test inputs clip the
# widest gates a little: a16w8 is held to its clipping, not to int16 resolution.
SQNR_DB = {INT8: 18, A16W8: 20, FP: 100}




@pytest.mark.parametrize("module, shapes, layers", CASES)
@pytest.mark.parametrize("dtype", [INT8, A16W8, FP])
def test_recurrent_matches_torch(module, shapes, layers, dtype, tmp_path):
    case, report = run_case(module, shapes, tmp_path, dtype)
    assert report["passed"]
    for output in report["outputs"]:
        assert output["sqnr_db_vs_float"] > SQNR_DB[dtype], output["name"]
    ops = case.ops()
    shape = shapes[0][0] if isinstance(shapes[0][0], tuple) else shapes[0]
    steps = shape[1] if module.rnn.batch_first else shape[0]
    # One input projection per layer and one recurrent projection per step (the first of
    # which folds away when the initial state is the default zeros).
    projections = layers * (steps + 1) - (0 if module.state else layers)
    assert ops.count("CONV2D") == projections
    assert "MATMUL" not in ops  # every weight is a constant: the fully-connected path


@pytest.fixture(scope="module")
def keyword_spotter(tmp_path_factory):
    """(cell, dtype) -> a keyword spotter over 49 MFCC frames (49 unrolled steps: the costliest
    graphs here to lower), lowered on first use, once for the checks against torch and for
    Vela, to the build's default spec for Ethos-U targets (TOSA-1.0+INT+int16)."""
    made = {}

    def lowered(cell: str, dtype: str):
        if (cell, dtype) not in made:
            folder = tmp_path_factory.mktemp(f"kws_{dtype}_{cell}")
            made[cell, dtype] = lower_case(KeywordSpotter(cell), [(1, 49, 10)], folder, dtype,
                                           spec="TOSA-1.0+INT+int16")
        return made[cell, dtype]

    return lowered


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_keyword_spotting_over_49_frames_matches_torch(keyword_spotter, cell):
    """int8 (the scheme the NPU runs it in below); a16w8 recurrent layers are checked on the
    shorter sequences of test_recurrent_matches_torch, the unrolling being the same."""
    case = keyword_spotter(cell, INT8)
    report = verify_case(case)
    assert report["passed"]
    assert report["outputs"][0]["sqnr_db_vs_float"] > SQNR_DB[INT8]
    assert case.ops().count("CONV2D") == 49 + 1


@pytest.mark.slow
@pytest.mark.needs_vela
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_int8_keyword_spotter_runs_wholly_on_the_npu(keyword_spotter, cell, accelerator,
                                                     tmp_path):
    """Every operator of the NPU's variant of the int8 graph placed on the NPU by Vela."""
    case = keyword_spotter(cell, INT8)
    npu = NpuConfig.model_validate({"config": accelerator})
    tosa = case.variant(npu.variant)
    check_npu_constraints(tosa, accelerator, where="test/vela")
    outputs = run_vela(tosa, tmp_path, vela_args(accelerator), where="test/vela")
    figures = json.loads(outputs["figures"].read_text())
    assert figures["npu_op_share"] == 1.0
    assert figures["cycles_npu"] > 0
