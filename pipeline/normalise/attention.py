"""scaled_dot_product_attention written out before quantization, so every intermediate gets
its own qparams and each step lowers to an Ethos-U operator: MATMUL, a RESCALE for the scale,
the softmax (REDUCE_MAX, SUB, exp TABLE, AVG_POOL2D, reciprocal TABLE refined by a Newton
step, MUL) and MATMUL. ``nn.MultiheadAttention`` reaches it through its own forward.

A mask becomes an additive ``bias``: 0 where attended and ``MASKED`` where not (a bool mask,
``is_causal``, -inf in a float mask), or the float mask itself (ALiBi, relative positions).
-inf cannot be quantized (an observer that sees it has no scale), and ``MASKED`` in an
observed range would leave the scores no resolution, so for a known mask (a constant, which
``is_causal`` and buffers fold into, or a bool mask) the two sums that carry it take qparams
derived from the scores' observer instead (``masked_specs``), never observed:

* ``scores + bias``, only used for the row maximum, keeps the scores' range (plus what an
  attended bias adds): a masked entry saturates to the lowest value, so the maximum is the
  attended one;
* ``scores - max + bias``, the exponent, spans at least ``exp_floor`` below 0: a masked
  entry saturates there and its exp TABLE entry is exactly 0 at int8/int16 resolution.

A bool mask input is ``where(mask, 0, MASKED)`` (SELECT: Ethos-U85 only). A float mask input
is an additive bias, its sums ordinary adds with observed qparams: it must hold finite values
of the scores' magnitude (-inf or finfo.min has no int8/int16 image; pass a bool mask).
"""

from __future__ import annotations

import math

import torch
from torch import fx
from torch.fx.traceback import annotate

# Added to a masked score. Finite, so float and quantized graphs stay NaN-free; far below any
# attention score (exp(-1024) is 0 in float32), and small enough that the int32 ADD applying
# it keeps the scores' resolution (op_add widens both operands to one scale).
MASKED = -1024.0
ROLE = "ethosu_attention"  # node.meta["custom"] key naming a node's part in the write-out


def _bias(attn_mask, is_causal: bool, query, key) -> torch.Tensor | None:
    if is_causal:
        rows, cols = query.shape[-2], key.shape[-2]
        attn_mask = torch.ones(rows, cols, dtype=torch.bool, device=query.device).tril()
    if attn_mask is None:
        return None
    if attn_mask.dtype == torch.bool:
        with annotate({ROLE: "mask_bias"}):
            return torch.where(attn_mask, 0.0, MASKED)
    return torch.clamp(attn_mask, min=MASKED)  # -inf / finfo.min masks


def masked_softmax(scores: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """softmax(scores + bias) over the last dim; masked entries exactly 0 once quantized."""
    with annotate({ROLE: "masked_scores"}):
        masked = scores + bias
    shifted = scores - torch.amax(masked, -1, keepdim=True)
    with annotate({ROLE: "masked_shift"}):
        shifted = shifted + bias
    return normalised(torch.exp(shifted))


def normalised(e: torch.Tensor) -> torch.Tensor:
    """``e / e.sum(-1)``: the sum as ``count * mean`` (AVG_POOL2D), its reciprocal a TABLE
    refined by one Newton step ``r * (2 - sum * r)``.

    An int16 TABLE interpolates between entries 128 input steps apart: for a reciprocal over
    sums in [1, n] that is up to ``n**2 / 8`` output steps off near 1 (181 for a causal row
    of 16 tokens, which sums to 1), where torch's reference is exact. The Newton step
    squares that relative error away. Its two intermediates sit at 1 in torch's graph, so an
    observer would give them no room for the TABLE's error: they take fixed qparams instead
    (``newton_spec``, 1.0 exact), and in int8, whose TABLE is exact, the step multiplies by
    exactly 1.
    """
    total = e.mean(-1, keepdim=True) * e.shape[-1]
    estimate = torch.reciprocal(total)
    with annotate({ROLE: "newton"}):
        product = total * estimate
    with annotate({ROLE: "newton"}):
        correction = 2.0 - product
    with annotate({ROLE: "newton_applied"}):
        refined = estimate * correction
    return e * refined


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
    enable_gqa=False,
):  # fmt: skip
    """softmax(q @ k^T * scale + mask) @ v (eval: dropout_p is ignored, as torch does)."""
    if enable_gqa and query.shape[-3] != key.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * factor
    bias = _bias(attn_mask, is_causal, query, key)
    if bias is None:
        weights = normalised(torch.exp(scores - torch.amax(scores, -1, keepdim=True)))
    else:
        weights = masked_softmax(scores, bias)
    return weights @ value


def role(node: fx.Node) -> str | None:
    """The node's part in the write-out (``masked_scores``, ``masked_shift``, ``mask_bias``)."""
    return (node.meta.get("custom") or {}).get(ROLE)


