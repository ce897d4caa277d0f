"""Empirical bias correction (Nagel et al. 2019; Finkelstein et al. 2019): quantizing a layer's
weights shifts the mean of its outputs; that shift, measured on the calibration samples, is
taken off the layer's bias.

For each conv/linear with constant weights W, in graph order: Wq = W quantized as the
quantizer will quantize it (the scheme's weight spec and observer, the same q/dq operators
convert_pt2e writes), x its input over every sample, and the bias loses the per-output-channel
mean of layer(x, Wq - W) (a layer is linear in its weights, so this is exactly the mean of
layer(x, Wq) - layer(x, W), padding included). A layer without a bias gets one.

Sequential: the samples flow through the network with each corrected layer already quantized
(Wq and its new bias), so a layer's shift is measured on the inputs it will see, which carry
what is left of the upstream layers' errors, not on the float network's.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)
from torch import fx
from torchao.quantization.pt2e.quantizer import QuantizationSpec

from pipeline.quant.layers import Layer, add_bias, find_layers, get_tensor, set_tensor

_Q = torch.ops.quantized_decomposed


def quantize_weight(weight: torch.Tensor, spec: QuantizationSpec) -> torch.Tensor:
    """``weight`` quantized and dequantized (per channel or per tensor, as ``spec`` says) as
    ``prepare``/``convert`` do it."""
    per_tensor = spec.qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine)
    options = {} if per_tensor else {"ch_axis": spec.ch_axis}
    observer = spec.observer_or_fake_quant_ctr(
        dtype=spec.dtype,
        qscheme=spec.qscheme,
        quant_min=spec.quant_min,
        quant_max=spec.quant_max,
        **options,
    )
    observer(weight)
    scale, zero_point = observer.calculate_qparams()
    if per_tensor:
        args = (float(scale), int(zero_point), spec.quant_min, spec.quant_max, spec.dtype)
        return _Q.dequantize_per_tensor(_Q.quantize_per_tensor(weight, *args), *args)
    args = (scale, zero_point, spec.ch_axis, spec.quant_min, spec.quant_max)
    q = _Q.quantize_per_channel(weight, *args, spec.dtype)
    return _Q.dequantize_per_channel(q, *args, spec.dtype)


def _channel_mean(values: list[torch.Tensor], axis: int) -> torch.Tensor:
    total = sum(v.movedim(axis, 0).reshape(v.shape[axis], -1).double().sum(dim=1) for v in values)
    count = sum(v.numel() // v.shape[axis] for v in values)
    return total / count


class _Lockstep:
    """One FX interpreter per sample, stepped node by node together, so a layer's inputs
    over every sample are at hand when it is reached (values freed after their last use)."""

    def __init__(self, module: fx.GraphModule, samples: Sequence[tuple]):
        self.runs = []
        for sample in samples:
            run = fx.Interpreter(module)
            run.args_iter, run.env = iter(sample), {}
            self.runs.append(run)

    def arguments(self, node: fx.Node) -> list[tuple]:
        return [run.fetch_args_kwargs_from_env(node) for run in self.runs]

    def run(self, node: fx.Node) -> list:
        return [run.run_node(node) for run in self.runs]

    def store(self, node: fx.Node, values: list) -> None:
        for run, value in zip(self.runs, values):
            run.env[node] = value
            for dead in run.user_to_last_uses.get(node, []):
                del run.env[dead]


def _correct(module, layer: Layer, arguments: list[tuple], spec) -> list[torch.Tensor]:
    """Correct ``layer``'s bias from its inputs; its quantized outputs."""
    weight = get_tensor(module, layer.weight)
    quantized = quantize_weight(weight, spec)
    bias = get_tensor(module, layer.bias)
    op, axis = layer.node.target, layer.channel_axis

    def call(args, kwargs, w, b):
        return op(args[0], w, b, *args[3:], **kwargs)

    shifts = [call(a, k, quantized - weight, None) for a, k in arguments]
    corrected = bias - _channel_mean(shifts, axis).to(bias.dtype)
    set_tensor(module, layer.bias, corrected)
    return [call(a, k, quantized, corrected) for a, k in arguments]


def correct_biases(
    module: fx.GraphModule,
    samples: Sequence[tuple],
    spec: QuantizationSpec,
    sequential: bool = True,
    originals: dict | None = None,
) -> dict:
    """Correct the bias of every conv/linear of ``module`` in place (new attribute tensors).

    ``sequential`` False measures each layer on the float network's inputs instead (kept to
    compare the two; the flow uses the default). ``originals``, when given, gets each layer's
    bias before the correction by its node's name (None: it had none).

    Returns:
        What ran, for the report: ``layers`` corrected, ``biases_added`` to layers that had none.
    """
    layers = find_layers(module)
    added = 0
    with torch.no_grad():
        for node, layer in list(layers.items()):
            if originals is not None:
                originals[node.name] = (None if layer.bias is None
                                        else get_tensor(module, layer.bias))
            if layer.bias is None:
                layers[node] = add_bias(module, layer)
                added += 1
        if added:
            module.recompile()
        steps = _Lockstep(module, samples)
        for node in module.graph.nodes:
            if node.op == "output":
                break
            if node in layers:
                values = _correct(module, layers[node], steps.arguments(node), spec)
                if not sequential:
                    values = steps.run(node)  # the float layer: env holds the old tensors
            else:
                values = steps.run(node)
            steps.store(node, values)
    return {"layers": len(layers), "biases_added": added}
