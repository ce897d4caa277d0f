"""Export stage: import the user's model, make its inputs, run ``torch.export`` and normalise
the program (``pipeline.normalise``: functional ops, no no-ops, constants folded).

Outputs (one folder per model): ``model.pt2`` (the float ExportedProgram),
``calibration.pt`` and ``test_inputs.pt`` (lists of input tuples, saved with torch.save).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.errors import StageError
from pipeline.export.inputs import (
    as_inputs,
    calibration_files,
    check_like,
    check_set_size,
    check_values,
    load_folder,
    random_inputs,
)
from pipeline.export.user_code import USER_EXCEPTIONS, call_user, describe, exit_refused

__all__ = ["export", "export_program", "load_attr", "load_folder", "random_inputs"]

TEST_INPUT_SETS = 4
_TEST_SEED_OFFSET = 1000


@contextlib.contextmanager
def _first_on_sys_path(folder: Path) -> Iterator[None]:
    """``folder`` first on sys.path for the block; afterwards sys.path is exactly what it was,
    whatever the user's module did to it (removed, reordered, added or rebound entries)."""
    original = sys.path
    saved = list(original)
    original.insert(0, str(folder))
    try:
        yield
    finally:
        original[:] = saved
        sys.path = original


def load_attr(path: Path, attr: str, where: str):
    """Import ``attr`` from the Python file at ``path`` (its folder first on sys.path).

    Raises:
        StageError: the file cannot be imported (naming the user's line) or lacks ``attr``.
    """
    # A name that is the same in every process (``hash()`` is salted): torch.export records
    # it in the program, whose bytes must repeat for the next stages to be found up to date.
    name = "_ethosu_user_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StageError(where, f"model source must be a Python file; got {path}")
    module = importlib.util.module_from_spec(spec)
    with _first_on_sys_path(path.parent):
        call_user(where, f"importing {path} must succeed", spec.loader.exec_module, module)
    if not hasattr(module, attr):
        found = sorted(n for n in vars(module) if not n.startswith("_"))
        raise StageError(where, f"{path} must define {attr!r}; got only {', '.join(found)}")
    return getattr(module, attr)


def export_program(model, example: tuple, where: str = "", *,
                   lowered: Callable[[], frozenset[str]]):
    """``torch.export`` of ``model`` on ``example``, normalised (``pipeline.normalise``) for a
    lowering that takes the operators ``lowered()`` as they are (asked once the model is
    traced: the registry imports every operator, which a time limit must not charge to the
    user's model file).

    Raises:
        StageError: torch.export cannot capture the model.
    """
    import torch

    import pipeline.programs  # noqa: F401 - its filter of torch's LeafSpec warning
    from pipeline.normalise import normalise

    try:
        with torch.no_grad(), exit_refused(), _torch_logs_held():
            program = torch.export.export(model, example)
    except USER_EXCEPTIONS as exc:  # the user's forward() runs while it is traced
        verb = "called" if isinstance(exc, SystemExit) and "_exit(" in str(exc) else "raised"
        raise StageError(where, f"torch.export must capture the model; it {verb} "
                                f"{describe(exc)}") from exc
    return normalise(flat_outputs(program, where), lowered())


@contextlib.contextmanager
def _torch_logs_held() -> Iterator[None]:
    """Hold back what torch logs in the block (``fake_tensor``'s E-level traceback of a shape
    mismatch, printed before our one-line message): dropped when the block raises (the
    caller reports the failure in one line), logged at its end as it would have been when
    it does not."""
    import logging

    held: list[logging.LogRecord] = []
    # On each of torch's loggers, not on the handlers: torch re-creates its handlers when its
    # log settings are touched (as torch.export does), and a logger's filter sees the records
    # made by that logger.
    loggers = [logger for name, logger in logging.root.manager.loggerDict.items()
               if name.split(".")[0] == "torch" and isinstance(logger, logging.Logger)]

    def hold(record: logging.LogRecord) -> bool:
        held.append(record)
        return False

    for logger in loggers:
        logger.addFilter(hold)
    try:
        yield
    except BaseException:
        held.clear()
        raise
    finally:
        for logger in loggers:
            logger.removeFilter(hold)
        for record in held:
            logging.getLogger(record.name).handle(record)


