"""Post-training quantization of an ExportedProgram: prepare -> calibrate -> convert -> export."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.export import ExportedProgram
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

from pipeline.errors import UserError
from pipeline.quant.annotators import Rules
from pipeline.quant.bias_correction import correct_biases
from pipeline.quant.coverage import refuse_runtime_conditions
from pipeline.quant.equalise import equalise
from pipeline.quant.front_end import front_end_names, front_end_record, split_front_ends
from pipeline.quant.layer_sqnr import layer_sqnr
from pipeline.quant.layers import CONVOLUTIONS, LINEAR
from pipeline.quant.mask_specs import link_saturating_observers
from pipeline.quant.observers import count_observed_tensors
from pipeline.quant.quantizer import EthosUQuantizer


def check_samples(program: ExportedProgram, samples: Sequence, where: str) -> None:
    """Every sample must be a tuple with one tensor per user input."""
    expected = len(program.graph_signature.user_inputs)
    if not samples:
        raise UserError(f"{where}: calibration samples must be at least 1; got 0")
    for i, sample in enumerate(samples):
        if not isinstance(sample, (tuple, list)) or len(sample) != expected:
            got = len(sample) if isinstance(sample, (tuple, list)) else type(sample).__name__
            raise UserError(
                f"{where}: calibration sample {i} must be a tuple of {expected} "
                f"tensors (one per model input); got {got}"
            )


def copy_returned_inputs(module: torch.fx.GraphModule) -> int:
    """An input the model returns as it is (``return x, y``, or what ``x.copy_(y)`` leaves),
    or a constant (``torch.full(...)``, ``zeros_like(x) + 2`` folded by normalisation), gets
    a clone in front of the output, which the quantizer annotates like any value: an output
    needs qparams of its own, and no operator would give it any."""
    graph = module.graph
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    count = 0

    def copied(value):
        nonlocal count
        if not (isinstance(value, torch.fx.Node) and value.op in ("placeholder", "get_attr")):
            return value
        tensor = value.meta.get("val")
        if value.op == "get_attr":
            tensor = module
            for part in str(value.target).split("."):
                tensor = getattr(tensor, part, None)
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            return value
        with graph.inserting_before(output):
            clone = graph.call_function(torch.ops.aten.clone.default, (value,))
        clone.meta.update(value.meta)
        count += 1
        return clone

    output.args = (torch.fx.node.map_aggregate(output.args[0], copied),)
    if count:
        module.recompile()
    return count


def quantize_program(
    program: ExportedProgram,
    samples: Sequence[tuple],
    scheme: str = "int8",
    where: str = "",
    observer: str = "mse",
    equalization: bool = False,
    bias_correction: bool | str = False,
    weights: str = "per_channel",
    *,
    rules: Rules,
) -> ExportedProgram:
    """The q/dq ExportedProgram of ``program`` calibrated on every sample (``quantize_with_record``
    without its record)."""
    return quantize_with_record(
        program, samples, scheme, where, observer, equalization, bias_correction, weights,
        rules=rules,
    )[0]


def quantize_with_record(
    program: ExportedProgram,
    samples: Sequence[tuple],
    scheme: str = "int8",
    where: str = "",
    observer: str = "mse",
    equalization: bool = False,
    bias_correction: bool | str = False,
    weights: str = "per_channel",
    *,
    rules: Rules,
) -> tuple[ExportedProgram, dict]:
    """The q/dq ExportedProgram of the normalised ``program`` (``pipeline.normalise``;
    ``pipeline.chain.quantize`` normalises first) calibrated on every sample, and what the
    post-training rewrites did (``equalization``: cross-layer equalisation, equalise.py;
    ``bias_correction``: bias_correction.py, ``"auto"`` to keep it only where it raises the
    SQNR over the calibration samples; both rewrite the float network first); ``weights``:
    ``per_channel`` or ``per_tensor`` weight scales; ``rules``: FX target -> the quantization
    rules its operator file declares (``pipeline.tosa.registry.quant_rules``).

    Raises:
        UserError: samples that do not fit the program.
        UnsupportedOperatorError: a torch.cond whose predicate is computed at run time.
    """
    check_samples(program, samples, where)
    normalised = program
    if bias_correction == "auto":
        converted, record = _auto_bias_correction(
            normalised, samples, scheme, where, observer, equalization, weights, rules
        )
    else:
        converted, record = _converted(
            normalised, samples, scheme, where, observer, equalization, bias_correction, weights,
            rules,
        )
    # Where precision is lost: each quantized tensor against the float network's.
    record["layers"] = layer_sqnr(normalised.module(check_guards=False), converted, samples)
    exported = torch.export.export(converted, tuple(samples[0]))
    if "front_end" in record:  # its nodes by their final names: report.json's cycles
        record["front_end"]["nodes"] = front_end_names(exported.graph_module)
    return exported, record


def _converted(
    normalised, samples, scheme, where, observer, equalization, bias_correction, weights, rules,
    originals=None,
):
    """The converted q/dq module of the normalised program, and what the techniques did
    (``originals``: ``correct_biases``')."""
    quantizer = EthosUQuantizer(scheme, observer, weights, rules=rules)
    # Torch 2.13: module() adds a guard-checking node the quantizer cannot annotate.
    module = normalised.module(check_guards=False)
    refuse_runtime_conditions(module, where)
    copy_returned_inputs(module)
    record = {}
    split = split_front_ends(module, samples)  # a log-mel's two scales: front_end.py
    # Equalisation first: it changes the weights whose quantization error the biases absorb.
    if equalization:
        record["equalization"] = equalise(module)
    if bias_correction:
        record["bias_correction"] = correct_biases(module, samples, quantizer.scheme.weight,
                                                   originals=originals)
    prepared = prepare_pt2e(module, quantizer)
    link_saturating_observers(prepared)  # masked scores follow their inputs' observers
    count_observed_tensors(prepared)  # shared qparams: one observer sees several tensors
    with torch.no_grad():
        for sample in samples:
            prepared(*sample)
    converted = convert_pt2e(prepared)
    if split:  # the front end's own SQNR (its log against float) for quantize.json
        record["front_end"] = front_end_record(split, normalised.module(check_guards=False),
                                               converted, samples)
    return converted, record


def _auto_bias_correction(normalised, samples, scheme, where, observer, equalization, weights,
                          rules):
    """Bias correction kept only where it raises the SQNR of the quantized graph against the
    float one over the calibration samples (it corrects the mean shift the samples show; on
    a network whose outputs hardly depend on the input it can lose: a random-weight
    MobileNetV1 fell from 51.6 to 42.8 dB).

    The corrected graph is converted first. Against it stands the same graph with the
    layers' own biases back (``_with_biases``: the activation ranges the corrected network
    was calibrated with, not a calibration of its own). Where the correction wins over that
    by more than ``KEEP_MARGIN_DB``, it is kept, from one conversion; otherwise the network
    is converted again without it and the two compared as they are (the program is
    normalised, and the chosen module exported, once)."""
    settings = (scheme, where, observer, equalization)
    originals: dict = {}
    corrected, record = _converted(normalised, samples, *settings, True, weights, rules,
                                   originals)
    summary = {**record["bias_correction"], "mode": "auto"}
    if not summary["layers"]:
        return corrected, {**record, "bias_correction": {**summary, "kept": False}}
    reference = _outputs(normalised.module(check_guards=False), samples)
    with_db = _sqnr_db(reference, _outputs(corrected, samples))
    uncorrected = _with_biases(corrected, originals)
    if uncorrected is not None:
        shared_db = _sqnr_db(reference, _outputs(uncorrected, samples))
        if _db(with_db) > _db(shared_db) + KEEP_MARGIN_DB:
            summary.update(kept=True, calibration_sqnr_db={"with": with_db, "without": shared_db},
                           conversions=1)
            return corrected, {**record, "bias_correction": summary}
    plain, plain_record = _converted(normalised, samples, *settings, False, weights, rules)
    without_db = _sqnr_db(reference, _outputs(plain, samples))
    kept = _db(with_db) > _db(without_db)
    summary.update(kept=kept, calibration_sqnr_db={"with": with_db, "without": without_db},
                   conversions=2)
    chosen, chosen_record = (corrected, record) if kept else (plain, plain_record)
    return chosen, {**chosen_record, "bias_correction": summary}


# The correction's lead over the corrected graph with its biases put back that keeps it
# from one conversion; a closer call converts without it too.
KEEP_MARGIN_DB = 0.25


def _with_biases(converted: torch.fx.GraphModule, biases: dict):
    """A callable running ``converted`` with each corrected layer's bias replaced by
    ``biases[node name]`` (float, None for none), or None when a layer cannot be found by
    its name and target there (then there is nothing to compare against)."""
    nodes = {n.name: n for n in converted.graph.nodes if n.op == "call_function"}
    for name in biases:
        node = nodes.get(name)
        if node is None or len(node.args) < 3 or str(node.target) not in _BIAS_AT_2:
            return None

    class _Run(torch.fx.Interpreter):
        def run_node(self, n):
            if n.name in biases and n.op == "call_function":
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                return n.target(*args[:2], biases[n.name], *args[3:], **kwargs)
            return super().run_node(n)

    def run(*sample):
        return _Run(converted).run(*sample)

    return run


# Layers whose bias is their third argument: those pipeline/quant/layers.py finds.
_BIAS_AT_2 = frozenset({*CONVOLUTIONS, LINEAR})


def _outputs(fn, samples: Sequence[tuple]) -> list[list]:
    """Each sample's output leaves."""
    with torch.no_grad():
        return [torch.utils._pytree.tree_leaves(fn(*sample)) for sample in samples]


def _db(value: float | None) -> float:
    return math.inf if value is None else value  # None: no error at all


def sqnr_db(reference: ExportedProgram, estimate: ExportedProgram, samples: Sequence[tuple]):
    """SQNR (dB, to 0.01) of ``estimate``'s float outputs against ``reference``'s over the
    samples, all outputs pooled; None when they are equal."""
    return _sqnr_db(_outputs(reference.module(), samples), _outputs(estimate.module(), samples))


def _sqnr_db(reference: list[list], estimate: list[list]) -> float | None:
    """SQNR over every sample's output leaves (``_outputs``)."""
    signal = noise = 0.0
    for ref, est in zip(reference, estimate, strict=True):
        for a, b in zip(ref, est):
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                signal += float((a.double() ** 2).sum())
                noise += float(((a.double() - b.double()) ** 2).sum())
    return None if noise == 0 else round(10 * math.log10(max(signal, 1e-300) / noise), 2)
