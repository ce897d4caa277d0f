"""``doit --continue``: the targets with a failed model still get their folder and report.

doit runs a ``build:<target>`` task only when every task it depends on succeeded, so a
target with one failing model would get no ``build/<target>/`` at all, and the models that
did build could not be found. Without ``--continue`` that is right: the build stops at the
first failure. With it, doit's reporter (``Reporter``, named in DOIT_CONFIG) writes, once
every other task has run, each such target's folder from the models that built and a
``report.json`` that marks each failed model with the task that failed and its message
(``"failed": {"task", "error"}``), then ``report.html``. The build still exits non-zero.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from doit.exceptions import UnmetDependency
from doit.reporter import ConsoleReporter

from pipeline.files import write_atomic
from pipeline.graph.plan import Invocation, ModelBuild, Plan
from pipeline.graph.report import (
    _model_entry,
    _runtime_entry,
    clear_stale,
    runtime_view,
    summary_line,
)

REPORT_HTML = "report.html"


def continuing(argv: list[str] | None = None) -> bool:
    """Whether doit runs with ``--continue`` (``-c``); doit does not tell its reporter."""
    found = False
    for arg in sys.argv[1:] if argv is None else argv:
        if arg in ("--continue", "-c"):
            found = True
        elif arg == "--no-continue":
            found = False
    return found


def reporter_for(project) -> type:
    """The doit reporter class of ``project`` (a ``graph.project.Project``)."""
    return type("Reporter", (Reporter,), {"project": project})


class Reporter(ConsoleReporter):
    """doit's console reporter, which also keeps each failed task's message; at the end of a
    ``--continue`` run it writes the targets whose ``build:`` task could not run."""

    project = None  # set by reporter_for
    desc = "console output; under --continue, the targets a failed model left unwritten"

    def __init__(self, outstream, options):
        super().__init__(outstream, options)
        self.errors: dict[str, str] = {}  # task -> its failure's message
        self.unmet: list[str] = []  # build:<target> tasks not run for a failed dependency

    def add_failure(self, task, fail) -> None:
        super().add_failure(task, fail)
        if isinstance(fail, UnmetDependency):
            if task.name.startswith("build:"):
                self.unmet.append(task.name.removeprefix("build:"))
        else:
            self.errors[task.name] = fail.get_msg().strip()

    def complete_run(self) -> None:
        super().complete_run()
        project = self.project
        if project is None or not continuing():
            return
        targets = [t for t in self.unmet if t in project.plan.targets]
        for target in targets:
            report = write_partial(project.plan, target, project.build / target,
                                   project.configs[target], self.errors)
            for model, entry in report["models"].items():
                line = (f"{target}/{model}: FAILED at {entry['failed']['task'] or '?'}"
                        if "failed" in entry else summary_line(target, model, entry))
                self.write(f"   {line}\n")
            self.write(f"   {target}: written without its failed models (--continue); "
                       f"see {project.build / target / 'report.json'}\n")
        if targets:
            from pipeline.graph.report_html import write_report

            write_report(project.build, list(project.configs), project.build / REPORT_HTML)


def _producers(plan: Plan) -> dict[str, Invocation]:
    return {str(p): inv for inv in plan.invocations.values() for p in inv.outputs.values()}


def failure_of(plan: Plan, invocations: list[Invocation], errors: dict[str, str],
               producers: dict[str, Invocation] | None = None) -> dict | None:
    """``{"task", "error"}`` of the first failed task ``invocations`` come from (upstream
    first), or None when none of them failed."""
    producers = producers if producers is not None else _producers(plan)
    seen: set[str] = set()
    order: list[Invocation] = []

    def visit(inv: Invocation) -> None:
        if inv.task in seen:
            return
        seen.add(inv.task)
        for path in inv.inputs.values():
            if (source := producers.get(str(path))) is not None:
                visit(source)
        order.append(inv)

    for inv in invocations:
        visit(inv)
    for inv in order:
        if inv.task in errors:
            return {"task": inv.task, "error": errors[inv.task]}
    return None


def write_partial(plan: Plan, target: str, folder: Path, config: dict,
                  errors: dict[str, str]) -> dict:
    """The target folder of the models that built, and ``report.json`` marking the others;
    returns the report. A model whose outputs are all there is written as ``build:`` would."""
    builds: list[ModelBuild] = plan.targets[target]
    runtime = plan.runtimes.get(target)
    producers = _producers(plan)
    keep = {b.model for b in builds} | {"report.json"}
    keep |= {runtime_view(n).split("/")[0] for n in (runtime.outputs if runtime else ())}
    clear_stale(folder, keep)
    report = {"target": target, "config": config, "models": {}, "failed": [],
              "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for build in builds:
        failed = failure_of(plan, build.invocations(), errors, producers)
        if failed is None and all(Path(p).is_file() for p, _ in build.views()):
            report["models"][build.model] = _model_entry(build, folder / build.model)
        else:
            report["models"][build.model] = {"failed": failed or {
                "task": "", "error": "not built (a task it needs did not run)"}}
            report["failed"].append(build.model)
    if runtime is not None:
        failed = failure_of(plan, [runtime], errors, producers)
        if failed is None and all(p.is_file() for p in runtime.outputs.values()):
            report["runtime"] = _runtime_entry(runtime, folder, builds)
        else:
            report["runtime"] = {"failed": failed}
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "report.json", json.dumps(report, indent=2, sort_keys=True).encode())
    return report
