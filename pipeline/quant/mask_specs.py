"""Quantizing attention masks: a fill or an additive mask saturates the scores' quantization
instead of setting it.

A mask value (``-1e9``, ``-10000``, ``torch.finfo(x.dtype).min``, ``-inf``) is there to make
a softmax ignore a position. Observed like any value it would set the int8 scale (1e9 / 255
per step) and every real score would quantize to the zero point. Instead the masked output
(``where(m, x, fill)`` / ``masked_fill``, or ``x + mask`` / ``x - mask`` with ``mask``
computed from integer and bool tensors alone) takes qparams derived from the scores'
observer - the scores' range, reaching ``MARGIN`` further toward the fill or the mask - and
never observes the masked values: they quantize to the end of that range (saturate), in
torch's q/dq graph and, bit-exactly, in the TOSA graph (a SELECT with the fill's quantized
value, or ``pipeline/tosa/emit/saturation.py`` for the ADD). The mask itself is observed with
infinities counted as float32's limits (``FiniteMinMaxObserver``); positive mask values
are added in full.

Why a saturated score is masked exactly: the softmax subtracts the row maximum, which is at
least the smallest calibrated score ``x_min`` when the row has any unmasked position. A
masked position sits at ``x_min - MARGIN``, so it enters the exponential at least
``MARGIN`` below the row maximum and its weight is below ``exp(-MARGIN)``: under half a step
of the int8 (1/255) or int16 (1/32767) softmax output, which rounds it to exactly 0, as the
float softmax of -1e9 is. A fully masked row stays uniform, as in float. The price is the
margin added to the scores' range (8 more in int8: about half a bit for logits spanning 16).
During calibration ``SaturatingObserver`` clamps the masked value to that range, so the
softmax after it is calibrated on what the quantized graph computes, never on -1e9.
``tests/tosa/ops/test_op_where.py`` checks the softmax of masked attention scores.
"""

from __future__ import annotations

import torch
from torch import fx
from torchao.quantization.pt2e.observer import MinMaxObserver, ObserverBase
from torchao.quantization.pt2e.quantizer import QuantizationSpec

_F32 = torch.finfo(torch.float32)
_MASK_KEY = "ethosu_mask_like"
_SOURCES_KEY = "ethosu_saturating_sources"  # positions of the node's args the qparams follow
# How far past the scores a masked value is placed (real units): far enough that a softmax
# after it gives the position exactly 0, exp(-MARGIN) being below half a step of its int8
# (1/255) or int16 (1/32767) output.
MARGIN = {torch.int8: 8.0, torch.int16: 12.0}


class FiniteMinMaxObserver(MinMaxObserver):
    """Min/max of the finite values, infinities counted as float32's limits (a ``-inf``
    fill would otherwise make the scale infinite)."""

    def forward(self, x_orig: torch.Tensor) -> torch.Tensor:
        super().forward(torch.nan_to_num(x_orig.detach(), posinf=_F32.max, neginf=_F32.min))
        return x_orig


def finite(spec: QuantizationSpec) -> QuantizationSpec:
    """``spec`` observed by ``FiniteMinMaxObserver`` (never a histogram: it would clip the
    fill, the one value that matters)."""
    return QuantizationSpec(
        spec.dtype, FiniteMinMaxObserver, spec.quant_min, spec.quant_max, spec.qscheme
    )


def _constant(node: fx.Node) -> torch.Tensor | None:
    if node.op != "get_attr":
        return None
    value = getattr(node.graph.owning_module, str(node.target), None)
    return value if isinstance(value, torch.Tensor) else None


def is_fill(node) -> bool:
    """A one-element constant (a folded ``masked_fill`` value or ``scalar_tensor``)."""
    value = _constant(node) if isinstance(node, fx.Node) else None
    return value is not None and value.numel() == 1


def _two_level(value: torch.Tensor) -> bool:
    """Only zeros and one other value (a causal mask of 0 and -inf)."""
    others = value[value != 0]
    return others.numel() == 0 or bool((others == others.reshape(-1)[0]).all())


def is_mask_like(node) -> bool:
    """Whether ``node``'s value is computed from integer/bool tensors, one-element constants
    and constants holding only 0 and one other value (a causal mask) - never from a float
    input, parameter or other constant."""
    if not isinstance(node, fx.Node):
        return True
    if _MASK_KEY not in node.meta:  # one pass in graph order: every input before its users
        for each in node.graph.nodes:
            if _MASK_KEY not in each.meta:
                each.meta[_MASK_KEY] = _mask_like(each)
    return node.meta[_MASK_KEY]


def _mask_like(node: fx.Node) -> bool:
    value = node.meta.get("val")
    if isinstance(value, torch.Tensor) and not value.dtype.is_floating_point:
        return True
    if node.op == "placeholder":
        return False
    if node.op == "get_attr":
        constant = _constant(node)
        return constant is not None and (constant.numel() == 1 or _two_level(constant))
    inputs: list[fx.Node] = []
    fx.node.map_arg((node.args, node.kwargs), inputs.append)
    return all(i.meta.get(_MASK_KEY, False) for i in inputs)


