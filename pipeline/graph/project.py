"""Everything dodo.py needs, computed once when doit loads it: config, plan, folders.

Loading must stay cheap (a no-op ``doit build`` is the command users run most): nothing here
imports torch, Vela or tosa-tools; stages import them inside their actions.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.cache.remote import remote_config, start_run
from pipeline.errors import UserError
from pipeline.graph import records, timeout
from pipeline.graph.lock import lock_build_folder, needs_lock, sweep_work
from pipeline.graph.plan import Plan, make_plan

DEFAULT_TARGETS = "targets.yaml"
DEP_FILE = ".doit.db"  # doit's records, checked before each build (graph/records.py)
DEFAULT_STORE = Path("~/.cache/ethosu-pipeline/store")


@dataclass
class Project:
    config: object  # pipeline.config.ProjectConfig
    plan: Plan
    build: Path
    store: Path
    selected: list[str]
    remote: object = None  # pipeline.cache.remote.RemoteConfig, or None without a remote

    def doit_config(self) -> dict:
        return {
            "default_tasks": ["build"],
            "backend": "sqlite3",  # the same on every machine, unlike dbm's flavours
            "dep_file": str(self.build / DEP_FILE),
            "verbosity": 2,
        }

    def target_configs(self) -> dict[str, dict]:
        return {name: t.model_dump(mode="json") for name, t in self.config.targets.items()}


def store_root(value: str | None) -> Path:
    """The store: ``store=PATH``, else $ETHOSU_PIPELINE_STORE, else ~/.cache/ethosu-pipeline/store."""
    raw = value or os.environ.get("ETHOSU_PIPELINE_STORE") or str(DEFAULT_STORE)
    return Path(raw).expanduser().resolve()


def select_targets(names: list[str], requested: str | None, source: str) -> list[str]:
    """The targets named by ``target=a,b`` (all when omitted), checked against the config."""
    if not requested:
        return list(names)
    chosen = [t.strip() for t in requested.split(",") if t.strip()]
    for name in chosen:
        if name not in names:
            close = difflib.get_close_matches(name, names, n=1)
            hint = f". Did you mean '{close[0]}'?" if close else ""
            raise UserError(f"target={requested}: target must be one of {', '.join(names)} "
                            f"(from {source}); got '{name}'{hint}")
    return chosen


def load(get_var: Callable[[str, str | None], str | None]) -> Project:
    """Build the project from doit's command-line variables; exit with the message on error."""
    try:
        from pipeline.config import load_config

        path = Path(get_var("targets", None) or DEFAULT_TARGETS)
        config = load_config(path)
        timeout.configure(get_var("timeout", None))
        build = Path(get_var("build", None) or config.path.parent / "build").resolve()
        build.mkdir(parents=True, exist_ok=True)
        if needs_lock(sys.argv):
            lock_build_folder(build)
            sweep_work(build)
            records.repair(build / DEP_FILE)
        selected = select_targets(list(config.targets), get_var("target", None), str(path))
        remote = remote_config(get_var("remote", None), get_var("remote_mode", None),
                               build / ".work" / "remote")
        if remote is not None and needs_lock(sys.argv):
            start_run(remote)
        return Project(config, make_plan(config, build), build,
                       store_root(get_var("store", None)), selected, remote)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
