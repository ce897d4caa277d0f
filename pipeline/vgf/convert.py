"""VGF stage: a TOSA flatbuffer -> ``.vgf`` with the ML SDK model converter.

Outputs: ``model.vgf``; ``scenario.json`` (the ML SDK scenario runner's description of one
inference: the graph, its input ``.npy`` files ``input_<i>.npy`` beside the scenario, its
outputs ``output_<i>.npy`` under ``--output``); ``vgf_io.json`` (io.json's entries - names,
dtypes, NHWC shapes, scales, zero points - each with its VGF binding, name and Vulkan format,
since the ``.vgf`` keeps positions only); ``vgf_figures.json`` (the converter's figures).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from pipeline.errors import StageError

# The Vulkan format of each TOSA tensor type the lowering emits (io.json's dtype).
VK_FORMATS = {
    "int8": "VK_FORMAT_R8_SINT", "int16": "VK_FORMAT_R16_SINT", "int32": "VK_FORMAT_R32_SINT",
    "float32": "VK_FORMAT_R32_SFLOAT", "float16": "VK_FORMAT_R16_SFLOAT",
    "bool": "VK_FORMAT_R8_BOOL_ARM",
}
_FORMAT_BYTES = {"R8": 1, "R16": 2, "R32": 4, "R64": 8}
_ILLEGAL = re.compile(r"failed to legalize operation '([\w.]+)'")


def tool(name: str) -> str:
    """A console script of the running environment (the ML SDK's pip packages), else PATH's."""
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else shutil.which(name) or name


def convert(tosa: Path, io: Path, out_dir: Path, converter_args: Sequence[str] = (), *,
            where: str = "") -> dict[str, Path]:
    """Convert ``tosa`` to ``out_dir/model.vgf`` and describe it.

    Args:
        tosa: the lowered TOSA flatbuffer.
        io: its io.json (the lower stage's).
        out_dir: receives ``model.vgf``, ``scenario.json``, ``vgf_io.json``,
            ``vgf_figures.json``.
        converter_args: options from the target's ``vgf:`` block.

    Returns:
        Output role -> path.

    Raises:
        StageError: the converter failed (names the operator it rejected) or wrote a graph
            whose inputs/outputs differ from io.json's.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    vgf = out_dir / "model.vgf"
    command = [tool("model-converter"), *converter_args, "-i", str(tosa), "-o", str(vgf)]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or not vgf.is_file():
        rejected = _ILLEGAL.findall(proc.stderr)
        what = (f"the ML SDK model converter must convert every TOSA operator; it rejected "
                f"{', '.join(dict.fromkeys(rejected))}" if rejected else
                f"the ML SDK model converter must convert the graph; it exited {proc.returncode}")
        raise StageError(where, what, command, proc.stderr or proc.stdout)
    dump = _vgf_dump(vgf, where)
    template = json.loads(_run([tool("vgf_dump"), "-i", str(vgf), "--scenario-template"],
                               where).stdout)
    desc = json.loads(Path(io).read_text())
    described = describe_io(desc, dump, where)
    outputs = {"vgf": vgf, "scenario": out_dir / "scenario.json",
               "vgf_io": out_dir / "vgf_io.json", "figures": out_dir / "vgf_figures.json"}
    outputs["scenario"].write_text(json.dumps(scenario(template), indent=2) + "\n")
    outputs["vgf_io"].write_text(json.dumps(described, indent=2) + "\n")
    outputs["figures"].write_text(json.dumps(figures(vgf, dump, seconds), indent=2) + "\n")
    return outputs


def _run(command: list[str], where: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise StageError(where, f"{Path(command[0]).name} must read the .vgf it was given; it "
                         f"exited {proc.returncode}", command, proc.stderr or proc.stdout)
    return proc


def _vgf_dump(vgf: Path, where: str) -> dict:
    return json.loads(_run([tool("vgf_dump"), "-i", str(vgf)], where).stdout)


def scenario(template: dict) -> dict:
    """``vgf_dump --scenario-template`` made runnable: ``dispatch_vgf`` (``dispatch_graph`` is
    deprecated), ``model.vgf``, ``input_<i>.npy`` and ``output_<i>.npy``."""
    for command in template["commands"]:
        if "dispatch_graph" in command:
            command["dispatch_vgf"] = command.pop("dispatch_graph")
    for resource in template["resources"]:
        if "graph" in resource:
            resource["graph"]["src"] = "model.vgf"
        tensor = resource.get("tensor", {})
        for key, kind in (("src", "INPUT"), ("dst", "OUTPUT")):
            placeholder = f"TEMPLATE_PATH_TENSOR_{kind}_"
            if str(tensor.get(key, "")).startswith(placeholder):
                tensor[key] = f"{kind.lower()}_{tensor[key].removeprefix(placeholder)}.npy"
    return template


def describe_io(desc: dict, dump: dict, where: str) -> dict:
    """io.json's entries with their VGF binding, name, dims and format, matched by position.

    Raises:
        StageError: counts, shapes or formats differ (the positional match would be wrong).
    """
    resources = dump["resources"]
    described = {"tosa_spec": desc.get("tosa_spec")}
    for kind in ("inputs", "outputs"):
        slots, entries = dump["model_sequence"][kind], desc[kind]
        if len(slots) != len(entries):
            raise StageError(where, f"the .vgf must have the graph's {len(entries)} {kind}; "
                             f"got {len(slots)}")
        described[kind] = []
        for slot, entry in zip(sorted(slots, key=lambda s: s["index"]), entries):
            resource = resources[slot["mrt_index"]]
            expected = VK_FORMATS.get(entry["dtype"])
            if list(resource["shape"]) != list(entry["shape"]) or resource["vk_format"] != expected:
                raise StageError(where, f"{kind[:-1]} {entry['name']!r} ({slot['name']}) must be "
                                 f"{entry['shape']} {expected} in the .vgf as in the TOSA graph; "
                                 f"got {resource['shape']} {resource['vk_format']}")
            described[kind].append({**entry, "vgf_name": slot["name"], "binding": slot["binding"],
                                    "vk_format": resource["vk_format"]})
    return described


def _resource_bytes(resource: dict) -> int:
    count = 1
    for dim in resource["shape"]:
        count *= max(dim, 1)
    match = re.match(r"VK_FORMAT_(R\d+)", resource["vk_format"] or "")
    return count * _FORMAT_BYTES.get(match.group(1) if match else "", 1)


def figures(vgf: Path, dump: dict, seconds: float) -> dict:
    """The converter's figures: time, file size, constants, modules and versions."""
    constants = [dump["resources"][c["mrt_index"]] for c in dump["constants"]]
    header = dump["header"]
    return {
        "convert_seconds": round(seconds, 3),
        "vgf_bytes": vgf.stat().st_size,
        "constants": len(constants),
        "constant_bytes": sum(_resource_bytes(r) for r in constants),
        "modules": len(dump["modules"]),
        "segments": len(dump["model_sequence"]["segments"]),
        "vgf_format": f"{header['major']}.{header['minor']}.{header['patch']}",
        "model_converter": _version("ai-ml-sdk-model-converter"),
    }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "missing"
