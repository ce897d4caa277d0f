"""Suite-wide pytest set-up: how tests spread over pytest-xdist's workers.

Tests of one module run on one worker, so a module-scoped build (a CMake tree, a compiled
network) is made once and never by two workers at the same time. The modules listed in
``INDEPENDENT`` hold slow tests that share nothing; each of their tests is a unit of its own.
(xdist's own ``--dist loadgroup`` marks do not take effect with pytest 9, hence a scheduler.)
"""

import os

# One thread per process, set before torch is imported (subprocesses such as doit inherit
# it): pytest-xdist already runs one worker per core, and torch's own thread pool on top of
# that oversubscribes the cores, which made the op tests 2-3x slower on a loaded machine.
# A value the caller set is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from xdist.scheduler import LoadScopeScheduling  # noqa: E402

INDEPENDENT = ("tests/models/test_real_models.py",)


class ModuleScheduling(LoadScopeScheduling):
    """xdist's load-scope scheduling with the module as the scope (classes included)."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return nodeid if module in INDEPENDENT else module


def pytest_xdist_make_scheduler(config, log):
    return ModuleScheduling(config, log)
