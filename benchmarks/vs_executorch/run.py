"""Both flows over the models: ours once per model (its shared stages serve every NPU), theirs
per NPU, alternating ``repeat`` times; a row per model and NPU."""

from __future__ import annotations

from pathlib import Path

from .figures import npu_share
from .models import SQNR_INPUTS, ModelEntry, draw_inputs, load_model
from .env import quiet
from .ours import OursResult, run_ours
from .theirs import TheirsResult, run_theirs

# The warm-up model (written to the scratch folder: our export stage imports from a file).
_WARMUP_SOURCE = '''
import torch
class Tiny(torch.nn.Module):
    example_shapes = ((1, 3, 8, 8),)
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))
'''


def _warm_up(scratch: Path, npus) -> None:
    """Run both flows once on a tiny conv model: imports and first-call costs, untimed."""
    source = scratch / "warmup_model.py"
    source.write_text(_WARMUP_SOURCE)
    entry = ModelEntry("warmup", source, "Tiny", ({"shape": [1, 3, 8, 8]},))
    model = load_model(entry)
    ours = run_ours(entry, npus[:1], scratch / "warmup" / "ours", sqnr_count=1)
    if ours.errors:
        print(f"  note: warm-up of our flow: {ours.errors}")
    theirs = run_theirs(model, npus[0], ours.test_inputs[0], ours.calibration[:2],
                        ours.test_inputs[:1], scratch / "warmup" / "theirs")
    if theirs.error:
        print(f"  note: warm-up of their flow: {theirs.error}")


def _their_inputs(ours: OursResult, entry: ModelEntry) -> tuple[tuple, list, list]:
    """(example, calibration, test inputs) our export drew; drawn its way if it failed."""
    if ours.test_inputs:
        return ours.test_inputs[0], ours.calibration, ours.test_inputs
    example, calibration = draw_inputs(entry)
    return example, calibration, [example]


def _merge_min(first: OursResult, other: OursResult) -> None:
    """Keep the stage times of the faster run as a whole (the figures stay the first run's),
    so our time is a run's total, like theirs, not a sum of per-stage best cases."""
    def total(r: OursResult) -> float:
        return sum(r.shared_s.values()) + sum(r.per_npu_s.values())

    if not other.errors and total(other) < total(first):
        first.shared_s, first.per_npu_s = dict(other.shared_s), dict(other.per_npu_s)


def bench(entries: list[ModelEntry], npus, scratch: Path, warm_up: bool,
          repeat: int = 1, observers=(), sqnr_count: int = SQNR_INPUTS,
          sqnr_only: bool = False) -> list[dict]:
    """Both flows on every model; with ``repeat`` > 1 the flows alternate and each flow's
    time is its fastest run (the figures and SQNR come from the first run). With
    ``sqnr_only`` both flows only quantize (their quantizer for the first NPU)."""
    rows = []
    if warm_up and not sqnr_only:
        print("warming up both flows on a tiny conv model (untimed) ...", flush=True)
        _warm_up(scratch, npus)
    for entry in entries:
        print(f"{entry.name}: ", end="", flush=True)
        try:
            with quiet():
                model = load_model(entry)
        except Exception as exc:  # noqa: BLE001 - the model's own code failing: skip it
            print(f"skipped: {entry.path.name}:{entry.attr} does not build: "
                  f"{type(exc).__name__}: {exc}")
            continue
        ours, theirs = None, {}
        their_npus = npus[:1] if sqnr_only else npus
        for run in range(1 if sqnr_only else repeat):
            print(f"ours#{run + 1} ", end="", flush=True)
            result = run_ours(entry, npus, scratch / entry.name / f"ours{run}",
                              observers=observers if run == 0 else (),
                              sqnr_count=sqnr_count, sqnr_only=sqnr_only)
            if ours is None:
                ours = result
                if "shared" in ours.errors:
                    print(f"\n  our flow failed: {ours.errors['shared']}")
            else:
                _merge_min(ours, result)
            example, calibration, tests = _their_inputs(ours, entry)
            for npu in their_npus:
                print(f"theirs:{npu}#{run + 1} ", end="", flush=True)
                result = run_theirs(model, npu, example, calibration, tests,
                                    scratch / entry.name / f"theirs{run}" / npu,
                                    with_sqnr=run == 0, sqnr_inputs=ours.sqnr_inputs,
                                    sqnr_only=sqnr_only)
                if npu not in theirs:
                    theirs[npu] = result
                elif not result.error and not theirs[npu].error:
                    theirs[npu].seconds = min(theirs[npu].seconds, result.seconds)
        for npu in their_npus:
            rows.append(_row(entry, npu, ours, theirs[npu]))
        print("done", flush=True)
    return rows


def _row(entry: ModelEntry, npu: str, ours: OursResult, t: TheirsResult) -> dict:
    ours_s = (sum(ours.shared_s.values()) + ours.per_npu_s.get(npu, 0.0)
              if "shared" not in ours.errors else None)
    return {
        "model": entry.name, "npu": npu, "observer": entry.observer,
        "sqnr_inputs": len(ours.sqnr_inputs),
        "ours": {"aot_s": ours_s, "shared_s": ours.shared_s,
                 "npu_s": ours.per_npu_s.get(npu), "figures": ours.figures.get(npu, {}),
                 "npu_share": npu_share(ours.figures.get(npu, {})),
                 "sqnr_tosa_db": ours.sqnr_tosa, "sqnr_torch_db": ours.sqnr_torch,
                 "sqnr_many_db": ours.sqnr_many, "varying": ours.varying,
                 "verified": ours.verified,
                 "error": ours.errors.get(npu) or ours.errors.get("shared")
                 or ours.errors.get("verify")},
        "theirs": {"aot_s": t.seconds if not t.error else None,
                   "figures": t.figures,
                   "npu_share": npu_share(t.figures, len(t.non_delegated_ops)),
                   "non_delegated_ops": t.non_delegated_ops,
                   "delegates": t.delegates, "pte_bytes": t.pte_bytes,
                   "sqnr_tosa_db": t.sqnr_tosa, "sqnr_torch_db": t.sqnr_torch,
                   "sqnr_many_db": t.sqnr_many, "error": t.error},
    }