def _constant_range(bias: fx.Node) -> tuple[float, float, bool] | None:
    """What a known bias adds to attended scores, (lo, hi) with 0 included, and whether it
    masks anything: a bool mask's bias, or read from a constant's values; None for a runtime
    float bias."""
    if role(bias) == "mask_bias":
        return (0.0, 0.0, True)
    if bias.op != "get_attr":
        return None
    value = getattr(bias.graph.owning_module, bias.target).detach().float()
    attended = value[value > MASKED / 2]
    masks = attended.numel() < value.numel()
    if attended.numel() == 0:
        return (0.0, 0.0, masks)
    return (min(float(attended.min()), 0.0), max(float(attended.max()), 0.0), masks)


def newton_spec(activation):
    """Fixed qparams for values near 1 (the Newton step's): a power-of-two scale that holds
    1.0 exactly and reaches almost 2 - 1/128 steps for int8, 1/16384 for int16."""
    from torchao.quantization.pt2e.quantizer import FixedQParamsQuantizationSpec

    levels = 2 ** math.ceil(math.log2(activation.quant_max - activation.quant_min + 1))
    symmetric = activation.qscheme == torch.per_tensor_symmetric
    scale = 2.0 / (levels // 2 if symmetric else levels)  # 2**-7 for int8, 2**-14 for int16
    zero_point = 0 if symmetric else activation.quant_min
    return FixedQParamsQuantizationSpec(
        activation.dtype, scale, zero_point, activation.quant_min, activation.quant_max,
        activation.qscheme,
    )  # fmt: skip


def exp_floor(activation) -> float:
    """How far below 0 an exponent must reach for exp() to round to 0 in ``activation``'s
    type over [0, 1] (below half a step, with a margin): 6.5 for int8, 11.3 for int16. No
    further: the int16 exp TABLE's interpolation error grows with the square of its range."""
    symmetric = activation.qscheme == torch.per_tensor_symmetric
    steps = activation.quant_max if symmetric else activation.quant_max - activation.quant_min
    return math.log(2 * steps) + 0.25


def masked_specs(node: fx.Node, activation) -> tuple[dict, object] | None:
    """(input specs, output spec) of a node of the write-out with a rule of its own; None
    for any other node (and for the sums of a runtime float bias: ordinary adds, observed).

    The two sums that carry a known mask (constant, bool) derive their qparams from the
    scores' observer (module docstring). A pure mask (0 / MASKED) is observed as it is: both
    values exact, MASKED saturating either sum. A constant that also biases attended entries
    needs finer steps than that: it is quantized so that a masked entry pushes either sum
    below its range while attended values keep about the scores' resolution (one
    quantization for both sums, as prepare gives a constant one observer anyway).
    """
    from torchao.quantization.pt2e.quantizer import DerivedQuantizationSpec

    kind = role(node)
    if kind == "mask_bias":  # where(mask, 0, MASKED): observed as it is, both values exact
        return {}, activation
    if kind in ("newton", "newton_applied"):
        fixed = newton_spec(activation)
        inputs = {a: fixed if role(a) == "newton" else activation
                  for a in node.args[:2] if isinstance(a, fx.Node)}  # fmt: skip
        return inputs, fixed if kind == "newton" else activation
    if kind not in ("masked_scores", "masked_shift"):
        return None
    x, bias = node.args[:2]
    known = _constant_range(bias)
    if known is None:
        return None
    lo_b, hi_b, masks = known
    scores = x if kind == "masked_scores" else x.args[0]  # shift: (scores - max) + bias
    floor = -exp_floor(activation) if masks else math.inf
    step = 1.0 / (activation.quant_max - activation.quant_min)

    def shift_low(obs) -> torch.Tensor:
        """The exponent's lowest value, at most -exp_floor when entries are masked."""
        return (obs.min_val + lo_b - obs.max_val - hi_b).clamp(max=floor)

    def output_qparams(observers):
        obs = observers[0]
        if kind == "masked_shift":
            return obs._calculate_qparams(shift_low(obs), torch.zeros_like(obs.min_val))
        if lo_b == hi_b == 0.0:
            return obs.calculate_qparams()  # exactly the scores' own
        return obs._calculate_qparams(obs.min_val + lo_b, obs.max_val + hi_b)

    def bias_qparams(observers):
        # Below the exponent's lowest value minus the largest ``scores - max`` (which is
        # also below the masked scores' lowest value minus the largest score), with slack
        # for zero-point rounding: a masked entry saturates both sums.
        obs = observers[0]
        low = shift_low(obs) - (obs.max_val - obs.min_val - lo_b)
        return obs._calculate_qparams(low - (hi_b - low) * step, obs.max_val * 0 + hi_b)

    def spec(derive):
        return DerivedQuantizationSpec(
            [scores], derive, activation.dtype, activation.quant_min, activation.quant_max,
            activation.qscheme,
        )  # fmt: skip

    bias_spec = activation if lo_b == hi_b == 0.0 else spec(bias_qparams)
    return {x: activation, bias: bias_spec}, spec(output_qparams)
