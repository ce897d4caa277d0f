"""End to end: `doit build` in a temporary project, with the real torch, tosa-tools and Vela.

One module-scoped project is built cold once; the tests then check the outputs, a no-op
rebuild, an A->B->A switch of targets.yaml and a restore from the store after `rm -rf build`.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.ethosu.package import read_artifact
from tests.e2e.runner import ADD_AND_CNN, ROOT, doit, doit_argv, executed

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_vela,
              pytest.mark.needs_tosa_ref]

TARGETS = ADD_AND_CNN + """\
targets:
  u85-linux:
    cpu: cortex-a320
    npu: {config: ethos-u85-256}
    models: [add, cnn]
  u55-baremetal:
    cpu: cortex-m55
    npu: {config: ethos-u55-128}
    models: [add]
  u55-fake-sdk:
    extends: u55-baremetal
    ethosu_sdk: %s
  u85-linux-driver-stack:
    cpu: cortex-a320
    npu: {config: ethos-u85-256, driver: ethosu-driver-stack, driver_stack: %s}
    models: [add, cnn]
""" % (ROOT / "tests" / "runtime" / "cortex_m" / "fake_sdk",
       ROOT / "tests" / "runtime" / "cortex_a" / "fake_driver_stack")


@pytest.fixture(scope="module")
def project(new_project) -> Path:
    root = new_project("project", TARGETS)
    proc = doit(root, "build", "target=u85-linux")
    root.joinpath("cold.log").write_text(proc.stdout)
    return root


def test_cold_build_writes_artifacts_and_report(project):
    folder = project / "build" / "u85-linux"
    report = json.loads((folder / "report.json").read_text())
    assert set(report["models"]) == {"add", "cnn"}
    for model in ("add", "cnn"):
        entry = report["models"][model]
        assert entry["verify"]["passed"] is True
        assert entry["vela"]["npu_op_share"] == 1.0
        assert entry["vela"]["cycles_total"] > 0
        # The default Vela option search: both --optimise, the fewer cycles kept.
        search = entry["vela"]["search"]
        assert [c["options"]["optimise"] for c in search["candidates"]] == ["Performance", "Size"]
        assert entry["vela"]["cycles_total"] == min(c["cycles_total"] for c in search["candidates"])
        blocks = read_artifact((folder / model / "model.bin").read_bytes())
        # Linux direct drive: COP2 command stream, IO in their own regions (3 and 4).
        assert blocks["cmd_data"][:4] == b"COP2"
        _count, *io = struct.unpack_from("<i6iiii", blocks["inputs"])
        assert io[-1] == 3


@pytest.mark.needs_aarch64_gcc
@pytest.mark.needs_qemu
def test_linux_runner_is_built_beside_the_models_and_runs_under_qemu(project):
    folder = project / "build" / "u85-linux"
    runner = folder / "ethosu_runner"
    assert runner.stat().st_mode & 0o111
    assert (folder / "lib" / "libethosu_rt_common.a").is_file()
    report = json.loads((folder / "report.json").read_text())
    assert report["runtime"]["toolchain"] == "aarch64-linux-gnu-gcc"
    # No NPU in this machine: the runner must say so in one line and exit non-zero.
    proc = subprocess.run(["qemu-aarch64", str(runner), "--model", str(folder / "cnn" / "model.bin"),
                           "--device", str(project / "no-such-accel")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode != 0
    assert re.search(r"no-such-accel: open\(\) of the NPU device node", proc.stdout + proc.stderr)


@pytest.mark.needs_aarch64_gcc
@pytest.mark.needs_qemu
def test_driver_stack_target_reuses_the_artifacts_and_builds_its_runner_fake_driver_stack(
        project):
    """npu: {driver: ethosu-driver-stack}, built against the suite's TEST DOUBLE of the driver
    stack as its checkout (neither the stack nor an Ethos-U is here): no model stage runs
    again, the artifacts are u85-linux's byte for byte, and the runner drives the double."""
    proc = doit(project, "build", "target=u85-linux-driver-stack")
    ran = executed(proc)
    assert [t for t in ran if t.split(":")[0] in ("export", "quantize", "lower", "verify",
                                                  "vela", "package")] == []
    runtimes = [t for t in ran if t.startswith("runtime:")]
    assert len(runtimes) == 1 and "/driver-stack-" in runtimes[0], runtimes
    folder, accel = project / "build" / "u85-linux-driver-stack", project / "build" / "u85-linux"
    for model in ("add", "cnn"):
        assert (folder / model / "model.bin").read_bytes() == (
            accel / model / "model.bin").read_bytes()
    assert (folder / "lib" / "libethosu_rt_driver_stack.a").is_file()
    proc = subprocess.run(["qemu-aarch64", str(folder / "ethosu_runner"), "--model",
                           str(folder / "cnn" / "model.bin"), "--pmu-events", "34"],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "FAKE_ETHOSU_CYCLES": "19140"})
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(r"inference 1: \d+\.\d{3} ms, 19140 NPU cycles\n  pmu event 34: 0\n",
                        proc.stdout)


