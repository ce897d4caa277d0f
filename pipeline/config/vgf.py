"""The ``vgf:`` block of a target: a Vulkan device with Arm's ML extensions instead of an Ethos-U.

The lowered TOSA graph goes through the ML SDK model converter into a ``.vgf`` (the Vulkan
graph format) which a device with ``VK_ARM_tensors`` and ``VK_ARM_data_graph`` runs (the ML
SDK scenario runner, or an application on the VGF library). Every build runs the ``.vgf`` on
this machine (lavapipe + the ML emulation layer) against the TOSA reference model.
"""

from __future__ import annotations

from pipeline.config.base import StrictModel

# The TOSA specs our lowering emits that the model converter takes (what `tosa:` may be with
# vgf): FP32 graphs, and INT graphs with or without int16 tensors (int8, a16w8).
VGF_SPECS = ("TOSA-1.0+FP", "TOSA-1.0+INT", "TOSA-1.0+INT+int16")


class VgfConfig(StrictModel):
    """A Vulkan ML device (VGF) and the model converter options that change the ``.vgf``.

    Attributes:
        emit_debug_info: model converter ``--emit-debug-info`` (debug names in the SPIR-V).
        replicated_composites: the device has ``VK_EXT_shader_replicated_composites``; false
            passes ``--disable-replicated-composites`` (SPIR-V without that extension).
    """

    emit_debug_info: bool = False
    replicated_composites: bool = True

    def converter_args(self) -> list[str]:
        """The model converter's options for this device, e.g. ``['--emit-debug-info']``."""
        args = []
        if self.emit_debug_info:
            args.append("--emit-debug-info")
        if not self.replicated_composites:
            args.append("--disable-replicated-composites")
        return args
