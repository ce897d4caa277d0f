"""Staleness matrix: each kind of change re-runs exactly the tasks it affects, and undoing it
computes nothing (every stage comes back from the store) and ends with the cold build's files.

One module-scoped project is built cold once: two models written the way users write them
(``ReLU(inplace=True)``, ``out += identity``, dropout, a helper module beside the model),
a Linux target (Cortex-A320 + Ethos-U85-256, both models, its own copy of vela.ini) and a
bare-metal one (Cortex-M55 + Ethos-U55-128, one model, firmware linked against the FAKE core
driver). The runtime sources are read from the repository that holds the ``dodo.py`` doit
runs (``plan.REPO_DIR``), so the project runs a scratch copy of ``dodo.py``, ``pipeline/``,
``runtime/`` and ``cmake/``: editing a runtime source never touches this repository.

A task doit ran prints ``.  name``; a stage then prints ``built in`` (computed) or ``restored
from store``. ``build:<target>`` writes the target folder (a view) and is neither.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.config import load_config
from pipeline.config.vela_ini import default_vela_ini
from pipeline.graph.plan import make_plan
from tests.e2e.runner import ROOT, doit

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_vela,
              pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc,
              pytest.mark.needs_aarch64_gcc]

BLOCKS = '''\
"""Building blocks shared by the models in this folder."""

import torch
from torch import nn


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))
'''
NET = '''\
"""A tiny residual classifier."""

import torch
from torch import nn

from blocks import ConvBlock


class TinyResNet(nn.Module):
    def __init__(self, num_classes: int = 4):
        super().__init__()
        torch.manual_seed(0)
        self.stem = ConvBlock(3, 8)
        self.block = ConvBlock(8, 8)
        self.dropout = nn.Dropout(p=0.1)
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        identity = x
        out = self.block(x)
        out += identity
        out = torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1)
        return self.head(self.dropout(out))
'''
MIX = '''\
"""Two inputs mixed with a per-channel scale, updated in place."""

import torch
from torch import nn


class Mix(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.scale = nn.Parameter(torch.rand(1, 8, 1, 1) + 0.5)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x * self.scale
        x += y
        return x.relu_()
'''
TARGETS = """\
models:
  net:
    source: models/net.py:TinyResNet
    inputs: [{name: image, shape: [1, 3, 16, 16]}]
    calibration: {samples: 4, seed: 1}
  mix:
    source: models/mix.py:Mix
    inputs: [{name: x, shape: [1, 8, 8, 8]}, {name: y, shape: [1, 8, 8, 8]}]
    calibration: {samples: 4, seed: 1}
targets:
  u85-linux:
    cpu: cortex-a320
    npu: {config: ethos-u85-256, config_file: vela.ini}
    models: [net, mix]
  u55-m55:
    cpu: cortex-m55
    npu: {config: ethos-u55-128}
    ethosu_sdk: %s
    models: [mix]