def test_cold_build_ran_each_shared_stage_once(project):
    ran = executed(subprocess.CompletedProcess([], 0, (project / "cold.log").read_text(), ""))
    assert sorted(t for t in ran if t.startswith("export:")) == ["export:add", "export:cnn"]
    assert len([t for t in ran if t.startswith("vela:")]) == 2
    assert "build:u85-linux" in ran
    assert [t for t in ran if t.startswith("runtime:")] == [
        "runtime:aarch64-linux-gnu-gcc/cortex-a320/Release"]


def test_roofline_of_the_first_convolution_matches_its_shapes(project):
    """cnn's conv1 (3 -> 16 channels, 3x3, 32x32 output) on U85-256 in Sram_Only: MACs from the
    shapes, the MAC bound at 256 MACs/cycle, the memory bound at the SRAM's 32 bytes/cycle
    (weights and feature maps on one port), and the model line it came from."""
    report = json.loads((project / "build" / "u85-linux" / "report.json").read_text())
    roofline = report["models"]["cnn"]["roofline"]
    conv = next(x for x in roofline["layers"] if x["operator"] == "Conv2D")
    macs = 32 * 32 * 16 * (3 * 3 * 3)
    assert conv["macs"] == macs
    assert conv["mac_bound"] == macs / 256
    assert (conv["ifm_bytes"], conv["ofm_bytes"]) == (32 * 32 * 3, 32 * 32 * 16)
    assert 0 < conv["weight_bytes"] < 2 * 16 * 27  # Vela's encoded stream of 432 int8 weights
    moved = conv["weight_bytes"] + 32 * 32 * 3 + 32 * 32 * 16
    assert conv["memory_bound"] == round(moved / 32, 1)
    assert conv["bound"] == max(macs / 256, moved / 32) and conv["bound_by"] == "mac"
    assert conv["utilisation"] == round(conv["bound"] / conv["cycles"], 4) <= 1
    line = next(n for n, text in enumerate((ROOT / "models" / "cnn.py").read_text().splitlines(), 1)
                if "self.conv1(x)" in text)
    assert Path(conv["source"]["file"]).resolve() == (project / "models" / "cnn.py").resolve()
    assert conv["source"]["line"] == line and "self.conv1(x)" in conv["source"]["code"]
    # Totals: Vela's cycles over the sum of the bounds, as the summary line says.
    assert roofline["cycles"] == report["models"]["cnn"]["vela"]["cycles_total"]
    assert roofline["limit"] == round(sum(x["bound"] for x in roofline["layers"]), 1)
    assert roofline["summary"].startswith(
        f"total cycles = {roofline['cycles'] / roofline['limit']:.2f}x the limit")
    page = (project / "build" / "report.html").read_text()
    assert html.escape(roofline["summary"]) in page and f"cnn.py:{line} (" in page


def test_second_build_runs_no_task(project):
    proc = doit(project, "build", "target=u85-linux")
    assert executed(proc) == []


def test_switch_a_b_a_restores_without_recomputing(project):
    yaml_a = (project / "targets.yaml").read_text()
    (project / "targets.yaml").write_text(yaml_a.replace("ethos-u85-256", "ethos-u85-512"))
    proc_b = doit(project, "build", "target=u85-linux")
    ran_b = executed(proc_b)
    # An NPU option reaches Vela and the artifact, never the runtime build.
    assert {t.split(":")[0] for t in ran_b} == {"vela", "package", "build"}
    (project / "targets.yaml").write_text(yaml_a)
    proc_a = doit(project, "build", "target=u85-linux")
    assert [t for t in executed(proc_a) if not t.startswith("build:")] == []
    report = json.loads((project / "build" / "u85-linux" / "report.json").read_text())
    assert report["models"]["cnn"]["vela"]["accelerator_configuration"] == "Ethos_U85_256"


