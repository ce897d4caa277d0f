#!/usr/bin/env python3
"""Int8 task accuracy of small networks trained here, ours (each observer) against ExecuTorch's.

Usage: .venv/bin/python benchmarks/bench_quant_accuracy.py [--networks cnn,mobilenet,resnet,mlp]
           [--calibration 16] [--observers minmax,histogram,mse] [--json FILE]

Data that ships inside scikit-learn (no download): the 8x8 digits (1,797 images, 10 classes)
upscaled to 32x32 for the image networks, the breast-cancer table (569 rows, 30 features, 2
classes) for the MLP; each split 2/3 train, 1/3 test with a fixed seed. Each network trains
deterministically (fixed seeds, one thread) for a few seconds on the CPU, in train mode with
BatchNorm and dropout, then is exported in eval mode and quantized int8 through our quantize
flow (normalisation, our quantizer, ``calibration`` training samples as the build's
calibration folder would give them) with the default observer, with each observer named, and
with each post-training technique (``+cle`` cross-layer equalisation, ``+bc`` bias
correction, ``+both``) on the default;
ExecuTorch 1.5.1's Arm Ethos-U quantizer (symmetric int8, per-channel weights) gets the same
samples when it is importable. Started without it, the script re-runs itself in
``.venv-executorch`` (benchmarks/setup_executorch.sh) when that exists; otherwise the reference
column shows n/a.

Printed per network: test accuracy of the float model and of each quantized (q/dq) graph run by
torch, and the SQNR of the quantized logits against the float logits over the test set; then
the goals: our default int8 accuracy within 0.5 points of float and never below the reference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ET_VENV = ROOT / ".venv-executorch"
sys.path.insert(0, str(ROOT))
from benchmarks.vs_executorch.env import quiet  # noqa: E402 (the comparison's own silencer)
NETWORKS = ("cnn", "mobilenet", "resnet", "mlp")
GOAL_DROP = 0.5  # accuracy points our default int8 may lose against float


def _deterministic() -> None:
    import torch

    torch.set_num_threads(1)  # sums in one order: the same weights on every machine
    torch.use_deterministic_algorithms(True)


# --------------------------------------------------------------------------------------------
# Data


def _split(x, y, seed: int = 0):
    """2/3 train, 1/3 test, shuffled with a fixed seed (stratified by drawing per class)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    train, test = [], []
    for label in sorted(set(y.tolist())):
        rows = torch.nonzero(y == label).flatten()
        rows = rows[torch.randperm(rows.numel(), generator=generator)]
        cut = (2 * rows.numel()) // 3
        train.append(rows[:cut])
        test.append(rows[cut:])
    train, test = torch.cat(train), torch.cat(test)
    return (x[train], y[train]), (x[test], y[test])


def digits32():
    """scikit-learn's 8x8 digits, bilinearly upscaled to 1x32x32, in [-1, 1]."""
    from sklearn.datasets import load_digits

    import torch

    data = load_digits()
    x = torch.tensor(data.images, dtype=torch.float32)[:, None] / 16.0
    x = torch.nn.functional.interpolate(x, size=(32, 32), mode="bilinear", align_corners=False)
    return _split(x * 2 - 1, torch.tensor(data.target))


def breast_cancer():
    """scikit-learn's breast-cancer table, standardised with the training rows' statistics."""
    from sklearn.datasets import load_breast_cancer

    import torch

    data = load_breast_cancer()
    (x, y), (tx, ty) = _split(torch.tensor(data.data, dtype=torch.float32),
                              torch.tensor(data.target))
    mean, std = x.mean(0), x.std(0)
    return ((x - mean) / std, y), ((tx - mean) / std, ty)


# --------------------------------------------------------------------------------------------
# Networks (as users write them: in-place relu, dropout, BatchNorm)


