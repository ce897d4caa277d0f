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
from pipeline.cache.store import store_root
from pipeline.errors import UserError, see
from pipeline.files import DiskFullError, check_free, is_full
from pipeline.graph import partial, plan_cache, records, stats, timeout, workers
from pipeline.graph.lock import (
    check_build_folder,
    is_clean,
    lock_build_folder,
    needs_lock,
    sweep_work,
)
from pipeline.graph.plan import Plan, make_plan

DEFAULT_TARGETS = "targets.yaml"
DEP_FILE = ".doit.db"  # doit's records, checked before each build (graph/records.py)
# Free space a build needs before it starts: doit's records (sqlite, which fails with a
# traceback of its own on a full disk) and the lock; a stage's copies are checked as they go.
MIN_FREE = 1 << 20


@dataclass
class Project:
    config: object  # pipeline.config.ProjectConfig; None when the plan came from its cache
    plan: Plan
    build: Path
    store: Path
    selected: list[str]
    configs: dict[str, dict]  # target -> resolved config, as JSON data
    remote: object = None  # pipeline.cache.remote.RemoteConfig, or None without a remote

    def doit_config(self) -> dict:
        return {
            "default_tasks": ["build"],
            "backend": "sqlite3",  # the same on every machine, unlike dbm's flavours
            "dep_file": str(self.build / DEP_FILE),
            "verbosity": 2,
            "check_file_uptodate": stats.MD5Checker,  # each file stat'ed once (stats.py)
            "reporter": partial.reporter_for(self),  # --continue writes partial targets
        }

    def target_configs(self) -> dict[str, dict]:
        return self.configs


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
                            f"(from {source}); got '{name}'{hint} "
                            f"{see('docs/commands.md#variables')}")
    return chosen


def _config_and_plan(path: Path, build: Path):
    """``(config, plan, target configs)``: the plan and configs from the plan cache (config
    None: pydantic is not even imported) when nothing they were made from changed, else read,
    validated and planned."""
    cached = plan_cache.read(Path(os.path.abspath(path)), build) if path.is_file() else None
    if cached is not None:
        return None, *cached
    from pipeline.config import load_config

    config = load_config(path)
    configs = {name: t.model_dump(mode="json") for name, t in config.targets.items()}
    return config, make_plan(config, build), configs


def load(get_var: Callable[[str, str | None], str | None]) -> Project:
    """Build the project from doit's command-line variables; exit with the message on error."""
    build = Path.cwd()
    try:
        path = Path(get_var("targets", None) or DEFAULT_TARGETS)
        # config.path is the targets file's absolute path: the default build folder is known
        # before the file is read, so a valid plan cache spares reading it (plan_cache.py).
        build = Path(get_var("build", None) or Path(os.path.abspath(path)).parent / "build")
        build = build.resolve()
        check_build_folder(build, [], clean=is_clean(sys.argv))  # before the plan cache is read
        config, plan, configs = _config_and_plan(path, build)
        timeout.configure(get_var("timeout", None))
        build.mkdir(parents=True, exist_ok=True)
        stats.keep_digests_in(build)
        if needs_lock(sys.argv):
            check_build_folder(build, list(configs), clean=is_clean(sys.argv))
            if not is_clean(sys.argv):  # clean is what frees space
                check_free(build, MIN_FREE)
            lock_build_folder(build)
            sweep_work(build)
            records.repair(build / DEP_FILE)
            workers.watch(build / ".work")  # a doit -n worker dying in a stage ends the build
        selected = select_targets(list(configs), get_var("target", None), str(path))
        if config is not None:
            plan_cache.write(Path(os.path.abspath(path)), build, plan, configs)
        remote = remote_config(get_var("remote", None), get_var("remote_mode", None),
                               build / ".work" / "remote")
        if remote is not None and needs_lock(sys.argv):
            start_run(remote)
        return Project(config, plan, build, store_root(get_var("store", None)), selected,
                       configs, remote)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as error:  # the lock, the records, the plan cache on a full disk
        if not is_full(error):
            raise
        print(f"error: {DiskFullError(build, None)}", file=sys.stderr)
        raise SystemExit(2) from None
