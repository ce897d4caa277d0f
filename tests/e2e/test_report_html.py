"""build/report.html end to end: a real build of one model for two NPU configurations, the
report opened in headless Chromium (Debian's ``chromium``, installed by bootstrap.sh)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.graph.progress import ticking
from pipeline.graph.report_html import top_layers
from tests.e2e.runner import ROOT, doit

TARGETS = """\
models:
  add:
    source: add.py:AddModel
    inputs: [{shape: [1, 8, 8, 16]}, {shape: [1, 8, 8, 16]}]
    calibration: {samples: 4, seed: 1}
targets:
  u55: {cpu: cortex-m55, npu: {config: ethos-u55-128}, models: [add]}
  u65: {cpu: cortex-m55, npu: {config: ethos-u65-256}, models: [add]}
"""




@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("report")
    shutil.copy(ROOT / "models" / "add.py", root / "add.py")
    (root / "targets.yaml").write_text(TARGETS)
    return root, doit(root, "build")


def chromium(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM Chromium rendered and the console messages it logged, for a file on disk."""
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, re.findall(r"CONSOLE[(:]\d+\)?\] (.*)", proc.stderr)


pytestmark = [pytest.mark.slow, pytest.mark.needs_torch, pytest.mark.needs_vela,
              pytest.mark.needs_tosa_ref, pytest.mark.needs_arm_gcc]


def test_report_has_the_figures_of_every_target_and_model(built):
    root, _ = built
    page = (root / "build" / "report.html").read_text()
    for target in ("u55", "u65"):
        report = json.loads((root / "build" / target / "report.json").read_text())
        vela = report["models"]["add"]["vela"]
        assert f"{vela['cycles_total']:,}" in page
        assert f"{report['models']['add']['artifact_bytes']:,}" in page
        # report.json keeps what the per-layer chart shows, from Vela's per-layer CSV
        assert vela["top_layers"] == top_layers(
            root / "build" / target / "add" / "vela_per_layer.csv")
        assert vela["top_layers"][0]["cycles"] > 0
        # the roofline: an add has no MACs, so its bound is the memory's (SRAM on both)
        roofline = report["models"]["add"]["roofline"]
        assert html.escape(roofline["summary"]) in page and roofline["times_mac_limit"] is None
        assert {x["bound_by"] for x in roofline["layers"]} == {"memory"}
        assert f"{roofline['times_limit']:.2f}x</td>" in page  # the table's cycles / limit
    # the U55 vs U65 comparison, one per-layer chart and one roofline each
    assert page.count("<svg") == 5
    # self-contained: nothing fetched (XML namespaces are names, not fetched)
    assert not re.search(r"""(src|href)=["']?(https?:|//)|<link|url\((?!#)|@import""", page)
    assert "<script" not in page


def test_report_renders_in_chromium_without_console_errors(built, tmp_path):
    root, _ = built
    dom, console = chromium(root / "build" / "report.html", tmp_path)
    assert console == []
    assert dom.count("<svg") == 5 and "Build report" in dom


def test_console_errors_are_caught_by_the_chromium_check(tmp_path):
    """The check above can fail: a page that logs an error is seen."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('broken plot')"
                    "</script></body></html>")
    _, console = chromium(page, tmp_path)
    assert any("broken plot" in line for line in console)


def test_no_op_build_leaves_the_report_alone_and_ci_logs_have_no_progress(built):
    root, cold = built
    assert "build:report.html" in cold.stdout
    assert "running" not in cold.stdout and "\r" not in cold.stdout  # stdout is a pipe here
    before = (root / "build" / "report.html").stat().st_mtime_ns
    again = doit(root, "build")
    assert not re.findall(r"^\.  ", again.stdout, re.MULTILINE)
    assert (root / "build" / "report.html").stat().st_mtime_ns == before


def test_progress_shows_on_a_terminal_only(tmp_path):
    import os
    import pty
    import time

    leader, follower = pty.openpty()
    with open(follower, "w", closefd=True) as terminal:
        with ticking("vela:net", terminal, delay=0.1, every=0.1):
            time.sleep(0.5)
    chunks = []
    while True:  # one read may return part of it: read to the end (EIO once it is closed)
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    shown = b"".join(chunks).decode()
    os.close(leader)
    assert "vela:net: running 0s" in shown and shown.endswith("\r\x1b[K")
    quiet = tmp_path / "log"
    with open(quiet, "w") as log, ticking("vela:net", log, delay=0.1, every=0.1):
        time.sleep(0.3)
    assert quiet.read_text() == ""


def test_report_from_merged_ci_artifacts(built, tmp_path):
    """CI's report job: the per-target folders downloaded elsewhere, one report over them."""
    root, _ = built
    for target in ("u55", "u65"):
        shutil.copytree(root / "build" / target, tmp_path / "merged" / target)
    proc = subprocess.run([sys.executable, "-m", "pipeline.graph.report_html",
                           str(tmp_path / "merged")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "merged" / "report.html").read_text()
    assert page.count("<svg") == 5  # the charts of the copied reports
    empty = subprocess.run([sys.executable, "-m", "pipeline.graph.report_html",
                            str(tmp_path / "none")], cwd=ROOT, capture_output=True, text=True)
    assert empty.returncode == 2
    assert empty.stderr.strip() == (f"error: {tmp_path / 'none'}: must hold <target>/report.json "
                                    "files (a build folder); got none")


def test_report_of_targets_without_one_vela_network(tmp_path):
    """Mixed NPU + CPU graphs, CPU-only and VGF targets have no Vela figures: their rows show
    verification and size, and they stay out of the cross-target comparison (two NPU targets
    with mixed graphs used to stop the page with a KeyError)."""
    from pipeline.graph.report_html import render

    verify = {"passed": True, "outputs": [{"sqnr_db_vs_float": 30.0}]}
    mixed = {"verify": verify, "artifact_bytes": 4992, "mixed": {"segments": []}}
    reports = {
        "u55-fallback": {"config": {"npu": {"config": "ethos-u55-128", "fallback": "cpu"}},
                         "models": {"scores": mixed}},
        "u65-fallback": {"config": {"npu": {"config": "ethos-u65-256", "fallback": "cpu"}},
                         "models": {"scores": mixed}},
        "m55-cpu": {"config": {"npu": None}, "models": {"scores": {"verify": verify}}},
    }
    page = render(reports, tmp_path)
    for target in reports:
        assert f"<td>{target}</td>" in page
    assert page.count("<td class=pass>pass</td>") == 3
    assert "4,992" in page and "Across targets" not in page
