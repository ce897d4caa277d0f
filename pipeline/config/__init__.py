"""targets.yaml -> validated, fully resolved configuration.

``load_config(path)`` is the entry point; it raises ``pipeline.errors.ConfigError`` listing
every problem as ``file:line: field: must be <allowed>; got <value>``. Importing this package
stays cheap: pydantic, PyYAML and configparser only (no torch, no ethosu.vela).
"""

from pipeline.config.cpus import CPUS, CpuInfo, cpu_flags
from pipeline.config.load import load_config
from pipeline.config.models import Calibration, InputSpec, ModelConfig
from pipeline.config.npu import NpuConfig
from pipeline.config.paths import SourceRef
from pipeline.config.schema import ProjectConfig, TargetConfig
from pipeline.config.tosa_spec import TosaSpec

__all__ = [
    "CPUS", "Calibration", "CpuInfo", "InputSpec", "ModelConfig", "NpuConfig", "ProjectConfig",
    "SourceRef", "TargetConfig", "TosaSpec", "cpu_flags", "load_config",
]
