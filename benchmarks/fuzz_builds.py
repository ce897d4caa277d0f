"""Fuzz whole builds: fuzzed targets.yaml files and fuzzed model files, one ``doit build`` each.

Each case is a scratch project (a targets.yaml, a model file, maybe an inputs factory) built
with ``doit build`` in a fresh Python, under a small stage time limit (``timeout=``) and a
memory limit (RLIMIT_AS) set for the run, so that a model that never returns or allocates
without bound ends quickly. The cases share one store, as a CI runner's builds would (the
runtime of the few NPU targets is built once).

The model files are fuzzed by kind: tiny valid models written the way users write them
(in-place ops, ``x += y``, dropout, masks), syntax errors, exceptions at import, ``forward``
returning odd types, code that never returns (at import, in forward, in the inputs factory,
swallowing the interruption), unbounded allocation, ``os._exit``/``sys.exit``, wrong input
shapes. targets.yaml is fuzzed by replacing fields with hostile values.

Each build is classified:

- ``error``: exit status not 0, no traceback, and a message of the project's grammar
  (``target/stage: ...``, ``error: ...``, the configuration's ``N problem(s) ...``);
- ``success``: exit status 0 and every target's ``report.json`` written;
- ``traceback``: a Python traceback anywhere in the output;
- ``hang``: still running ``timeout + 30 s (the hard stop) + BUILD_SLACK`` after it started;
- ``silent``: exit status 0 but a target's report.json missing;
- ``unclear``: exit status not 0 without a traceback and without a message.

Goal: 0 tracebacks, 0 hangs, 0 silent successes, 0 unclear. Run (2 cores shared: niced)::

    nice -n 19 .venv/bin/python benchmarks/fuzz_builds.py --builds 300 --out /tmp/fuzz

It prints one line per build and a summary; ``--out`` keeps every project with its
``output.txt`` (stdout and stderr) and ``summary.json``. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARD_STOP = 30.0  # pipeline/graph/timeout.py's _HARD_STOP: a stage that ignores the limit
BUILD_SLACK = 240.0  # what a normal tiny build may take beside its one stuck stage (cold runtime)
KINDS = {  # model kind -> weight
    "valid": 34, "syntax": 8, "import_error": 8, "odd_return": 14, "never_returns": 8,
    "allocates": 6, "exits": 6, "wrong_shape": 6, "factory": 10,
}
HOSTILE_SHARE = 0.2  # of the cases, those with a hostile field in targets.yaml
MESSAGE = re.compile(r"^(error: |[\w.,-]+/[\w-]+: |\d+ problems? in the configuration)", re.MULTILINE)

# --- model files -----------------------------------------------------------------------

HEADER = "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n\n\n"


def _valid_model(rng: random.Random, image: bool) -> tuple[str, list[int]]:
    """A tiny model as users write them, and its input shape."""
    c, h = rng.choice([1, 3, 4]), rng.choice([4, 8])
    width = rng.choice([4, 8, 16])
    body = []
    if image:
        shape = [1, c, h, h]
        init = [f"self.conv = nn.Conv2d({c}, {width}, 3, padding=1)",
                f"self.bn = nn.BatchNorm2d({width})", "self.drop = nn.Dropout(0.1)",
                f"self.head = nn.Linear({width}, 4)"]
        body.append("y = self.bn(self.conv(x))")
        body += rng.sample(["y = F.relu(y, inplace=True)", "y += y.mean(dim=1, keepdim=True)",
                            "y = y * (y > 0).float()", "y = torch.clamp(y, -2, 2)",
                            "y = self.drop(y)", "y = y - y.amax(dim=(2, 3), keepdim=True)"],
                           rng.randint(1, 3))
        body.append("z = self.head(y.mean(dim=(2, 3)))")
    else:
        shape = [1, width]
        init = [f"self.fc = nn.Linear({width}, {width})", "self.drop = nn.Dropout(0.2)",
                f"self.head = nn.Linear({width}, 3)"]
        body.append("y = self.fc(x)")
        body += rng.sample(["y = torch.relu_(y)", "y += x", "y = self.drop(y)",
                            "y = torch.sigmoid(y) * y", "y = y.masked_fill(x < -0.9, 0.0)"],
                           rng.randint(1, 3))
        body.append("z = self.head(y)")
    returns = rng.choice(["z", "z", "z, y", "(z, [y])"])
    body.append(f"return {returns}")
    text = (HEADER + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        torch.manual_seed(0)\n"
            + "".join(f"        {line}\n" for line in init)
            + "\n    def forward(self, x):\n" + "".join(f"        {line}\n" for line in body))
    return text, shape


def _with_forward_tail(text: str, tail: str) -> str:
    """``text`` whose forward ends with ``tail`` (lines) in place of its return."""
    head, _ = text.rsplit("        return ", 1)
    return head + "".join(f"        {line}\n" for line in tail.splitlines())


def model_file(kind: str, rng: random.Random, image: bool) -> tuple[str, list[int], str | None]:
    """(model file text, input shape for targets.yaml, an inputs factory file or None)."""
    text, shape = _valid_model(rng, image)
    factory = None
    if kind == "syntax":
        cut = rng.randint(len(HEADER), len(text) - 1)
        text = rng.choice([text[:cut] + "\n", text[:cut] + ")(\n" + text[cut:],
                           text.replace("    def forward", "  def forward", 1),
                           text + "\nclass Broken(:\n    pass\n"])
    elif kind == "import_error":
        text = rng.choice(["import torchvisionn\n", "raise RuntimeError('no GPU found')\n",
                           "WIDTH = int('eight')\n", "from . import sibling\n",
                           "x = undefined_name + 1\n", "raise MemoryError\n",
                           "import json\njson.loads('{')\n"]) + text
    elif kind == "odd_return":
        tail = rng.choice(["return None", "return 3", "return 0.5", "return 'logits'",
                           "return {'logits': z, 'hidden': y}", "return ()", "return z, None",
                           "return [z, {'aux': y}]", "return z.shape", "return z.tolist()",
                           "return z.sum().item()", "return (z > 0).any()", "return z, 2",
                           "return torch.Size([1, 2])", "pass"])
        text = _with_forward_tail(text, tail)
    elif kind == "never_returns":
        where = rng.choice(["import", "forward", "init", "swallowed", "sleep"])
        if where == "import":
            text = "n = 0\nwhile True:\n    n += 1\n" + text
        elif where == "sleep":
            text = "import time\ntime.sleep(10_000)\n" + text
        elif where == "swallowed":
            text = ("while True:\n    try:\n        while True:\n            pass\n"
                    "    except BaseException:\n        pass\n") + text
        elif where == "init":
            text = text.replace("torch.manual_seed(0)\n",
                                "torch.manual_seed(0)\n        while self.training:\n"
                                "            pass\n", 1)
        else:
            text = _with_forward_tail(text, "while True:\n    y = y + 1\nreturn y")
    elif kind == "allocates":
        text = rng.choice([
            "hoard = []\nwhile True:\n    hoard.append(bytearray(64 << 20))\n" + text,
            "import torch\nBIG = torch.zeros(1 << 40)\n" + text,
            _with_forward_tail(text, "big = torch.ones(1 << 20, 1 << 20)\nreturn z + big.sum()"),
            "blob = 'x' * (1 << 42)\n" + text,
        ])
    elif kind == "exits":
        text = rng.choice(["import os\nos._exit(0)\n", "import sys\nsys.exit(0)\n",
                           "import os\nos._exit(3)\n", "exit()\n", "quit(0)\n"]) + text
        if rng.random() < 0.3:
            text = _with_forward_tail(text, "import os\nos._exit(0)")
    elif kind == "wrong_shape":
        shape = ([*shape[:-1], shape[-1] + rng.choice([1, 3])] if rng.random() < 0.7
                 else shape[:-1])
    elif kind == "factory":
        bad = rng.choice([
            "return None", "return 3", "raise ValueError('camera not connected')",
            "return (torch.rand(*SHAPE).double(),)", "return (torch.full(SHAPE, float('nan')),)",
            "return {'x': torch.rand(*SHAPE)}", "import os\n    os._exit(0)",
            "while True:\n        pass", "return (torch.rand(*SHAPE),)", "return torch.rand(*SHAPE)",
            "return [torch.rand(*SHAPE), torch.rand(*SHAPE)]", "return (torch.randint(0, 5, SHAPE),)",
        ])
        factory = (f"import torch\n\nSHAPE = {shape}\n\n\ndef make_inputs():\n    {bad}\n")
    return text, shape, factory


# --- targets.yaml ----------------------------------------------------------------------

TARGET_KINDS = {  # target kind -> (weight, yaml of the target's fields)
    "host": (70, "cpu: host\n    npu: null"),
    "u55": (15, "cpu: cortex-m55\n    npu: {config: ethos-u55-128}"),
    "u85": (10, "cpu: cortex-m85\n    npu: {config: ethos-u85-256}"),
    "u55-fallback": (5, "cpu: cortex-m55\n    npu: {config: ethos-u55-128, fallback: cpu}"),
}
HOSTILE = [  # (regex on the yaml, replacement): one field made wrong
    (r"shape: \[[^\]]*\]", "shape: [1, -3]"), (r"shape: \[[^\]]*\]", "shape: [1, 100000000000]"),
    (r"shape: \[[^\]]*\]", "shape: []"), (r"shape: \[[^\]]*\]", "shape: 'big'"),
    (r"samples: \d+", "samples: -1"), (r"samples: \d+", "samples: 1000000000"),
    (r"samples: \d+", "samples: 2.5"), (r"seed: \d+", "seed: .nan"),
    (r"cpu: host", "cpu: cortex-m99"), (r"npu: null", "npu: {config: ethos-u85-265}"),
    (r"npu: null", "npu: []"), (r"source: (\S+):Net", r"source: \1:Nett"),
    (r"source: (\S+):Net", "source: missing.py:Net"), (r"source: (\S+):Net", "source: /dev/null:Net"),
    (r"models: \[(m\d+)\]", r"models: [\1, \1, nosuch]"), (r"models: \[(m\d+)\]", r"models: {\1: 1}"),
    (r"models: \[m\d+\]", "models: []"), (r"targets:\n", "targets:\n  bad:\n    extends: bad\n"),
    (r"\n    cpu:", "\n    quantization: int3\n    cpu:"), (r"\n    cpu:", "\n    tosa: TOSA-9.9\n    cpu:"),
    (r"\n    cpu:", "\n    bogus_key: 1\n    cpu:"), (r"\n    cpu:", "\n    build_type: Fast\n    cpu:"),
    (r"dtype: float32", "dtype: complex64"), (r"dtype: float32", "dtype: int64"),
    (r"\Z", "\n\x00\n"), (r"\Z", "\n  - broken: [\n"), (r"^models:", "models: &a\n  <<: *a\n"),
]


@dataclass
class Case:
    """One fuzzed build: a model (its files, its ``models:`` entry) and a target using it."""

    index: int
    kind: str  # of the model file (KINDS)
    files: dict[str, str]  # path in the project -> text
    model: str  # the model's entry under models:, named m<index>
    target: str  # the target's entry under targets:, named t<index>
    hostile: list[tuple[str, str]] = field(default_factory=list)  # mutations of targets.yaml

    @property
    def alone(self) -> bool:
        """Built in a project of its own: a broken targets.yaml fails every target of its
        file, and a stage that has to be stopped can take the build with it."""
        return bool(self.hostile) or self.kind in ALONE


ALONE = ("never_returns", "allocates", "exits")


def make_case(i: int, rng: random.Random) -> Case:
    """Case ``i``: a model file of a random kind, a target of a random kind, and sometimes a
    hostile field or two in the targets file."""
    kind = rng.choices(list(KINDS), list(KINDS.values()))[0]
    text, shape, factory = model_file(kind, rng, image=rng.random() < 0.6)
    files = {f"models/net_{i}.py": text}
    if factory:
        files[f"models/data_{i}.py"] = factory
    inputs = (f"models/data_{i}.py:make_inputs" if factory
              else f"[{{name: x, shape: {shape}, dtype: float32}}]")
    model = (f"  m{i}:\n    source: models/net_{i}.py:Net\n    inputs: {inputs}\n"
             f"    calibration: {{samples: {rng.choice([1, 2, 4])}, seed: {rng.randint(0, 9)}}}\n")
    kinds = list(TARGET_KINDS)
    target_kind = rng.choices(kinds, [TARGET_KINDS[k][0] for k in kinds])[0]
    target = f"  t{i}:\n    {TARGET_KINDS[target_kind][1]}\n    models: [m{i}]\n"
    hostile = ([rng.choice(HOSTILE) for _ in range(rng.choice([1, 1, 2]))]
               if rng.random() < HOSTILE_SHARE else [])
    return Case(i, kind, files, model, target, hostile)


def write_project(folder: Path, cases: list[Case]) -> None:
    for case in cases:
        for name, text in case.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    text = ("models:\n" + "".join(c.model for c in cases) + "targets:\n"
            + "".join(c.target for c in cases))
    for case in cases:
        for pattern, replacement in case.hostile:
            text = re.sub(pattern, replacement, text, count=1, flags=re.MULTILINE)
    (folder / "targets.yaml").write_text(text)


# --- running and classifying -----------------------------------------------------------

def run_doit(project: Path, store: Path, stage_timeout: float,
             memory_bytes: int) -> tuple[int | None, str, float]:
    """``doit --continue build`` of the project: (exit status, None for a hang; output;
    seconds)."""
    argv = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT),
            "--continue", "build", f"targets={project / 'targets.yaml'}", f"store={store}",
            f"timeout={stage_timeout:g}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ETHOSU_PIPELINE_CHECK_JOBS": "1"}
    wall = (stage_timeout + HARD_STOP + BUILD_SLACK) if stage_timeout else None
    started = time.monotonic()
    # A session of its own: a hang is stopped with everything it started. The memory limit is
    # set on the new process before it has imported anything (its children inherit it).
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    resource.prlimit(proc.pid, resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        output, _ = proc.communicate(timeout=wall)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        output, _ = proc.communicate()
        status = None
    (project / "output.txt").write_text(output)
    return status, output, time.monotonic() - started


def classify(case: Case, project: Path, status: int | None, output: str) -> tuple[str, str]:
    """(class, the line that says why) of one case's target in a finished build."""
    t = f"t{case.index}"
    report_path = project / "build" / t / "report.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    if report is not None and not report.get("failed"):
        return "success", ""
    failed = (report or {}).get("models", {}).get(f"m{case.index}", {}).get("failed") or {}
    if "Traceback (most recent call last)" in (failed.get("error") or ""):
        return "traceback", failed["error"].strip().splitlines()[-1][:200]
    if failed.get("error"):
        return "error", failed["error"].splitlines()[0][:200]
    if status is None:
        return "hang", "still running at the wall-clock limit"
    own = re.compile(rf"^(?:[\w.-]+,)*{t}(?:,[\w.-]+)*/[\w-]+: .*$", re.MULTILINE)
    mine = own.search(output) or (MESSAGE.search(output) if case.alone else None)
    if "Traceback (most recent call last)" in output and (case.alone or not mine):
        return "traceback", output.strip().splitlines()[-1][:200]
    if mine:
        line = output[mine.start():].splitlines()[0]
        return "error", line[:200]
    if status == 0:
        return "silent", "exit status 0 without the target's report.json"
    return "unclear", f"exit status {status} without a message"


