"""The one way the tests run ``doit`` on a project: a fresh Python, the checkout's ``dodo.py``
(or a scratch copy's), the project's targets.yaml and a store folder.

A build that should succeed and does not fails the test with the command and both streams;
``ok=False`` hands back whatever happened, for the tests of failures.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The two example models most end-to-end tests build, as a targets.yaml ``models:`` block.
ADD_AND_CNN = """\
models:
  add:
    source: models/add.py:AddModel
    inputs: [{name: x, shape: [1, 8, 8, 16]}, {name: y, shape: [1, 8, 8, 16]}]
    calibration: {samples: 4, seed: 1}
  cnn:
    source: models/cnn.py:SmallCNN
    inputs: [{name: image, shape: [1, 3, 32, 32]}]
    calibration: {samples: 4, seed: 1}
"""


def doit_argv(project: Path, *args: str, store: Path | None = None, repo: Path = ROOT,
              python: tuple[str, ...] = ()) -> list[str]:
    """``python -m doit -f <repo>/dodo.py -d <repo> *args targets=... store=...``; ``store``
    defaults to ``<project>/store``."""
    return [sys.executable, *python, "-m", "doit", "-f", str(repo / "dodo.py"), "-d", str(repo),
            *args, f"targets={project / 'targets.yaml'}",
            f"store={store if store is not None else project / 'store'}"]


def doit(project: Path, *args: str, ok: bool = True, store: Path | None = None,
         repo: Path = ROOT, env: dict[str, str] | None = None, timeout: float | None = None,
         python: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run doit on ``project`` (see ``doit_argv``); ``env`` is added to this process's
    environment. With ``ok``, a non-zero exit or a traceback fails the test."""
    argv = doit_argv(project, *args, store=store, repo=repo, python=python)
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=timeout,
                          env={**os.environ, **env} if env is not None else None)
    if ok and (proc.returncode != 0 or "Traceback" in proc.stdout + proc.stderr):
        pytest.fail(f"{' '.join(argv)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def executed(proc: subprocess.CompletedProcess) -> list[str]:
    """Tasks doit ran (it prints '.  name' for those and '-- name' for up-to-date ones)."""
    return re.findall(r"^\.  (\S+)", proc.stdout, re.MULTILINE)


def seeded_store(source: Path, store: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """``store``, a copy of the stage entries of ``source`` but those of the stages in
    ``leave_out``: a build against it restores every stage it shares with the build that
    filled ``source`` and computes the stages left out, the ones a test is about. (Copies,
    not links: a test may damage its store.)"""
    for manifest in source.glob("*/*/manifest.json"):
        if json.loads(manifest.read_text())["record"]["stage"] in leave_out:
            continue
        entry = manifest.parent
        shutil.copytree(entry, store / entry.parent.name / entry.name)
    return store
