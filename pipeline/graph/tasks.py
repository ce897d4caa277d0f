"""doit task dicts from a plan. Tested as data: names, file_dep, targets."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path

from doit.tools import config_changed

from pipeline.cache.key import file_digest, tool_versions
from pipeline.errors import UserError
from pipeline.files import clean
from pipeline.graph.actions import build_folder, run_stage
from pipeline.graph.outputs import loaded_unchanged, outputs_unchanged, record
from pipeline.graph.plan import Invocation, Plan
from pipeline.graph.report import runtime_view, write_target
from pipeline.graph.stages import STAGES

REPORT_HTML = "report.html"  # build/report.html: one file for the whole build

class ConfigChanged(config_changed):
    """doit's ``config_changed`` with its call signature given (graph/outputs.py says why)."""

    __signature__ = inspect.signature(config_changed({}))


def stage_task(inv: Invocation, store: Path, where: str, code: list[str], remote=None,
               peers: list | None = None) -> dict:
    """The doit task of one stage invocation (``code``: its code files, ``graph/code.py``;
    ``remote``: a RemoteConfig or None; ``peers``: the (invocation, where) of the tasks it may
    run side by side with, ``alongside.py``)."""
    stage = STAGES[inv.stage]
    return {
        "basename": inv.stage,
        "name": inv.name,
        "doc": stage.doc,
        "actions": [(run_stage, [inv, str(store), where, remote, peers])],
        "file_dep": sorted({str(p) for p in inv.inputs.values()} | set(code)),
        "targets": (targets := [str(p) for p in inv.outputs.values()]),
        # A compiler upgrade is seen when the task runs (its key covers `--version`), not here:
        # asking every compiler for its version would slow down each no-op build.
        "uptodate": [ConfigChanged({"options": inv.options,
                                    "tools": tool_versions(stage.packages) if stage.packages else {}}),
                     outputs_unchanged, loaded_unchanged],
        "clean": [(clean, [targets, build_folder(inv)])],
        "verbosity": 2,
    }


def stage_creator(project, stage):
    """dodo.py's ``task_<stage>``: the stage's doit tasks, documented by its doc line."""

    def creator():
        yield from stage_tasks(project.plan, project.store, stage.name, project.remote,
                               project.selected)

    creator.__doc__ = stage.doc[0].upper() + stage.doc[1:] + "."
    return creator


def stage_tasks(plan: Plan, store: Path, stage: str, remote=None,
                selected: list[str] | None = None) -> Iterator[dict]:
    """The invocations of one stage as subtasks of a group (``doit list`` shows the group).
    The run checks of the ``selected`` targets know each other, to run side by side."""
    yield {"basename": stage, "name": None, "doc": STAGES[stage].doc}
    peers = _peers(plan, stage, selected) if STAGES[stage].alongside else None
    code = plan.code.get(stage, [])
    for inv in plan.invocations.values():
        if inv.stage == stage:
            yield stage_task(inv, store, plan.where(inv.task), code, remote,
                             peers if peers and len(peers) > 1 else None)


def _peers(plan: Plan, stage: str, selected: list[str] | None) -> list[tuple[Invocation, str]]:
    """(invocation, where) of ``stage``'s tasks that the selected targets need, in plan order."""
    wanted = set(selected if selected is not None else plan.targets)
    return [(inv, plan.where(inv.task)) for inv in plan.invocations.values()
            if inv.stage == stage and wanted & set(plan.users.get(inv.task, ()))]


def target_tasks(plan: Plan, build: Path, configs: dict[str, dict],
                 selected: list[str]) -> Iterator[dict]:
    """The ``build:<target>`` tasks of the selected targets, then ``build:report.html``."""
    for target in selected:
        builds = plan.targets[target]
        folder = build / target
        # Paths as text: hundreds of targets make tens of thousands of them (issue 13).
        top = str(folder)
        deps, targets = [], [f"{top}/report.json"]
        runtime = plan.runtimes.get(target)
        if runtime is not None:
            deps += list(runtime.outputs.values())
            targets += [f"{top}/{runtime_view(n)}" for n in runtime.outputs]
        for b in builds:
            views = b.views()  # the stages' declared views (pipeline/stages/declare.py)
            deps += [path for path, _ in views]
            targets += [f"{top}/{b.model}/{name}" for _, name in views if name is not None]
        yield {
            "name": target,
            "doc": f"build target {target}",
            "actions": [(_write_target, [targets, target, builds, runtime, folder,
                                         configs[target]])],
            "file_dep": [str(p) for p in deps],
            "targets": targets,
            "uptodate": [ConfigChanged(configs[target]), outputs_unchanged],
            "clean": [(clean, [targets, build])],
            "verbosity": 2,
        }
    yield report_task(build, list(configs), selected)


def report_task(build: Path, names: list[str], selected: list[str]) -> dict:
    """``build:report.html``: the build's report for people, from the targets' report.json.

    It runs after the selected targets' tasks and again only when a report.json it reads
    changed (``ReportsUnchanged``): not a file_dep, whose list would follow the selection, so
    ``target=a`` after a build of every target would rewrite the page though nothing changed."""
    html = build / REPORT_HTML
    return {
        "name": REPORT_HTML,
        "doc": "write build/report.html: every built target's figures, plotted",
        "actions": [(_write_html, [html, build, names])],
        "task_dep": [f"build:{t}" for t in selected],
        "targets": [str(html)],
        "uptodate": [ReportsUnchanged(build, names), outputs_unchanged],
        "clean": [(clean, [[str(html)], build])],
        "verbosity": 2,
    }


def _report_states(build: Path, names: list[str]) -> dict:
    """Size, modification time and sha256 of each target's report.json that exists."""
    states = {}
    for name in names:
        path = build / name / "report.json"
        try:
            found = os.stat(path)
        except OSError:
            continue
        states[name] = [found.st_size, found.st_mtime_ns, file_digest(path)]
    return states


class ReportsUnchanged:
    """doit ``uptodate`` check: the report.json files the page was written from hold the same
    bytes (the action saves their states among its values). A stat per target on a no-op
    build; a file whose time moved but whose bytes did not (a ``touch``) is hashed, and is
    not a change."""

    def __init__(self, build: Path, names: list[str]):
        self.build, self.names = build, names

    def __call__(self, task, values) -> bool:
        saved = values.get(REPORTS_KEY)
        if not isinstance(saved, dict):
            return False
        present = set()
        for name in self.names:
            path = self.build / name / "report.json"
            try:
                found = os.stat(path)
            except OSError:
                continue
            present.add(name)
            entry = saved.get(name)
            if not entry:
                return False
            size, mtime_ns, digest = entry
            if found.st_size != size or (found.st_mtime_ns != mtime_ns
                                         and file_digest(path) != digest):
                return False
        return present == set(saved)


REPORTS_KEY = "reports"


def _write_html(html: Path, build: Path, names: list[str]) -> dict:
    """doit action of ``build:report.html`` (matplotlib is imported only here)."""
    from doit.exceptions import TaskFailed

    from pipeline.graph.report_html import write_report

    states = _report_states(build, names)
    try:
        write_report(build, names, html)
    except UserError as exc:  # a link in the way, a full disk: the message alone
        return TaskFailed(str(exc))
    return {**record([html]), REPORTS_KEY: states}


def _write_target(files: list[Path], *args) -> dict:
    """doit action of ``build:<target>``: write the target folder, record what it holds."""
    from doit.exceptions import TaskFailed

    try:
        write_target(*args)
    except UserError as exc:
        return TaskFailed(str(exc))
    return record(files)
