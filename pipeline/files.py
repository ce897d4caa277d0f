"""Files written whole or not at all: through a temporary file in the destination folder,
renamed into place, so a killed process never leaves half a file under the final name."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes) -> None:
    """Write bytes through a temporary file in the destination folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes files private; outputs are ordinary files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: dict) -> None:
    """``data`` as indented JSON (a trailing newline), written atomically."""
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode())
