"""The Python actions behind the doit tasks: run a stage through the store, write a target.

Each stage task computes its key at run time (content of its inputs, its options, its code
and tool versions), restores the outputs from the store on a hit, and otherwise runs the
stage into a temporary folder, puts the result into the store and copies it into place. A
user error becomes a doit failure with the message alone; a bug keeps its traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from pipeline.cache.key import file_digest, stage_key, tool_versions
from pipeline.cache.remote import Remote, open_remote
from pipeline.cache.store import Store
from pipeline.errors import UnreadableInput, UserError
from pipeline.files import DiskFullError, check_own, is_full, make_dirs, remove
from pipeline.graph import code, imported
from pipeline.graph import loaded as loaded_files
from pipeline.graph.loaded import recording_local_modules
from pipeline.graph.outputs import record as output_values
from pipeline.graph.plan import Invocation
from pipeline.graph.progress import ticking
from pipeline.graph.stages import STAGES
from pipeline.graph.timeout import call_with_limit
from pipeline.graph.workers import stage_marked

WORK_DIR = ".work"  # <build>/.work/: stage work areas; a build holding the lock empties it

imported.install()  # the code a stage runs is the code its key covers (graph/imported.py)


def _call_stage(inv: Invocation, out: dict[str, Path], where: str) -> tuple[list[Path], set]:
    """Run the stage function behind an invocation, writing to ``out`` (role -> path).

    Returns what the run read beyond its code and input files: the user's modules it
    imported (``graph/loaded.py``) and the operator modules it dispatched to (``graph/code.py``).
    """
    _used_operators()  # forget what an earlier stage of this process used
    with recording_local_modules() as loaded:
        STAGES[inv.stage].run(inv.inputs, out, inv.options, inv.params, where)
    return loaded, _used_operators()


def _used_operators() -> set[str]:
    """The operator modules whose visitors were handed out since the last call (none unless
    this process has loaded the registry, which only the stages that lower do)."""
    registry = sys.modules.get(code.REGISTRY)
    return registry.take_used() if registry is not None else set()


def stage_tools(inv: Invocation) -> dict[str, str]:
    """The tool versions a stage's key covers: its Python packages' and its external tools'."""
    stage = STAGES[inv.stage]
    tools = tool_versions(stage.packages) if stage.packages else {}
    if stage.tools is not None:
        tools.update(stage.tools(inv.options))
    return tools


def _keys(inv: Invocation, store: Store, remote: Remote | None):
    """``inv``'s key and record, with what goes into them: (key, record, loaded files, first
    key, first record, base folder of the loaded files)."""
    stage = STAGES[inv.stage]
    options = inv.options
    if code.uses_registry(stage):  # which operator file lowers which target (graph/code.py)
        options = {**options, "operators": code.operator_index()}
    first_key, first_record = stage_key(inv.stage, code.code_key(stage), inv.inputs, options,
                                        stage_tools(inv))
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
    try:
        check_paths(inv)
        if peers:
            from pipeline.graph.alongside import run_alongside
            run_alongside(inv, peers, store_root, remote_config,
                          pending=lambda p: not store.has(_keys(p, store, None)[0]),
                          run=run_stage)
        key, record, loaded, first_key, first_record, base = _keys(inv, store, remote)
        names = {role: path.name for role, path in inv.outputs.items()}
        local = store.has(key)
        if (local or (remote and remote.fetch(store, key))) and \
                store.restore(key, {names[r]: p for r, p in inv.outputs.items()}) and \
                _well_formed(inv, store, key):
            print(f"   {inv.task}: restored from {'store' if local else 'remote'} "
                  f"[{key[:12]}]", flush=True)
            return output_values(inv.outputs.values(), loaded)
        key, now_loaded = _compute(inv, where, store, remote, key, record, loaded, first_key,
                                   first_record, base)
    except UnreadableInput as exc:
        return TaskFailed(_blame(inv, store, exc, where))
    except UserError as exc:  # doit prints the message alone, without a traceback
        return TaskFailed(str(exc))
    print(f"   {inv.task}: built in {time.perf_counter() - started:.1f}s [{key[:12]}]", flush=True)
    return output_values(inv.outputs.values(), now_loaded)


