"""--end-to-end: a cold ``doit verify package`` of the models for every NPU, with a fresh
store, against a subprocess that runs only their flow over the same models and NPUs (each
side pays its interpreter start and imports)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from .env import ROOT, SCRIPT
from .figures import divide
from .models import ModelEntry
from .report import GOAL_TIME_RATIO, fmt_num


def scratch_targets_yaml(entries: list[ModelEntry], npus) -> str:
    """A targets file of the entries (absolute paths) with one bare-metal target per NPU."""
    lines = ["models:"]
    for entry in entries:
        lines.append(f"  {entry.name}:")
        lines.append(f"    source: {entry.path}:{entry.attr}")
        factory = f"{entry.factory[0]}:{entry.factory[1]}" if entry.factory else None
        lines.append(f"    inputs: {factory or json.dumps([dict(s) for s in entry.inputs])}")
        lines.append(f"    seed: {entry.seed}")
        calibration = {k: v for k, v in entry.calibration.items() if v is not None}
        lines.append(f"    calibration: {json.dumps({**calibration, 'observer': entry.observer})}")
    lines.append("defaults:")
    lines.append(f"  models: [{', '.join(e.name for e in entries)}]")
    lines.append("targets:")
    for npu in npus:
        cpu = "cortex-m55" if "u55" in npu else "cortex-m85"
        lines.append(f"  {npu}:")
        lines.append(f"    cpu: {cpu}")
        lines.append(f"    npu: {{config: {npu}}}")
    return "\n".join(lines) + "\n"


def end_to_end(entries: list[ModelEntry], npus, scratch: Path, targets: Path) -> dict:
    """Cold `doit verify package` (fresh store) vs a subprocess running only their flow."""
    project = scratch / "e2e"
    project.mkdir(parents=True, exist_ok=True)
    (project / "targets.yaml").write_text(scratch_targets_yaml(entries, npus))
    names = ",".join(e.name for e in entries)
    ours_cmd = [sys.executable, "-m", "doit", "-f", str(ROOT / "dodo.py"), "-d", str(ROOT),
                "verify", "package", f"targets={project / 'targets.yaml'}",
                f"store={project / 'store'}", f"build={project / 'build'}"]
    theirs_cmd = [sys.executable, str(SCRIPT), "--their-flow-only",
                  "--targets", str(targets), "--models", names, "--npus", ",".join(npus),
                  "--keep", str(project / "theirs")]
    result = {}
    for side, cmd in (("ours", ours_cmd), ("theirs", theirs_cmd)):
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        result[side] = time.perf_counter() - start
        if proc.returncode != 0:
            result[f"{side}_error"] = (proc.stdout + proc.stderr).strip()[-600:]
    print()
    print("end to end, cold, both NPUs, every model above (subprocess: interpreter start, imports)")
    print(f"  ours  : doit verify package, fresh store   {result['ours']:7.1f} s"
          + (" FAILED" if "ours_error" in result else ""))
    print(f"  theirs: their flow per NPU, .pte written   {result['theirs']:7.1f} s"
          + (" FAILED" if "theirs_error" in result else ""))
    ratio = divide(result["ours"], result["theirs"])
    print(f"  ours/theirs = {fmt_num(ratio, '.2f')} (goal <= {GOAL_TIME_RATIO:.2f})")
    for side in ("ours", "theirs"):
        if f"{side}_error" in result:
            print(f"  {side} output tail:\n{result[f'{side}_error']}")
    result["ratio"] = ratio
    return result
