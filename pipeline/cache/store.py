"""A content-addressed store of stage outputs: ``<root>/<key[:2]>/<key>/``.

Entries are written to a temporary folder inside the store and renamed into place, so a
reader never sees half an entry and an interrupted build leaves nothing behind but a
temporary folder that the next write ignores. Each entry carries ``manifest.json`` with the
key record, the output checksums and the time it was made. The store is a plain directory:
CI can persist it between runs and several projects can share it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from pipeline.cache.key import file_digest

MANIFEST = "manifest.json"


class Store:
    """Content-addressed artifact store rooted at a directory."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def entry(self, key: str) -> Path:
        return self.root / key[:2] / key

    def has(self, key: str) -> bool:
        """True when a complete entry for ``key`` exists and its files match the manifest."""
        manifest = self.entry(key) / MANIFEST
        if not manifest.is_file():
            return False
        outputs = json.loads(manifest.read_text())["outputs"]
        return all((self.entry(key) / name).is_file() for name in outputs)

    def put(self, key: str, record: Mapping, outputs: Mapping[str, Path]) -> Path:
        """Copy ``outputs`` (store name -> file) into the entry for ``key`` atomically."""
        final = self.entry(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=final.parent))
        try:
            checksums = {}
            for name, src in outputs.items():
                shutil.copy(src, staging / name)  # content and permission bits
                checksums[name] = file_digest(staging / name)
            manifest = {"key": key, "record": dict(record), "outputs": checksums,
                        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
            try:
                os.rename(staging, final)
            except OSError:
                if not self.has(key):  # a concurrent writer lost the race half-way: retry
                    shutil.rmtree(final, ignore_errors=True)
                    os.rename(staging, final)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return final

    def restore(self, key: str, outputs: Mapping[str, Path]) -> None:
        """Copy the entry's files (store name -> destination) out, each renamed into place."""
        for name, dest in outputs.items():
            copy_atomic(self.entry(key) / name, Path(dest))

    def manifest(self, key: str) -> dict:
        return json.loads((self.entry(key) / MANIFEST).read_text())


def copy_atomic(src: Path, dest: Path) -> None:
    """Copy ``src`` (content and permission bits) to ``dest`` through a temporary file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        shutil.copymode(src, tmp)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
