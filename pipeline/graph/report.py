"""The per-target view: copy what a target built into ``<build>/<target>/``, write its report."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from pipeline.files import check_own, copy_file, remove, write_atomic
from pipeline.graph.plan import Invocation, ModelBuild
from pipeline.graph.report_html import top_layers


def copy_view(src: Path, dest: Path, build: Path) -> None:
    """Copy a stage output into a target folder under ``build``, never through a link."""
    copy_file(src, dest, root=build)


def clear_stale(folder: Path, keep: set[str]) -> None:
    """Remove what a target folder holds that its configuration no longer produces (a link
    is removed itself, never followed)."""
    check_own(folder, folder.parent)
    if folder.is_dir():
        for child in folder.iterdir():
            if child.name not in keep:
                remove(child, folder.parent)


def _model_entry(build: ModelBuild, folder: Path) -> dict:
    for path, name in build.views():  # as the stages declare them
        if name is not None:
            copy_view(path, folder / name, folder.parent.parent)
    verify = json.loads(build.verify.outputs["report"].read_text())
    entry = {"tosa": str(folder / "model.tosa"), "verify": verify,
             "io": json.loads(build.lower.outputs["io"].read_text())}
    if build.quantize is not None:
        entry["quantize"] = json.loads(build.quantize.outputs["record"].read_text())
    if build.package is not None:
        entry["artifact"] = str(folder / "model.bin")
        entry["artifact_bytes"] = (folder / "model.bin").stat().st_size
        entry["vela"] = json.loads(build.vela.outputs["figures"].read_text())
        # The costliest layers, as report.html plots them (all of them: vela_per_layer.csv).
        entry["vela"]["top_layers"] = top_layers(folder / "vela_per_layer.csv")
        entry["roofline"] = json.loads(build.vela.outputs["roofline"].read_text())
        entry["roofline"]["summary"] = limit_text(entry["roofline"])
        front = entry.get("quantize", {}).get("front_end")
        if front:
            entry["front_end"] = front_end_summary(front, folder / "vela_per_layer.csv",
                                                   entry["vela"]["cycles_npu"])
    if build.mixed is not None:
        entry.update(_mixed_entry(build, folder))
    if build.vgf is not None:
        entry["vgf"] = {"file": str(folder / "model.vgf"),
                        "scenario": str(folder / "scenario.json"),
                        **json.loads(build.vgf.outputs["figures"].read_text())}
        entry["run_check"] = json.loads(build.vgf_check.outputs["report"].read_text())
    if build.firmware is not None:
        entry["firmware"] = str(folder / build.firmware.outputs["elf"].name)
    if build.cpu_graph is not None:
        entry["cpu"] = _cpu_entry(build, folder)
    return entry


def front_end_summary(record: dict, per_layer_csv: Path, cycles_npu: int | None = None) -> dict:
    """A signal front end's own figures (quantize.json's ``front_end``, docs/front_ends.md):
    the SQNR of its log against float over the calibration samples, and its share of the
    cycles of Vela's per-layer rows (a row belongs to the longest node name it starts with,
    followed by nothing, ``_`` or ``/``: ``log_steep_low/lut`` is ``log``'s). The rows' cycles
    add up to more than the network's NPU cycles (Vela overlaps operations), so the front
    end's ``cycles_npu`` is that share of the network's."""
    import csv

    names = sorted(record.get("nodes", []), key=len, reverse=True)
    cycles = total = 0
    with open(per_layer_csv, newline="") as handle:
        for row in csv.DictReader(handle):
            name, count = row["Name"].strip(), int(float(row["Op Cycles"]))
            total += count
            owner = next((n for n in names if name == n or name.startswith((n + "_", n + "/"))),
                         None)
            cycles += count if owner is not None else 0
    share = cycles / total if total else None
    return {"sqnr_db": [log["sqnr_db"] for log in record.get("logs", [])],
            "share_of_cycles": None if share is None else round(share, 4),
            "cycles_npu": None if share is None or cycles_npu is None else
            round(share * cycles_npu)}


def _cpu_entry(build: ModelBuild, folder: Path) -> dict:
    """A CPU-only target's model: its artifact, where each operator runs, the arena, and the
    QEMU check (which machine and CPU, and why it is not the target's own where it is not)."""
    plan = json.loads(build.cpu_graph.outputs["plan"].read_text())
    entry = {"artifact": str(folder / "model.cpu.bin"),
             "artifact_bytes": (folder / "model.cpu.bin").stat().st_size,
             "arena_bytes": plan["arena_bytes"], "tensor_bytes": plan["tensor_bytes"],
             "operators": plan["operators"]}
    if build.cpu_verify is not None:
        entry["verify"] = json.loads(build.cpu_verify.outputs["report"].read_text())
        # The estimated cost of each operator: instructions retired under QEMU -icount.
        costs = entry["verify"].get("op_instructions") or [None] * len(plan["operators"])
        entry["operators"] = [{**op, "instructions": n} for op, n in zip(plan["operators"], costs)]
        entry["instructions"] = entry["verify"].get("instructions")
    return entry


def _mixed_entry(build: ModelBuild, folder: Path) -> dict:
    """npu: {fallback: cpu}: the sequence artifact, where each operator runs (and why on the
    CPU), and each segment's estimated cost (or why there is none)."""
    record = json.loads(build.mixed.outputs["record"].read_text())
    check = None
    if build.mixed_verify is not None:
        check = json.loads(build.mixed_verify.outputs["report"].read_text())
        # The estimated cost of a CPU segment: instructions retired under QEMU -icount.
        measured = {c["segment"]: c for c in check["segments"]}
        for segment in record["segments"]:
            if segment["index"] in measured and measured[segment["index"]]["instructions"]:
                segment["instructions"] = measured[segment["index"]]["instructions"]
                segment.pop("cost_reason", None)
            elif segment["index"] in measured:
                segment["cost_reason"] = ("not measured: user-mode QEMU (Linux) has no "
                                          "instruction clock")
    return {"artifact": str(folder / "model.bin"), "mixed_verify": check,
            "artifact_bytes": (folder / "model.bin").stat().st_size, "mixed": record,
            "runner": "ethosu_runner runs sequence artifacts: on Linux as is; on bare metal "
                      "as firmware with the sequence compiled in (set ethosu_sdk)"}


def _mixed_text(mixed: dict) -> str:
    """``NPU 13 ops (1564 cycles) + CPU 2 ops (MATMUL, RESCALE; cost not measured)``."""
    parts = []
    for kind in ("npu", "cpu"):
        ops = [o for o in mixed["operators"] if o["runs_on"] == kind]
        segs = [s for s in mixed["segments"] if s["runs_on"] == kind]
        if not ops:
            continue
        if kind == "npu":
            cost = f"{sum(s['cycles'] for s in segs)} cycles"
        else:
            known = [s["instructions"] for s in segs if s["instructions"] is not None]
            cost = (f"{sum(known):,} instructions" if len(known) == len(segs)
                    else "cost not measured")
            cost = f"{', '.join(sorted({o['op'] for o in ops}))}; {cost}"
        parts.append(f"{kind.upper()} {len(ops)} ops in {len(segs)} segment(s) ({cost})")
    return "mixed: " + " + ".join(parts)


def runtime_view(name: str) -> str:
    """Where a runtime product goes in the target folder: the runner on top, libraries in lib/."""
    return name if name in ("ethosu_runner", "tosa_cpu_runner") else f"lib/{name}"


def _runtime_entry(runtime: Invocation, folder: Path, builds: list[ModelBuild]) -> dict:
    """Copy the runtime's products: the Linux runner beside the models, libraries in lib/."""
    files = {}
    for name, src in runtime.outputs.items():
        dest = folder / runtime_view(name)
        copy_view(src, dest, folder.parent)
        files[name] = str(dest)
    entry = {"build": runtime.task, **runtime.options, "files": files}
    if runtime.options["platform"] == "cortex_m" and not any(b.firmware for b in builds):
        entry["firmware"] = ("not linked: set ethosu_sdk in targets.yaml to the Ethos-U core "
                             "driver SDK to link the bare-metal runner with each model")
    return entry


def write_target(target: str, builds: list[ModelBuild], runtime: Invocation | None,
                 folder: Path, config: dict) -> bool:
    """doit action: the target folder and its ``report.json``; prints a one-line summary per model."""
    keep = {b.model for b in builds} | {"report.json"}
    keep |= {runtime_view(n).split("/")[0] for n in (runtime.outputs if runtime else ())}
    clear_stale(folder, keep)
    report = {"target": target, "config": config, "models": {},
              "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for build in builds:
        report["models"][build.model] = _model_entry(build, folder / build.model)
    if (config.get("npu", "") is None and config.get("vgf") is None
            and config.get("platform") in ("baremetal", "linux")
            and not any(b.cpu_graph for b in builds)):
        # Never silent: say why an NPU-less Cortex target has no deployable artifact.
        report["cpu"] = (f"not built: the CPU kernels run TOSA INT graphs; tosa is "
                         f"{config.get('tosa')}, so the graph is only verified on the host")
    if runtime is not None:
        report["runtime"] = _runtime_entry(runtime, folder, builds)
    write_atomic(folder / "report.json", json.dumps(report, indent=2, sort_keys=True).encode(),
                 root=folder.parent)
    for name, entry in report["models"].items():
        print("   " + summary_line(target, name, entry), flush=True)
    if "cpu" in report:
        print(f"   {target}: CPU artifact {report['cpu']}", flush=True)
    if runtime is not None:
        print(f"   {target}: runtime {runtime.task} -> {', '.join(report['runtime']['files'])}"
              + (f"; firmware {report['runtime']['firmware']}" if "firmware" in report["runtime"] else ""),
              flush=True)
    return True


def limit_text(roofline: dict) -> str:
    """``total cycles = 2.84x the limit (3.2x the MAC bound alone, 3.2x the network's bound;
    5 of 5 layers mapped to model lines)``."""
    if roofline["times_limit"] is None:
        return "no NPU operation with a bound"
    mac, network = roofline["times_mac_limit"], roofline.get("times_network_bound")
    parts = [f"{mac:.1f}x the MAC bound alone" if mac is not None else "no MACs"]
    if network is not None:
        parts.append(f"{network:.1f}x the network's bound")
    layers = roofline["mapped_layers"] + roofline["unmapped_layers"]
    return (f"total cycles = {roofline['times_limit']:.2f}x the limit ({', '.join(parts)}; "
            f"{roofline['mapped_layers']} of {layers} layers mapped to model lines)")


def summary_line(target: str, model: str, entry: dict) -> str:
    """One human line per built model: NPU figures and verification."""
    verify = entry["verify"]
    # An SQNR of None is an exact match with the float model (infinite); the worst output counts.
    sqnrs = [o.get("sqnr_db_vs_float") for o in verify.get("outputs", [])]
    sqnr = min((math.inf if s is None else s for s in sqnrs), default=math.nan)
    layers = f", {len(verify['layers'])} layers" if verify.get("layers") else ""
    text = (f"{target}/{model}: verified ({'pass' if verify.get('passed') else 'FAIL'}{layers}, "
            f"SQNR {sqnr:.1f} dB)")
    cpu = entry.get("cpu")
    if cpu:
        counts = {}
        for op in cpu["operators"]:
            counts[op["op"]] = counts.get(op["op"], 0) + 1
        ops = ", ".join(f"{n} {op}" for op, n in sorted(counts.items()))
        text += f"; CPU: {len(cpu['operators'])} ops ({ops}), arena {cpu['arena_bytes']} B"
        if cpu.get("instructions"):
            text += f", {cpu['instructions']:,} instructions"
        check = cpu.get("verify")
        if check:
            emulated = check["qemu_cpu"] + (f" for {check['cpu']}" if check["substitute"] else "")
            text += (f"; QEMU {check['qemu']} ({emulated}): "
                     f"{'bit-exact' if check['passed'] else 'FAIL'}")
    vela = entry.get("vela")
    if vela:
        text += (f"; {vela['cycles_total']} cycles ({vela['inference_time'] * 1e6:.1f} us), "
                 f"{vela['npu_op_share']:.0%} NPU ops, artifact {entry['artifact_bytes']} B")
        if entry.get("roofline") and entry["roofline"]["times_limit"] is not None:
            text += f", {entry['roofline']['times_limit']:.2f}x the limit"
    if entry.get("mixed"):
        text += f"; {_mixed_text(entry['mixed'])}, artifact {entry['artifact_bytes']} B"
        check = entry.get("mixed_verify")
        if check and not check.get("segments"):
            text += "; no CPU segment (every operator on the NPU)"
        elif check:
            emulated = check["qemu_cpu"] + (f" for {check['cpu']}" if check["substitute"] else "")
            text += (f"; CPU segments under QEMU {check['qemu']} ({emulated}): "
                     f"{'bit-exact' if check['passed'] else 'FAIL'}")
        else:
            text += "; CPU segments not run under QEMU (no emulated board for this CPU)"
    if entry.get("vgf"):
        check = entry["run_check"]
        text += (f"; model.vgf {entry['vgf']['vgf_bytes']} B, run check "
                 f"{'pass' if check['passed'] else 'FAIL'} ({check['tolerance']}, "
                 f"{check['samples']} samples, {check['timing']['runner_seconds']:.1f}s)")
    return text
