"""Run a TOSA flatbuffer in the TOSA reference model (tosa-tools' ``tosa_reference_model``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from pipeline.errors import StageError

BINARY = "tosa_reference_model"


def find_reference_model() -> Path:
    """The reference model binary of the running environment (tosa-tools installs it under
    ``site-packages/bin``), else the one on PATH."""
    candidates = [
        Path(sysconfig.get_paths()["purelib"]) / "bin" / BINARY,
        Path(sys.executable).with_name(BINARY),
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    found = shutil.which(BINARY)
    if found is None:
        raise StageError(
            "tosa_reference_model",
            "the TOSA reference model must be installed "
            f"(pip install tosa-tools); got none at {candidates[0]} or on PATH",
        )
    return Path(found)


def run_reference_model(
    tosa: Path, inputs: Mapping[str, np.ndarray], outputs: Sequence[str], *, where: str = ""
) -> dict[str, np.ndarray]:
    """Evaluate ``tosa`` on ``inputs`` (TOSA input name -> array) and return its outputs.

    Raises:
        StageError: the reference model failed (names the command and its stderr tail).
    """
    with tempfile.TemporaryDirectory(prefix="tosa-ref-") as tmp:
        folder = Path(tmp)
        files = []
        for i, array in enumerate(inputs.values()):
            files.append(folder / f"input_{i}.npy")
            np.save(files[-1], np.ascontiguousarray(array))
        command = [
            str(find_reference_model()),
            "--tosa_file",
            str(tosa),
            "--ifm_name",
            ",".join(inputs),
            "--ifm_file",
            ",".join(map(str, files)),
            "--ofm_name",
            ",".join(outputs),
            "--ofm_file",
            ",".join(f"output_{i}.npy" for i in range(len(outputs))),
            "--output_dir",
            str(folder),
        ]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as exc:
            raise StageError(
                where or "tosa_reference_model",
                f"the TOSA reference model must run the graph; it exited {exc.returncode}",
                command,
                exc.stderr or exc.stdout,
            ) from exc
        return {name: np.load(folder / f"output_{i}.npy") for i, name in enumerate(outputs)}
