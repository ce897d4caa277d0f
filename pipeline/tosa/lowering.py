"""The lowering driver: ExportedProgram -> decompositions -> FX passes -> operator visitors ->
TOSA passes.

Composite operators (softmax, log_softmax, layer_norm, unbind/split/chunk) have no visitor;
they are written out in primitives by ``pipeline/quant/decompose.py``. The quantize flow does
that before quantization (each primitive gets its own qparams); a float program for an +FP
spec comes here undecomposed, so the driver applies the same decompositions (a no-op for a
quantized program). torch keeps each decomposed node's stack trace, so errors still name the
user's line.

The result is a ``TosaGraph`` plus the description of its inputs and outputs (names, types,
shapes, quantization and dimension order) that io.json records.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import fx
from torch.export import ExportedProgram

from pipeline.errors import UserError
from pipeline.quant.decompose import decompose
from pipeline.tosa import layout, registry
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


def _check_quantized(gm: fx.GraphModule, spec: TosaSpec, where: str) -> None:
    """An integer-only spec needs a quantized (q/dq) program; say so up front."""
    if spec.is_fp or any(str(n.target).startswith("quantized_decomposed.") for n in gm.graph.nodes):
        return
    raise UserError(
        f"{where}: the program must be quantized (hold quantize/dequantize operators) for "
        f"{spec}; got a float program. Quantize it first (e.g. scheme int8) or target a "
        "+FP spec"
    )


def _check_supported(gm: fx.GraphModule, ctx: LoweringContext) -> None:
    """Fail on the first operator without a visitor - before emitting anything."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and registry.visitor_for(node.target) is None:
            raise ctx.unsupported(node, allowed="one with a visitor in pipeline/tosa/ops")


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


def _visit(gm: fx.GraphModule, ctx: LoweringContext, user_inputs: list[str]) -> list:
    outputs = []
    for node in gm.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            ctx.tensors[node] = ctx.graph.add_input(
                node.name, tosa_shape(node), ctx.dtype(node), ctx.node_where(node, True)
            )
        elif node.op == "call_function":
            registry.visitor_for(node.target)(node, ctx)
        elif node.op == "output":
            for i, arg in enumerate(fx.node.map_arg(node.args[0], lambda n: n)):
                ctx.graph.outputs.append(_output_tensor(ctx, arg, i))
                outputs.append(arg)
    return outputs


def lower_program(program: ExportedProgram, spec: TosaSpec, where: str = "") -> Lowered:
    """Lower ``program`` (mutated in place unless it holds composite operators, which are
    decomposed into a new program first) to a TOSA graph valid for ``spec``.

    Raises:
        UnsupportedOperatorError: an operator (or a configuration of one) has no lowering.
        UserError: a tensor type the spec does not allow, or inconsistent quantization.
    """
    _check_quantized(program.graph_module, spec, where)
    program = decompose(program)
    gm = program.graph_module
    user_inputs = attach_constants(program)
    pass_ctx = PassContext(spec, where)
    for entry in FX_PASSES:
        entry.run(gm, pass_ctx)
    ctx = LoweringContext(TosaGraph(spec), spec, where)
    _check_supported(gm, ctx)
    outputs = _visit(gm, ctx, user_inputs)
    for entry in TOSA_PASSES:
        entry.run(ctx.graph)
    ctx.graph.remove_unused_tensors()
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    input_nodes = [placeholders[name] for name in user_inputs]
    return Lowered(
        ctx.graph,
        [_describe(ctx, n, ctx.tensors[n]) for n in input_nodes],
        [_describe(ctx, n, name) for n, name in zip(outputs, ctx.graph.outputs, strict=True)],
    )
