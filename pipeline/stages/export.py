"""Export stage: import the user's model, make its inputs, run ``torch.export`` and normalise
the program (``pipeline.normalise``: functional ops, no no-ops, constants folded).

Outputs (one folder per model): ``model.pt2`` (the float ExportedProgram),
``calibration.pt`` and ``test_inputs.pt`` (lists of input tuples, saved with torch.save).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import StageError

TEST_INPUT_SETS = 4
_TEST_SEED_OFFSET = 1000


def load_attr(path: Path, attr: str, where: str):
    """Import ``attr`` from the Python file at ``path`` (its folder first on sys.path)."""
    # A name that is the same in every process (``hash()`` is salted): torch.export records
    # it in the program, whose bytes must repeat for the next stages to be found up to date.
    name = "_ethosu_user_" + "".join(c if c.isalnum() else "_" for c in path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StageError(where, f"model source must be a Python file; got {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the user's code: report it, with its own message
        raise StageError(where, f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        sys.path.remove(str(path.parent))
    if not hasattr(module, attr):
        found = sorted(n for n in vars(module) if not n.startswith("_"))
        raise StageError(where, f"{path} must define {attr!r}; got only {', '.join(found)}")
    return getattr(module, attr)


def random_inputs(specs: Sequence[dict], seed: int) -> tuple:
    """Make one input tuple from input specs ({shape, dtype, range}) with a fixed seed."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for spec in specs:
        lo, hi = spec.get("range", (-1.0, 1.0))
        dtype = getattr(torch, spec.get("dtype", "float32"))
        if dtype.is_floating_point:
            t = torch.rand(spec["shape"], generator=generator) * (hi - lo) + lo
            tensors.append(t.to(dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, spec["shape"], generator=generator).bool())
        else:
            tensors.append(torch.randint(int(lo), int(hi) + 1, spec["shape"],
                                         generator=generator, dtype=dtype))
    return tuple(tensors)


def load_folder(folder: Path, where: str) -> list[tuple]:
    """Load calibration samples: every ``*.pt`` (tensor or tuple) or ``*.npy`` file, sorted."""
    import numpy as np
    import torch

    files = sorted(p for p in folder.iterdir() if p.suffix in (".pt", ".npy"))
    if not files:
        raise StageError(where, f"calibration folder must hold *.pt or *.npy files; got none in {folder}")
    samples = []
    for path in files:
        value = (torch.from_numpy(np.load(path)) if path.suffix == ".npy"
                 else torch.load(path, weights_only=True))
        samples.append(tuple(value) if isinstance(value, (list, tuple)) else (value,))
    return samples


def export_program(model, example: tuple, where: str = ""):
    """``torch.export`` of ``model`` on ``example``, normalised (``pipeline.normalise``).

    Raises:
        StageError: torch.export cannot capture the model.
    """
    import torch

    from pipeline.normalise import normalise

    try:
        with torch.no_grad():
            program = torch.export.export(model, example)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise StageError(where, f"torch.export must capture the model; it raised "
                                f"{type(exc).__name__}: {first}") from exc
    return normalise(program)


def export(source: Path, attr: str, out_dir: Path, *, inputs: list[dict] | None = None,
           input_factory: tuple[Path, str] | None = None, seed: int = 0,
           calibration_samples: int = 16, calibration_seed: int = 1,
           calibration_folder: Path | None = None, where: str = "") -> dict[str, Path]:
    """Export the model with torch.export and write its calibration and test inputs.

    Args:
        source, attr: the Python file and the class or factory returning an ``nn.Module``.
        out_dir: folder receiving ``model.pt2``, ``calibration.pt``, ``test_inputs.pt``.
        inputs: input specs (shape, dtype, range) used to draw random inputs, or
        input_factory: (file, function) returning one example input tuple.
        seed: seed of the example input; test inputs use seeds after it.
        calibration_samples, calibration_seed: random calibration set, unless
        calibration_folder: a folder of saved samples.

    Returns:
        Output role -> path.

    Raises:
        StageError: the model cannot be imported, built, run or exported.
    """
    import torch

    from pipeline.quant.program import save_program

    factory = load_attr(source, attr, where)
    try:
        model = factory()
    except Exception as exc:
        raise StageError(where, f"{attr}() must build an nn.Module; it raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise StageError(where, f"{attr}() must return a torch.nn.Module; got {type(model).__name__}")
    model.eval()

    make = load_attr(*input_factory, where) if input_factory is not None else None

    def draw(s: int) -> tuple:
        if make is None:
            return random_inputs(inputs or [], s)
        torch.manual_seed(s)  # a factory that draws random tensors gets a distinct seed per set
        value = make()
        return tuple(value) if isinstance(value, (list, tuple)) else (value,)

    example = draw(seed)
    if calibration_folder is not None:
        calibration = load_folder(calibration_folder, where)
    else:
        calibration = [draw(calibration_seed + i) for i in range(calibration_samples)]
    tests = [example] + [draw(seed + _TEST_SEED_OFFSET + i) for i in range(TEST_INPUT_SETS - 1)]
    program = export_program(model, example, where)

    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = {"model": out_dir / "model.pt2", "calibration": out_dir / "calibration.pt",
               "test_inputs": out_dir / "test_inputs.pt"}
    save_program(program, outputs["model"])
    torch.save(calibration, outputs["calibration"])
    torch.save(tests, outputs["test_inputs"])
    return outputs
