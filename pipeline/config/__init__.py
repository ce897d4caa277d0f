"""targets.yaml -> validated, fully resolved configuration.

``load_config(path)`` is the entry point; it raises ``pipeline.errors.ConfigError`` listing
every problem as ``file:line: field: must be <allowed>; got <value>``. Importing this package
costs nothing: its names load on first use (pydantic, PyYAML and configparser then; never
torch or ethosu.vela), so a no-op build whose plan comes from its cache, which unpickles
``config.boards`` objects, never imports pydantic.
"""

import importlib

_WHERE = {
    "CPUS": "cpus", "CpuInfo": "cpus", "cpu_flags": "cpus", "load_config": "load",
    "Calibration": "models", "InputSpec": "models", "ModelConfig": "models",
    "NpuConfig": "npu", "SourceRef": "paths", "ProjectConfig": "schema",
    "TargetConfig": "schema", "TosaSpec": "tosa_spec",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