def _networks():
    from torch import nn

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from tiny_networks import TinyMobileNet, TinyResNet

    class SmallCNN(nn.Module):
        def __init__(self):
            super().__init__()
            layers, cin = [], 1
            for cout in (16, 32, 64):
                layers += [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                           nn.ReLU(inplace=True), nn.MaxPool2d(2)]
                cin = cout
            self.features = nn.Sequential(*layers)
            self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(64 * 16, 10))

        def forward(self, x):
            return self.head(self.features(x))

    class MLP(nn.Module):
        def __init__(self, features: int = 30, classes: int = 2):
            super().__init__()
            self.body = nn.Sequential(
                nn.Linear(features, 64), nn.BatchNorm1d(64), nn.ReLU(inplace=True),
                nn.Dropout(0.2), nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(inplace=True),
                nn.Linear(32, classes))

        def forward(self, x):
            return self.body(x)

    return {
        "cnn": (digits32, SmallCNN, 5),
        "mobilenet": (digits32, lambda: TinyMobileNet(1, 10, 32, alpha=0.5, settle=False), 6),
        "resnet": (digits32, lambda: TinyResNet(1, 10, 32, settle=False), 5),
        "mlp": (breast_cancer, MLP, 30),
    }


def train(make, data, epochs: int, seed: int = 0):
    """A freshly built network trained with Adam and a cosine schedule; eval mode."""
    import torch

    torch.manual_seed(seed)
    model = make()
    (x, y), _ = data
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = epochs * math.ceil(len(x) / 32)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=generator).split(32):
            if len(batch) < 2:  # BatchNorm needs two rows
                continue
            optimiser.zero_grad()
            torch.nn.functional.cross_entropy(model(x[batch]), y[batch]).backward()
            optimiser.step()
            schedule.step()
    return model.eval()


# --------------------------------------------------------------------------------------------
# Quantization and evaluation


def calibration_samples(data, count: int, seed: int = 1) -> list[tuple]:
    """``count`` training rows, one per sample (batch 1), as a calibration folder holds."""
    import torch

    (x, _), _ = data
    rows = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))[:count]
    return [(x[i : i + 1],) for i in rows.tolist()]


# Post-training techniques measured on top of the default (calibration: settings).
TECHNIQUES = {
    "+cle": {"equalization": True},
    "+bc": {"bias_correction": True},
    "+both": {"equalization": True, "bias_correction": True},
}


def ours(model, samples: list[tuple], options: dict):
    """Our quantize flow on the exported model: the q/dq module (``options``: the
    ``observer`` and techniques; none: the default)."""
    from pipeline.config.models import Calibration
    from pipeline.chain.quantize import quantize_program
    from pipeline.chain.export import export as export_program

    fields = Calibration.model_fields  # the build's defaults, under the options given
    defaults = {name: fields[name].default for name in ("equalization", "bias_correction")}
    program = export_program(model, samples[0], "bench")
    return quantize_program(program, samples, "int8", "bench", **{**defaults, **options}).module()


def theirs(model, samples: list[tuple]):
    """ExecuTorch's Arm Ethos-U quantizer (as its AOT flow sets it up): the q/dq module."""
    import torch

    from executorch.backends.arm.ethosu import EthosUCompileSpec
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = EthosUQuantizer(EthosUCompileSpec("ethos-u55-128"))
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    prepared = prepare_pt2e(torch.export.export(model, samples[0]).module(), quantizer)
    with torch.no_grad():
        for sample in samples:
            prepared(*sample)
    return convert_pt2e(prepared)


def logits(fn, x):
    """The logits of every row, one row at a time (the quantized graphs have batch 1)."""
    import torch

    with torch.no_grad():
        return torch.cat([fn(x[i : i + 1]) for i in range(len(x))])


def accuracy(out, y) -> float:
    return 100.0 * float((out.argmax(1) == y).float().mean())


def sqnr_db(reference, estimate) -> float:
    noise = float(((reference - estimate) ** 2).sum())
    return math.inf if noise == 0 else 10 * math.log10(float((reference**2).sum()) / noise)


def reference_available() -> str | None:
    """Why ExecuTorch's quantizer cannot run here, or None."""
    try:
        with quiet():
            from executorch.backends.arm.quantizer import EthosUQuantizer  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure: no reference column
        return f"{type(exc).__name__}: {exc}"
    return None


