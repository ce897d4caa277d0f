"""Lower: a q/dq (or float) program to TOSA, with each NPU family's variant of the graph."""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Lowering:
    """A lowered program: its TOSA graph, its IO description (io.json's content) and the
    graph of each NPU family's variant that was asked for (``u55``, ``u85``)."""

    graph: object  # pipeline.tosa.graph.TosaGraph
    io: dict
    variants: dict = field(default_factory=dict)  # family -> TosaGraph, None: the graph itself

    def write(self, tosa: Path, io: Path | None = None, variants: dict | None = None) -> None:
        """Write the flatbuffer, io.json and the variants (family -> path)."""
        from pipeline.files import write_json_atomic
        from pipeline.tosa import serialize

        serialize.write(self.graph, tosa)
        for family, path in (variants or {}).items():
            graph = self.variants[family]
            if graph is None:
                shutil.copyfile(tosa, path)
            else:
                serialize.write(graph, path)
        if io is not None:
            write_json_atomic(io, self.io)


def lower(program, spec: str = "TOSA-1.0+INT", *, input_names: list[str] | None = None,
          variants=(), where: str = "") -> Lowering:
    """Lower a q/dq program (a float one for ``+FP`` specs) to TOSA ``spec``, with the graphs
    of the NPU ``variants`` asked for (``pipeline.tosa.passes.NPU_VARIANTS``).

    Args:
        input_names: names for the inputs in the IO description instead of the forward()
            argument names (the graph's own name stays in ``tosa_name``).

    Raises:
        UnsupportedOperatorError: an operator without a lowering (names op, source line).
        UserError: a bad spec, tensor types the spec does not allow, or input names that do
            not match the inputs.
    """
    from pipeline.errors import UserError
    from pipeline.tosa.lowering import lower_program
    from pipeline.tosa.passes import NPU_VARIANTS
    from pipeline.tosa.spec import parse_spec

    lowered = lower_program(program, parse_spec(spec, where), where)
    if input_names is not None:
        if len(input_names) != len(lowered.inputs):
            raise UserError(f"{where}: inputs must be named once each; the model takes "
                            f"{len(lowered.inputs)}, targets.yaml names {len(input_names)}")
        for entry, name in zip(lowered.inputs, input_names):
            entry["tosa_name"], entry["name"] = entry["name"], name
    io = {"inputs": lowered.inputs, "outputs": lowered.outputs, "tosa_spec": spec}
    if lowered.layers:  # verify's per-layer check (pipeline/tosa/layers.py)
        io["layers"] = lowered.layers
    graphs = {}
    for family in variants:
        if not NPU_VARIANTS[family]:
            graphs[family] = None  # no pass of its own: the graph itself
            continue
        graph = copy.deepcopy(lowered.graph)
        for npu_pass in NPU_VARIANTS[family]:
            npu_pass.run(graph)
        graphs[family] = graph
    return Lowering(lowered.graph, io, graphs)
