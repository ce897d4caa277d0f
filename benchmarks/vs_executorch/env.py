"""The environment: ExecuTorch's venv, whether its Arm Ethos-U flow runs here, quiet logging."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_vs_executorch.py"
ET_VENV = ROOT / ".venv-executorch"
EXECUTORCH_VERSION = "1.5.1"


def executorch_problem() -> str | None:
    """Why ExecuTorch's Arm Ethos-U flow cannot run in this interpreter, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("executorch")
    except PackageNotFoundError:
        return "executorch is not installed"
    if found != EXECUTORCH_VERSION:
        return f"executorch must be {EXECUTORCH_VERSION}; got {found}"
    try:
        with quiet():
            import ethosu.vela.vela  # noqa: F401
            import tosa_serializer  # noqa: F401
            from executorch.backends.arm.ethosu import (  # noqa: F401
                EthosUCompileSpec,
                EthosUPartitioner,
            )
            from executorch.backends.arm.quantizer import EthosUQuantizer  # noqa: F401
            from executorch.exir import to_edge_transform_and_lower  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure: the backend cannot run
        return f"ExecuTorch's Arm Ethos-U backend does not import: {type(exc).__name__}: {exc}"
    return None


def reexec_in_et_venv() -> None:
    """Run the script again with .venv-executorch's Python, when that is another interpreter."""
    python = ET_VENV / "bin" / "python"
    if python.exists() and Path(sys.prefix).resolve() != ET_VENV.resolve():
        print(f"bench_vs_executorch: executorch is not in {sys.executable}; "
              f"re-running with {python}", flush=True)
        os.execv(str(python), [str(python), str(SCRIPT), *sys.argv[1:]])


@contextlib.contextmanager
def quiet():
    """Silence warnings and library logging (torchao, ExecuTorch, torch.export) while inside."""
    import logging

    os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    names = ("torchao", "torch.utils._pytree", "executorch", "torch._export", "torch.export")
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)
        for n, lvl in saved.items():
            logging.getLogger(n).setLevel(lvl)


def versions() -> dict[str, str]:
    """Python's version and those of the packages both flows run on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("torch", "torchao", "executorch", "ethos-u-vela", "tosa-tools"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    return out