"""

# Task names with the options digests (``-1a2b3c4d``) taken out.
SPEC = "TOSA-1.0+INT+int16"
U85, U85_512, U55 = "ethos-u85-256", "ethos-u85-512", "ethos-u55-128"
RUNTIME_A = "runtime:aarch64-linux-gnu-gcc/cortex-a320/Release"
RUNTIME_M = "runtime:arm-none-eabi-gcc/cortex-m55-mve/Release"
VIEW_LINUX, VIEW_M55 = "build:u85-linux", "build:u55-m55"
VIEWS = {VIEW_LINUX, VIEW_M55}
REPORT = "build:report.html"
# What the C++ compilers would read; the runtime stage drops them (runtime_build.py).
POLLUTED = {"CFLAGS": "-g", "CXXFLAGS": "-g -O0", "LDFLAGS": "-Wl,--build-id=sha1",
            "CC": "false", "CXX": "false", "CMAKE_BUILD_TYPE": "Debug", "CPATH": "/nonexistent"}


def front(model: str, scheme: str = "int8") -> set[str]:
    """export .. verify of one model."""
    return {f"export:{model}", f"quantize:{model}/{scheme}", f"lower:{model}/{scheme}/{SPEC}",
            f"verify:{model}/{scheme}/{SPEC}"}


def vela(model: str, npu: str, scheme: str = "int8") -> set[str]:
    return {f"vela:{model}/{scheme}/{SPEC}/{npu}"}


def back(model: str, npu: str, scheme: str = "int8") -> set[str]:
    """vela and package of one model for one NPU."""
    return vela(model, npu, scheme) | {f"package:{model}/{scheme}/{SPEC}/{npu}"}


def firmware(model: str, scheme: str = "int8") -> set[str]:
    return {f"firmware:{model}/{scheme}/{SPEC}/{U55}/arm-none-eabi-gcc/cortex-m55-mve/"
            "Release/sdk"}


MIX_ALL = front("mix") | back("mix", U85) | back("mix", U55) | firmware("mix")
NET_ALL = front("net") | back("net", U85)


def short(task: str) -> str:
    return re.sub(r"-[0-9a-f]{8}(?=/|$)", "", task)


@dataclass
class Build:
    ran: set[str]  # every task doit executed
    built: set[str]  # stages computed
    restored: set[str]  # stages restored from the store
    stdout: str


class Project:
    def __init__(self, root: Path):
        self.root, self.repo, self.proj = root, root / "repo", root / "proj"
        self.cold: dict[str, str] = {}

    def build(self, env: dict | None = None, store: str = "store") -> Build:
        proc = doit(self.proj, "build", store=self.root / store, repo=self.repo, env=env or {})

        def found(pattern: str) -> set[str]:
            return {short(t) for t in re.findall(pattern, proc.stdout, re.MULTILINE)}

        ran = found(r"^\.  (\S+)")
        # build:report.html follows the target views: it reruns exactly when one of them did
        assert (REPORT in ran) == bool(ran & VIEWS), proc.stdout
        return Build(ran - {REPORT}, found(r"^   (\S+): built in "),
                     found(r"^   (\S+): restored from store "), proc.stdout)

    def snapshot(self) -> dict[str, str]:
        """sha256 of every file under build/<target>/ (report.json without its timestamp)."""
        sums = {}
        for path in sorted(p for p in (self.proj / "build").glob("[!.]*/**/*") if p.is_file()):
            data = path.read_bytes()
            if path.name == "report.json":
                report = json.loads(data)
                report.pop("generated")
                data = json.dumps(report, sort_keys=True).encode()
            sums[str(path.relative_to(self.proj / "build"))] = hashlib.sha256(data).hexdigest()
        return sums

    def change(self, edits: dict[str, Callable[[str], str]]) -> tuple[Build, Build]:
        """Build with ``edits`` applied (path under root -> new text from old), then undone.

        Every edit changes the file's size: Python's bytecode cache would trust a model file
        rewritten within the same second at the same size."""
        saved = {self.root / p: (self.root / p).read_text() for p in edits}
        try:
            for rel, edit in edits.items():
                (self.root / rel).write_text(edit(saved[self.root / rel]))
            changed = self.build()
        finally:
            for path, text in saved.items():
                path.write_text(text)
        return changed, self.build()


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert text.count(old) == 1, f"{old!r} must occur once in the file"
        return text.replace(old, new)
    return edit


def append(extra: str) -> Callable[[str], str]:
    return lambda text: text + extra


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    root = tmp_path_factory.mktemp("staleness")
    skip = shutil.ignore_patterns("__pycache__")
    for name in ("pipeline", "runtime", "cmake"):
        shutil.copytree(ROOT / name, root / "repo" / name, ignore=skip)
    shutil.copy2(ROOT / "dodo.py", root / "repo" / "dodo.py")
    # The FAKE SDK builds ../../fake_ethosu_driver.cc: copy the folder holding both.
    shutil.copytree(ROOT / "tests" / "runtime" / "cortex_m", root / "sdk", ignore=skip)
    models = root / "proj" / "models"
    models.mkdir(parents=True)
    for name, text in {"blocks.py": BLOCKS, "net.py": NET, "mix.py": MIX}.items():
        (models / name).write_text(text)
    shutil.copy2(default_vela_ini(), root / "proj" / "vela.ini")
    (root / "proj" / "targets.yaml").write_text(TARGETS % (root / "sdk" / "fake_sdk"))
    project = Project(root)
    cold = project.build()
    everything = NET_ALL | MIX_ALL | {RUNTIME_A, RUNTIME_M}
    assert (cold.ran, cold.built, cold.restored) == (everything | VIEWS, everything, set())
    project.cold = project.snapshot()
    return project


def assert_undone(project: Project, undone: Build, restored: set[str], views: set[str]):
    """Undoing a change computes nothing and ends with the cold build's files."""
    assert undone.built == set()
    assert undone.restored == restored
    assert undone.ran == restored | views
    assert project.snapshot() == project.cold


