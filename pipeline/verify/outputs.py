"""Verify's end-to-end figures per output: SQNR against the float model for the TOSA graph and
for torch's own quantized graph (the gate: at most ``MAX_SQNR_LOSS_DB`` below torch's), the
exact-match fraction and max integer difference against torch's quantized graph (reported),
and for a float graph the relative tolerance that gates it.
"""

from __future__ import annotations

import math

from pipeline.errors import VerificationError, see

# End to end (reported, not enforced): what a graph's outputs would meet if rounding
# differences did not compound, as in a graph of a few layers.
# Ops that round in integer arithmetic, where torch's q/dq reference rounds float32 values:
# RESCALE rounds half up on multiplier * 2**-shift (31-bit multiplier), AVG_POOL2D divides with
# a reciprocal multiplier; torch rounds the float32 result half to even. At (near-)ties the
# two legitimately differ by 1, so graphs holding these ops are compared with tolerance 1.
ROUNDING_OPS = ("RESCALE", "AVG_POOL2D")
ROUNDING_REASON = (
    "graph rounds in integer arithmetic ({ops}); torch's q/dq reference rounds "
    "float32 values half to even, so results may differ by 1 at rounding ties"
)
# Off-by-one results must stay rare: a systematic +-1 is a zero-point or rounding bug.
MIN_EXACT_FRACTION = 0.8
SCALE16_REASON = (
    "; {n} RESCALE(s) of int48 accumulators use 16-bit multipliers (TOSA forbids scale32 on "
    "int48): up to 2**-15 relative scale error, about 1 LSB at int16 magnitudes per RESCALE, "
    "which compounds across layers - so the tolerance is 1 LSB per such RESCALE and the "
    "exact-match fraction is reported, not enforced"
)
TABLE_REASON = (
    "; the graph has int8 lookup TABLEs behind rounding operators: a +-1 tie difference at a "
    "TABLE's input moves its output by up to the table's largest step ({step}, e.g. "
    "reciprocal near its steep end), and a later rounding may add 1: tolerance {tolerance}"
)
INTERPOLATED_REASON = (
    "; int16 TABLEs interpolate between entries 128 input steps apart, each rounded to "
    "int16, so up to half an LSB off before the final rounding: the exact-match fraction is "
    "reported, not enforced"
)
# Whatever the tolerance, the TOSA output may not be further from the float model than torch's
# own quantized graph is (a systematic error would show here even within tolerance). Near-
# perfect outputs (int16 at ~90 dB) are exempt when the extra noise is below what the graph's
# own arithmetic adds (``noise_allowance``; LSB**2 / 12 per value for exact RESCALEs): a
# systematic +-1 everywhere adds ~LSB**2.
MAX_SQNR_LOSS_DB = 1.0


def sqnr_margin_db(elements: int) -> float:
    """The SQNR gate's allowance for ``elements`` compared values: ``MAX_SQNR_LOSS_DB`` plus
    two standard errors of a noise-power estimate (a chi-square mean over ``elements``
    values has relative standard error sqrt(2 / n)). A classifier's 10 logits over 4 inputs
    (40 values) estimate noise power to +-22%, about 1 dB: a 1 dB gate alone would then
    fail a correct graph by chance; over thousands of values the allowance is ~1.3 dB."""
    return MAX_SQNR_LOSS_DB + 10.0 * math.log10(1.0 + 2.0 * math.sqrt(2.0 / max(1, elements)))
FLOAT_RTOL = 1e-3  # FP profile: max |diff| relative to max |reference|
FLOAT_REASON = (
    "float graph: each output must match the float model within 1e-3 of its largest "
    "magnitude (TOSA FP operators and torch's float32 kernels sum in different orders and "
    "approximate transcendental functions differently)"
)
END_TO_END_REASON = "end to end, reported (layers and SQNR gate the build): "


def tolerance_policy(
    operators: list[str], rescale_inputs: list[str], tables: list[tuple[str, int]] = ()
) -> tuple[int, float, str]:
    """(max |diff|, min exact-match fraction, why) for a graph's integer outputs.

    ``tables``: per TABLE, its type and output step per input step (``table_max_steps``).
    """
    rounding = sorted({op for op in operators if op in ROUNDING_OPS})
    if not rounding:
        return 0, 1.0, "graph has no rounding operators: integer outputs must match exactly"
    reason = ROUNDING_REASON.format(ops=", ".join(rounding))
    scale16 = rescale_inputs.count("int48")
    if scale16:
        return max(1, scale16), 0.0, reason + SCALE16_REASON.format(n=scale16)
    if tables:
        step = max(1, *(s for _, s in tables))
        reason += TABLE_REASON.format(step=step, tolerance=step + 1)
        if any(dtype == "int16" for dtype, _ in tables):
            return step + 1, 0.0, reason + INTERPOLATED_REASON
        return step + 1, MIN_EXACT_FRACTION, reason
    return 1, MIN_EXACT_FRACTION, reason


def _sqnr_db(reference, estimate) -> float | None:
    """SQNR over the values where the float model is finite (a masked score's -inf, atanh(1):
    no integer holds them; they are compared as integers only)."""
    import numpy as np

    finite = np.isfinite(reference)
    reference, estimate = reference[finite], estimate[finite]
    noise = float(np.sum((reference - estimate) ** 2))
    signal = float(np.sum(reference**2))
    if noise == 0.0:
        return None  # identical: infinite SQNR
    return 10.0 * math.log10(max(signal, 1e-30) / noise)


