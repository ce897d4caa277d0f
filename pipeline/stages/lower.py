"""Lower stage: a quantized ExportedProgram -> its TOSA flatbuffer, io.json, and the graph of
each NPU family's variant (``pipeline/tosa/``).

Imports torch/tosa inside the function so loading this module stays cheap.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.stages.declare import File, Stage


def lower(
    quantized: Path,
    out_tosa: Path,
    out_io: Path,
    *,
    spec: str = "TOSA-1.0+INT",
    input_names: list[str] | None = None,
    variants: dict[str, Path] | None = None,
    placement: Path | None = None,
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
        placement: where to write placement.json (``write_placement``), when not None.
        where: prefix of every user error, e.g. ``u85-linux/lower``.

    Raises:
        UnsupportedOperatorError: an operator without a lowering (names op, source line).
        UserError: bad spec, or tensor types the spec does not allow.
    """
    from pipeline.chain.lower import lower as lower_program
    from pipeline.programs import load_program
    from pipeline.tosa.spec import parse_spec

    parse_spec(spec, where)  # a bad spec is named before the program is read
    variants = variants or {}
    lowering = lower_program(load_program(quantized), spec, input_names=input_names,
                           variants=tuple(variants), where=where)
    lowering.write(out_tosa, out_io, variants)
    if placement is not None:
        write_placement(variants, placement)


def write_placement(variants: dict[str, Path], out: Path) -> None:
    """placement.json: per Ethos-U family, the rules each operator of that family's variant
    breaks (``pipeline/ethosu/placement.py``). Vela's and the mixed stages read it, so they
    check placement without importing the operator files that declare the rules (nor torch,
    which those import)."""
    import json

    from pipeline.config.npu import VARIANT_OF
    from pipeline.ethosu.placement import verdicts
    from pipeline.files import write_atomic

    found = {family: verdicts(variants[variant], family)
             for family, variant in VARIANT_OF.items() if variant in variants}
    write_atomic(out, json.dumps(found, sort_keys=True).encode())


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    variants = {k.removeprefix("tosa_"): p for k, p in o.items() if k.startswith("tosa_")}
    lower(i["model"], o["tosa"], o["io"], spec=options["spec"],
          input_names=options["input_names"], variants=variants, placement=o["placement"],
          where=where)


def check(i: dict, o: dict) -> str | None:
    """Every restored TOSA file has a TOSA flatbuffer's frame (``tosa/header.py``)."""
    from pipeline.tosa.header import tosa_problem

    for path in o.values():
        if path.suffix == ".tosa" and (why := tosa_problem(path)) is not None:
            return f"{path.name}: {why}"
    return None


STAGE = Stage(
    name="lower",
    doc="lower a quantized graph to a TOSA flatbuffer",
    run=run,
    inputs={"model": File("program")},
    outputs={"tosa": File("tosa", "model.tosa"), "io": File("io", "io.json"),
             "placement": File("placement", "placement.json"),
             "tosa_*": File("tosa", "model.{}.tosa")},
    views={"io": "io.json"},
    check=check,
)
