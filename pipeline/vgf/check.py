"""VGF run check: the ``.vgf`` executed on the model's test inputs, against the TOSA reference
model on the same ``.tosa`` and inputs - bit-exact for an INT graph, within ``FP_RTOL`` /
``FP_ATOL_SCALE`` for an FP graph. A mismatch fails the build, naming the output and figures.

The ``.vgf`` runs in the ML SDK scenario runner's Python API (``runner.py --serve``: one
process, reused by every run check of the build process; a model's pipelines are built once,
then every input set is a dispatch) on Mesa's lavapipe with the ML emulation layer
(``vulkan.py``). Imports torch inside the function.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline.errors import StageError, UserError, VerificationError

# FP graphs: the emulation layer's exp/rsqrt/reciprocal/erf differ from the reference model's
# by a few ULP (3e-7 absolute on transformer outputs of ~1.5; fft2d 2.5e-5 on 8x8): an element
# passes when |vgf - ref| <= FP_ATOL_SCALE * max|ref| + FP_RTOL * |ref|.
FP_RTOL = 1e-4
FP_ATOL_SCALE = 1e-5
RUNNER = Path(__file__).with_name("runner.py")


def run_check(vgf: Path, scenario: Path, vgf_io: Path, tosa: Path, test_inputs: Path,
              out_report: Path, *, where: str = "") -> dict:
    """Run ``vgf`` and the TOSA reference model on every test input set; write the report.

    Args:
        vgf, scenario, vgf_io: the VGF stage's outputs (``scenario`` beside ``vgf``).
        tosa: the TOSA flatbuffer ``vgf`` was converted from.
        test_inputs: torch.save'd list of input tuples (the export stage's).
        out_report: JSON report: per output the exact fraction and largest difference, the
            tolerance, timings, ``passed``.

    Returns:
        The report.

    Raises:
        UserError: no Vulkan driver (one line naming the Debian packages).
        StageError: the scenario runner failed.
        VerificationError: an output differs (names it, the sample, count and largest diff).
    """
    import numpy as np
    import torch

    import pipeline.programs  # noqa: F401  (registers the quantize op _feeds uses)
    from pipeline.verify.check import _feeds
    from pipeline.verify.reference_model import run_reference_model

    desc = json.loads(Path(vgf_io).read_text())
    fp = str(desc.get("tosa_spec", "")).split("+")[1:2] == ["FP"]
    feeds = _feeds(desc, torch.load(test_inputs, weights_only=True))
    started = time.perf_counter()
    names = [o["name"] for o in desc["outputs"]]
    references = [run_reference_model(tosa, feed, names, where=where) for feed in feeds]
    reference_seconds = time.perf_counter() - started
    started = time.perf_counter()
    results = _run_vgf(Path(scenario), [list(f.values()) for f in feeds], where)
    timing = results.pop("timing")
    outputs = [_compare(o, [r[o["name"]] for r in references],
                        [results[f"s{s}_output_{k}"] for s in range(len(feeds))], fp)
               for k, o in enumerate(desc["outputs"])]
    report = {
        "where": where, "samples": len(feeds), "outputs": outputs,
        "tolerance": (f"FP: |vgf - ref| <= {FP_ATOL_SCALE:g} * max|ref| + {FP_RTOL:g} * |ref|"
                      if fp else "INT: bit-exact"),
        "timing": {"runner_seconds": round(time.perf_counter() - started, 3),
                   "load_seconds": round(float(timing[0]), 3),
                   # the first dispatch JIT-compiles what Mesa's shader cache lacks
                   "first_run_seconds": round(float(timing[1]), 3),
                   "run_seconds_per_sample": round(float(np.mean(timing[2:] if len(timing) > 2
                                                                 else timing[1:])), 4),
                   "reference_model_seconds": round(reference_seconds, 3)},
        "device": "lavapipe + ML emulation layer (Vulkan ML extensions)",
        "passed": all(o["passed"] for o in outputs),
    }
    tmp = out_report.with_name(f".{out_report.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, out_report)
    failed = next((o for o in outputs if not o["passed"]), None)
    if failed is not None:
        raise VerificationError(_failure(where, failed, fp))
    return report


def _run_vgf(scenario: Path, samples: list[list], where: str) -> dict:
    """Every sample through the .vgf in the scenario-runner process; its outputs by name."""
    import numpy as np

    from pipeline.vgf.vulkan import vulkan_environment

    try:
        env = vulkan_environment(layers_folder())
    except UserError as exc:  # no driver: the one line, naming where
        raise UserError(f"{where}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="vgf-check-") as tmp:
        inputs, outputs = Path(tmp) / "inputs.npz", Path(tmp) / "outputs.npz"
        np.savez(inputs, **{f"s{s}_input_{i}": np.ascontiguousarray(a)
                            for s, arrays in enumerate(samples) for i, a in enumerate(arrays)})
        runner = _Runner.get(env)
        try:
            reply = runner.request({"scenario": str(scenario), "inputs": str(inputs),
                                    "outputs": str(outputs), "work": tmp})
        except BaseException:  # a time limit or Ctrl-C mid-request: the process goes too
            _Runner.stop_current()
            raise
        if reply is None:
            log = runner.log_tail()
            _Runner.stop_current()
            raise StageError(where, "the scenario runner must run the .vgf on lavapipe with the "
                             "ML emulation layer; it ended without an answer", runner.command,
                             log)
        if "error" in reply:
            raise StageError(where, "the scenario runner must run the .vgf on lavapipe with the "
                             "ML emulation layer; it failed", runner.command, reply["error"])
        with np.load(outputs) as data:
            return {key: data[key] for key in data.files}


def _vulkan_part(env: dict[str, str]) -> dict[str, str]:
    """What of an environment the loader, the layers and lavapipe read (a change starts a new
    runner): the Vulkan, Mesa, llvmpipe and emulation-layer variables and the library path."""
    prefixes = ("VK_", "MESA_", "LP_", "GALLIVM_", "VMEL_", "LD_", "XDG_")
    return {k: v for k, v in env.items() if k.startswith(prefixes) or k == "HOME"}


def layers_folder() -> Path:
    """Where the emulation layers' manifests live while a runner may use them: a folder of the
    user's cache (the stage's own work area goes away with the stage, the runner stays)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ethosu-pipeline" / "vulkan-layers"


