"""The Vulkan environment a ``.vgf`` runs in on this machine: Mesa's lavapipe (a CPU Vulkan
driver) with Arm's ML emulation layers (``VK_ARM_tensors``, ``VK_ARM_data_graph``) on top.

The emulation layer's own instructions (its ``emulation_layer`` helper: one manifest folder
on ``VK_LAYER_PATH``, ``VK_INSTANCE_LAYERS=Graph:Tensor``) fail on Debian 12: its Vulkan
loader (1.3.239) stacks layers enabled from the environment in the order it finds their
manifests, not the order ``VK_INSTANCE_LAYERS`` gives, and finds ``VkLayer_Tensor.json``
first - the Graph layer then sits below the Tensor layer it needs, and device creation fails
("requires extension: VK_ARM_tensors"). So each manifest gets a folder of its own, Graph's
listed first, with an absolute ``library_path`` (no ``LD_LIBRARY_PATH`` needed); whatever
Vulkan layer or driver settings the user's environment holds are replaced, never merged.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pipeline.errors import UserError
from pipeline.files import write_atomic

# Graph above Tensor: the Graph layer asks the layer below it for VK_ARM_tensors.
LAYERS = (("Graph", "VK_LAYER_ML_Graph_Emulation"), ("Tensor", "VK_LAYER_ML_Tensor_Emulation"))
ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
DRIVER_PACKAGES = "mesa-vulkan-drivers libvulkan1"
# Settings of the loader that would add, reorder or drop layers and drivers behind our back.
_LOADER_VARIABLES = (
    "VK_LAYER_PATH", "VK_ADD_LAYER_PATH", "VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE",
    "VK_LOADER_LAYERS_DISABLE", "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES",
    "VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE",
)


def emulation_layer_deploy() -> Path:
    """The ``deploy/`` folder of the pip package ``ai-ml-emulation-layer-for-vulkan``.

    Raises:
        UserError: the package is not installed.
    """
    spec = importlib.util.find_spec("emulation_layer")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("the ML emulation layer for Vulkan must be installed (pip package "
                        "ai-ml-emulation-layer-for-vulkan, pinned in pyproject.toml); got none. "
                        "Run ./bootstrap.sh")
    return Path(next(iter(spec.submodule_search_locations))) / "deploy"


def find_lavapipe(icd_dirs: Iterable[str | Path] = ICD_DIRS) -> Path:
    """The ICD manifest of Mesa's lavapipe driver, after checking the Vulkan loader loads.

    Raises:
        UserError: one line naming the Debian packages when the loader or the driver is missing.
    """
    try:
        ctypes.CDLL("libvulkan.so.1")
    except OSError:
        raise UserError(f"running a .vgf needs the Vulkan loader libvulkan.so.1; got none. "
                        f"Install it: apt-get install {DRIVER_PACKAGES}") from None
    for folder in icd_dirs:
        found = sorted(Path(folder).glob("lvp_icd*.json"))
        if found:
            return found[0]
    shown = ", ".join(str(d) for d in icd_dirs)
    raise UserError(f"running a .vgf needs Mesa's CPU Vulkan driver (lavapipe, lvp_icd*.json "
                    f"in {shown}); got none. Install it: apt-get install {DRIVER_PACKAGES}")


@functools.lru_cache(maxsize=None)  # once per process: an upgrade happens between builds
def driver_fingerprint(icd_dirs: tuple[str | Path, ...] = ICD_DIRS) -> str:
    """sha256 of lavapipe's library (a Mesa upgrade may change FP results), or ``missing``:
    part of the run check's key, like a compiler's ``--version`` in the runtime's."""
    from pipeline.cache.key import file_digest

    for folder in icd_dirs:
        for manifest in sorted(Path(folder).glob("lvp_icd*.json")):
            library = Path(json.loads(manifest.read_text())["ICD"]["library_path"])
            if library.is_file():
                return file_digest(library)
    return "missing"


def write_layer_manifests(deploy: Path, folder: Path) -> list[Path]:
    """One folder per emulation layer under ``folder``, each with its manifest made absolute.

    Returns:
        The layer folders in stacking order (Graph first).
    """
    folders = []
    for short, _ in LAYERS:
        manifest = json.loads((deploy / "share" / "vulkan" / "explicit_layer.d" /
                               f"VkLayer_{short}.json").read_text())
        manifest["layer"]["library_path"] = str(deploy / "lib" / f"libVkLayer_{short}.so")
        path, text = folder / short / f"VkLayer_{short}.json", json.dumps(manifest, indent=1)
        if not path.is_file() or path.read_text() != text:  # a runner may be reading it now
            write_atomic(path, text.encode(), root=folder.parent)  # never through a link
        folders.append(folder / short)
    return folders


def vulkan_environment(folder: Path, base: Mapping[str, str] | None = None, *,
                       icd_dirs: Iterable[str | Path] = ICD_DIRS) -> dict[str, str]:
    """The environment of a process that runs ``.vgf`` files on lavapipe + emulation layers.

    Args:
        folder: where the per-layer manifest folders are written (must outlive the process).
        base: the environment to start from (default ``os.environ``); its Vulkan loader
            settings are dropped.
        icd_dirs: where to look for lavapipe's ICD manifest.

    Returns:
        A full environment for ``subprocess`` (``env=``).

    Raises:
        UserError: the Vulkan loader, lavapipe or the emulation layer is missing.
    """
    icd = find_lavapipe(icd_dirs)
    layer_dirs = write_layer_manifests(emulation_layer_deploy(), folder)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if k not in _LOADER_VARIABLES}
    env.update(VK_ICD_FILENAMES=str(icd), VK_LAYER_PATH=os.pathsep.join(map(str, layer_dirs)),
               VK_INSTANCE_LAYERS=":".join(name for _, name in LAYERS))
    return env
