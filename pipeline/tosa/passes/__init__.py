"""The lowering's passes, in the one order they run.

FX passes rewrite the exported (q/dq) graph before operator visitors run; TOSA passes clean
up the TOSA graph the visitors built. Each entry says why it sits where it does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pipeline.tosa.passes import (
    annotate_layout_pass,
    convert_int64_constants_pass,
    fold_conv_stride_pass,
    fold_pad_pass,
    fold_qdq_pass,
    fuse_activation_pass,
    fuse_rescales_pass,
    fuse_transposes_pass,
    pad_strided_conv_pass,
    remove_dead_operators_pass,
    remove_reshape_chains_pass,
    replace_bools_pass,
    replace_channel_affine_pass,
    replace_gather_pass,
    replace_int_ops_pass,
    replace_scatter_pass,
    split_bilinear_resize_pass,
    split_conv_outputs_pass,
    split_global_pool_pass,
    split_permutes_pass,
    split_transpose_conv_pass,
)
from pipeline.tosa.passes.context import PassContext


@dataclass(frozen=True)
class Pass:
    name: str
    level: Literal["fx", "tosa"]
    run: Callable
    why: str


PASSES: tuple[Pass, ...] = (
    Pass(
        "convert_int64_constants",
        "fx",
        convert_int64_constants_pass.run,
        "first: before fold_qdq, which reads constant values (scales, zero points, "
        "weights). (BatchNorm is folded by the normalisation, pipeline/normalise/.)",
    ),
    Pass(
        "fold_qdq",
        "fx",
        fold_qdq_pass.run,
        "after the constant rewrites; before fuse_activation, which needs the qparams it "
        "leaves on each integer value to know an activation's quantized bounds.",
    ),
    Pass(
        "fold_pad",
        "fx",
        fold_pad_pass.run,
        "after fold_qdq, which removes the quantize/dequantize pair between a pad and the "
        "conv2d it feeds; before annotate_layout so the removed pad is never annotated.",
    ),
    Pass(
        "fuse_activation",
        "fx",
        fuse_activation_pass.run,
        "after fold_qdq (needs qparams); before annotate_layout so removed activations "
        "are never annotated.",
    ),
    Pass(
        "split_permutes",
        "fx",
        split_permutes_pass.run,
        "after fold_qdq, which removes the quantize/dequantize pairs between a permute and "
        "the selects/slices reading it and leaves the qparams the new pieces copy; before "
        "annotate_layout so the new nodes get a dim order.",
    ),
    Pass(
        "annotate_layout",
        "fx",
        annotate_layout_pass.run,
        "last FX pass: it annotates exactly the values that reach the visitors.",
    ),
    # ---- operator visitors build the TOSA graph here ----
    Pass(
        "remove_dead_operators",
        "tosa",
        remove_dead_operators_pass.run,
        "first TOSA pass: the others then never look at operators nothing reads (an expand "
        "whose TILE a gather read through).",
    ),
    Pass(
        "remove_reshape_chains",
        "tosa",
        remove_reshape_chains_pass.run,
        "after remove_dead_operators; visitors emit local reshapes that chain across layers.",
    ),
    Pass(
        "split_conv_outputs",
        "tosa",
        split_conv_outputs_pass.run,
        "after remove_reshape_chains, which leaves one RESHAPE between a convolution's "
        "RESCALE and the SLICEs of its channels; it merges the RESHAPE each slice becomes "
        "with the next itself.",
    ),
    Pass(
        "fuse_transposes",
        "tosa",
        fuse_transposes_pass.run,
        "after remove_reshape_chains, which can make two TRANSPOSEs adjacent; before "
        "fuse_rescales, which does not look through TRANSPOSEs.",
    ),
    Pass(
        "fuse_rescales",
        "tosa",
        fuse_rescales_pass.run,
        "after remove_reshape_chains, which can make two RESCALEs adjacent.",
    ),
)

# TOSA passes for one NPU family only, run on a copy of the finished graph: the lowering
# writes one variant per entry (``model.<variant>.tosa``) and Vela compiles the one of its
# NPU (``NpuConfig.variant``; Ethos-U65 takes the U55 one). The verify stage checks every
# variant that differs from the common graph in the TOSA reference model.
NPU_VARIANTS: dict[str, tuple[Pass, ...]] = {
    "u55": (
        Pass(
            "replace_channel_affine",
            "tosa",
            replace_channel_affine_pass.run,
            "after every common pass (fuse_rescales has left one widening RESCALE before each "
            "MUL/ADD): Vela on Ethos-U55/U65 reads a broadcast constant operand per element; "
            "a depthwise 1x1 convolution reads it once (on U85 the MUL is cheap).",
        ),
        Pass(
            "split_global_pool",
            "tosa",
            split_global_pool_pass.run,
            "after every common pass: it trades a global AVG_POOL2D for exact depthwise sums, "
            "which is faster on Ethos-U55/U65 only (measured in the pass's docstring).",
        ),
        Pass(
            "split_bilinear_resize",
            "tosa",
            split_bilinear_resize_pass.run,
            "after every common pass, independent of split_global_pool: Vela runs no BILINEAR "
            "RESIZE on Ethos-U55/U65, and the NEAREST + depthwise form is slower on U85.",
        ),
        Pass(
            "split_transpose_conv",
            "tosa",
            split_transpose_conv_pass.run_u55,
            "after every common pass: Vela fuses no RESCALE into a TRANSPOSE_CONV2D (and "
            "compiles no int16 one for U55); the phase CONV2Ds take it, interleaved by a "
            "TRANSPOSE, the cheap row move on U55.",
        ),
        Pass(
            "pad_strided_conv",
            "tosa",
            pad_strided_conv_pass.run,
            "after every common pass: Vela runs no padded convolution with a stride over 3 on "
            "Ethos-U55/U65; an explicit PAD of the zero point gives the same integers.",
        ),
        Pass(
            "replace_scatter",
            "tosa",
            replace_scatter_pass.run,
            "before replace_gather, which turns the GATHER it leaves into a one-hot product: "
            "Vela places no SCATTER on Ethos-U55/U65.",
        ),
        Pass(
            "replace_gather",
            "tosa",
            replace_gather_pass.run,
            "after every common pass: Vela places no GATHER on Ethos-U55/U65; a one-hot "
            "CONV2D/MATMUL gives its integers (U85 runs the native GATHER).",
        ),
        Pass(
            "replace_int_ops",
            "tosa",
            replace_int_ops_pass.run,
            "after every common pass, before replace_bools (independent: it rewrites integer "
            "tensors only): Vela places no BITWISE_* and no flooring right shift on "
            "Ethos-U55/U65; shifts, ADD and SUB give the same integers.",
        ),
        Pass(
            "replace_bools",
            "tosa",
            replace_bools_pass.run,
            "after replace_gather (whose one-hot needs no bools), last: Vela places no bool "
            "tensor, comparison, logical operator or SELECT on Ethos-U55/U65; int32 0/1 "
            "arithmetic gives the same integers.",
        ),
    ),
    "u85": (
        Pass(
            "fold_conv_stride",
            "tosa",
            fold_conv_stride_pass.run,
            "after every common pass (it merges the RESHAPE it adds with the model's own "
            "itself): faster on Ethos-U85 for every stem measured; on U55 faster but on U65, "
            "which compiles the same variant, slower, so not there (docs/search.md).",
        ),
        Pass(
            "split_transpose_conv",
            "tosa",
            split_transpose_conv_pass.run_u85,
            "after every common pass: as for U55, but the phase rows interleaved by a CONCAT "
            "along W, which U85 moves faster than a TRANSPOSE.",
        ),
    ),
}

FX_PASSES = tuple(p for p in PASSES if p.level == "fx")
TOSA_PASSES = tuple(p for p in PASSES if p.level == "tosa")
if PASSES != FX_PASSES + TOSA_PASSES:
    raise RuntimeError("PASSES must list every FX pass before every TOSA pass")

__all__ = ["FX_PASSES", "NPU_VARIANTS", "PASSES", "TOSA_PASSES", "Pass", "PassContext"]
