"""Normalisation: what torch.export hands us, rewritten into the one form the quantizer and the
lowering expect, for every program and both profiles, right after export.

0. stft / fft of real input and the complex values they make in real operators, then a
   re-trace (``spectral.py``).
1. ``program.run_decompositions(table)`` (torch's own machinery): in-place operators become
   functional ones (``relu_``, ``add_`` of ``out += identity``, ``hardswish_``), and every
   operator the lowering has no visitor for is decomposed into core ATen with torch's own
   decompositions - except the few we write out ourselves (``pipeline/normalise/decompose.py``:
   softmax, layer_norm, ... in primitives that quantize well). Operators with a visitor are
   kept as they are (``decomposition_table``). A write into a forward() argument
   (``x += y``) keeps its value but not the write-back into the caller's tensor
   (``mutations.py``). What real models usually need (inference batch_norm, eval dropout,
   flatten, in-place operators on unaliased intermediates) is rewritten in the graph the same
   way without re-tracing the program (``local.py``); anything else re-traces.
2. No-ops out: clones, aliases, eval-mode dropout, dtype assertions and same-type casts
   (``view`` becomes ``reshape``, which needs no contiguous input); a max pool whose indices
   nothing reads becomes the plain max pool.
3. Type promotion made explicit: an integer/bool operand that an elementwise operator
   computes with in float gets a ``_to_copy`` of its own (``promotion.py``).
4. Constant sub-graphs folded: anything computed from parameters, buffers and literals alone
   (``arange``/``full``/``zeros``, position ids, causal masks, ``w.t()``, ``_weight_norm``)
   becomes one lifted constant, int64 ones included (the lowering narrows those to int32).
5. Inference BatchNorm folded into the conv/linear before it, or else a per-channel MUL + ADD.

Each step keeps the nodes' stack traces, so errors still name the user's line.
"""

from __future__ import annotations

import copy

from torch import fx
from torch.export import ExportedProgram
from torch.export.graph_signature import TensorArgument

from pipeline.normalise.constants import constant_values, fold_constants, foldable
from pipeline.normalise.indexing import needs_rewrite, rewrite_indexing
from pipeline.normalise.local import decompose_locally
from pipeline.normalise.mutations import drop_input_mutations, mutates_inputs
from pipeline.normalise.promotion import promote_operands, promotions
from pipeline.normalise.rewrites import (
    FIRST_OUTPUT_FORMS,
    NOOPS,
    VIEWS,
    batch_unbatched_pools,
    batchnorms,
    drop_unused_indices,
    remove_noops,
    rewrite_batchnorms,
    split_indices,
    unbatched_pools,
    write_out_addmms,
    written_out_addmms,
)
from pipeline.normalise.spectral import has_spectra, rewrite_spectra
from pipeline.normalise.table import decomposition_table, needs_decomposition
from pipeline.programs import memoize_cia_materialization


def is_normal(program: ExportedProgram, lowered: frozenset[str]) -> bool:
    """True when ``normalise`` would change nothing (checked in one walk, no tracing)."""
    table = decomposition_table(lowered)
    if has_spectra(program):
        return False
    consts = constant_values(program)
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        name = str(node.target)
        if needs_decomposition(node, table, lowered) or name in NOOPS or name in VIEWS:
            return False
        if name in FIRST_OUTPUT_FORMS:
            return False
        if foldable(program, node, consts) or needs_rewrite(node, consts):
            return False
    gm = program.graph_module
    if written_out_addmms(gm, consts) or promotions(gm):
        return False
    return not batchnorms(gm) and not unbatched_pools(gm) and not mutates_inputs(program)


def normalise(program: ExportedProgram, lowered: frozenset[str]) -> ExportedProgram:
    """The normal form of ``program`` (a new program; ``program`` itself is left as it was
    unless it is already normal, then it is returned as is) for a lowering that takes the
    operators ``lowered`` as they are (``pipeline.tosa.registry.lowered_targets()``)."""
    if is_normal(program, lowered):
        return program
    table = decomposition_table(lowered)
    if has_spectra(program):  # stft / fft in real operators (spectral.py), then a re-trace
        program = copy.deepcopy(program)
        rewrite_spectra(program)
        local = None
    elif mutates_inputs(program):
        local = None
    else:  # the few kinds real models need are rewritten in place (local.py)
        local = decompose_locally(program, table, lowered)
    if local is None:
        memoize_cia_materialization()
    program = program.run_decompositions(table) if local is None else local
    gm = program.graph_module
    drop_input_mutations(program)  # x.add_(y) on an argument: mutations.py
    remove_noops(gm)
    split_indices(gm)  # max/min(x, dim)'s indices: argmax/argmin
    drop_unused_indices(gm)
    batch_unbatched_pools(gm)  # a (C, H, W) pool pools (1, C, H, W)
    write_out_addmms(gm, constant_values(program))  # addmm that is no linear layer
    promote_operands(gm)  # before folding: an integer constant made float is folded
    fold_constants(program)
    rewrite_indexing(program)  # after folding: a mask built from literals is a constant then
    rewrite_batchnorms(program)
    remove_noops(gm)
    gm.graph.eliminate_dead_code()
    sync_output_specs(program)
    gm.recompile()
    return program


def sync_output_specs(program: ExportedProgram) -> None:
    """Name the graph's (possibly replaced) output values in the signature's output specs."""
    output = next(n for n in reversed(program.graph.nodes) if n.op == "output")
    values = list(output.args[0])
    for spec, value in zip(program.graph_signature.output_specs, values, strict=True):
        if isinstance(spec.arg, TensorArgument) and isinstance(value, fx.Node):
            spec.arg = TensorArgument(value.name)


__all__ = ["decomposition_table", "is_normal", "normalise"]
