"""Hostile folders, with real ``doit`` builds (issue 28): symbolic links planted in the build
folder or the store (reproductions 1-5 and every other path the build writes), a disk that
fills during the build (10) and store entries whose checksums were forged to match garbage
(11). Each ends in one clear line (or, for a forged entry, in a quarantine and a recompute)
and never touches the canary folder and file outside the build and the store.

One module-scoped project is built once: the ``add`` model for the host (``ref``: export,
quantize, lower, verify) and for an Ethos-U55 (``doit package``: vela and package, without
the runtime, which no test here needs). Every other build restores from a copy of that
store: a few seconds each; the stage a test forges is the only one recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.canary import digest
from tests.e2e.runner import doit

pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_vela, pytest.mark.needs_tosa_ref]

TARGETS = """\
models:
  add:
    source: models/add.py:AddModel
    inputs: [{name: x, shape: [1, 8, 8, 16]}, {name: y, shape: [1, 8, 8, 16]}]
    calibration: {samples: 4, seed: 1}
  mlp:
    source: models/mlp.py:Mlp
    inputs: [{name: features, shape: [1, 256]}]
    calibration: {samples: 4, seed: 1}
targets:
  ref: {cpu: host, npu: null, models: [add, mlp]}
  u55: {cpu: cortex-m55, npu: {config: ethos-u55-128}, models: [add]}
"""
# A model with a megabyte of weights: its restore does not fit in what a full disk has left.
MLP = '''\
import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(256, 1024)
        self.act = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(1024, 10)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.act(self.hidden(features))
        x += 0.5
        return self.head(self.drop(x))
'''


@pytest.fixture(scope="module")
def project(new_project):
    """The built project; ``store.pristine`` keeps its store as the build left it."""
    root = new_project("hostile", TARGETS)
    (root / "models" / "mlp.py").write_text(MLP)
    doit(root, "build", "target=ref")
    doit(root, "package")
    shutil.copytree(root / "store", root / "store.pristine")
    return root


def _store_copy(project: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(project / "store.pristine", tmp_path / "store"))


def _entry(project: Path, store: Path, stage: str, name: str) -> Path:
    """The folder of the store entry that holds the ``add`` model's ``name`` of ``stage``
    (found by the checksum of the file the project's build holds)."""
    built = next((project / "build" / ".stages" / stage / "add").glob(f"**/{name}"))
    digest = hashlib.sha256(built.read_bytes()).hexdigest()
    for manifest in store.glob("*/*/manifest.json"):
        if json.loads(manifest.read_text())["outputs"].get(name) == digest:
            return manifest.parent
    raise AssertionError(f"no {stage} entry holds {name}")


def _forge(entry: Path, name: str, data: bytes) -> None:
    """Replace ``name`` in ``entry`` with ``data`` and make the manifest's checksum match."""
    (entry / name).write_bytes(data)
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["outputs"][name] = hashlib.sha256(data).hexdigest()
    (entry / "manifest.json").write_text(json.dumps(manifest))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _fails_in_one_line(proc: subprocess.CompletedProcess, path: Path, what: str) -> str:
    """The build failed, without a traceback, on one line that names ``path``."""
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output, output
    named = [line for line in _lines(output) if str(path) in line and what in line]
    assert len(named) == 1, output
    return named[0]


# --- symbolic links in the build folder ----------------------------------------------------

PLANTED = [(".work", "folder"), ("ref", "folder"), (".lock", "file"), (".doit.db", "file"),
           (".plan-cache.pickle", "file"), (".stages/export", "folder"), ("report.html", "file"),
           (".doit.md5", "file"), (".doit.db.checked", "file")]


@pytest.mark.parametrize("name,kind", PLANTED, ids=[n for n, _ in PLANTED])
def test_a_link_planted_in_the_build_folder_fails_the_build_in_one_line(project, canary, name,
                                                                        kind):
    """Reproductions 1 (``build/.work``, even on a no-op build), 2 (``build/<target>``), 3
    (``build/.lock``) and the other paths the build writes: the build stops before it
    touches anything, naming the link."""
    folder, file, check = canary
    path = project / "build" / name
    aside = path.with_name(path.name + ".aside")
    if os.path.lexists(path):
        path.rename(aside)
    path.symlink_to(folder if kind == "folder" else file)
    try:
        proc = doit(project, "build", "target=ref", ok=False)
    finally:
        path.unlink()
        if os.path.lexists(aside):
            aside.rename(path)
    assert _lines(proc.stderr) == [_fails_in_one_line(proc, path, "symbolic link")]
    assert proc.stderr.startswith(f"error: {path}: a path the build writes under ")
    check()


def test_a_link_deeper_in_the_stage_folders_fails_that_stage_naming_it(project, canary):
    folder, _, check = canary
    model = project / "build" / ".stages" / "lower" / "add"
    model.rename(model.with_name("add.aside"))
    model.symlink_to(folder)
    try:
        proc = doit(project, "build", "target=ref", ok=False)
    finally:
        model.unlink()
        model.with_name("add.aside").rename(model)
    _fails_in_one_line(proc, model, "symbolic link")
    check()


def test_clean_removes_a_planted_link_never_its_target(project, canary, tmp_path):
    folder, _, check = canary
    build = tmp_path / "build"
    doit(project, "build", "target=ref", f"build={build}")
    shutil.rmtree(build / "ref")
    (build / "ref").symlink_to(folder)
    proc = doit(project, "clean", f"build={build}")
    assert not os.path.lexists(build / "ref")
    assert f"removed the symbolic link {build / 'ref'} (its target {folder}" in proc.stderr
    check()


# --- symbolic links in the store -----------------------------------------------------------


def test_a_linked_store_shard_fails_the_restore_and_gc_removes_only_links(project, canary,
                                                                          tmp_path):
    """Reproductions 4 (``<store>/quarantine`` a link: gc emptied its target) and 5 (a shard
    a link: a store write or gc deleted hidden folders older than an hour in its target)."""
    folder, _, check = canary
    store = _store_copy(project, tmp_path)
    shard = _entry(project, store, "lower", "model.tosa").parent
    outside = Path(shutil.copytree(shard, tmp_path / "outside"))  # the shard, moved out
    (outside / ".old-hidden").mkdir()
    os.utime(outside / ".old-hidden", (1e9, 1e9))
    shutil.rmtree(shard)
    shard.symlink_to(outside)
    (store / "quarantine").symlink_to(folder)
    before = digest(outside)
    proc = doit(project, "build", "target=ref", f"build={tmp_path / 'build'}", store=store,
                ok=False)
    _fails_in_one_line(proc, shard, "symbolic link")
    gc = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store", str(store), "gc",
                         "--max-size", "1G"], capture_output=True, text=True, check=False)
    assert gc.returncode == 0 and "Traceback" not in gc.stderr, gc.stderr
    assert not os.path.lexists(shard) and not os.path.lexists(store / "quarantine")
    assert gc.stderr.count("removed the symbolic link") == 2
    assert digest(outside) == before, "the shard's target was touched"
    check()