def flat_outputs(program, where: str):
    """``program`` with its outputs as one flat tuple: a nested tuple or list of tensors
    (``return y, (a, [b])``) becomes ``(y, a, b)``, in that order, which every later stage
    and io.json take.

    Raises:
        StageError: forward() returns something other than tensors (None, a number), no
            tensor at all, or a dict (whose keys would be lost: the message says what to do).
    """
    import torch.utils._pytree as pytree

    spec = program.call_spec.out_spec
    output = next(n for n in program.graph.nodes if n.op == "output")
    leaves = list(output.args[0])
    paths = [pytree.keystr(p) for p, _ in pytree.tree_flatten_with_path(
        pytree.tree_unflatten(list(range(spec.num_leaves)), spec))[0]]
    odd = [(p, v) for p, v in zip(paths, leaves, strict=True) if not _is_tensor(v)]
    if odd or not leaves:
        got = ("nothing (an empty tuple)" if not leaves else ", ".join(
            _describe_output(v) + (f" as output{p}" if p else "") for p, v in odd[:3]))
        raise StageError(where, f"forward() must return a tensor, or a tuple or list of "
                                f"tensors; got {got}")
    if _holds_dict(spec):
        keys = ", ".join(f"output{p}" for p in paths[:4]) + (", ..." if len(paths) > 4 else "")
        raise StageError(where, f"forward() must return a tensor, or a tuple or list of "
                                f"tensors; got a dict ({keys}). Return the tensors as a tuple "
                                f"in a fixed order instead, e.g. `return "
                                f"{', '.join('out' + p for p in paths[:4])}` (in a wrapper "
                                f"module's forward() for a library's model)")
    if any(not c.is_leaf() for c in spec.children()):
        # The graph's own outputs are flat already; only the structure put back around them
        # (ExportedProgram.module(), kept by save and load) changes.
        program._module_call_graph[0].signature.out_spec = pytree.tree_structure(
            tuple(range(len(leaves))))
    return program


def _is_tensor(value) -> bool:
    import torch

    return isinstance(value, torch.fx.Node) and isinstance(value.meta.get("val"), torch.Tensor)


def _describe_output(value) -> str:
    """What forward() returned in place of a tensor: ``None``, ``int 3``, or a number the
    graph computes (``.item()``, ``.tolist()``) with the line that computed it."""
    import torch

    from pipeline.fx import source_of

    if not isinstance(value, torch.fx.Node):
        return (repr(value) if value is None else f"{type(value).__name__} {value!r}")[:80]
    where = source_of(value)
    kind = type(value.meta.get("val")).__name__.removeprefix("Sym").lower()  # SymFloat: float
    return f"a Python {kind} computed in the graph (.item(), .tolist())" + (
        f" at {where}" if where else "")


def _holds_dict(spec) -> bool:
    return (isinstance(spec.type, type) and issubclass(spec.type, dict)) or any(
        _holds_dict(c) for c in spec.children())


def check_program_runs(program, samples: dict[str, tuple], where: str) -> None:
    """Run the exported program on each sample, so that what only fails on real values (an
    int64 input fed to a Linear, ids past an embedding) is named here.

    Args:
        program: the normalised ExportedProgram (not run when it mutates buffers).
        samples: label (``calibration file x.pt``) -> input tuple.

    Raises:
        StageError: a sample the program does not run on, with the node's line in the model.
    """
    import torch

    from pipeline.fx import source_of

    if program.graph_signature.buffers_to_mutate:
        return  # running it would change the buffers that are saved
    module = program.module(check_guards=False)  # as quantization runs it (quant/flow.py)

    class Locating(torch.fx.Interpreter):
        failed = None

        def run_node(self, node):
            try:
                return super().run_node(node)
            except Exception:
                self.failed = self.failed or node
                raise

    for label, sample in samples.items():
        runner = Locating(module)
        try:
            with torch.no_grad():
                runner.run(*sample)
        except Exception as exc:
            at = source_of(runner.failed) if runner.failed is not None else None
            raise StageError(where, f"the exported model must run on {label}; it raised "
                                    f"{describe(exc, at or None)}") from exc


