"""The lowering driver: ExportedProgram -> decompositions -> FX passes -> operator visitors ->
TOSA passes.

Composite operators (softmax, log_softmax, layer_norm, unbind/split/chunk) have no visitor;
they are written out in primitives by ``pipeline/normalise/decompose.py``. The quantize flow does
that before quantization (each primitive gets its own qparams); a float program for an +FP
spec comes here undecomposed, so the driver applies the same decompositions (a no-op for a
quantized program). torch keeps each decomposed node's stack trace, so errors still name the
user's line.

The result is a ``TosaGraph`` plus the description of its inputs and outputs (names, types,
shapes, quantization and dimension order) that io.json records.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
from torch import fx
from torch.export import ExportedProgram

from pipeline.errors import UnsupportedOperatorError, UnsupportedOperatorsError, UserError
from pipeline.normalise import normalise
from pipeline.tosa import layers, layout, registry
from pipeline.tosa.context import LoweringContext, dim_order, torch_shape, tosa_shape
from pipeline.tosa.graph import TosaGraph
from pipeline.tosa.passes import FX_PASSES, TOSA_PASSES, PassContext
from pipeline.tosa.spec import TosaSpec

_IO_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass
class Lowered:
    graph: TosaGraph
    inputs: list[dict]
    outputs: list[dict]
    layers: list[dict] = field(default_factory=list)  # see pipeline/tosa/layers.py


def attach_constants(program: ExportedProgram) -> list[str]:
    """Store parameter/buffer/constant values in ``meta["const"]``; return user input names."""
    signature = program.graph_signature
    sources = {
        **signature.inputs_to_parameters,
        **signature.inputs_to_buffers,
        **signature.inputs_to_lifted_tensor_constants,
    }
    values = {**program.state_dict, **program.constants}
    for node in program.graph_module.graph.nodes:
        if node.op == "placeholder" and node.name in sources:
            node.meta["const"] = values[sources[node.name]]
    return list(signature.user_inputs)


def _is_quantized(gm: fx.GraphModule) -> bool:
    return any(str(n.target).startswith("quantized_decomposed.") for n in gm.graph.nodes)


def _computes_floats(gm: fx.GraphModule) -> bool:
    """Whether any call yields a float tensor (an all-integer graph - masks from ids - needs
    no quantization to be an integer TOSA graph)."""
    return any(
        n.op == "call_function"
        and isinstance(n.meta.get("val"), torch.Tensor)
        and n.meta["val"].dtype.is_floating_point
        for n in gm.graph.nodes
    )


def _float_program(spec: TosaSpec, where: str) -> None:
    raise UserError(
        f"{where}: the program must be quantized (hold quantize/dequantize operators) for "
        f"{spec}; got a float program. Quantize it first (e.g. scheme int8) or target a "
        "+FP spec"
    )


def _advice(node: fx.Node) -> str:
    """What to do about an operator with no lowering, in the user's terms."""
    val = node.meta.get("val")
    vals = val if isinstance(val, (tuple, list)) else [val]
    if any(isinstance(v, torch.Tensor) and v.is_complex() for v in vals):
        return (
            "Complex tensors (stft, fft) have no TOSA form but as abs, abs() ** 2, "
            "view_as_real, .real or .imag of them (docs/front_ends.md): read them that way, or "
            "compute that part before the model and feed its output as the input"
        )
    return (
        "Write that line with the operators listed in docs/operators.md, or move it out of "
        "the exported forward()"
    )


def _is_getitem_of_blocker(node: fx.Node) -> bool:
    """``op(...)[i]`` of an unsupported multi-output op: reported with that op, not again."""
    if node.target is not operator.getitem or not isinstance(node.args[0], fx.Node):
        return False
    return registry.visitor_for(node.args[0].target) is None


def _raise_blockers(gm: fx.GraphModule, ctx: LoweringContext) -> None:
    """Every operator without a visitor, in one error - before emitting anything."""
    blockers = [
        ctx.unsupported(node, hint=_advice(node))
        for node in gm.graph.nodes
        if node.op == "call_function"
        and registry.visitor_for(node.target) is None
        and not _is_getitem_of_blocker(node)
    ]
    if blockers:
        raise UnsupportedOperatorsError(ctx.where, blockers)