# --- a disk that fills ---------------------------------------------------------------------


def _leave_free(disk: Path, free: int) -> None:
    """Resize the tmpfs's ballast so that ``free`` bytes are left."""
    (disk / "ballast").unlink(missing_ok=True)
    left = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "ballast").write_bytes(bytes(left - free))


def test_a_build_on_a_full_disk_fails_before_it_starts_in_one_line(project, small_disk,
                                                                  tmp_path):
    """Reproduction 10, a disk already full (64 KiB left): doit's own records could not be
    written, so the build stops at once, naming the folder and the space it needs."""
    build = small_disk / "build"
    proc = doit(project, "build", "target=ref", f"build={build}",
                store=_store_copy(project, tmp_path), ok=False)
    line = _fails_in_one_line(proc, build, "the disk must have room for")
    assert line.startswith(f"error: {build}: the disk must have room for ")


def test_a_disk_that_fills_during_the_restore_fails_in_one_line(project, small_disk, tmp_path):
    """Reproduction 10, a disk that fills while the stages' outputs are copied out of the
    store (an 8 MiB tmpfs, 48 KiB left beyond what the build needs to start): one line naming
    the folder and the bytes needed; nothing half written; the store is whole."""
    from pipeline.graph.project import MIN_FREE

    _leave_free(small_disk, MIN_FREE + 48 * 1024)
    store = _store_copy(project, tmp_path)
    build = small_disk / "build"
    proc = doit(project, "build", "target=ref", f"build={build}", store=store, ok=False)
    line = _fails_in_one_line(proc, build / ".stages", "the disk must have room for")
    assert "more bytes; got" in line and "(no space left on device)" in line
    assert not [p for p in build.rglob(".*") if p.is_file() and p.parent.name != "build"], \
        "a temporary file was left"
    verify = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store", str(store),
                             "verify"], capture_output=True, text=True, check=False)
    assert verify.returncode == 0 and "0 damaged" in verify.stdout, verify.stdout


