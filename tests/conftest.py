"""Suite-wide pytest set-up: threads, the quick tier, and how tests spread over pytest-xdist's
workers (docs/testing.md).

Tests of one module run on one worker, so a module-scoped build (a CMake tree, a compiled
network) is made once and never by two workers at the same time. The modules listed in
``INDEPENDENT`` hold slow tests that share nothing; each of their tests is a unit of its own.
(xdist's own ``--dist loadgroup`` marks do not take effect with pytest 9, hence a scheduler.)
Modules that build for minutes are handed out first, so that no worker starts one when the
others are nearly done.
"""

import os

# One thread per process, set before torch is imported (subprocesses such as doit inherit
# it): pytest-xdist already runs one worker per core, and torch's own thread pool on top of
# that oversubscribes the cores, which made the op tests 2-3x slower on a loaded machine.
# A value the caller set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
from xdist.scheduler import LoadScopeScheduling  # noqa: E402

INDEPENDENT = ("tests/models/test_real_models.py",)
# Fixtures of the hostile-folder tests (tests/test_files.py, tests/e2e/test_hostile_folders.py).
pytest_plugins = ("tests.canary",)

# What a test needs that makes it slow: end-to-end builds, cross-compiles, emulators, servers.
SLOW_NEEDS = ("slow", "needs_arm_gcc", "needs_aarch64_gcc", "needs_zig", "needs_qemu",
              "needs_clang", "needs_cmake", "needs_vulkan", "needs_servers")


def _scope(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return nodeid if module in INDEPENDENT else module


class ModuleScheduling(LoadScopeScheduling):
    """xdist's load-scope scheduling with the module as the scope (classes included)."""

    def _split_scope(self, nodeid: str) -> str:
        return _scope(nodeid)


def pytest_xdist_make_scheduler(config, log):
    # Hand the modules out in collection order, which puts the costliest first (below):
    # xdist's own order, the modules with the most tests first, left the real-model builds
    # (one test each) to the end of the run.
    config.option.loadscopereorder = False
    return ModuleScheduling(config, log)


def _cost(item) -> int:
    """2: an end-to-end build or the real-model zoo; 1: a cross-build, an emulator or a
    server; 0: the rest."""
    names = {mark.name for mark in item.iter_markers()}
    return 2 if "slow" in names else 1 if names & set(SLOW_NEEDS) else 0


def _is_quick(item) -> bool:
    """Every test function once - its first case of each parametrization - unless it needs
    one of ``SLOW_NEEDS``."""
    if {mark.name for mark in item.iter_markers()} & set(SLOW_NEEDS):
        return False
    callspec = getattr(item, "callspec", None)
    return callspec is None or not any(callspec.indices.values())


def pytest_itemcollected(item):
    """Mark the quick tier (``-m quick``) as each test is collected, before ``-m`` selects."""
    if _is_quick(item):
        item.add_marker(pytest.mark.quick)


@pytest.hookimpl(trylast=True)  # after a plugin that shuffles (pytest-randomly)
def pytest_collection_modifyitems(config, items):
    """Put the costliest modules first (a stable sort: the order within each cost stays as
    collected, or as shuffled)."""
    cost: dict[str, int] = {}
    for item in items:
        scope = _scope(item.nodeid)
        cost[scope] = max(cost.get(scope, 0), _cost(item))
    items.sort(key=lambda item: -cost[_scope(item.nodeid)])