def _range(observer) -> tuple[float, float]:
    """The real range an observer's qparams cover."""
    scale, zero_point = (float(v) for v in observer.calculate_qparams())
    return (observer.quant_min - zero_point) * scale, (observer.quant_max - zero_point) * scale


def _observed(observer) -> tuple[float, float]:
    """The values an observer saw (a symmetric range would add the half a mask never uses)."""
    if hasattr(observer, "min_val") and hasattr(observer, "max_val"):
        return float(observer.min_val), float(observer.max_val)
    return _range(observer)


class SaturatingObserver(ObserverBase):
    """Output observer of a masked value (``masked_fill``, ``x + mask``): its qparams are
    derived from the observers of the node's inputs (``sources``, linked after prepare) and it
    never observes the masked value itself. During calibration it clamps the value to their
    range, as the quantized graph will, so the operators after it (the softmax) are calibrated
    on saturated scores, never on -1e9."""

    def __init__(self, dtype, quant_min, quant_max, qscheme, derive, is_dynamic=False):
        super().__init__(dtype, is_dynamic)
        self.quant_min, self.quant_max, self.qscheme = quant_min, quant_max, qscheme
        self.derive = derive
        self.sources: list[ObserverBase] = []  # a plain list: not submodules

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lo, hi = _range(self)
        return torch.clamp(x, lo, hi)

    def calculate_qparams(self):
        if not self.sources:
            raise RuntimeError("call link_saturating_observers(prepared) after prepare_pt2e")
        return self.derive(self, self.sources)

    def covering(self, lo: float, hi: float):
        """The qparams of this observer's type that cover ``[lo, hi]``."""
        covering = MinMaxObserver(dtype=self.dtype, qscheme=self.qscheme,
                                  quant_min=self.quant_min, quant_max=self.quant_max)  # fmt: skip
        covering(torch.tensor([lo, hi]))
        return covering.calculate_qparams()


def _filled(fill: float):
    def derive(observer: SaturatingObserver, sources):
        """The scores' qparams, their range extended by MARGIN toward a fill outside it."""
        lo, hi = _range(sources[0])
        if lo <= fill <= hi:
            return sources[0].calculate_qparams()
        margin = MARGIN[observer.dtype]
        return observer.covering(lo - margin * (fill < lo), hi + margin * (fill > hi))

    return derive


def _masked_sum(subtract: bool):
    def derive(observer: SaturatingObserver, sources):
        """The scores' range, reaching MARGIN below it where the mask goes further down
        (those sums saturate) and the whole sum above it."""
        (x_lo, x_hi), (m_lo, m_hi) = _range(sources[0]), _observed(sources[1])
        m_lo, m_hi = (-m_hi, -m_lo) if subtract else (m_lo, m_hi)
        margin = MARGIN[observer.dtype]
        lo = x_lo - margin if m_lo < -margin else x_lo + min(m_lo, 0.0)
        return observer.covering(lo, x_hi + max(m_hi, 0.0))

    return derive


def _saturating(node: fx.Node, spec: QuantizationSpec, sources: list[fx.Node], derive):
    node.meta[_SOURCES_KEY] = [node.args.index(s) for s in sources]
    return QuantizationSpec(
        spec.dtype, SaturatingObserver.with_args(derive=derive), spec.quant_min,
        spec.quant_max, spec.qscheme,
    )  # fmt: skip


def masked_fill_spec(node: fx.Node, spec: QuantizationSpec, x: fx.Node, fill: fx.Node):
    """Output spec of ``where(m, x, fill)`` / ``masked_fill``: x's qparams (extended toward
    the fill when it lies outside them)."""
    return _saturating(node, spec, [x], _filled(float(_constant(fill).reshape(()))))


def masked_sum_spec(node: fx.Node, spec: QuantizationSpec, x: fx.Node, mask: fx.Node,
                    subtract: bool):  # fmt: skip
    """Output spec of ``x + mask`` / ``x - mask`` (module docstring)."""
    return _saturating(node, spec, [x, mask], _masked_sum(subtract))


def link_saturating_observers(prepared: fx.GraphModule) -> None:
    """Give every ``SaturatingObserver`` of a prepared model the observers of its node's inputs
    (prepare put each input behind its observer's call)."""
    # Every name: named_modules() lists an observer shared by several tensors under one only.
    modules = dict(prepared.named_modules(remove_duplicate=False))
    for call in prepared.graph.nodes:
        observer = modules.get(str(call.target)) if call.op == "call_module" else None
        masked = call.args[0] if isinstance(observer, SaturatingObserver) else None
        # The masked node's own call (the observer also follows nodes sharing its qparams).
        if masked is not None and _SOURCES_KEY in masked.meta:
            inputs = [masked.args[i] for i in masked.meta[_SOURCES_KEY]]
            observer.sources = [modules[str(i.target)] for i in inputs]