def run(name: str, observers: list[str], calibration: int, with_reference: bool) -> dict:
    """Train one network, quantize it every way, and measure each on the test set."""
    load, make, epochs = _networks()[name]
    data = load()
    started = time.perf_counter()
    model = train(make, data, epochs)
    trained_s = time.perf_counter() - started
    _, (x, y) = data
    float_out = logits(model, x)
    samples = calibration_samples(data, calibration)
    result = {"float": accuracy(float_out, y), "train_s": trained_s, "test_rows": len(y),
              "int8": {}, "sqnr_db": {}}
    variants = {"default": {}, **{o: {"observer": o} for o in observers}, **TECHNIQUES}
    if with_reference:
        variants["reference"] = None
    for label, options in variants.items():
        with quiet():
            fn = theirs(model, samples) if label == "reference" else ours(model, samples, options)
            out = logits(fn, x)
        result["int8"][label] = accuracy(out, y)
        result["sqnr_db"][label] = sqnr_db(float_out, out)
    return result


def _fmt(value, spec: str = "6.2f") -> str:
    return "n/a" if value is None else format(value, spec)


def report(results: dict, observers: list[str]) -> dict:
    """Print the accuracy and SQNR tables and the goals' verdicts."""
    labels = ["default", *observers, *TECHNIQUES, "reference"]
    head = f"{'network':10} {'rows':>5} {'float':>6} | " + " ".join(f"{v:>9}" for v in labels)
    for title, key in (("test accuracy (%): float, then int8", "int8"),
                       ("SQNR (dB) of the int8 logits vs float, over the test set", "sqnr_db")):
        print()
        print(title + " (default = our quantize stage with no settings; +cle: equalization,"
              " +bc: bias_correction, +both: both)")
        print(head)
        print("-" * len(head))
        for name, r in results.items():
            print(f"{name:10} {r['test_rows']:>5} {r['float']:6.2f} | "
                  + " ".join(f"{_fmt(r[key].get(v)):>9}" for v in labels))
    drop = [f"{n} ({r['float'] - r['int8']['default']:.2f})" for n, r in results.items()
            if r["float"] - r["int8"]["default"] > GOAL_DROP]
    below = [n for n, r in results.items()
             if r["int8"].get("reference") is not None
             and r["int8"]["default"] < r["int8"]["reference"]]
    print()
    print("goals")
    goals = {f"default int8 accuracy within {GOAL_DROP} points of float": drop,
             "default int8 accuracy never below the reference's": below}
    for goal, missed in goals.items():
        state = "MET" if not missed else "MISSED"
        print(f"  {state:6} {goal}" + (f": missed on {', '.join(missed)}" if missed else ""))
    return {g: {"met": not m, "missed": m} for g, m in goals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=",".join(NETWORKS),
                        help=f"comma-separated, of {', '.join(NETWORKS)} (default: all)")
    parser.add_argument("--calibration", type=int, default=16,
                        help="training rows used as calibration samples (default 16)")
    parser.add_argument("--observers", default="minmax,histogram,mse",
                        help="observers to measure besides the default (default: all)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    names = [n for n in args.networks.split(",") if n]
    unknown = [n for n in names if n not in NETWORKS]
    if unknown:
        parser.error(f"--networks must be of {', '.join(NETWORKS)}; got {', '.join(unknown)}")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("bench_quant_accuracy: scikit-learn is missing: pip install -e '.[test]'",
              file=sys.stderr)
        return 2
    problem = reference_available()
    python = ET_VENV / "bin" / "python"
    if problem and python.exists() and Path(sys.prefix).resolve() != ET_VENV.resolve():
        print(f"bench_quant_accuracy: re-running with {python} for ExecuTorch's quantizer",
              flush=True)
        os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])
    if problem:
        print(f"note: no reference column: ExecuTorch's quantizer does not import ({problem})")
    sys.path.insert(0, str(ROOT))
    _deterministic()
    observers = [o for o in args.observers.split(",") if o]
    results = {}
    for name in names:
        print(f"{name}: training and quantizing ...", flush=True)
        results[name] = run(name, observers, args.calibration, problem is None)
        print(f"  trained in {results[name]['train_s']:.1f} s", flush=True)
    goals = report(results, observers)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "goals": goals}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
