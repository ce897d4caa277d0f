"""Load and save ExportedPrograms that may hold quantize/dequantize operators."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import typing
import warnings
from pathlib import Path

import torch

# Registers torch.ops.quantized_decomposed.*: torch.export.load cannot resolve the q/dq
# operators of a quantized program without it.
import torch.ao.quantization.fx._decomposed  # noqa: F401
from torch.export import ExportedProgram

# torch 2.13 warns of its own deprecated LeafSpec whenever it copies an output spec (each
# ExportedProgram.module() of a model with a tuple output): noise in every build's output
# that no user can act on.
warnings.filterwarnings("ignore", r".*isinstance\(treespec, LeafSpec\)", FutureWarning)


def load_program(path: Path) -> ExportedProgram:
    _memoize_schema_type_hints()
    return torch.export.load(path)


class _MemoizedTyping:
    """``typing`` as torch's program deserialiser sees it, but for ``get_type_hints`` of its
    schema dataclasses, computed once per class: torch asks for them at every node, argument
    and tensor it reads back (200,000 calls, two thirds of loading MobileNetV2's quantized
    program). The hints of a class never change; torch only reads them."""

    def __init__(self, schema_globals: dict):
        self._globals = schema_globals

    def __getattr__(self, name: str):
        return getattr(typing, name)

    def get_type_hints(self, obj, globalns=None, localns=None, include_extras=False):
        if globalns is self._globals and localns is None and not include_extras:
            return _schema_hints(obj, self)
        return typing.get_type_hints(obj, globalns, localns, include_extras)


@functools.cache
def _schema_hints(cls, proxy: _MemoizedTyping) -> dict:
    return typing.get_type_hints(cls, globalns=proxy._globals)


@functools.cache
def _memoize_schema_type_hints() -> None:
    """Give torch's deserialiser the memoized ``typing`` (once per process; left alone when a
    torch release no longer reads ``typing`` and ``schema`` from those module globals)."""
    from torch._export.serde import serialize

    if getattr(serialize, "typing", None) is typing and hasattr(serialize, "schema"):
        serialize.typing = _MemoizedTyping(vars(serialize.schema))


def save_program(program: ExportedProgram, path: Path) -> None:
    """torch.export.save, byte for byte the same for the same program in any process (so the
    next stage's inputs repeat and doit's checksum check stops an unchanged rebuild there),
    to a temporary folder, then renamed: readers never see half a file."""
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            for node in module.graph.nodes:
                # torch's provenance record: ids of graph objects, new in every process
                node.meta.pop("from_node", None)
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        # The archive's inner folder is named after the file: save under the final name.
        with _no_discarded_canonical_form():
            torch.export.save(program, tmp / path.name)
        os.replace(tmp / path.name, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _no_discarded_canonical_form():
    """torch's serialiser canonicalises a deep copy of every program it saves and throws the
    result away (a self-test of its canonical form; what it writes is the uncanonicalised
    program). For a 49-step LSTM that copy is two thirds of the save (43 of 64 s profiled).
    The file is the same byte for byte without it (``tests/test_programs.py``)."""
    from torch._export.serde import serialize

    original = getattr(serialize, "canonicalize", None)
    if original is None:  # a torch that no longer has it: nothing to skip
        yield
        return
    serialize.canonicalize = lambda ep, constants=None: ep
    try:
        yield
    finally:
        serialize.canonicalize = original


@functools.cache
def memoize_cia_materialization() -> None:
    """Make torch's ``_materialize_cpp_cia_ops`` do its work only when there is new work.

    ``run_decompositions`` collects the composite (CIA) operators it may keep, once per op
    namespace (32 here), and each time asks the dispatcher for every CIA registration and
    looks each one up in ``torch.ops``: half a second per call, a third of normalising a small
    program. The lookups only create the Python operator objects, which then stay; torch
    repeats them because a custom operator may be registered meanwhile. So they run again
    only when the dispatcher's list of CIA registrations changed (read each time: 2 ms). Once
    per process; left alone when a torch release no longer has the function."""
    from torch._export import utils

    original = getattr(utils, "_materialize_cpp_cia_ops", None)
    if original is None:
        return
    done: list = [None]

    def materialize() -> None:
        registered = torch._C._dispatch_get_registrations_for_dispatch_key(
            "CompositeImplicitAutograd")
        if registered != done[0]:
            original()
            done[0] = registered

    utils._materialize_cpp_cia_ops = materialize