def test_fresh_build_folder_restores_everything_from_store(project):
    shutil.rmtree(project / "build")
    proc = doit(project, "build", "target=u85-linux")
    assert "built in" not in proc.stdout
    assert proc.stdout.count("restored from store") == 13  # 6 stages x 2 models + runtime
    assert (project / "build" / "u85-linux" / "cnn" / "model.bin").is_file()


def test_second_target_shares_export_and_lowering(project):
    proc = doit(project, "build", "target=u55-baremetal")
    ran = executed(proc)
    assert not [t for t in ran if t.split(":")[0] in ("export", "quantize", "lower", "verify")]
    blocks = read_artifact((project / "build" / "u55-baremetal" / "add" / "model.bin").read_bytes())
    assert blocks["cmd_data"][:4] == b"COP1"


@pytest.mark.needs_arm_gcc
@pytest.mark.needs_qemu
def test_firmware_with_fake_core_driver_runs_the_real_artifact_under_qemu(project):
    """The bare-metal runner, linked against a FAKE Ethos-U core driver (there is no NPU
    model in QEMU), parses the real artifact, invokes the driver and exits 0 under the
    Cortex-M55 MPS3 AN547 machine. It proves the plumbing, not the NPU's arithmetic."""
    doit(project, "build", "target=u55-baremetal")  # whatever ran before: its models built
    proc = doit(project, "build", "target=u55-fake-sdk")
    ran = executed(proc)
    assert [t.split(":")[0] for t in ran if not t.startswith("build:")] == ["firmware"]
    elf = project / "build" / "u55-fake-sdk" / "add" / "ethosu_runner.elf"
    run = subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-nographic",
                          "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"output 0 'add': 1024 bytes", run.stdout)


def test_config_error_is_reported_without_traceback(project, tmp_path):
    bad = tmp_path / "targets.yaml"
    bad.write_text(TARGETS.replace("ethos-u55-128", "ethos-u55-100"))
    proc = subprocess.run(doit_argv(tmp_path, "build"), capture_output=True, text=True,
                          check=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    assert re.search(r"targets\.yaml:\d+: targets\.u55-baremetal\.npu\.config: must be one of "
                     r".*; got 'ethos-u55-100'", proc.stderr)


def test_damaged_store_entry_is_quarantined_and_recomputed(project):
    """A flipped byte in a stored artifact is never restored: the next build says so in one
    line, moves the entry aside, recomputes it and ends with the correct artifact."""
    artifact = project / "build" / "u85-linux" / "add" / "model.bin"
    good = artifact.read_bytes()
    manifests = [json.loads(p.read_text()) for p in (project / "store").glob("*/*/manifest.json")]
    entry = next(m for m in manifests if m["record"]["stage"] == "package"
                 and (project / "store" / m["key"][:2] / m["key"] / "model.bin").read_bytes() == good)
    stored = project / "store" / entry["key"][:2] / entry["key"] / "model.bin"
    stored.write_bytes(bytes([good[0] ^ 0xFF]) + good[1:])
    shutil.rmtree(project / "build")
    proc = doit(project, "build", "target=u85-linux")
    assert f"entry {entry['key'][:12]} is damaged (model.bin does not match its checksum)" in (
        proc.stdout + proc.stderr)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert artifact.read_bytes() == good
    assert (project / "store" / "quarantine").is_dir()


def _outputs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "report.json"}


def test_touching_every_output_reruns_nothing(project):
    doit(project, "build", "target=u85-linux")
    for path in (project / "build").rglob("*"):
        if path.is_file() and not path.name.startswith(".doit.db"):
            path.touch()
    proc = doit(project, "build", "target=u85-linux")
    assert executed(proc) == []