def test_touching_every_input_reruns_nothing(project):
    inputs = [p for d in ("proj", "repo", "sdk") for p in (project.root / d).rglob("*")
              if p.is_file() and project.proj / "build" not in p.parents]
    assert any(p.name == "vela.ini" for p in inputs) and any(p.suffix == ".cc" for p in inputs)
    for path in inputs:
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    build = project.build()
    assert (build.ran, build.built, build.restored) == (set(), set(), set())
    assert project.snapshot() == project.cold


def test_weights_edit_reruns_that_model_everywhere_and_nothing_else(project):
    changed, undone = project.change({"proj/models/mix.py": replace("+ 0.5)", "+ 0.25)")})
    assert changed.built == MIX_ALL and changed.restored == set()
    assert changed.ran == MIX_ALL | VIEWS
    assert_undone(project, undone, MIX_ALL, VIEWS)


def test_helper_module_edit_reruns_the_model_importing_it(project):
    changed, undone = project.change(
        {"proj/models/blocks.py": replace("kernel_size=3, padding=1,", "kernel_size=1,")})
    assert changed.built == NET_ALL and changed.restored == set()
    assert changed.ran == NET_ALL | {VIEW_LINUX}
    assert_undone(project, undone, NET_ALL, {VIEW_LINUX})


def test_comment_at_the_end_of_a_model_reruns_only_the_export(project):
    """A comment that moves no line re-exports, and the export writes the same model.pt2 byte
    for byte (``quant/program.save_program`` drops torch's per-process provenance ids and the
    model's module name is the same in every process), so doit's checksum check stops there:
    nothing downstream runs."""
    changed, undone = project.change({"proj/models/mix.py": append("# tuned for the U55\n")})
    assert changed.built == {"export:mix"} and changed.restored == set()
    assert changed.ran == {"export:mix"}
    assert_undone(project, undone, {"export:mix"}, set())


def test_comment_that_moves_lines_reaches_vela_but_not_the_artifact(project):
    """A comment above forward() moves its source lines. The TOSA graph names each operator
    with its source line (``add @ .../mix.py:15 (x += y)``), so both Vela invocations
    recompute; Vela's command stream is byte-identical, so package and the firmware stay up
    to date. The target folders are rewritten: verify.json and model.tosa carry the new line
    numbers."""
    comment = replace("    def forward", "    # y is added in place, as the reference does\n"
                                         "    def forward")
    changed, undone = project.change({"proj/models/mix.py": comment})
    recomputed = front("mix") | vela("mix", U85) | vela("mix", U55)
    assert changed.built == recomputed and changed.restored == set()
    assert changed.ran == recomputed | VIEWS
    assert_undone(project, undone, recomputed, VIEWS)


def test_calibration_seed_reruns_that_model_from_export(project):
    seed = replace("[1, 8, 8, 8]}]\n    calibration: {samples: 4, seed: 1}",
                   "[1, 8, 8, 8]}]\n    calibration: {samples: 4, seed: 2}")
    changed, undone = project.change({"proj/targets.yaml": seed})
    assert changed.built == MIX_ALL and changed.restored == set()
    assert changed.ran == MIX_ALL | VIEWS
    assert_undone(project, undone, MIX_ALL, VIEWS)


