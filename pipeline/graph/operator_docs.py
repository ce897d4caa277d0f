"""docs/operators.md, generated from the operator registry and the measured NPU cycles.

    python -m pipeline.graph.operator_docs --write    # rewrite docs/operators.md
    python -m pipeline.graph.operator_docs --check    # exit 1 when it is stale

Each operator file's declaration (``OPERATOR = Operator(...)``, ``pipeline/tosa/registry.py``)
gives its FX targets, doc line, quantization rule, profiles and NPU rules; the cycles and the
Vela verdicts are ``benchmarks/bench_operators.py``'s rows, kept in ``docs/operators.json``
(refresh: ``.venv/bin/python benchmarks/bench_operators.py --json docs/operators.json``); the
CPU column compares the TOSA operators of those measured graphs with the kernels of
``pipeline/cpu/graph_format.py``. Every cell says whether it was measured or declared. This
module sits in the top room: it reads the registry and the CPU backend alike.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.cpu.graph_format import OPS as CPU_OPS
from pipeline.tosa import registry

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "operators.md"
MEASURED = REPO / "docs" / "operators.json"
COMMAND = "python -m pipeline.graph.operator_docs --write"
ACCELERATORS = ("ethos-u55-128", "ethos-u85-256")
HEADER = f"""# Operators

One row per operator file (`pipeline/tosa/ops/op_<name>.py`): what it lowers, how the
quantizer annotates it, the TOSA profiles it lowers for, where it runs, and what it costs.
Generated from the operator registry and `docs/operators.json` by `{COMMAND}`: do not
edit by hand (`tests/tosa/test_operator_docs.py` fails when this page is stale).

How to read the support columns:

- **(m)** measured: `benchmarks/bench_operators.py` (int8, Vela 5.2, Ethos-U55-128 and
  Ethos-U85-256) lowered, verified and compiled a case that uses this operator, a module as
  users write it, each graph from that NPU's variant; the cycles are below. *partly*: Vela
  or the pre-Vela check refused some of its forms or shapes (the rule is named below).
  Refresh the data with `.venv/bin/python benchmarks/bench_operators.py --json
  docs/operators.json`, then run `{COMMAND}`.
- **(d)** declared by the operator file: its `profiles` (each FP declaration is backed by FP
  cases in its `tests/tosa/ops/test_op_<name>.py`), and the Ethos-U55/U65 rules it declares
  for the TOSA operators it emits, which the pre-Vela check applies after the rules that
  hold for every operator (integer tensors only; on U55/U65 Vela's table of unsupported
  operators, and no bool tensors).
- **CPU kernels**: whether every TOSA operator of its measured graphs has a kernel in
  `pipeline/cpu/graph_format.py` (graphs the U55/U65 variant rewrote are left out).
- **n/m**: not measured (no benchmark case uses the operator); *rules (d)*: the operator file
  declares Ethos-U55/U65 rules for the TOSA operators it emits (listed in its section).
