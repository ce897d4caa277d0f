"""The operator registry: every ``pipeline/tosa/ops/op_*.py`` is found and imported, and
declares, in that one file,

- the FX targets it lowers, with ``@lowers("aten.add.Tensor", ...)`` on its visitor
  ``visit(node, ctx)`` (it reads its inputs' TOSA tensors from ``ctx``, emits TOSA operators
  into ``ctx.graph`` and defines the node's output tensor);
- ``OPERATOR = Operator(...)``: its doc line, how the quantizer annotates those targets
  (``quant``: a rule of ``pipeline/quant/rules.py`` for all of them, or per target), the
  Ethos-U constraints on the TOSA operators it emits, per NPU family (``npu``), and the TOSA
  profiles it lowers for.

So adding an operator is its ``op_<name>.py`` plus its test; nothing central is edited.

Stage keys see the operator files two ways (``pipeline/graph/code.py``): the index of which
file declares what (``index``: targets, quantization rules and NPU rules -> file), in the
key of every stage that reads the registry, and the files whose declarations a run used
(``take_used``: the visitors a lowering dispatched to, the quantization rules the quantizer
applied, the NPU rules the placement check applied), as a second-level key. Editing an
operator a model does not use therefore moves none of its keys.

Importing this module costs no torch; the operator files (which import torch) are imported on
the first question about them.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.fx import target_name

Visitor = Callable[[Any, Any], None]  # (torch.fx.Node, LoweringContext) -> None
# An NPU rule: (flatbuffer.Resolved operator) -> (what it must, what it has) or None.
NpuRule = Callable[[Any], "tuple[str, str] | None"]
FAMILIES = ("u55", "u65", "u85")
U55_U65 = ("u55", "u65")  # Vela 5.2 has one operator table for both

_VISITORS: dict[str, Visitor] = {}
_OPERATORS: dict[str, Operator] = {}  # module name -> its declaration
_QUANT: dict[str, tuple[tuple, str]] = {}  # FX target -> (rules, module)
_NPU: dict[str, dict[str, tuple[tuple, str]]] = {}  # family -> TOSA op -> (rules, module)
_LOADED = False
_USED: set[str] = set()  # modules whose declarations were used since the last take_used()


@dataclass(frozen=True)
class Operator:
    """What an operator file declares beside its visitors (``OPERATOR = Operator(...)``)."""

    doc: str  # one line: what it lowers to
    # A rule (or tuple of rules) of pipeline/quant/rules.py for every target the file lowers,
    # or {target: rule or rules}: each target it lowers once.
    quant: Any
    # {family or (families): {TOSA operator: (rule, ...)}}: the constraints of the TOSA
    # operators this file emits (and owns), checked in order after the generic ones.
    npu: Mapping = field(default_factory=dict)
    profiles: tuple[str, ...] = ("INT", "FP")  # the TOSA profiles it lowers for
    # bench_operators.py forms that measure it ("family" or "family/form"), when its targets
    # do not name them (docs/operators.md)
    measured_by: tuple[str, ...] = ()


def lowers(*targets: str) -> Callable[[Visitor], Visitor]:
    """Register the decorated visitor for FX targets named like ``aten.conv2d.default``."""

    def register(visitor: Visitor) -> Visitor:
        for target in targets:
            if target in _VISITORS and _VISITORS[target] is not visitor:
                raise RuntimeError(
                    f"{target} has two visitors: {_VISITORS[target].__module__} "
                    f"and {visitor.__module__}"
                )
            _VISITORS[target] = visitor
        return visitor

    return register


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    package = importlib.import_module("pipeline.tosa.ops")
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("op_"):
            loaded = importlib.import_module(f"pipeline.tosa.ops.{module.name}")
            declared = getattr(loaded, "OPERATOR", None)
            if isinstance(declared, Operator):
                _declare(loaded.__name__, declared)
    _LOADED = True


def as_tuple(value) -> tuple:
    """A declaration's one rule (or family) or several, as a tuple."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _declare(module: str, operator: Operator) -> None:
    """Index one file's declaration: its quantization rules by target, its NPU rules by
    family and TOSA operator (each owned by one file, so their order is the file's). A bad
    declaration is refused whole, before anything is indexed."""
    mine = sorted(t for t, v in _VISITORS.items() if v.__module__ == module)
    per_target = (operator.quant if isinstance(operator.quant, Mapping)
                  else dict.fromkeys(mine, operator.quant))  # fmt: skip
    for target in per_target:
        if target not in mine:
            raise RuntimeError(f"{module}: a quantization rule must be for a target it lowers "
                               f"({', '.join(mine)}); got {target}")
    npu = {(family, tosa_op): as_tuple(rules) for families, by_op in operator.npu.items()
           for family in as_tuple(families) for tosa_op, rules in by_op.items()}  # fmt: skip
    for family, tosa_op in npu:
        if family not in FAMILIES:
            raise RuntimeError(f"{module}: NPU family must be one of {FAMILIES}; got {family}")
        owner = _NPU.get(family, {}).get(tosa_op)
        if owner is not None:
            raise RuntimeError(f"TOSA {tosa_op} on {family} has rules in two files: "
                               f"{owner[1]} and {module}")
    _OPERATORS[module] = operator
    _QUANT.update({t: (as_tuple(rules), module) for t, rules in per_target.items()})
    for (family, tosa_op), rules in npu.items():
        _NPU.setdefault(family, {})[tosa_op] = (rules, module)