# The SQNR gate's allowance for added noise, in LSB**2 per value: the output's own rounding
# (uniform over +-1/2 LSB) where the graph's integers may differ from torch's at rounding ties
# only; errors spread evenly over +-1 LSB where interpolated int16 TABLEs err by up to half an
# LSB before their last rounding. RESCALEs of int48 accumulators with 16-bit multipliers scale
# by up to 2**-15 off, about 1 LSB per RESCALE at int16 magnitudes and systematic by nature
# (every large value moves the same way): n such RESCALEs move a value whose rounding error
# is e (|e| <= 1/2) to e +- n, adding at most n**2 + n LSB**2.
TIES_NOISE, INTERPOLATED_NOISE = 1.0 / 12.0, 1.0 / 3.0


def noise_allowance(min_exact_fraction: float, scale16_rescales: int) -> float:
    """The SQNR gate's added-noise allowance (LSB**2 per value) of a graph's outputs."""
    if scale16_rescales:
        return float(scale16_rescales**2 + scale16_rescales)
    return TIES_NOISE if min_exact_fraction > 0 else INTERPOLATED_NOISE


def compare_int(entry: dict, runs, tolerance: int, noise_lsb2: float = TIES_NOISE) -> dict:
    """One integer output over every run (TOSA's integers, torch's q/dq output, the float
    model's): the SQNR gate (``noise_lsb2``: its allowance, ``noise_allowance``). Where the
    float model's value is NaN (acosh below 1) there is no right integer: such values are
    counted as ``undefined_values`` and left out; infinities (a masked score's -inf) are
    compared as integers only."""
    import numpy as np

    scale, zp = entry["scale"], entry["zero_point"]
    got = np.concatenate([g.reshape(-1).astype(np.int64) for g, _, _ in runs])
    reference = np.concatenate([r.reshape(-1) for _, r, _ in runs])
    ideal = np.concatenate([f.reshape(-1) for _, _, f in runs])
    defined = ~(np.isnan(ideal) | np.isnan(reference))
    got, reference, ideal = got[defined], reference[defined], ideal[defined]
    expected = np.round(reference / scale).astype(np.int64) + zp
    diff = np.abs(got - expected)
    sqnr = _sqnr_db(ideal, (got - zp) * scale)
    sqnr_torch = _sqnr_db(ideal, (expected - zp) * scale)
    finite = np.isfinite(ideal)
    extra_noise = float(
        np.mean(((got - zp) * scale - ideal)[finite] ** 2)
        - np.mean(((expected - zp) * scale - ideal)[finite] ** 2)
    ) if finite.any() else 0.0  # fmt: skip
    sqnr_ok = (
        sqnr is None
        or sqnr_torch is None
        or sqnr >= sqnr_torch - sqnr_margin_db(diff.size)
        or extra_noise <= scale**2 * noise_lsb2
    )
    undefined = int(np.sum(~defined))
    return {
        "name": entry["name"],
        "elements": int(diff.size),
        **({"undefined_values": undefined} if undefined else {}),
        "max_abs_diff_int": int(diff.max(initial=0)),
        "exact_match_fraction": float(np.mean(diff == 0)) if diff.size else 1.0,
        "off_by_one_count": int(np.sum(diff == 1)),
        "tolerance": tolerance,
        "within_tolerance": bool(diff.max(initial=0) <= tolerance),
        "sqnr_db_vs_float": sqnr,
        "sqnr_db_torch_quantized_vs_float": sqnr_torch,
        "sqnr_max_loss_db": round(sqnr_margin_db(diff.size), 3),
        "noise_allowance_lsb2": round(noise_lsb2, 4),
        # Integers and bools that are not quantized (masks, ids, comparisons) never round.
        "passed": bool(
            sqnr_ok and (entry.get("qmin", 0) is not None or diff.max(initial=0) == 0)
        ),
    }


def compare_float(entry: dict, runs) -> dict:
    import numpy as np

    got = np.concatenate([g.reshape(-1).astype(np.float64) for g, _, _ in runs])
    ideal = np.concatenate([f.reshape(-1) for _, _, f in runs])
    allowed = FLOAT_RTOL * max(float(np.abs(ideal).max()), 1e-12)
    diff = float(np.abs(got - ideal).max())
    return {
        "name": entry["name"],
        "elements": int(got.size),
        "max_abs_diff": diff,
        "tolerance": allowed,
        "sqnr_db_vs_float": _sqnr_db(ideal, got),
        "passed": diff <= allowed,
    }


def _db(value: float | None) -> str:
    return "inf dB" if value is None else f"{value:.2f} dB"


def output_failure(where: str, result: dict, samples: int) -> VerificationError:
    if "max_abs_diff_int" in result:
        allowed = (
            f"an SQNR vs float at most {result['sqnr_max_loss_db']:.2f} dB below torch's "
            f"quantized graph's ({MAX_SQNR_LOSS_DB} dB plus the uncertainty of "
            f"{result['elements']} values; or added noise under one quantization step's)"
        )
        got = (
            f"{_db(result['sqnr_db_vs_float'])} (torch quantized: "
            f"{_db(result['sqnr_db_torch_quantized_vs_float'])}), max |diff| "
            f"{result['max_abs_diff_int']}, exact-match fraction "
            f"{result['exact_match_fraction']:.4f}"
        )
    else:
        allowed = f"to match the float model within {result['tolerance']:.3g}"
        got = f"max |diff| {result['max_abs_diff']:.3g}"
    return VerificationError(
        f"{where}: output {result['name']} of the TOSA reference model must have {allowed}; "
        f"got {got} over {samples} input sets {see('docs/verification.md#end-to-end')}"
    )