def _build_model(source: Path, attr: str, where: str):
    import torch

    factory = load_attr(source, attr, where)
    if not callable(factory) or isinstance(factory, torch.nn.Module):
        got = type(factory).__name__
        got = f"an instance of {got}; name its class instead" if callable(factory) else got
        raise StageError(where, f"{source}:{attr} must be an nn.Module class or a function "
                                f"returning one; got {got}")
    model = call_user(where, f"{attr}() must build an nn.Module", factory)
    if not isinstance(model, torch.nn.Module):
        raise StageError(where, f"{attr}() must return a torch.nn.Module; got "
                                f"{type(model).__name__}")
    call_user(where, f"{attr}().eval() must succeed", model.eval)
    return model


def _drawer(specs: list[dict] | None, factory: tuple[Path, str] | None, where: str):
    """``draw(seed, label, like)``: one checked input tuple, from the specs or the factory."""
    import torch

    if factory is None:
        def draw(seed: int, label: str, like: tuple | None = None) -> tuple:
            sample = random_inputs(specs or [], seed)
            check_values(sample, f"{label} drawn from targets.yaml", where)
            return sample
        return draw
    path, name = factory
    make = load_attr(path, name, where)
    if not callable(make):
        raise StageError(where, f"{path}:{name} must be a function returning the model's "
                                f"input tensors; got {type(make).__name__}")

    def draw(seed: int, label: str, like: tuple | None = None) -> tuple:
        torch.manual_seed(seed)  # a factory that draws random tensors gets a distinct seed per set
        value = call_user(where, f"{name}() must return the model's inputs", make)
        what = f"{label} from {name}()"
        sample = as_inputs(value, what, where)
        if like is not None:
            check_like(sample, like, what, where)
        check_values(sample, what, where)
        return sample
    return draw


def export(source: Path, attr: str, out_dir: Path, *, inputs: list[dict] | None = None,
           input_factory: tuple[Path, str] | None = None, seed: int = 0,
           calibration_samples: int = 16, calibration_seed: int = 1,
           calibration_folder: Path | None = None, where: str = "",
           lowered: Callable[[], frozenset[str]]) -> dict[str, Path]:
    """Export the model with torch.export and write its calibration and test inputs.

    Args:
        source, attr: the Python file and the class or factory returning an ``nn.Module``.
        out_dir: folder receiving ``model.pt2``, ``calibration.pt``, ``test_inputs.pt``.
        inputs: input specs (shape, dtype, range) used to draw random inputs, or
        input_factory: (file, function) returning one example input tuple.
        seed: seed of the example input; test inputs use seeds after it.
        calibration_samples, calibration_seed: random calibration set, unless
        calibration_folder: a folder of saved samples.
        lowered: returns the operators the lowering takes as they are (``export_program``).

    Returns:
        Output role -> path.

    Raises:
        StageError: the model cannot be imported, built, run or exported, or an input is
            not one it can take (``export/inputs.py``); each names the file, the draw and,
            for the user's code, the line that raised.
    """
    import torch

    from pipeline.programs import save_program

    model = _build_model(source, attr, where)
    draw = _drawer(inputs, input_factory, where)
    example = draw(seed, "the example input")
    tests = {"the example input": example}
    if calibration_folder is not None:
        calibration = load_folder(calibration_folder, where, example)
        labels = [f"calibration file {p}" for p in calibration_files(calibration_folder, where)]
    else:
        check_set_size(example, calibration_samples + TEST_INPUT_SETS, where)
        labels = [f"calibration sample {i}" for i in range(calibration_samples)]
        calibration = [draw(calibration_seed + i, label, example) for i, label in enumerate(labels)]
    for i in range(1, TEST_INPUT_SETS):
        label = f"test input set {i}"
        tests[label] = draw(seed + _TEST_SEED_OFFSET + i - 1, label, example)
    program = export_program(model, example, where, lowered=lowered)
    # Whether a float input runs is decided by its shape and dtype, checked above: the example
    # stands for all. Integer inputs (ids, masks) run or not by their values (an id past the
    # embedding), so then every sample runs once here, where a failure can name it.
    runs = {"the example input": example}
    if any(not t.is_floating_point() for t in example):
        runs |= {**tests, **dict(zip(labels, calibration))}
    check_program_runs(program, runs, where)

    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = {"model": out_dir / "model.pt2", "calibration": out_dir / "calibration.pt",
               "test_inputs": out_dir / "test_inputs.pt"}
    save_program(program, outputs["model"])
    torch.save(calibration, outputs["calibration"])
    torch.save(list(tests.values()), outputs["test_inputs"])
    return outputs
