"""Stage keys: what a stage's output depends on, hashed.

A key covers the stage name, a version of the stage's own code (the content of its source
files), the content of every input file, the fully resolved options and the versions of the
tools the stage runs. Two invocations with equal keys produce the same outputs, so the store
may hand back an earlier result instead of recomputing it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
from collections.abc import Iterable, Mapping
from pathlib import Path

_CHUNK = 1 << 20

# Python packages whose versions change what a stage produces.
TOOL_PACKAGES = ("torch", "torchao", "tosa-tools", "ethos-u-vela")


def file_digest(path: Path) -> str:
    """Return the sha256 hex digest of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(paths: Iterable[Path], root: Path | None = None) -> str:
    """Return one digest over several files, each named relative to ``root`` when given."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        name = str(path.relative_to(root)) if root else path.name
        digest.update(name.encode() + b"\0" + file_digest(path).encode() + b"\n")
    return digest.hexdigest()


def tool_versions(packages: Iterable[str] = TOOL_PACKAGES) -> dict[str, str]:
    """Versions of Python and of the given packages, read from metadata (no imports)."""
    return dict(_versions(tuple(packages)))


@functools.lru_cache(maxsize=None)
def _versions(packages: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # Read once per process: metadata parsing costs ~2 ms a package, and every stage task of
    # a no-op build asks (an upgrade happens between runs, never during one).
    from importlib import metadata  # 40 ms to import: only when a task asks

    versions = [("python", platform.python_version())]
    for name in packages:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, "missing"))
    return tuple(versions)


def canonical_json(value: object) -> str:
    """Serialise options deterministically (sorted keys, paths as strings)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def options_digest(options: Mapping[str, object], length: int = 8) -> str:
    """Short digest of an options mapping, for readable names of stage variants."""
    return hashlib.sha256(canonical_json(options).encode()).hexdigest()[:length]


def stage_key(stage: str, code_version: str, inputs: Mapping[str, Path],
              options: Mapping[str, object], tools: Mapping[str, str]) -> tuple[str, dict]:
    """Compute a stage key.

    Args:
        stage: the stage name (``export``, ``vela``, ...).
        code_version: digest of the stage's source files.
        inputs: role name -> input file; their contents are hashed.
        options: the fully resolved options (defaults filled in).
        tools: tool name -> version or fingerprint.

    Returns:
        The hex key and the record it was computed from (kept in the manifest).
    """
    record = {
        "stage": stage,
        "code": code_version,
        "inputs": {role: file_digest(path) for role, path in sorted(inputs.items())},
        "options": json.loads(canonical_json(options)),
        "tools": dict(sorted(tools.items())),
    }
    return hashlib.sha256(canonical_json(record).encode()).hexdigest(), record