def _describe(ctx: LoweringContext, node: fx.Node, name: str) -> dict:
    qparams, tensor = ctx.qparams(node), ctx.graph.tensors[name]
    return {
        "name": name,
        "dtype": _IO_DTYPES.get(tensor.dtype, tensor.dtype),
        "shape": list(tensor.shape),
        "scale": qparams.tensor_scale if qparams else 1.0,
        "zero_point": qparams.zero_point if qparams else 0,
        "qmin": qparams.qmin if qparams else None,
        "qmax": qparams.qmax if qparams else None,
        "layout": layout.layout_name(dim_order(node)),
        "dim_order": list(dim_order(node)),
        "torch_shape": list(torch_shape(node)),
    }


def _output_tensor(ctx: LoweringContext, node: fx.Node, index: int) -> str:
    """The node's tensor, or an IDENTITY copy when it is an input or already an output."""
    name = ctx.tensor(node)
    if name in ctx.graph.inputs or name in ctx.graph.outputs or ctx.graph.tensors[name].is_const:
        copy = ctx.temp(
            node, f"output_{index}", ctx.graph.tensors[name].shape, ctx.graph.tensors[name].dtype
        )
        ctx.emit("IDENTITY", [name], [copy], node)
        name = copy
    return name


_FLOAT_TYPES = frozenset({"fp32", "fp16", "bf16"})


def _visit(gm: fx.GraphModule, ctx: LoweringContext, user_inputs: list[str]) -> list:
    """Run every visitor; collect what they reject (all of it, raised at the end)."""
    outputs, blockers = [], []
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            dtype = ctx.dtype(node)
            if not node.users and not ctx.spec.is_fp and dtype in _FLOAT_TYPES:
                # An input the model never reads (x.copy_(y), an unused mask): it keeps its
                # place in the signature, as int8 with scale 1 since no value of it matters.
                dtype = "int8"
            ctx.tensors[node] = ctx.graph.add_input(
                node.name, tosa_shape(node), dtype, ctx.node_where(node, True)
            )
        elif node.op == "call_function":
            try:
                registry.visitor_for(node.target)(node, ctx)
            except UnsupportedOperatorError as error:
                blockers.append(error)
            except Exception:
                if not blockers:
                    raise
                # Downstream of a rejected node: a consequence of that one, not a new blocker.
        elif node.op == "output" and not blockers:
            for i, arg in enumerate(fx.node.map_arg(node.args[0], lambda n: n)):
                ctx.graph.outputs.append(_output_tensor(ctx, arg, i))
                outputs.append(arg)
    if blockers:
        raise UnsupportedOperatorsError(ctx.where, blockers)
    return outputs


def lower_program(program: ExportedProgram, spec: TosaSpec, where: str = "") -> Lowered:
    """Lower ``program`` (mutated in place unless it holds composite operators, which are
    decomposed into a new program first) to a TOSA graph valid for ``spec``.

    Raises:
        UnsupportedOperatorError: an operator (or a configuration of one) has no lowering.
        UserError: a tensor type the spec does not allow, or inconsistent quantization.
    """
    quantized = _is_quantized(program.graph_module)
    if not quantized:
        program = normalise(program, registry.lowered_targets())  # straight from torch.export
    gm = program.graph_module
    ctx = LoweringContext(TosaGraph(spec), spec, where)
    if not quantized and not spec.is_fp and _computes_floats(gm):
        _raise_blockers(gm, ctx)  # name the operators before saying the program is float
        _float_program(spec, where)
    user_inputs = attach_constants(program)
    origins = layers.mark_origins(gm, where)
    pass_ctx = PassContext(spec, where)
    for entry in FX_PASSES:
        entry.run(gm, pass_ctx)
    _raise_blockers(gm, ctx)
    outputs = _visit(gm, ctx, user_inputs)
    sources = layers.value_sources(ctx.graph)
    for entry in TOSA_PASSES:
        entry.run(ctx.graph)
    ctx.graph.remove_unused_tensors()
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    input_nodes = [placeholders[name] for name in user_inputs]
    return Lowered(
        ctx.graph,
        [_describe(ctx, n, ctx.tensors[n]) for n in input_nodes],
        [_describe(ctx, n, name) for n, name in zip(outputs, ctx.graph.outputs, strict=True)],
        layers.layer_map(gm, ctx, origins, sources),
    )
