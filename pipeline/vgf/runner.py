"""Run ``.vgf`` files on many input sets: ``python -m pipeline.vgf.runner``.

Started by the run check (``vgf_check.py``) with the environment of ``vulkan_environment``.
The scenario runner's Python API builds a graph's pipelines once (``load_scenario``: nearly all
of the cost, the emulation layer compiling a compute pipeline per operator on llvmpipe), then
each input set is an upload, a dispatch and a download. A process of its own keeps the Vulkan
environment and a driver crash away from the build process.

    python -m pipeline.vgf.runner SCENARIO INPUTS.npz OUTPUTS.npz
    python -m pipeline.vgf.runner --serve

``INPUTS.npz`` holds ``s<sample>_input_<i>`` arrays (VGF dtypes and dims); ``OUTPUTS.npz``
receives ``s<sample>_output_<i>`` and ``timing`` (load seconds, then seconds per sample).

``--serve`` runs one request per line of stdin, ``{"scenario", "inputs", "outputs", "work"}``
(``work``: a folder for the scenario's scratch files), and answers each with a line
``{"ok": true}`` or ``{"error": "..."}`` on stdout (whatever the libraries print goes to
stderr). It keeps the first scenario it loaded: while a Vulkan instance lives, the emulation
layers stay loaded, and with them the shaders they already rewrote and compiled, which
every later model of the same process reuses (a third less pipeline building for the example
models). It ends at the end of stdin.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _resources(scenario: dict, kind: str) -> list[str]:
    """The uids of the scenario's input (``src``) or output (``dst``) tensors, in order."""
    tensors = [r["tensor"] for r in scenario["resources"] if "tensor" in r]
    return [t["uid"] for t in tensors if kind in t]


def run(scenario_path: Path, inputs: dict[str, np.ndarray], work: Path | None = None,
        kept: list | None = None) -> dict[str, np.ndarray]:
    """Load the scenario once and run it on every sample of ``inputs``; scratch files in a
    folder under ``work``. The loaded scenario is appended to ``kept`` when that is empty."""
    import scenario_runner_py as runner

    scenario = json.loads(scenario_path.read_text())
    ins, outs = _resources(scenario, "src"), _resources(scenario, "dst")
    samples = len({key.split("_", 1)[0] for key in inputs})
    with tempfile.TemporaryDirectory(prefix="vgf-run-", dir=work) as tmp:
        # load_scenario reads every input file: the first sample's, absolute paths.
        for resource in scenario["resources"]:
            if "graph" in resource:
                resource["graph"]["src"] = str(scenario_path.parent / resource["graph"]["src"])
            tensor = resource.get("tensor", {})
            if "src" in tensor:
                src = Path(tmp) / f"{tensor['uid']}.npy"
                np.save(src, inputs[f"s0_input_{ins.index(tensor['uid'])}"])
                tensor["src"] = str(src)
            if "dst" in tensor:
                tensor["dst"] = str(Path(tmp) / f"{tensor['uid']}.out.npy")
        (Path(tmp) / "scenario.json").write_text(json.dumps(scenario))
        started = time.perf_counter()
        loaded = runner.load_scenario(str(Path(tmp) / "scenario.json"), output_dir=tmp)
        timing = [time.perf_counter() - started]
        in_ids = [loaded.get_tensor_id(uid) for uid in ins]
        out_ids = [loaded.get_tensor_id(uid) for uid in outs]
        results = {}
        for s in range(samples):
            started = time.perf_counter()
            for i, tensor in enumerate(in_ids):
                loaded.upload(tensor, np.ascontiguousarray(inputs[f"s{s}_input_{i}"]))
            loaded.run()
            for k, tensor in enumerate(out_ids):
                results[f"s{s}_output_{k}"] = np.array(loaded.download(tensor))
            timing.append(time.perf_counter() - started)
        if kept is not None and not kept:
            kept.append(loaded)
    results["timing"] = np.array(timing)
    return results


def serve() -> int:
    """``--serve``: the requests of stdin, one after another, in this process."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the libraries' prints: to stderr
    sys.stdout = sys.stderr
    kept: list = []
    for line in sys.stdin:
        try:
            request = json.loads(line)
            with np.load(request["inputs"]) as data:
                arrays = {key: data[key] for key in data.files}
            results = run(Path(request["scenario"]), arrays, Path(request["work"]), kept)
            np.savez(request["outputs"], **results)
            reply = {"ok": True}
        except Exception as exc:  # the scenario runner's errors: one line for the run check
            reply = {"error": f"scenario runner: {type(exc).__name__}: {exc}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--serve"]:
        return serve()
    if len(argv) != 3:
        print("usage: python -m pipeline.vgf.runner SCENARIO INPUTS.npz OUTPUTS.npz | "
              "--serve", file=sys.stderr)
        return 2
    scenario, inputs, outputs = map(Path, argv)
    with np.load(inputs) as data:
        arrays = {key: data[key] for key in data.files}
    try:
        results = run(scenario, arrays)
    except Exception as exc:  # the scenario runner's errors: one line for the run check
        print(f"scenario runner: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    np.savez(outputs, **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
