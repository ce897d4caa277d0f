"""Suite-wide pytest set-up: how tests spread over pytest-xdist's workers.

Tests of one module run on one worker, so a module-scoped build (a CMake tree, a compiled
network) is made once and never by two workers at the same time. The modules listed in
``INDEPENDENT`` hold slow tests that share nothing; each of their tests is a unit of its own.
(xdist's own ``--dist loadgroup`` marks do not take effect with pytest 9, hence a scheduler.)
"""

from xdist.scheduler import LoadScopeScheduling

INDEPENDENT = ("tests/models/test_real_models.py",)


class ModuleScheduling(LoadScopeScheduling):
    """xdist's load-scope scheduling with the module as the scope (classes included)."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return nodeid if module in INDEPENDENT else module


def pytest_xdist_make_scheduler(config, log):
    return ModuleScheduling(config, log)
