"""Lower stage: quantized ExportedProgram -> TOSA flatbuffer + io.json.

Imports torch/tosa inside the function so loading this module stays cheap.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path


def write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def lower(
    quantized: Path,
    out_tosa: Path,
    out_io: Path,
    *,
    spec: str = "TOSA-1.0+INT",
    input_names: list[str] | None = None,
    variants: dict[str, Path] | None = None,
    where: str = "",
) -> None:
    """Lower ``quantized`` to a TOSA flatbuffer and describe its inputs and outputs.

    Args:
        quantized: the q/dq ExportedProgram (a float one for ``+FP`` specs, whose composite
            operators - softmax, layer_norm, ... - the lowering decomposes itself).
        out_tosa: the TOSA 1.0 flatbuffer.
        out_io: JSON ``{"inputs": [...], "outputs": [...], "tosa_spec": spec}``; each entry has
            ``name, dtype, shape, scale, zero_point`` plus ``layout`` ("NHWC" for 4-D tensors,
            whose TOSA shape is the torch shape permuted by ``dim_order``) and ``torch_shape``.
            Entries follow the model's forward arguments / returned outputs. A quantized
            graph adds ``layers``: per quantize node of the program whose value is a tensor
            of the graph, ``{"node", "tensor", "dim_order"}`` (verify's per-layer check).
        spec: TOSA spec, e.g. ``TOSA-1.0+INT``, ``TOSA-1.0+INT+int16``, ``TOSA-1.0+FP``.
        input_names: names for the inputs in io.json (targets.yaml's) instead of the
            forward() argument names; the graph's own name stays in ``tosa_name``.
        variants: NPU variant (``u55``, ``u85``; ``pipeline.tosa.passes.NPU_VARIANTS``) ->
            where to write the graph after that NPU's own TOSA passes (a copy of
            ``out_tosa``'s bytes when none applies).
        where: prefix of every user error, e.g. ``u85-linux/lower``.

    Raises:
        UnsupportedOperatorError: an operator without a lowering (names op, source line).
        UserError: bad spec, or tensor types the spec does not allow.
    """
    from pipeline.errors import UserError
    from pipeline.programs import load_program
    from pipeline.tosa import serialize
    from pipeline.tosa.lowering import lower_program
    from pipeline.tosa.passes import NPU_VARIANTS
    from pipeline.tosa.spec import parse_spec

    tosa_spec = parse_spec(spec, where)
    lowered = lower_program(load_program(quantized), tosa_spec, where)
    if input_names is not None:
        if len(input_names) != len(lowered.inputs):
            raise UserError(f"{where}: inputs must be named once each; the model takes "
                            f"{len(lowered.inputs)}, targets.yaml names {len(input_names)}")
        for entry, name in zip(lowered.inputs, input_names):
            entry["tosa_name"], entry["name"] = entry["name"], name
    serialize.write(lowered.graph, out_tosa)
    for variant, path in (variants or {}).items():
        if not NPU_VARIANTS[variant]:
            shutil.copyfile(out_tosa, path)
            continue
        graph = copy.deepcopy(lowered.graph)
        for npu_pass in NPU_VARIANTS[variant]:
            npu_pass.run(graph)
        serialize.write(graph, path)
    description = {"inputs": lowered.inputs, "outputs": lowered.outputs, "tosa_spec": spec}
    if lowered.layers:  # verify's per-layer check (pipeline/tosa/layers.py)
        description["layers"] = lowered.layers
    write_json_atomic(out_io, description)
