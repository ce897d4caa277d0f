"""Elementwise operator cases shared by the NPU placement test and the cycles benchmark
(``benchmarks/bench_elementwise.py``): one module per operator form, written as users write
it, with inputs in the function's domain."""

from __future__ import annotations

import torch
from torch import nn

from models.cases import Lambda, integers, spans, uniform

SHAPE = (1, 16, 16, 16)  # the benchmark's shape: 4096 values


def _inplace(method: str):
    return lambda x: getattr(x.clone(), method)()


def quantized_cases(shape=SHAPE) -> dict:
    """name -> (module, input specs): float models, quantized int8 / a16w8."""
    wide, unit = uniform(shape, -3, 3), uniform(shape, -0.99, 0.99)
    positive, probability = uniform(shape, 0.05, 3), uniform(shape, 0.01, 0.99)
    unary = {
        "sin_": (_inplace("sin_"), wide), "cos": (torch.cos, wide),
        "tan": (torch.tan, uniform(shape, -1.2, 1.2)), "asin": (torch.asin, unit),
        "acos": (torch.acos, unit), "atan": (torch.atan, wide), "sinh": (torch.sinh, wide),
        "cosh": (torch.cosh, wide), "asinh": (torch.asinh, wide),
        "acosh": (torch.acosh, uniform(shape, 1.05, 4)), "atanh": (torch.atanh, unit),
        "logit_eps": (lambda x: torch.logit(x, eps=1e-6), probability),
        "expm1": (torch.expm1, wide), "log10": (torch.log10, positive),
        "log2": (torch.log2, positive), "log1p": (torch.log1p, positive),
        "erfinv": (torch.erfinv, unit), "rsqrt": (torch.rsqrt, positive),
        "reciprocal": (torch.reciprocal, positive), "sqrt": (torch.sqrt, positive),
        "abs_": (_inplace("abs_"), wide), "neg": (torch.neg, wide),
        "hardsigmoid": (nn.Hardsigmoid(), wide), "hardswish": (nn.Hardswish(), wide),
        "elu": (nn.ELU(), wide), "leaky_relu": (nn.LeakyReLU(0.2), wide),
        "sign": (torch.sign, wide), "floor_": (_inplace("floor_"), wide),
        "ceil": (torch.ceil, wide), "round": (torch.round, wide),
        "round_decimals": (lambda x: torch.round(x, decimals=1), wide),
        "trunc": (torch.trunc, wide), "rsub": (lambda x: 1 - x, wide),
        "div_floor_scalar": (lambda x: torch.div(x, 0.3, rounding_mode="floor"), wide),
        "div_trunc_scalar": (lambda x: torch.div(x, 0.7, rounding_mode="trunc"), wide),
        "floor_divide": (lambda x: x // 0.5, wide), "remainder_scalar": (lambda x: x % 0.5, wide),
        "fmod_scalar": (lambda x: torch.fmod(x, 0.5), wide),
        "pow_scalar_base": (lambda x: 2**x, wide),
        "exp": (torch.exp, uniform(shape, -20, 0)),  # softmax's exp(x - max)
        "sub_scalar_alpha": (lambda x: torch.sub(x, 0.5, alpha=2), wide),
    }  # fmt: skip
    binary = {
        "div_tensor": (lambda x, y: x / y, positive),
        "div_floor_tensor": (lambda x, y: torch.div(x, y, rounding_mode="floor"), positive),
        "div_trunc_tensor": (lambda x, y: torch.div(x, y, rounding_mode="trunc"), positive),
        "remainder_tensor": (torch.remainder, positive), "fmod_tensor": (torch.fmod, positive),
        "add_alpha": (lambda x, y: torch.add(x, y, alpha=-2), wide),
        "iadd": (lambda x, y: x.clone().add_(y, alpha=0.5), wide),
    }  # fmt: skip
    cases = {name: (Lambda(fn), [spec]) for name, (fn, spec) in unary.items()}
    cases.update({name: (Lambda(fn), [wide, spec]) for name, (fn, spec) in binary.items()})
    return cases


def integer_cases(shape=SHAPE) -> dict:
    """name -> (module, input specs): integer tensors (int64 ids), never quantized.
    ``u55``: False where Ethos-U55 has no form (bitwise ops of two tensors, INTDIV)."""
    ids, small = spans(shape, -5000, 5000), integers(shape, 8)
    cases = {
        "bitwise_and_scalar": (lambda a: a & 0xFF, [ids]),
        "bitwise_or_scalar": (lambda a: a | 12, [ids]),
        "bitwise_xor_scalar": (lambda a: a ^ 0x55, [ids]),
        "bitwise_not": (lambda a: ~a, [ids]),
        "lshift": (lambda a: a << 2, [ids]),
        "rshift": (lambda a: a >> 3, [ids]),
        "bitwise_right_shift_tensor": (torch.bitwise_right_shift, [ids, small]),
        "int_floor_divide": (lambda a: a // 6, [ids]),
        "int_remainder": (lambda a: a % 6, [ids]),
        "int_div_trunc": (lambda a: torch.div(a, -7, rounding_mode="trunc"), [ids]),
        "int_neg_abs_sign": (lambda a: torch.sign(-a).abs(), [ids]),
        "logical_xor": (lambda a, b: torch.logical_xor(a > 0, b > 3).int(), [ids, small]),
    }
    u85_only = {
        "bitwise_and_tensor": (lambda a, b: a & b, [ids, small]),
        "int_floor_divide_tensor": (lambda a, b: a // (b + 1), [ids, small]),
    }
    return {**{n: (Lambda(f), s, True) for n, (f, s) in cases.items()},
            **{n: (Lambda(f), s, False) for n, (f, s) in u85_only.items()}}  # fmt: skip
