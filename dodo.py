"""The build graph: ``doit build target=u85-linux`` (docs/commands.md documents every command).

This file is only the index of the graph: one ``task_<stage>`` per stage declared in
``pipeline/stages/`` (``pipeline/graph/stages.py`` lists them), and ``task_build``.
pipeline/graph/ builds the task dicts. Loading it imports no torch, Vela or tosa-tools, so a
no-op build stays fast.
"""

from doit import get_var

from pipeline.graph import project, tasks
from pipeline.graph.stages import STAGES

PROJECT = project.load(get_var)
DOIT_CONFIG = PROJECT.doit_config()

for _stage in STAGES.values():
    globals()[f"task_{_stage.name}"] = tasks.stage_creator(PROJECT, _stage)


def task_build():
    """Build targets into build/<target>/: `doit build target=NAME` (all when omitted)."""
    yield from tasks.target_tasks(PROJECT.plan, PROJECT.build, PROJECT.target_configs(),
                                  PROJECT.selected)
