"""benchmarks/fuzz_builds.py on one case of each kind of model file the fuzzer writes (two
valid ones): a ``doit --continue`` build of the host targets, each ending in a clean error line
or a success, never a traceback, a hang or a silent exit 0; and the model that never returns,
alone, under a short stage time limit. (The >= 300-build run is the script's:
docs/benchmarks.md#fuzz_buildspy; tests/stages/test_export_errors.py has the odd returns and
factories one by one.)"""

from __future__ import annotations

import random

import pytest

from benchmarks import fuzz_builds as fuzz

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_tosa_ref]

# (kind, seed): the seeds pick, within each kind, the variant named in the comment
CASES = [
    ("valid", 1), ("valid", 4),  # an image model; a vector model with in-place ops
    ("syntax", 2), ("import_error", 3), ("odd_return", 6), ("wrong_shape", 8), ("factory", 9),
]
NEVER_RETURNS = ("never_returns", 12)


def _case(i: int, kind: str, seed: int) -> fuzz.Case:
    rng = random.Random(seed)
    text, shape, factory = fuzz.model_file(kind, rng, image=seed % 2 == 1)
    if kind == "never_returns":  # in forward(): stopped by the stage limit, the rest go on
        text = fuzz._with_forward_tail(fuzz._valid_model(rng, False)[0],
                                       "while True:\n    y = y + 1\nreturn y")
        shape = fuzz._valid_model(random.Random(seed), False)[1]
    files = {f"models/net_{i}.py": text}
    inputs = f"[{{name: x, shape: {shape}}}]"
    if factory:
        files[f"models/data_{i}.py"] = factory
        inputs = f"models/data_{i}.py:make_inputs"
    model = (f"  m{i}:\n    source: models/net_{i}.py:Net\n    inputs: {inputs}\n"
             "    calibration: {samples: 2, seed: 1}\n")
    target = f"  t{i}:\n    cpu: host\n    npu: null\n    models: [m{i}]\n"
    return fuzz.Case(i, kind, files, model, target)


def test_fuzzed_builds_end_cleanly(tmp_path):
    cases = [_case(i, kind, seed) for i, (kind, seed) in enumerate(CASES)]
    fuzz.write_project(tmp_path, cases)
    # the limit only guards against a hang here: no case of this project runs into it
    status, output, _ = fuzz.run_doit(tmp_path, tmp_path / "store", stage_timeout=600,
                                      memory_bytes=3 << 30)
    found = {c.index: fuzz.classify(c, tmp_path, status, output) for c in cases}
    assert {i: v for i, v in found.items() if v[0] not in ("error", "success")} == {}, output
    assert found[0][0] == found[1][0] == "success", output
    assert all(found[c.index][0] == "error" for c in cases[2:]), found
    assert "Traceback" not in output


def test_a_fuzzed_model_that_never_returns_is_stopped_by_the_stage_limit(tmp_path):
    case = _case(0, *NEVER_RETURNS)
    fuzz.write_project(tmp_path, [case])
    status, output, _ = fuzz.run_doit(tmp_path, tmp_path / "store", stage_timeout=5,
                                      memory_bytes=3 << 30)
    verdict, why = fuzz.classify(case, tmp_path, status, output)
    assert verdict == "error" and "time limit of 5 s" in why, (verdict, why, output)
    assert "Traceback" not in output