def test_quantization_scheme_of_one_target_reruns_quantize_onwards_for_it(project):
    """The other target keeps the int8 graph; undoing it only rewrites the target folder,
    whose int8 tasks never went out of date."""
    scheme = replace("    ethosu_sdk:", "    quantization: a16w8\n    ethosu_sdk:")
    changed, undone = project.change({"proj/targets.yaml": scheme})
    a16w8 = ((front("mix", "a16w8") - {"export:mix"}) | back("mix", U55, "a16w8")
             | firmware("mix", "a16w8"))
    assert changed.built == a16w8 and changed.restored == set()
    assert changed.ran == a16w8 | {VIEW_M55}
    assert_undone(project, undone, set(), {VIEW_M55})


def test_calibration_observer_reruns_quantize_onwards_for_that_model(project):
    observer = replace("[1, 3, 16, 16]}]\n    calibration: {samples: 4, seed: 1}",
                       "[1, 3, 16, 16]}]\n    calibration: {samples: 4, seed: 1, "
                       "observer: histogram}")
    changed, undone = project.change({"proj/targets.yaml": observer})
    recomputed = NET_ALL - {"export:net"}
    assert changed.built == recomputed and changed.restored == set()
    assert changed.ran == recomputed | {VIEW_LINUX}
    assert_undone(project, undone, recomputed, {VIEW_LINUX})


def test_npu_config_reruns_vela_and_package_of_that_target(project):
    changed, undone = project.change({"proj/targets.yaml": replace(U85, U85_512)})
    recomputed = back("net", U85_512) | back("mix", U85_512)
    assert changed.built == recomputed and changed.restored == set()
    assert changed.ran == recomputed | {VIEW_LINUX}
    assert_undone(project, undone, set(), {VIEW_LINUX})


def test_runtime_comment_rebuilds_the_runtime_to_the_same_bytes(project):
    """Both runtime builds and the firmware recompile; their products are byte-identical (the
    comment moves no line), so no target folder is rewritten."""
    changed, undone = project.change({"repo/runtime/common/io.cc": append("// reviewed\n")})
    runtimes = {RUNTIME_A, RUNTIME_M} | firmware("mix")
    assert changed.built == runtimes and changed.restored == set()
    assert changed.ran == runtimes
    assert_undone(project, undone, runtimes, set())


def test_runtime_code_edit_rebuilds_the_runtime_and_the_targets_using_it(project):
    symbol = append('extern "C" const char ethosu_rt_staleness_probe[] = "probe";\n')
    changed, undone = project.change({"repo/runtime/common/io.cc": symbol})
    runtimes = {RUNTIME_A, RUNTIME_M} | firmware("mix")
    assert changed.built == runtimes and changed.restored == set()
    assert changed.ran == runtimes | VIEWS
    assert_undone(project, undone, runtimes, VIEWS)


def test_compiler_flags_in_the_environment_change_nothing(project):
    """CFLAGS=-g, CC=false and friends re-run nothing. With the runtime products deleted and
    an empty store, the runtime and the firmware are compiled with them set: the products
    are the cold build's bytes (no target folder is rewritten), and the next build without
    them computes nothing."""
    build = project.build(POLLUTED)
    assert (build.ran, build.built, build.restored) == (set(), set(), set())
    plan = make_plan(load_config(project.proj / "targets.yaml"), project.proj / "build")
    products = [path for inv in plan.invocations.values() if inv.stage in ("runtime", "firmware")
                for path in inv.outputs.values()]
    assert len(products) == 6  # runner + 2 libraries, 2 libraries, firmware
    for path in products:
        path.unlink()
    polluted = project.build(POLLUTED, store="store-polluted")
    runtimes = {RUNTIME_A, RUNTIME_M} | firmware("mix")
    assert (polluted.ran, polluted.built) == (runtimes, runtimes)
    assert project.snapshot() == project.cold
    clean = project.build()
    assert (clean.ran, clean.built, clean.restored) == (set(), set(), set())