"""


def _rows() -> list[dict]:
    return json.loads(MEASURED.read_text()) if MEASURED.is_file() else []


def _measures(row: dict, module: str, operator: registry.Operator) -> bool:
    """Whether a benchmark row is this operator's: its family names one of the file's FX
    targets (``aten.<family>.*``), or the file names the row in ``measured_by``."""
    family, form = row["family"], f"{row['family']}/{row['form']}"
    if operator.measured_by:
        return family in operator.measured_by or form in operator.measured_by
    return any(t.split(".")[1] == family for t, v in registry.visitors().items()
               if v.__module__ == module and t.startswith("aten."))


def _verdict(rows: list[dict], accelerator: str) -> str:
    results = [r[accelerator] for r in rows if accelerator in r]
    if not results:
        return "n/m"
    ran = sum("cycles" in r for r in results)
    return ("yes" if ran == len(results) else "partly" if ran else "no") + " (m)"


def _declared_u55(operator: registry.Operator) -> str:
    owned = sorted({op for families, by_op in operator.npu.items()
                    for op in by_op if "u55" in registry.as_tuple(families)})  # fmt: skip
    return "n/m; rules (d)" if owned else "n/m"


def _cpu(rows: list[dict]) -> str:
    plain = [r for r in rows if "ops" in r and not r.get("rewrites")]
    if not plain:
        return "n/m"
    missing = sorted({op for r in plain for op in r["ops"]} - set(CPU_OPS))
    return f"no: {', '.join(missing)} (m)" if missing else "yes (m)"


def _rule_names(quant) -> str:
    rules = quant.values() if isinstance(quant, dict) else [quant]
    kinds = [r.kind + ("(activation)" if r.activation else "")
             for rs in rules for r in registry.as_tuple(rs)]
    return ", ".join(dict.fromkeys(kinds))


def _summary(operators: dict, measured: dict) -> list[str]:
    lines = ["| operator | quantized as | INT | FP | Ethos-U55/U65 | Ethos-U85 | CPU kernels |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for module, operator in operators.items():
        name, rows = module.rsplit(".", 1)[1], measured[module]
        int8 = "yes (m)" if any("max_diff" in r for r in rows) else "yes (d)"
        fp = "yes (d)" if "FP" in operator.profiles else "no (d)"
        u55 = _verdict(rows, ACCELERATORS[0])
        u55 = u55 if rows else _declared_u55(operator)
        u85 = _verdict(rows, ACCELERATORS[1])
        lines.append(f"| [{name}](#{name}) | {_rule_names(operator.quant)} | "
                     f"{int8} | {fp} | {u55} | {u85} | {_cpu(rows)} |")
    return lines


def _cell(result: dict | None) -> str:
    if result is None:
        return "-"
    if "cycles" in result:
        return f"{result['cycles']:,} ({result['share']:.0%} NPU)"
    return "refused: " + "; ".join(result.get("rules", [])) if result.get("rules") else (
        "error: " + result.get("error", "")[:120])


def _section(module: str, operator: registry.Operator, rows: list[dict]) -> list[str]:
    name = module.rsplit(".", 1)[1]
    targets = sorted(t for t, v in registry.visitors().items() if v.__module__ == module)
    lines = ["", f"### {name}", "", f"{operator.doc}.", "",
             f"- FX targets: {', '.join(f'`{t}`' for t in targets)}",
             f"- quantization rule: {_rule_names(operator.quant)}",
             f"- profiles (declared): {', '.join(operator.profiles)}"]  # fmt: skip
    for families, by_op in operator.npu.items():
        named = "/".join(f"Ethos-{f.upper()}" for f in registry.as_tuple(families))
        for tosa_op, rules in by_op.items():
            for rule in registry.as_tuple(rules):
                doc = (rule.__doc__ or rule.__name__).strip().split("\n\n")[0]
                lines.append(f"- {named} rule on {tosa_op} (`{rule.__name__}`): "
                             f"{' '.join(doc.split())}")
    if rows:
        lines += ["", "Measured (max abs diff in LSB; NPU cycles on U55-128 and U85-256; the "
                  "TOSA operators of the U55/U65 variant):", ""]
        for r in rows:
            ops = " ".join(dict.fromkeys(r.get("ops", []))) or r.get("lower_error", "")[:80]
            lines.append(f"{_measured(r)}; TOSA: {ops}")
    return lines


def _measured(r: dict) -> str:
    """One measured form as a list item (tables of these ran to 190 characters a row)."""
    diff = r.get("max_diff", "failed" if "verify_error" in r else "-")
    return (f"- {r['family']}: {r['form']} `{r['shape']}`: diff {diff}; "
            f"U55 {_cell(r.get(ACCELERATORS[0]))}; U85 {_cell(r.get(ACCELERATORS[1]))}")


def _compositions(rows: list[dict], claimed: set[int]) -> list[str]:
    """Rows of no single operator file: decompositions (softmax, layer_norm, attention, ...)
    lowered through several."""
    rest = [r for i, r in enumerate(rows) if i not in claimed]
    if not rest:
        return []
    lines = ["", "## Compositions", "",
             "Measured forms that no one operator file lowers: `pipeline/normalise/` writes them",
             "out in the operators above before quantization (max abs diff in LSB; NPU cycles on",
             "U55-128 and U85-256).", ""]
    lines += [_measured(r) for r in rest]
    return lines


def page() -> str:
    """The text of docs/operators.md for the registry and measurements as they are now."""
    operators = registry.operators()
    rows = _rows()
    measured, claimed = {}, set()
    for module, operator in operators.items():
        mine = [i for i, r in enumerate(rows) if _measures(r, module, operator)]
        measured[module] = [rows[i] for i in mine]
        claimed.update(mine)
    lines = [HEADER.rstrip("\n"), "", "## Summary", "", *_summary(operators, measured), "",
             "## Operators"]  # fmt: skip
    for module, operator in operators.items():
        lines += _section(module, operator, measured[module])
    lines += _compositions(rows, claimed)
    registry.take_used()  # reading declarations here is no stage's use
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help=f"rewrite {PAGE.relative_to(REPO)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    args = parser.parse_args(argv)
    text = page()
    if args.write:
        PAGE.parent.mkdir(exist_ok=True)
        PAGE.write_text(text)
        return 0
    if not PAGE.is_file() or PAGE.read_text() != text:
        print(f"{PAGE.relative_to(REPO)}: must match the operator registry; got a stale page. "
              f"Run `{COMMAND}`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
