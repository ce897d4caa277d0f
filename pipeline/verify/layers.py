"""Verify's per-layer check: every quantized layer of the TOSA graph against torch's q/dq math
for the same node, computed from the TOSA graph's own integers at the layer's inputs.

torch's quantized program runs in an ``fx.Interpreter`` in float64, so each quantize node sees
the exact value of the q/dq math (float32 rounding would blur rounding ties at int16
magnitudes). At each quantize node with a tensor in the TOSA graph (``io.json``'s ``layers``,
``pipeline/tosa/layers.py``) the exact value is compared with TOSA's integers, which then
replace torch's downstream: differences cannot compound, so a deep network is held to the
same per-layer standard as one layer.

The bound comes from the layer's TOSA operators (``pipeline/verify/error_bound.py``): TOSA's
integer must be torch's rounding of the exact value, or lie within the bound of it (a
rounding tie). A quantize node the lowering fused away (no tensor in the TOSA graph) stays
exact - saturated to its type, not rounded - since that bound counts TOSA's own roundings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import fx

from pipeline.errors import VerificationError
from pipeline.fx import source_of
from pipeline.verify.error_bound import FLOAT32_MARGIN, Bounds, Interpolated, tolerance
from pipeline.tosa.flatbuffer import Block

QUANTIZE = (
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
)
DEQUANTIZE = (
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.dequantize_per_channel.default",
)
FLOAT64_MARGIN = 1e-6  # float64 error of the exact value, in LSBs, with a wide margin
INPUT_BOUND = 0.5 + FLOAT32_MARGIN  # the test input was quantized by torch, in float32
CHECKS = {
    "exact": "no TOSA operator of the layer rounds: its integers must equal torch's rounding "
    "of the exact q/dq value",
    "bounded": (
        "TOSA's integers must equal torch's rounding of the exact q/dq value or lie within "
        "the layer's error bound of it "
        "(pipeline/verify/error_bound.py: 0.5 per rounding RESCALE, AVG_POOL2D or TABLE entry, "
        "scaled by the operators after it, plus multiplier error); torch rounds the exact "
        "value half to even, so a difference of 1 from torch is allowed only at rounding "
        "ties (TOSA's RESCALE rounds them up)"
    ),
    "input": "the test input, quantized by torch in float32 and fed to the TOSA graph",
    "unbounded": "an operator of the layer has no error analysis: figures reported only",
}


def _short(node) -> str:
    parts = str(node.target).split(".")
    return parts[1] if parts[0] == "aten" and len(parts) > 1 else str(node.target)


@dataclass
class Layer:
    """One compared quantize node: what it is, its bound, and running figures."""

    quantize: str
    value: str  # the node it quantizes (a graph input's name for an input)
    tensor: str
    shape: list[int]  # the value's TOSA shape (the tensor may hold it reshaped)
    dim_order: list[int]
    ops: list = field(default_factory=list)  # torch nodes from the exact inputs to here
    tosa_ops: list[str] = field(default_factory=list)
    table: Interpolated | None = None  # a bound per element
    bound: float = 0.0
    check: str = "exact"
    elements: int = 0
    equal: int = 0
    max_diff: int = 0
    beyond: int = 0
    undefined: int = 0  # values whose exact q/dq value is NaN

    def torch_order(self, array: np.ndarray) -> np.ndarray:
        """The layer's values from the TOSA tensor, in torch's shape and dim order."""
        value = np.transpose(array.reshape(self.shape), np.argsort(self.dim_order))
        return np.ascontiguousarray(value)

    def bounds(self, values: dict[str, np.ndarray]) -> np.ndarray | float:
        """The bound, per element (torch order) for an interpolated int16 TABLE."""
        if self.table is None:
            return self.bound
        bound = self.table.bound(values[self.table.source])
        self.bound = max(self.bound, float(bound.max())) if self.elements else float(bound.max())
        return self.torch_order(bound).reshape(-1)

    def add(self, got: np.ndarray, exact: tuple, delta: float, bound) -> None:
        """``exact``: (the exact value clamped to the integer type's range, qmin, qmax)."""
        got = got.reshape(-1).astype(np.int64)
        exact, qmin, qmax = exact[0].reshape(-1), exact[1], exact[2]
        # Undefined in float64 (acos just past 1, where torch's float32 dequantize gave 1.0):
        # no integer is wrong there; counted, not compared.
        undefined = np.isnan(exact)
        self.undefined += int(np.sum(undefined))
        exact = np.where(undefined, got, exact)
        diff = np.abs(got - np.round(np.clip(exact, qmin, qmax)))  # torch: half to even
        self.elements += got.size
        self.equal += int(np.sum(diff == 0))
        self.max_diff = max(self.max_diff, int(diff.max(initial=0)))
        if not math.isinf(self.bound):  # torch's own integer, or one within the bound
            self.beyond += int(np.sum((diff != 0) & (np.abs(got - exact) > bound + delta)))

    def summary(self) -> dict:
        sources = [source_of(n) for n in self.ops]
        return {
            "node": self.ops[0].name if self.ops else self.value,
            "op": "+".join(_short(n) for n in self.ops) or "input",
            "source": next((s for s in sources if s), ""),
            "tosa": "+".join(self.tosa_ops),
            "check": self.check,
            "bound": None if math.isinf(self.bound) else round(self.bound, 6),
            "tolerance": tolerance(self.bound),
            "max_abs_diff_int": self.max_diff,
            "exact_match_fraction": self.equal / max(1, self.elements),
            "beyond_bound": self.beyond,
            **({"undefined_values": self.undefined} if self.undefined else {}),
        }


def _segment(quantize, substituted: set[str]) -> list:
    """The compute nodes between the layer's exact inputs (substituted quantize nodes,
    constants, inputs) and ``quantize``, in program order."""
    found, stack = {}, [quantize.args[0]]
    while stack:
        node = stack.pop()
        if not hasattr(node, "op") or node.op != "call_function" or node.name in found:
            continue
        target = str(node.target)
        if target in QUANTIZE and node.name in substituted:
            continue
        if target not in QUANTIZE and target not in DEQUANTIZE:
            found[node.name] = node
        stack.extend(node.all_input_nodes)
    order = {node: i for i, node in enumerate(quantize.graph.nodes)}
    return sorted(found.values(), key=order.__getitem__)


class LayerCheck:
    """The per-layer comparison of one TOSA graph, fed one test input set at a time."""

    def __init__(self, module, block: Block, entries: list[dict], where: str = ""):
        nodes = {n.name: n for n in module.graph.nodes}
        wrong = [e["node"] for e in entries if str(getattr(nodes.get(e["node"]), "target", ""))
                 not in QUANTIZE]  # fmt: skip
        if wrong:
            raise VerificationError(
                f"{where}: io.json's layers must name quantize nodes of the quantized program "
                f"(lower and verify must load the same file); got {', '.join(wrong[:5])}"
            )
        present = [e for e in entries if e["tensor"] in block.tensors]
        bounds = Bounds(block, [e["tensor"] for e in present])
        self.module = module
        self._constants: dict[str, object] = {}  # dequantized weights, shared by every run
        self.layers = [
            Layer(e["node"], nodes[e["node"]].args[0].name, e["tensor"],
                  e.get("shape", block.tensors[e["tensor"]].shape), e["dim_order"])
            for e in present
        ]  # fmt: skip
        substituted = {layer.quantize for layer in self.layers}
        for layer in self.layers:
            layer.ops = _segment(nodes[layer.quantize], substituted)
            if layer.tensor in block.inputs:
                layer.bound, layer.check = INPUT_BOUND, "input"
                continue
            layer.bound, layer.tosa_ops = bounds.layer(layer.tensor)
            layer.table = bounds.interpolated_table(layer.tensor)
            layer.check = (
                "unbounded" if math.isinf(layer.bound) else "exact" if layer.bound == 0
                else "bounded"
            )  # fmt: skip
        self.merged = len(entries) - len(present)  # tensors this graph (a variant) lacks

    @property
    def tensors(self) -> list[str]:
        """The TOSA tensors the reference model must write (layer outputs, not inputs)."""
        return [layer.tensor for layer in self.layers]

    def add(self, sample: tuple, values: dict[str, np.ndarray]) -> None:
        """Run torch's program on ``sample`` with TOSA's ``values`` (tensor name -> array in
        TOSA dim order) substituted at every layer, and compare each layer."""
        substitutes = {layer.quantize: torch.from_numpy(layer.torch_order(values[layer.tensor]))
                       for layer in self.layers}  # fmt: skip
        reference = _Reference(self.module, substitutes, self._constants)
        with torch.no_grad():
            reference.run(*sample)
        for layer in self.layers:
            exact = reference.exact[layer.quantize]
            fallback = any(n.name in reference.fallbacks for n in layer.ops)
            delta = FLOAT64_MARGIN + (FLOAT32_MARGIN * (1 + np.abs(exact[0])) if fallback else 0)
            layer.add(substitutes[layer.quantize].numpy(), exact, delta, layer.bounds(values))


def _to64(value):
    """float32 tensors (and dtype arguments) as float64, recursively."""
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.double()
    if value is torch.float32:
        return torch.float64
    if isinstance(value, (list, tuple)):
        return type(value)(_to64(v) for v in value)
    if isinstance(value, dict):
        return {k: _to64(v) for k, v in value.items()}
    return value


def _to32(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.float()
    if isinstance(value, (list, tuple)):
        return type(value)(_to32(v) for v in value)
    if isinstance(value, dict):
        return {k: _to32(v) for k, v in value.items()}
    return value


def _number(value) -> float:
    return float(value.reshape(-1)[0]) if isinstance(value, torch.Tensor) else float(value)


def _dequantize(target: str, x, scale, zero_point, *args, **kwargs) -> torch.Tensor:
    if target.endswith("per_channel.default"):
        shape = [1] * x.dim()
        shape[args[0]] = -1
        scale = torch.as_tensor(scale, dtype=torch.float64).reshape(shape)
        zero_point = torch.as_tensor(0 if zero_point is None else zero_point).reshape(shape)
        return (x.double() - zero_point.double()) * scale
    return (x.double() - _number(zero_point)) * _number(scale)


class _Reference(fx.Interpreter):
    """torch's q/dq program in float64: a quantize node keeps its exact (unrounded) value and
    outputs TOSA's integers where they are substituted, else that value."""

    def __init__(self, module: fx.GraphModule, substitutes: dict[str, torch.Tensor],
                 constants: dict[str, object]):  # fmt: skip
        super().__init__(module)
        self.substitutes, self.constants = substitutes, constants
        self.exact: dict[str, np.ndarray] = {}
        self.fallbacks: set[str] = set()

    def run_node(self, n: fx.Node):
        if n.name in self.constants:
            return self.constants[n.name]
        value = self._run_node(n)
        if n.op == "get_attr" or (
            n.op == "call_function" and n.all_input_nodes
            and all(i.name in self.constants for i in n.all_input_nodes)
        ):  # fmt: skip
            self.constants[n.name] = value
        return value

    def _run_node(self, n: fx.Node):
        target = str(n.target) if n.op == "call_function" else ""
        if target in QUANTIZE or target in DEQUANTIZE:
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            if target in DEQUANTIZE:
                return _dequantize(target, *args, **kwargs)
            return self._quantize(n.name, *args)
        try:
            return super().run_node(n)
        except Exception:
            if n.op != "call_function":
                raise
        # An operator without a float64 kernel runs in float32; its layer gets a float32 margin.
        self.fallbacks.add(n.name)
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return _to64(n.target(*_to32(args), **_to32(kwargs)))

    def _quantize(self, name: str, x, scale, zero_point, qmin, qmax, dtype) -> torch.Tensor:
        # TOSA saturates to the type's range, the program to [qmin, qmax] (int16: -32767)
        kept = torch.iinfo(dtype)
        exact = (x.double() / _number(scale) + _number(zero_point)).clamp(kept.min, kept.max)
        if name in self.substitutes:
            self.exact[name] = (exact.numpy(), qmin, qmax)
            return self.substitutes[name].to(dtype)
        # A quantize node without a TOSA tensor (fused away) stays exact, as the bound of the
        # layer it belongs to assumes: only TOSA's own roundings count (error_bound.py).
        return exact

    def placeholder(self, target, args, kwargs):
        return _to64(super().placeholder(target, args, kwargs))

    def get_attr(self, target, args, kwargs):
        return _to64(super().get_attr(target, args, kwargs))

    def call_function(self, target, args, kwargs):
        return super().call_function(target, _to64(args), _to64(kwargs))
