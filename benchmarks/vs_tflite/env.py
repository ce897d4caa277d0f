"""The environment: litert-torch's venv and whether its flow runs in this interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_vs_tflite.py"
LITERT_VENV = ROOT / ".venv-litert"
LITERT_TORCH_VERSION = "0.10.0"


def litert_problem() -> str | None:
    """Why litert-torch's int8 flow cannot run in this interpreter, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("litert-torch")
    except PackageNotFoundError:
        return "litert-torch is not installed"
    if found != LITERT_TORCH_VERSION:
        return f"litert-torch must be {LITERT_TORCH_VERSION}; got {found}"
    try:
        from benchmarks.vs_executorch.env import quiet

        with quiet():
            import ethosu.vela.vela  # noqa: F401
            import litert_torch  # noqa: F401
            from ai_edge_litert.interpreter import Interpreter  # noqa: F401
            from litert_torch.quantize.pt2e_quantizer import PT2EQuantizer  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure: the flow cannot run
        return f"litert-torch does not import: {type(exc).__name__}: {exc}"
    return None


def reexec_in_litert_venv() -> None:
    """Run the script again with .venv-litert's Python, when that is another interpreter."""
    python = LITERT_VENV / "bin" / "python"
    if python.exists() and Path(sys.prefix).resolve() != LITERT_VENV.resolve():
        print(f"bench_vs_tflite: litert-torch is not in {sys.executable}; re-running with "
              f"{python}", flush=True)
        os.execv(str(python), [str(python), str(SCRIPT), *sys.argv[1:]])


def versions() -> dict[str, str]:
    """Python's version and those of the packages both flows run on."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for name in ("torch", "torchao", "litert-torch", "ai-edge-litert", "ethos-u-vela",
                 "tosa-tools"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "missing"
    return out