def _compute(inv: Invocation, where: str, store: Store, remote, key, record, loaded,
             first_key, first_record, base) -> tuple[str, list]:
    """Run the stage into a work folder, put its outputs into the store and restore them
    into place. Returns the key (it changes when the stage loaded other files than last
    time) and the files it loaded. A full disk is one line naming the folder."""
    names = {role: path.name for role, path in inv.outputs.items()}
    work = work_root(inv)
    try:
        with tempfile.TemporaryDirectory(prefix=f"{inv.stage}-", dir=work) as tmp, \
                temporary_files_in(Path(tmp)):
            out = {role: Path(tmp) / name for role, name in names.items()}
            with ticking(inv.task), stage_marked(work_root(inv), where, inv.stage):
                user, operators = call_with_limit(inv.stage, where, _call_stage, inv, out, where)
            now_loaded = sorted(set(user) | set(code.used_operator_files(operators)))
            _refuse_edited_code(inv, first_record["code"], now_loaded, where)
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
    except OSError as error:
        if is_full(error):  # the stage's own files (a tool's output, torch's) filled the disk
            raise DiskFullError(work, None) from None
        raise
    return key, now_loaded


def _well_formed(inv: Invocation, store: Store, key: str) -> bool:
    """Whether the outputs just restored from the entry ``key`` look like what the stage
    writes (its JSON parses, its declared ``check`` passes); a forged entry (checksums made
    to match garbage) is quarantined, and the stage computes its outputs again."""
    why = None
    for path in inv.outputs.values():
        if path.suffix == ".json":
            try:
                json.loads(path.read_bytes())
            except (OSError, ValueError) as error:
                why = f"{path.name} is not JSON ({type(error).__name__})"
                break
    check = STAGES[inv.stage].check
    why = why or (check(inv.inputs, inv.outputs) if check is not None else None)
    if why is None:
        return True
    store.quarantine(key, f"restored {inv.stage} outputs are not what it writes: {why}")
    return False


def _blame(inv: Invocation, store: Store, error: UnreadableInput, where: str) -> str:
    """The message for an input the stage could not read: the store entry it was restored
    from (found by its checksum) is quarantined and the file removed, so the next build
    computes it again."""
    path = Path(error.path)
    if path not in {Path(p) for p in inv.inputs.values()} or not path.is_file():
        return f"{where}: {error}"
    key = store.holding(path.name, file_digest(path))
    remove(path, build_folder(inv))  # its task runs again: the file is missing
    if key is None:
        return f"{where}: {error}. Removed it; the next build writes it again"
    dest = store.quarantine(key, f"{path.name} cannot be read: {error.why}", say=False)
    return (f"{where}: {error}. It came from store entry {key[:12]}, moved to {dest}; the "
            "next build computes it again")


def _refuse_edited_code(inv: Invocation, code_version: str, used: list[Path],
                        where: str) -> None:
    """Raise when the code the stage ran is not the code its key covers: a file of its
    closure (or an operator file it used) was edited after this process imported it, or
    between the key and the import.

    Raises:
        UserError: naming the file; nothing of the stage is stored.
    """
    stage = STAGES[inv.stage]
    edited = imported.changed_since_import([*code.code_files(stage), *used])
    if not edited and code.code_key(stage) != code_version:
        edited = [Path(stage.module.replace(".", "/") + ".py")]  # its closure moved meanwhile
    if edited:
        names = ", ".join(_shown(p) for p in edited[:3]) + (" ..." if len(edited) > 3 else "")
        raise UserError(f"{where}: the project's code must stay as it was when this build "
                        f"loaded it; {names} changed while the build ran, so nothing of this "
                        "stage was stored (it ran the code from before the edit): run the "
                        "build again")


def _shown(path: Path) -> str:
    return str(path.relative_to(code.REPO_DIR)) if path.is_relative_to(code.REPO_DIR) else str(path)


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


def build_folder(inv: Invocation) -> Path:
    """The build folder an invocation writes in: its outputs are in ``<build>/.stages/``."""
    first = next(iter(inv.outputs.values()))
    parts = first.parts
    return Path(*parts[:parts.index(".stages")]) if ".stages" in parts else first.parent


def check_paths(inv: Invocation) -> None:
    """Every path the stage writes (its outputs, a CMake tree) is the build's own: no
    symbolic link on the way (``UnsafePathError``)."""
    build = build_folder(inv)
    for path in [*inv.outputs.values(), *inv.params.values()]:
        if isinstance(path, (str, Path)) and Path(path).is_relative_to(build):
            check_own(Path(path), build)


def work_root(inv: Invocation) -> Path:
    """``<build>/.work/``: every stage works in a folder of its own under it, so the leftovers
    of a killed build are all in one place (``lock.sweep_work``)."""
    build = build_folder(inv)
    return make_dirs(build / WORK_DIR, build)


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