def warm_up(folder: Path, store: Path, memory_bytes: int) -> None:
    """Build a valid model once for every kind of target, without a time limit, so that the
    runtimes (a cold CMake build takes minutes) are in the store before the fuzzed builds."""
    text, shape = _valid_model(random.Random(0), image=False)
    (folder / "models").mkdir(parents=True)
    (folder / "models" / "net.py").write_text(text)
    targets = "".join(f"  {kind}:\n    {fields}\n    models: [m]\n"
                      for kind, (_, fields) in TARGET_KINDS.items())
    (folder / "targets.yaml").write_text(
        f"models:\n  m:\n    source: models/net.py:Net\n    inputs: [{{shape: {shape}}}]\n"
        f"    calibration: {{samples: 2, seed: 1}}\ntargets:\n{targets}")
    status, _, seconds = run_doit(folder, store, 0, memory_bytes)
    print(f"warm-up: exit status {status} in {seconds:.0f}s", flush=True)


def run_group(folder: Path, cases: list[Case], store: Path, stage_timeout: float,
              memory_bytes: int) -> list[dict]:
    write_project(folder, cases)
    status, output, seconds = run_doit(folder, store, stage_timeout, memory_bytes)
    rows = []
    for case in cases:
        verdict, why = classify(case, folder, status, output)
        rows.append({"case": case.index, "kind": case.kind, "hostile": bool(case.hostile),
                     "class": verdict, "why": why, "project": folder.name,
                     "seconds": round(seconds / len(cases), 1)})
        print(f"{case.index:4d} {case.kind:14s} {'H' if case.hostile else ' '} {verdict:9s} "
              f"{folder.name:9s} {why[:140]}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--builds", type=int, default=300)
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--out", type=Path, default=Path("/tmp/fuzz_builds"))
    parser.add_argument("--timeout", type=float, default=20.0, help="stage time limit, s")
    parser.add_argument("--memory", type=float, default=3.0, help="memory limit (RLIMIT_AS), GB")
    parser.add_argument("--jobs", type=int, default=1, help="doit runs at once")
    parser.add_argument("--batch", type=int, default=8,
                        help="targets per doit run for cases that can share one")
    args = parser.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    store = args.out / "store"
    memory = int(args.memory * (1 << 30))
    warm_up(args.out / "warm-up", store, memory)
    cases = [make_case(i, random.Random(args.seed * 100_003 + i)) for i in range(args.builds)]
    alone = [[c] for c in cases if c.alone]
    shared = [c for c in cases if not c.alone]
    groups = alone + [shared[k:k + args.batch] for k in range(0, len(shared), args.batch)]
    groups.sort(key=lambda g: g[0].index)
    started = time.monotonic()

    def one(group: list[Case]) -> list[dict]:
        folder = args.out / f"build{group[0].index:04d}"
        return run_group(folder, group, store, args.timeout, memory)

    rows: list[dict] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for found in pool.map(one, groups):
            rows += found
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["class"]] = counts.get(row["class"], 0) + 1
    summary = {"builds": args.builds, "doit_runs": len(groups), "counts": counts, "seconds": round(
        time.monotonic() - started), "stage_timeout": args.timeout, "memory_gb": args.memory,
        "cases": rows}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "cases"}))
    bad = sum(counts.get(k, 0) for k in ("traceback", "hang", "silent", "unclear"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