def test_tampered_build_files_are_noticed_and_rewritten_from_the_store(project):
    """An edited file in the target folder and a truncated stage output are both noticed by
    the next build, named in one line each and restored from the store (nothing recomputed);
    the build after that runs nothing."""
    doit(project, "build", "target=u85-linux")
    folder = project / "build" / "u85-linux"
    before = _outputs(folder)
    artifact = folder / "cnn" / "model.bin"
    data = bytearray(artifact.read_bytes())
    data[100] ^= 0x01  # same size, other bytes
    artifact.write_bytes(bytes(data))
    lowered = next((project / "build" / ".stages" / "lower" / "cnn").rglob("model.tosa"))
    good_tosa = lowered.read_bytes()
    lowered.write_bytes(good_tosa[: len(good_tosa) // 2])
    proc = doit(project, "build", "target=u85-linux")
    log = proc.stdout + proc.stderr
    assert f"{artifact} was changed outside the build; rewriting it" in log
    assert f"{lowered} was changed outside the build; rewriting it" in log
    assert "built in" not in proc.stdout and "Traceback" not in log
    ran = executed(proc)
    assert any(t.startswith("lower:cnn/") for t in ran) and "build:u85-linux" in ran
    assert not [t for t in ran if t.split(":")[0] in ("export", "quantize", "verify", "vela")]
    assert lowered.read_bytes() == good_tosa
    assert _outputs(folder) == before
    assert executed(doit(project, "build", "target=u85-linux")) == []


def test_damaged_doit_records_are_moved_aside_and_rebuilt_from_the_store(project):
    doit(project, "build", "target=u85-linux")
    records = project / "build" / ".doit.db"
    for damage in (b"not a database at all", records.read_bytes()[:5000]):
        records.write_bytes(damage)
        proc = doit(project, "build", "target=u85-linux")
        log = proc.stdout + proc.stderr
        assert f"warning: doit's records {records} are damaged" in log
        assert "Traceback" not in log and "built in" not in proc.stdout
        assert executed(doit(project, "build", "target=u85-linux")) == []


def test_clean_waits_for_the_build_holding_the_folder(project):
    """`doit clean` while a build runs waits for it (a message says so) instead of pulling
    files from under it; the build is stood in for by a process holding the folder's lock."""
    hold = ("import sys, time; sys.path.insert(0, sys.argv[1]); "
            "from pathlib import Path; from pipeline.graph.lock import lock_build_folder; "
            "lock_build_folder(Path(sys.argv[2])); print('held', flush=True); time.sleep(2)")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(ROOT), str(project / "build")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = doit(project, "clean", "build")
        assert holder.poll() == 0  # clean went on only after the holder was gone
        assert "waiting for the build running in" in proc.stderr
        assert "Traceback" not in proc.stdout + proc.stderr
    finally:
        holder.kill()
        holder.wait()
    doit(project, "build", "target=u85-linux")


def test_leftovers_of_a_killed_build_are_swept_by_the_next(project, tmp_path):
    """kill -9 in the middle of a stage leaves its work area (and whatever Vela, the
    reference model or the compilers had in $TMPDIR, which points into it); the next build
    in that folder removes it, finishes, and leaves nothing in $TMPDIR."""
    build, store, scratch = tmp_path / "build", tmp_path / "store", tmp_path / "tmp"
    scratch.mkdir()
    argv = _build_argv(project, build, store)
    env = {**os.environ, "TMPDIR": str(scratch)}
    victim = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env, start_new_session=True)
    work = build / ".work"
    deadline = time.monotonic() + 120
    while not (work.is_dir() and any(work.iterdir())):
        assert victim.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(victim.pid, 9)
    victim.wait()
    assert any(work.iterdir())
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(work.iterdir()) == []
    assert list(scratch.iterdir()) == []
    assert not list(build.glob(".stages/**/.work-*"))


def _build_argv(project: Path, build: Path, store: Path) -> list[str]:
    return doit_argv(project, "build", "target=u85-linux", f"build={build}", store=store)


@pytest.mark.parametrize("same_folder", [True, False], ids=["same-build-folder", "shared-store"])
def test_concurrent_builds_both_succeed_with_identical_outputs(project, tmp_path, same_folder):
    """Two builds at once, from a cold store: in one build folder the second waits for the
    first; in two folders sharing a store both compute or restore. Either way both exit 0 and
    every output equals the reference build's."""
    store = tmp_path / "store"
    builds = [tmp_path / "b"] * 2 if same_folder else [tmp_path / "b1", tmp_path / "b2"]
    procs = [subprocess.Popen(_build_argv(project, b, store), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for b in builds]
    results = [(p.wait(timeout=600), *p.communicate()) for p in procs]
    for code, out, err in results:
        assert code == 0, out + err
        assert "Traceback" not in out + err
    if same_folder:
        assert any("waiting for the build running in" in err for _, _, err in results)
    reference = _outputs(project / "build" / "u85-linux")
    for build in set(builds):
        assert _outputs(build / "u85-linux") == reference
