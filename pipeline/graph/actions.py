"""The Python actions behind the doit tasks: run a stage through the store, write a target.

Each stage task computes its key at run time (content of its inputs, its options, its code
and tool versions), restores the outputs from the store on a hit, and otherwise runs the
stage into a temporary folder, puts the result into the store and copies it into place. A
user error becomes a doit failure with the message alone; a bug keeps its traceback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

from pipeline.cache.key import TOOL_PACKAGES, stage_key, tool_versions, tree_digest
from pipeline.cache.remote import Remote, open_remote
from pipeline.cache.store import Store
from pipeline.errors import UserError
from pipeline.graph import loaded as loaded_files
from pipeline.graph.loaded import recording_local_modules
from pipeline.graph.outputs import record as output_values
from pipeline.graph.plan import PIPELINE_DIR, REPO_DIR, STAGE_PACKAGES, Invocation, code_files
from pipeline.graph.progress import ticking
from pipeline.graph.timeout import call_with_limit

WORK_DIR = ".work"  # <build>/.work/: stage work areas; a build holding the lock empties it


def _call_stage(inv: Invocation, out: dict[str, Path], where: str) -> list[Path]:
    """Run the stage function behind an invocation, writing to ``out`` (role -> path).
    Returns the local modules it imported (the export stage; ``graph/loaded.py``)."""
    i, o, params = inv.inputs, inv.options, inv.params
    if inv.stage == "export":
        from pipeline.export.program import export
        factory = params.get("input_factory")
        calibration = o.get("calibration", {"samples": 0, "seed": 0})
        folder = params.get("calibration_folder")
        with recording_local_modules() as loaded:
            export(Path(params["source"]), o["source_attr"], out["model"].parent,
                   inputs=o.get("inputs"),
                   input_factory=(Path(factory[0]), factory[1]) if factory else None,
                   seed=o["seed"], calibration_samples=calibration["samples"],
                   calibration_seed=calibration["seed"],
                   calibration_folder=Path(folder) if folder else None, where=where)
        return loaded
    elif inv.stage == "quantize":
        from pipeline.stages.quantize import quantize
        quantize(i["model"], i["calibration"], out["model"], record=out["record"],
                 scheme=o["scheme"], observer=o["observer"],
                 equalization=o.get("equalization", False),
                 bias_correction=o.get("bias_correction", False),
                 weights=o.get("weights", "per_channel"), where=where)
    elif inv.stage == "lower":
        from pipeline.stages.lower import lower
        variants = {k.removeprefix("tosa_"): p for k, p in out.items() if k.startswith("tosa_")}
        lower(i["model"], out["tosa"], out["io"], spec=o["spec"], input_names=o["input_names"],
              variants=variants, where=where)
    elif inv.stage == "verify":
        from pipeline.verify.check import verify
        variants = {k.removeprefix("tosa_"): p for k, p in i.items() if k.startswith("tosa_")}
        verify(i["float_model"], i["model"], i["tosa"], i["io"], i["test_inputs"],
               out["report"], variants=variants, where=where)
    elif inv.stage == "vela":
        from pipeline.ethosu.vela import run_vela
        run_vela(i["tosa"], out["npz"].parent, params["vela_args"], where=where)
    elif inv.stage == "package":
        from pipeline.ethosu.package import package
        package(i["npz"], i["io"], out["artifact"], where=where)
    elif inv.stage == "mixed":
        from pipeline.ethosu.mixed import mixed
        mixed(i["tosa"], i["io"], out["artifact"], out["record"], vela_args=params["vela_args"],
              accelerator=params["accelerator"], where=where)
    elif inv.stage == "mixed_verify":
        from pipeline.ethosu.mixed_verify import mixed_verify
        mixed_verify(i, out["report"], options=o, cmake_dir=Path(params["cmake_dir"]),
                     where=where)
    elif inv.stage == "vgf":
        from pipeline.vgf.convert import convert
        convert(i["tosa"], i["io"], out["vgf"].parent, params["converter_args"], where=where)
    elif inv.stage == "vgf_check":
        from pipeline.vgf.check import run_check
        run_check(i["vgf"], i["scenario"], i["vgf_io"], i["tosa"], i["test_inputs"],
                  out["report"], where=where)
    elif inv.stage in ("runtime", "firmware"):
        _build_runtime(inv, out, where)
    elif inv.stage == "cpu_graph":
        from pipeline.cpu.artifact import cpu_graph
        cpu_graph(i["tosa"], i["io"], out["artifact"], out["plan"], where=where)
    elif inv.stage == "cpu_verify":
        from pipeline.cpu.verify import cpu_verify
        cpu_verify(i, out["report"], qemu=o["qemu"], qemu_cpu=o["qemu_cpu"], cpu=o["cpu"],
                   substitute=o["substitute"], where=where)
    else:
        raise AssertionError(f"no stage function for {inv.stage}")
    return []


def _build_runtime(inv: Invocation, out: dict[str, Path], where: str) -> None:
    """CMake-build the runtime (or a firmware image) and pick its products."""
    from pipeline.runtime.c_array import write_c_array
    from pipeline.runtime.cmake import build_runtime

    o, params = inv.options, inv.params
    model_c, arena = None, None
    if inv.stage == "firmware":
        model_c = Path(params["cmake_dir"]).parent / "model.c"
        write_c_array(inv.inputs["artifact"], model_c, symbol="ethosu_model", where=where)
        if o.get("runner") == "cpu":  # the static arena is the one the plan asks for
            from pipeline.cpu.artifact import arena_bytes
            arena = arena_bytes(inv.inputs["artifact"])
    products = build_runtime(REPO_DIR, Path(params["cmake_dir"]), toolchain=o["toolchain"],
                             cpu=o["cpu"], isa=o["isa"], platform=o["platform"],
                             build_type=o["build_type"], model_c=model_c, where=where,
                             runner=o.get("runner", "npu"), board=o.get("board"),
                             cpu_arena_bytes=arena, sequence=o.get("sequence", False),
                             ethosu_sdk=Path(params["ethosu_sdk"]) if "ethosu_sdk" in params else None)
    by_name = {p.name: p for p in products}
    for dest in out.values():
        if dest.name not in by_name:
            raise AssertionError(f"runtime build did not list {dest.name}: {sorted(by_name)}")
        shutil.copyfile(by_name[dest.name], dest)
        shutil.copymode(by_name[dest.name], dest)


def stage_tools(inv: Invocation) -> dict[str, str]:
    """The tool versions a stage's key covers: the compiler for C++ builds, else Python's."""
    if inv.stage in ("runtime", "firmware"):
        from pipeline.runtime.cmake import toolchain_fingerprint
        return {"toolchain": toolchain_fingerprint(inv.options["toolchain"])}
    tools = tool_versions(TOOL_PACKAGES + STAGE_PACKAGES.get(inv.stage, ()))
    if inv.stage == "vgf_check":
        from pipeline.vgf.vulkan import driver_fingerprint
        tools["lavapipe"] = driver_fingerprint()
    if inv.stage in ("cpu_verify", "mixed_verify"):
        from pipeline.cpu.verify import qemu_fingerprint
        tools["qemu"] = qemu_fingerprint(inv.options["qemu"])
    if inv.stage == "mixed_verify":  # it builds the CPU runner too
        from pipeline.runtime.cmake import toolchain_fingerprint
        tools["toolchain"] = toolchain_fingerprint(inv.options["toolchain"])
    return tools


def _keys(inv: Invocation, store: Store, remote: Remote | None):
    """``inv``'s key and record, with what goes into them: (key, record, loaded files, first
    key, first record, base folder of the loaded files)."""
    code = tree_digest(code_files(inv.stage), root=PIPELINE_DIR)
    first_key, first_record = stage_key(inv.stage, code, inv.inputs, inv.options, stage_tools(inv))
    # What the stage loaded last time (run-time imports of the model) is part of the key too.
    base = Path(inv.params["source"]).resolve().parent if "source" in inv.params else None
    loaded = loaded_files.decode(_read_index(store, remote, first_key), base)
    key, record = loaded_files.loaded_key(first_key, first_record, loaded, base)
    return key, record, loaded, first_key, first_record, base


def run_stage(inv: Invocation, store_root: str, where: str = "", remote_config=None,
              peers: list | None = None):
    """doit action: restore ``inv``'s outputs from the store (else from the remote, when
    ``remote_config`` names one) or compute and store them (and upload, in write mode).
    ``peers``: (invocation, where) of the stage's other tasks in the build, for the stages
    whose tasks run side by side (``alongside.py``)."""
    from doit.exceptions import TaskFailed

    where = where or inv.task
    started = time.perf_counter()
    store = Store(Path(store_root))
    remote = open_remote(remote_config)  # the client itself is made on the first miss
    if peers:
        from pipeline.graph.alongside import run_alongside
        try:
            run_alongside(inv, peers, store_root, remote_config,
                          pending=lambda p: not store.has(_keys(p, store, None)[0]))
        except UserError as exc:
            return TaskFailed(str(exc))
    key, record, loaded, first_key, first_record, base = _keys(inv, store, remote)
    names = {role: path.name for role, path in inv.outputs.items()}
    local = store.has(key)
    if (local or (remote and remote.fetch(store, key))) and \
            store.restore(key, {names[r]: p for r, p in inv.outputs.items()}):
        print(f"   {inv.task}: restored from {'store' if local else 'remote'} [{key[:12]}]",
              flush=True)
        return output_values(inv.outputs.values(), loaded)
    try:
        with tempfile.TemporaryDirectory(prefix=f"{inv.stage}-", dir=work_root(inv)) as tmp, \
                temporary_files_in(Path(tmp)):
            out = {role: Path(tmp) / name for role, name in names.items()}
            with ticking(inv.task):
                now_loaded = call_with_limit(inv.stage, where, _call_stage, inv, out, where)
            missing = [str(p.name) for p in out.values() if not p.is_file()]
            if missing:
                raise AssertionError(f"stage {inv.stage} did not write {missing}")
            if now_loaded != loaded:
                _remember_loaded(store, first_key, loaded_files.encode(now_loaded, base),
                                 Path(tmp) / ".loaded.json", remote)
                key, record = loaded_files.loaded_key(first_key, first_record, now_loaded, base)
            store.put(key, record, {names[r]: p for r, p in out.items()})
            if not store.restore(key, {names[r]: p for r, p in inv.outputs.items()}):
                raise UserError(f"{where}: the store at {store.root} must keep what was just "
                                "written to it; the new entry failed its checksums (a disk "
                                "or another process damaging the store?)")
            if remote:
                remote.upload(store, key)
    except UserError as exc:  # doit prints the message alone, without a traceback
        return TaskFailed(str(exc))
    print(f"   {inv.task}: built in {time.perf_counter() - started:.1f}s [{key[:12]}]", flush=True)
    return output_values(inv.outputs.values(), now_loaded)


def _remember_loaded(store: Store, key: str, index: bytes, scratch: Path,
                     remote: Remote | None = None) -> None:
    """Keep the list of files a stage loaded beside the entries of its first-level key."""
    scratch.write_bytes(index)
    index_key = loaded_files.index_key(key)
    store.discard(index_key)
    store.put(index_key, {"stage": "loaded-files", "key": key}, {"loaded.json": scratch})
    if remote:  # the remote keeps the first list it got (entries there are never replaced)
        remote.upload(store, index_key)


def _read_index(store: Store, remote: Remote | None, key: str) -> bytes | None:
    """The list of files the stage loaded last time: local store, else the remote."""
    index_key = loaded_files.index_key(key)
    data = store.read(index_key, "loaded.json")
    if data is None and remote and remote.fetch(store, index_key, counted=False):
        data = store.read(index_key, "loaded.json")
    return data


def work_root(inv: Invocation) -> Path:
    """``<build>/.work/``: every stage works in a folder of its own under it, so the leftovers
    of a killed build are all in one place (``lock.sweep_work``)."""
    first = next(iter(inv.outputs.values()))
    parts = first.parts
    build = Path(*parts[:parts.index(".stages")]) if ".stages" in parts else first.parent
    root = build / WORK_DIR
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextlib.contextmanager
def temporary_files_in(folder: Path):
    """Point Python's ``tempfile`` and child processes' ``TMPDIR`` at ``folder`` for the
    duration: Vela's, the reference model's and the compilers' scratch files then live and die
    with the stage's work area instead of piling up in /tmp after a ``kill -9``."""
    saved_dir, saved_env = tempfile.tempdir, dict(os.environ)
    tempfile.tempdir = os.environ["TMPDIR"] = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = saved_dir
        # TMPDIR, and whatever a library derived from it and pinned in the environment for
        # the rest of the process (torch's TORCHINDUCTOR_CACHE_DIR), go back as they were.
        for name, value in list(os.environ.items()):
            if name == "TMPDIR" or str(folder) in value:
                if name in saved_env:
                    os.environ[name] = saved_env[name]
                else:
                    del os.environ[name]