def test_a_full_store_keeps_only_whole_entries(project, new_project, small_disk):
    """Reproduction 10 on the store's disk: a stage computed (another calibration) with the
    store on a nearly full tmpfs fails in one line naming the store's folder; the store
    keeps no staging folder and every entry in it checks out."""
    store = small_disk / "store"
    (small_disk / "ballast").unlink()
    shutil.copytree(project / "store.pristine", store)
    _leave_free(small_disk, 16 * 1024)
    # The add model for the host, calibrated on one more sample: its quantize stage computes.
    other = new_project("full-store", TARGETS.split("  mlp:")[0].replace("samples: 4", "samples: 5")
                        + "targets:\n  ref: {cpu: host, npu: null, models: [add]}\n")
    proc = doit(other, "build", store=store, ok=False)
    _fails_in_one_line(proc, store, "the disk must have room for")
    assert not list(store.glob("*/.*")), "a staging folder was left"
    verify = subprocess.run([sys.executable, "-m", "pipeline.cache", "--store", str(store),
                             "verify"], capture_output=True, text=True, check=False)
    assert verify.returncode == 0 and "0 damaged" in verify.stdout, verify.stdout


# --- forged store entries ------------------------------------------------------------------


def _garbled_tosa(data: bytes) -> bytes:
    """The file with 8 bytes past its frame replaced: well framed, garbage inside."""
    rng = random.Random(0)
    garbled = bytearray(data)
    for _ in range(8):
        garbled[rng.randrange(100, len(garbled))] = rng.randrange(256)
    return bytes(garbled)


def _other_io_meta(data: bytes) -> bytes:
    from pipeline.artifact import block
    from pipeline.ethosu.package import read_artifact

    blocks = read_artifact(data)
    blocks["io_meta"] = blocks["io_meta"][:-4] + b"\x07\x00\x00\x00"
    return b"".join(block(name, payload) for name, payload in blocks.items())


FORGED = {
    "vela npz garbage": ("vela", "model_vela.npz", lambda data: b"garbage" * 64),
    "model.bin garbage": ("package", "model.bin", lambda data: b"garbage" * 64),
    "model.bin with another io_meta": ("package", "model.bin", _other_io_meta),
    "u55 tosa garbage": ("lower", "model.u55.tosa", lambda data: b"garbage" * 64),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_a_forged_entry_is_quarantined_and_recomputed_on_restore(project, tmp_path, case):
    """Reproduction 11: checksums forged to match garbage. The restore's structure check
    refuses the entry in one line, quarantines it, and the stage computes the same artifact
    the pristine store holds."""
    stage, name, forge = FORGED[case]
    store = _store_copy(project, tmp_path)
    entry = _entry(project, store, stage, name)
    _forge(entry, name, forge((entry / name).read_bytes()))
    build = tmp_path / "build"
    proc = doit(project, "package", f"build={build}", store=store)
    assert (f"store: entry {entry.name[:12]} is damaged (restored {stage} outputs are not what "
            f"it writes: ") in proc.stderr
    assert [p.name.split("-")[0] for p in (store / "quarantine").iterdir()] == [entry.name]
    pristine = _entry(project, project / "store.pristine", "package", "model.bin") / "model.bin"
    built = next(build.glob(".stages/package/**/model.bin"))
    assert built.read_bytes() == pristine.read_bytes()


def test_garbage_past_the_restore_check_names_the_entry_and_quarantines_it(project, tmp_path):
    """A forged TOSA file with a sound frame and garbage inside gets past the cheap restore
    check; the stage that reads it fails in one line naming the file and its store entry,
    which goes to quarantine, and the next build computes it again."""
    store = _store_copy(project, tmp_path)
    entry = _entry(project, store, "lower", "model.u55.tosa")
    _forge(entry, "model.u55.tosa", _garbled_tosa((entry / "model.u55.tosa").read_bytes()))
    build = tmp_path / "build"
    proc = doit(project, "verify", f"build={build}", store=store, ok=False)
    line = _fails_in_one_line(proc, Path("model.u55.tosa"), "must be a TOSA flatbuffer")
    assert f"It came from store entry {entry.name[:12]}, moved to {store / 'quarantine'}" in line
    assert not entry.exists()
    proc = doit(project, "verify", f"build={build}", store=store)
    assert "lower:add/int8/TOSA-1.0+INT+int16: built in" in proc.stdout
