"""Run one ``.vgf`` on many input sets in one process: ``python -m pipeline.stages.vgf_runner``.

Started by the run check (``vgf_check.py``) with the environment of ``vulkan_env.py``. The
scenario runner's Python API builds the graph's pipelines once (``load_scenario``: nearly all
of the cost, the emulation layer compiling a compute pipeline per operator on llvmpipe), then
each input set is an upload, a dispatch and a download. A process of its own keeps the
Vulkan environment and a driver crash away from the build process.

    python -m pipeline.stages.vgf_runner SCENARIO INPUTS.npz OUTPUTS.npz

``INPUTS.npz`` holds ``s<sample>_input_<i>`` arrays (VGF dtypes and dims); ``OUTPUTS.npz``
receives ``s<sample>_output_<i>`` and ``timing`` (load seconds, then seconds per sample).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def _resources(scenario: dict, kind: str) -> list[str]:
    """The uids of the scenario's input (``src``) or output (``dst``) tensors, in order."""
    tensors = [r["tensor"] for r in scenario["resources"] if "tensor" in r]
    return [t["uid"] for t in tensors if kind in t]


def run(scenario_path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Load the scenario once and run it on every sample of ``inputs``."""
    import scenario_runner_py as runner

    scenario = json.loads(scenario_path.read_text())
    ins, outs = _resources(scenario, "src"), _resources(scenario, "dst")
    samples = len({key.split("_", 1)[0] for key in inputs})
    with tempfile.TemporaryDirectory(prefix="vgf-run-") as tmp:
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
    results["timing"] = np.array(timing)
    return results


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m pipeline.stages.vgf_runner SCENARIO INPUTS.npz OUTPUTS.npz",
              file=sys.stderr)
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
