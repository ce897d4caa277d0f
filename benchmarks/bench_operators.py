#!/usr/bin/env python3
"""NPU cycles of every lowered operator family on Ethos-U55-128 and Ethos-U85-256, a few
shapes each.

Usage: .venv/bin/python benchmarks/bench_operators.py [--dtype int8|a16w8] [--only REGEX]
       [--json FILE] [--markdown]

Each case (a module as users write it, at a small and a typical embedded shape) is quantized,
lowered, verified against torch (max |diff| in output LSBs) and compiled by Vela for each NPU
from that NPU's variant of the graph (the compile chain, ``pipeline.chain.run``, as the
operator tests run it): NPU cycles and NPU operator share, or the rule of the
pre-Vela check that refuses it. The elementwise functions are ``bench_elementwise.py``'s.
``--markdown`` prints a "What runs where" table: a row per form, its cycles at the
last (typical) shape.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# What the U55/U65 variant's passes (pipeline/tosa/passes NPU_VARIANTS) remove, by pass.
_REWRITES = {
    "split_transpose_conv": {"TRANSPOSE_CONV2D"},
    "replace_scatter": {"SCATTER"},
    "replace_gather": {"GATHER"},
    "replace_int_ops": {"BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "BITWISE_NOT",
                        "ARITHMETIC_RIGHT_SHIFT", "LOGICAL_LEFT_SHIFT"},
    "replace_bools": {"SELECT", "EQUAL", "GREATER", "GREATER_EQUAL", "LOGICAL_AND",
                      "LOGICAL_OR", "LOGICAL_XOR", "LOGICAL_NOT", "CAST"},
}  # fmt: skip


def rewrites(common: list[str], u55: list[str]) -> list[str]:
    """The U55/U65 variant passes that changed the graph, told by the operators they leave."""
    before, after = Counter(common), Counter(u55)
    if before == after:
        return []
    names = [name for name, ops in _REWRITES.items() if any(before[o] > after[o] for o in ops)]
    if before["AVG_POOL2D"] > after["AVG_POOL2D"]:
        names.append("split_global_pool")
    if after["RESIZE"] and after["DEPTHWISE_CONV2D"] > before["DEPTHWISE_CONV2D"]:
        names.append("split_bilinear_resize")
    bordered = any(after[o] > before[o] for o in ("PAD", "CONCAT"))
    if not names and (before["DEPTHWISE_CONV2D"] > after["DEPTHWISE_CONV2D"] or bordered):
        names.append("pad_strided_conv")
    return names or ["a U55 variant pass"]


def measure(module, specs, dtype: str, folder: Path) -> dict:
    from npu_cycles import compile_case, compile_on_npus, max_diff

    compiled = compile_case(module, specs, dtype, folder / "case")
    u55 = _operators(compiled.variant("u55"))
    row = {"ops": u55, "rewrites": rewrites(_operators(compiled.folder / "model.tosa"), u55)}
    try:
        row["max_diff"] = max_diff(compiled.verify())
    except Exception as exc:  # still compiled: the cycles of a wrong graph are worth seeing
        row["verify_error"] = _first_line(exc)
    row.update(compile_on_npus(compiled, folder))
    return row


def _operators(tosa: Path) -> list[str]:
    from pipeline.tosa.flatbuffer import operator_names

    return [o for o in operator_names(tosa) if not o.startswith("CONST")]


def _first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"


def short_ops(ops: list[str]) -> str:
    counts = Counter(ops)
    return " ".join(f"{o}x{counts[o]}" if counts[o] > 1 else o for o in dict.fromkeys(ops))


def cell(result: dict | None, width: int = 0) -> str:
    if result is None:
        return "-"
    if "cycles" in result:
        return f"{result['cycles']} ({result['share']:.0%})"
    text = (
        "no: " + "; ".join(result["rules"]) if result.get("rules") else "error: " + result["error"]
    )
    return text[:width] if width else text


def shape_label(specs) -> str:
    from models.cases import random_inputs

    shapes = dict.fromkeys("x".join(map(str, t.shape)) for t in random_inputs(specs, 0))
    return ",".join(shapes)


def run(cases, dtype: str, folder: Path) -> list[dict]:
    from npu_cycles import ACCELERATORS

    rows, start = [], time.perf_counter()
    print(f"{'#':>7} {'operator/form':<40} {'shape':<22} {'max|d|':>6} "
          f"{'U55-128 cycles':<24} {'U85-256 cycles':<24} U55 variant TOSA operators")  # fmt: skip
    for index, (family, form, shape, module, specs) in enumerate(cases, 1):
        row = {"family": family, "form": form, "shape": shape, "dtype": dtype}
        try:
            row.update(measure(module, specs, dtype, folder / f"{index}"))
        except Exception as exc:  # the row says why, the next case still runs
            row["lower_error"] = _first_line(exc)
        rows.append(row)
        name = f"{family}/{form}"
        head = f"{index:>3}/{len(cases):<3} {name:<40} {shape:<22}"
        if "lower_error" in row:
            print(f"{head} failed to lower: {row['lower_error'][:110]}", flush=True)
            continue
        u55, u85 = (cell(row[a], 24) for a in ACCELERATORS)
        diff = row.get("max_diff", "FAIL")
        print(f"{head} {diff:>6} {u55:<24} {u85:<24} {short_ops(row['ops'])[:60]}", flush=True)
        if "verify_error" in row:
            print(f"{'':>8}verify: {row['verify_error'][:120]}", flush=True)
    print(f"{len(rows)} cases in {time.perf_counter() - start:.0f} s")
    return rows


def _without_advice(rule: str) -> str:
    """A rule without its long parenthesised advice (the docs say it already)."""
    kept, depth, start = [], 0, 0
    for i, char in enumerate(rule):
        if char == "(":
            if depth == 0:
                kept.append(rule[start:i].rstrip())
                start = i
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                group = rule[start : i + 1]
                kept.append(" " + group if len(group) <= 40 else "")
                start = i + 1
    return "".join(kept) + rule[start:]


def _rule(result: dict) -> str:
    rules = [_without_advice(r) for r in result.get("rules", [])]
    return "no: " + "; ".join(rules) if rules else "error: " + result.get("error", "")


def markdown(rows: list[dict]) -> str:
    from npu_cycles import ACCELERATORS

    lines = ["| operator | form | Ethos-U55/U65 | Ethos-U85 | shape | U55-128 cycles | "
             "U85-256 cycles |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    forms: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        forms.setdefault((row["family"], row["form"]), []).append(row)
    for (family, form), group in forms.items():
        last = group[-1]
        if "lower_error" in last:
            lines.append(f"| {family} | {form} | lowering fails: {last['lower_error']} | | "
                         f"{last['shape']} | | |")  # fmt: skip
            continue
        u55, u85 = (_where(group, a) for a in ACCELERATORS)
        cycles = [last[a]["cycles"] if "cycles" in last[a] else "-" for a in ACCELERATORS]
        lines.append(f"| {family} | {form} | {u55} | {u85} | {last['shape']} | "
                     f"{cycles[0]} | {cycles[1]} |")  # fmt: skip
    return "\n".join(lines)


def _where(group: list[dict], accelerator: str) -> str:
    """yes (via the U55 variant's rewrite) on every shape, or the first refusal's rule."""
    measured = [r for r in group if accelerator in r]
    refused = [r for r in measured if "cycles" not in r[accelerator]]
    if refused:
        some = f" (at {refused[0]['shape']})" if len(refused) < len(measured) else ""
        return _rule(refused[0][accelerator]) + some
    via = sorted({name for r in measured for name in r["rewrites"]}) if "u55" in accelerator else []
    return "yes" + (f" via {', '.join(via)}" if via else "")


def _cases() -> list[tuple]:
    """(family, form, make(shape) -> module, input specs per shape); modules as users write
    them, the last shape the typical one."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from models.cases import Fn, booleans, integers

    def f(fn):  # a module whose forward is ``fn(*inputs)``
        return lambda shape: Fn(lambda layers, *xs: fn(*xs))

    one = lambda *shapes: [[s] for s in shapes]  # noqa: E731
    two = lambda *pairs: [list(p) for p in pairs]  # noqa: E731
    image = one((1, 16, 8, 8), (1, 16, 32, 32), (1, 64, 28, 28))
    image2 = one((1, 16, 8, 8), (1, 32, 56, 56))
    seq = one((1, 16, 64), (1, 128, 64))
    c = lambda shape: shape[1]  # noqa: E731
    e = lambda shape: shape[-1]  # noqa: E731
    conv = lambda k, *a, **kw: lambda s: nn.Conv2d(s[1], s[1], k, *a, **kw)  # noqa: E731
    pairs = lambda small, typical: two([small] * 2, [typical] * 2)  # noqa: E731
    qkv = lambda *shapes: [[(s, 2.0)] * 3 for s in shapes]  # noqa: E731
    # fmt: off
    return [
        ("conv2d", "3x3 pad 1", conv(3, padding=1), image),
        ("conv2d", "1x1", conv(1), image),
        ("conv2d", "3x3 stride 2", conv(3, 2, 1), image2),
        ("conv2d", "3x3 dilation 2", conv(3, padding=2, dilation=2), image2),
        ("conv2d", '5x5 padding="same"', conv(5, padding="same"), image2),
        ("conv2d", "7x7 stride 4 pad 3 (stem)", lambda s: nn.Conv2d(3, 16, 7, 4, 3),
         one((1, 3, 32, 32), (1, 3, 96, 96))),
        ("conv2d", "depthwise 3x3", lambda s: nn.Conv2d(c(s), c(s), 3, 1, 1, groups=c(s)), image),
        ("conv2d", "depthwise 3x3 stride 2",
         lambda s: nn.Conv2d(c(s), c(s), 3, 2, 1, groups=c(s)), image2),
        ("conv2d", "grouped 3x3, 4 groups", conv(3, padding=1, groups=4), image2),
        ("conv1d", "k3 pad 1", lambda s: nn.Conv1d(c(s), c(s), 3, padding=1),
         one((1, 16, 16), (1, 64, 128))),
        ("conv3d", "3x3x3 pad 1", lambda s: nn.Conv3d(c(s), c(s), 3, padding=1),
         one((1, 8, 4, 8, 8), (1, 16, 8, 16, 16))),
        ("conv_transpose2d", "k4 stride 2 pad 1",
         lambda s: nn.ConvTranspose2d(c(s), c(s) // 2, 4, 2, 1), image2),
        ("conv_transpose2d", "k2 stride 2",
         lambda s: nn.ConvTranspose2d(c(s), c(s) // 2, 2, 2), image2),
        ("linear", "vector", lambda s: nn.Linear(e(s), e(s)), one((1, 64), (1, 256))),
        ("linear", "tokens", lambda s: nn.Linear(e(s), e(s)), seq),
        ("matmul", "x @ y", f(lambda x, y: x @ y),
         two([(1, 16, 32), (1, 32, 16)], [(1, 128, 64), (1, 64, 128)])),
        ("matmul", "torch.bmm, 4 heads", f(torch.bmm),
         two([(4, 16, 16), (4, 16, 16)], [(4, 64, 32), (4, 32, 64)])),
        ("add", "x + y, y per channel", f(lambda x, y: x + y),
         two([(1, 16, 8, 8), (1, 16, 1, 1)], [(1, 32, 56, 56), (1, 32, 1, 1)])),
        ("mul", "x * y, y per position", f(lambda x, y: x * y),
         two([(1, 16, 8, 8), (1, 1, 8, 8)], [(1, 32, 56, 56), (1, 1, 56, 56)])),
        ("max_pool2d", "2x2 stride 2", lambda s: nn.MaxPool2d(2), image2),
        ("max_pool2d", "3x3 stride 2 pad 1", lambda s: nn.MaxPool2d(3, 2, 1), image2),
        ("avg_pool2d", "2x2 stride 2", lambda s: nn.AvgPool2d(2), image2),
        ("avg_pool2d", "3x3 stride 1 pad 1", lambda s: nn.AvgPool2d(3, 1, 1), image2),
        ("adaptive_avg_pool2d", "to 1x1 (global)", lambda s: nn.AdaptiveAvgPool2d(1), image),
        ("adaptive_avg_pool2d", "to 4x4", lambda s: nn.AdaptiveAvgPool2d(4), image),
        ("adaptive_avg_pool2d", "to 5x5 (windows of 2 sizes)", lambda s: nn.AdaptiveAvgPool2d(5),
         image),
        ("mean", "x.mean((2, 3))", f(lambda x: x.mean((2, 3))), image),
        ("mean", "x.mean(-1)", f(lambda x: x.mean(-1)), seq),
        ("mean", "x.mean((1, 2)), C and H apart in NHWC", f(lambda x: x.mean((1, 2))), image),
        ("sum", "x.sum(1)", f(lambda x: x.sum(1)), seq),
        ("amax", "x.amax(-1)", f(lambda x: x.amax(-1)), seq),
        ("amax", "x.amax(1), channels", f(lambda x: x.amax(1)), image2),
        ("argmax", "x.argmax(-1)", f(lambda x: x.argmax(-1)), one((1, 10), (1, 128, 64))),
        ("argmax", "x.argmax(1), sequence", f(lambda x: x.argmax(1)), seq),
        ("var", "x.var(-1)", f(lambda x: x.var(-1)), seq),
        ("std", "x.std((2, 3))", f(lambda x: x.std((2, 3))), image2),
        ("softmax", "dim -1", lambda s: nn.Softmax(-1),
         one((1, 10), (1, 4, 16, 16), (1, 4, 64, 64))),
        ("log_softmax", "dim -1", lambda s: nn.LogSoftmax(-1), one((1, 10), (1, 16, 128))),
        ("layer_norm", "last dim", lambda s: nn.LayerNorm(e(s)), seq),
        ("group_norm", "4 groups", lambda s: nn.GroupNorm(4, c(s)), image2),
        ("instance_norm", "InstanceNorm2d, affine",
         lambda s: nn.InstanceNorm2d(c(s), affine=True), image2),
        ("scaled_dot_product_attention", "no mask", f(F.scaled_dot_product_attention),
         qkv((1, 4, 16, 16), (1, 4, 64, 16))),
        ("scaled_dot_product_attention", "is_causal",
         f(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
         qkv((1, 4, 16, 16), (1, 4, 64, 16))),
        ("scaled_dot_product_attention", "bool mask input",
         f(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
         [[*qkv((1, 2, 16, 16))[0], booleans((1, 1, 16, 16))]]),
        ("MultiheadAttention", "self-attention, 4 heads",
         lambda s: Fn(lambda m, x: m[0](x, x, x, need_weights=False)[0],
                      nn.MultiheadAttention(e(s), 4, batch_first=True)),
         one((1, 16, 32), (1, 64, 64))),
        ("LSTM", "1 layer, hidden 32, output",
         lambda s: Fn(lambda m, x: m[0](x)[0], nn.LSTM(e(s), 32, batch_first=True)),
         one((1, 8, 16), (1, 32, 32))),
        ("GRU", "1 layer, hidden 32, output",
         lambda s: Fn(lambda m, x: m[0](x)[0], nn.GRU(e(s), 32, batch_first=True)),
         one((1, 8, 16), (1, 32, 32))),
        ("cat", "channels", f(lambda x, y: torch.cat([x, y], 1)),
         pairs((1, 16, 8, 8), (1, 32, 56, 56))),
        ("cat", "last dim", f(lambda x, y: torch.cat([x, y], -1)),
         pairs((1, 16, 32), (1, 128, 32))),
        ("slice", "x[:, :8]", f(lambda x: x[:, :8]), image2),
        ("slice", "x[..., ::2]", f(lambda x: x[..., ::2]), seq),
        ("permute", "NCHW to NHWC", f(lambda x: x.permute(0, 2, 3, 1)), image2),
        ("transpose", "x.transpose(1, 2)", f(lambda x: x.transpose(1, 2)), seq),
        ("reshape", "split heads", f(lambda x: x.reshape(x.shape[0], x.shape[1], 4, -1)), seq),
        ("reshape", "flatten", f(lambda x: x.flatten(1)), image2),
        ("pad", "constant 1", f(lambda x: F.pad(x, (1, 1, 1, 1))), image2),
        ("pad", "reflect 2", f(lambda x: F.pad(x, (2, 2, 2, 2), mode="reflect")), image2),
        ("upsample", "nearest x2", lambda s: nn.Upsample(scale_factor=2), image2),
        ("upsample", "bilinear x2", lambda s: nn.Upsample(scale_factor=2, mode="bilinear"),
         image2),
        ("pixel_shuffle", "x2", lambda s: nn.PixelShuffle(2), image2),
        ("embedding", "1000 x 64", lambda s: nn.Embedding(1000, 64),
         one(integers((1, 16), 1000), integers((1, 128), 1000))),
        ("index_select", "ids input", f(lambda x, i: x.index_select(1, i)),
         two([(1, 64, 32), integers((16,), 64)], [(1, 128, 64), integers((64,), 128)])),
        ("gather", "ids input, last dim", f(lambda x, i: x.gather(-1, i)),
         two([(1, 16, 64), integers((1, 16, 8), 64)],
             [(1, 128, 64), integers((1, 128, 16), 64)])),
        ("where", "where(x > 0, x, y)", f(lambda x, y: torch.where(x > 0, x, y)),
         pairs((1, 16, 8, 8), (1, 32, 56, 56))),
        ("masked_fill", "bool mask input", f(lambda x, m: x.masked_fill(m, 0.0)),
         two([(1, 16, 64), booleans((1, 16, 64))], [(1, 128, 64), booleans((1, 128, 64))])),
        ("comparison", "x > y, bool output", f(lambda x, y: x > y),
         pairs((1, 16, 8, 8), (1, 32, 56, 56))),
        ("comparison", "(x > y).float() * x", f(lambda x, y: (x > y).float() * x),
         pairs((1, 16, 8, 8), (1, 32, 56, 56))),
        ("cumsum", "x.cumsum(-1)", f(lambda x: x.cumsum(-1)), one((1, 16, 16), (1, 16, 128))),
        ("flip", "x.flip(-1)", f(lambda x: x.flip(-1)), image2),
        ("repeat", "x.repeat(1, 1, 2, 2)", f(lambda x: x.repeat(1, 1, 2, 2)), image2),
    ]
    # fmt: on


def cases() -> list[tuple]:
    """(family, form, shape label, module, input specs): every form at each of its shapes."""
    import torch

    built = []
    for family, form, make, shapes in _cases():
        for specs in shapes:
            torch.manual_seed(0)
            first = specs[0]
            shape = first if isinstance(first, tuple) and isinstance(first[0], int) else None
            built.append((family, form, shape_label(specs), make(shape).eval(), specs))
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="int8", choices=("int8", "a16w8"),
                        help="quantization scheme")
    parser.add_argument("--only", default="", help="regex on family/form")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--markdown", action="store_true", help="also print the per-form cycles as a markdown table")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's, per case
    chosen = [c for c in cases() if re.search(args.only, f"{c[0]}/{c[1]}")]
    with tempfile.TemporaryDirectory(prefix="bench-operators-") as tmp:
        rows = run(chosen, args.dtype, Path(tmp))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()