class _Runner:
    """The ``runner.py --serve`` process of this Python process: started on the first run
    check, reused by the next ones (the emulation layers it keeps loaded have rewritten and
    compiled many of their shaders already), replaced when the environment changes, ended with
    the process (the end of its stdin)."""

    current: _Runner | None = None

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.command = [sys.executable, "-P", str(RUNNER), "--serve"]
        self.log = tempfile.TemporaryFile()  # the libraries' messages (unlinked: no leftovers)
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, env=env, text=True)

    @classmethod
    def get(cls, env: dict[str, str]) -> _Runner:
        # The stage's own scratch folder (TMPDIR) changes from check to check and goes away
        # with the stage: the runner gets the system's, and scratch files in each request's.
        env = {k: v for k, v in env.items() if k != "TMPDIR"}
        current = cls.current
        if current is None or _vulkan_part(current.env) != _vulkan_part(env) or \
                current.proc.poll() is not None:
            cls.stop_current()
            cls.current = cls(env)
        return cls.current

    @classmethod
    def stop_current(cls) -> None:
        runner, cls.current = cls.current, None
        if runner is not None:
            runner.proc.kill()
            runner.proc.wait()
            runner.log.close()

    def request(self, request: dict) -> dict | None:
        """Send one request; its reply, or None when the process ended without one."""
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except OSError:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def log_tail(self, size: int = 4000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-size:]


def _compare(entry: dict, references: list, results: list, fp: bool) -> dict:
    """One output over every sample: exact fraction, largest difference, first failure."""
    import numpy as np

    exact = total = 0
    worst, failure = 0.0, None
    for s, (ref, got) in enumerate(zip(references, results)):
        ref, got = np.asarray(ref), np.asarray(got)
        if ref.shape != got.shape:
            failure = failure or {"sample": s, "shape": [list(got.shape), list(ref.shape)]}
            continue
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        same = (got == ref) | (np.isnan(diff) & np.isnan(ref.astype(np.float64)))
        exact, total = exact + int(same.sum()), total + same.size
        worst = max(worst, float(np.nanmax(diff, initial=0.0)))
        if fp:
            atol = FP_ATOL_SCALE * float(np.nanmax(np.abs(ref), initial=0.0))
            bound = atol + FP_RTOL * np.abs(ref)
            bad = ~same & ~(diff <= bound)
        else:
            bad = ~same
        if bad.any() and failure is None:
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            failure = {"sample": s, "count": int(bad.sum()), "size": int(bad.size),
                       "index": list(index), "vgf": got[index].item(),
                       "reference": ref[index].item()}
    result = {"name": entry["name"], "vgf_name": entry["vgf_name"], "dtype": entry["dtype"],
              "exact_fraction": exact / total if total else 0.0, "max_abs_diff": worst,
              "passed": failure is None}
    if failure is not None:
        result["first_failure"] = failure
    return result


def _failure(where: str, output: dict, fp: bool) -> str:
    f = output["first_failure"]
    what = (f"within {FP_ATOL_SCALE:g} * max|ref| + {FP_RTOL:g} * |ref|" if fp
            else "bit for bit (INT graph)")
    head = (f"{where}: output {output['name']!r} ({output['vgf_name']}) of the .vgf must match "
            f"the TOSA reference model's {what}")
    if "shape" in f:
        return f"{head}; got shape {f['shape'][0]} against {f['shape'][1]} in sample {f['sample']}"
    return (f"{head}; got {f['count']} of {f['size']} elements different in sample "
            f"{f['sample']}, first at {tuple(f['index'])} (vgf {f['vgf']}, reference "
            f"{f['reference']}), max |diff| {output['max_abs_diff']:g}")