class _Using(Mapping):
    """A read-only view of ``key -> (value, module)`` whose lookups mark the module used: the
    declarations a run consulted are the operator files its outputs depend on."""

    def __init__(self, entries: dict[str, tuple[tuple, str]]):
        self._entries = entries

    def __getitem__(self, key: str) -> tuple:
        value, module = self._entries[key]  # a KeyError for a key no file declares
        _USED.add(module)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def lowered_targets() -> frozenset[str]:
    """The FX targets that have a visitor: the normalisation keeps them as they are."""
    return frozenset(visitors())


def visitors() -> dict[str, Visitor]:
    """Every registered target -> visitor (imports all operator modules on first use)."""
    _load_all()
    return dict(_VISITORS)


def visitor_for(target: Any) -> Visitor | None:
    """The visitor of an FX call target (None without one); its module counts as used."""
    _load_all()
    visitor = _VISITORS.get(target_name(target))
    if visitor is not None:
        _USED.add(visitor.__module__)
    return visitor


def quant_rules() -> Mapping[str, tuple]:
    """FX target -> the quantization rules its operator file declares; a lookup marks the
    file used."""
    _load_all()
    return _Using(_QUANT)


def npu_rules(family: str) -> Mapping[str, tuple[NpuRule, ...]]:
    """TOSA operator -> the rules an operator file declares for it on ``family`` (u55, u65,
    u85); a lookup marks the file used."""
    _load_all()
    return _Using(_NPU.get(family, {}))


def operators() -> dict[str, Operator]:
    """Operator module (``pipeline.tosa.ops.op_add``) -> its declaration (None: none)."""
    _load_all()
    modules = sorted({v.__module__ for v in _VISITORS.values()} | set(_OPERATORS))
    return {m: _OPERATORS.get(m) for m in modules}


def index() -> dict[str, str]:
    """What each operator file declares, as entries -> file (``op_add``): ``<target>`` for a
    lowering, ``quant <target>`` for a quantization rule, ``npu <family> <TOSA op>`` for NPU
    rules. Moving any of them from one file to another changes it."""
    _load_all()
    short = lambda module: module.rsplit(".", 1)[1]  # noqa: E731
    entries = {t: short(v.__module__) for t, v in _VISITORS.items()}
    entries.update({f"quant {t}": short(m) for t, (_, m) in _QUANT.items()})
    entries.update({f"npu {family} {op}": short(m)
                    for family, ops in _NPU.items() for op, (_, m) in ops.items()})
    return dict(sorted(entries.items()))


def take_used() -> set[str]:
    """The operator modules whose declarations (visitors, quantization or NPU rules) were
    handed out since the last call (then none)."""
    used = set(_USED)
    _USED.clear()
    return used
