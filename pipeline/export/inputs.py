"""The export stage's inputs: drawn from the specs, made by the user's inputs factory or read
from a calibration folder, and checked before anything runs on them. A bad one is named
(which file, which draw, which input) here, instead of failing deep inside quantization.

Every input tuple holds one tensor per model input, of a dtype targets.yaml could declare,
float values finite and int64 values within int32 (TOSA has no int64: such inputs are int32
in the graph, ``tosa/context.py``); every calibration and test tuple has the example's
shapes and dtypes (the program is exported for the example and runs with no other).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.errors import StageError

DTYPES = ("float32", "int8", "int16", "int32", "int64", "bool")  # those targets.yaml allows
# The calibration and test inputs are held in memory, saved in one file each and stored:
# 4 GiB (7,000 float32 samples of a 224x224 RGB image) is past any calibration set of a
# model that fits an Ethos-U system, and within a CI runner's memory.
MAX_SET_BYTES = 2**32
_INT32 = (-(2**31), 2**31 - 1)
_CONVERT = {"float32": "tensor.float(), array.astype(numpy.float32)",
            "int64": "tensor.long(), array.astype(numpy.int64)",
            "int32": "tensor.int(), array.astype(numpy.int32)",
            "int16": "tensor.short(), array.astype(numpy.int16)",
            "int8": "tensor.to(torch.int8), array.astype(numpy.int8)",
            "bool": "tensor.bool(), array.astype(bool)"}


def _dtype(t) -> str:
    return str(t.dtype).removeprefix("torch.")


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


def as_inputs(value: object, what: str, where: str) -> tuple:
    """The input tuple in ``value`` (a tensor, or a tuple or list of tensors).

    Raises:
        StageError: anything else (``what`` names where it came from).
    """
    import torch

    items = tuple(value) if isinstance(value, list | tuple) else (value,)
    bad = next((i for i, t in enumerate(items) if not isinstance(t, torch.Tensor)), None)
    if items and bad is None:
        return items
    kind = type(value).__name__
    if not items:
        got = f"an empty {kind}"
    elif isinstance(value, list | tuple):
        got = f"a {kind} whose item {bad} is a {type(items[bad]).__name__}"
    else:
        got = f"a {kind}"
    raise StageError(where, f"{what} must be a tensor or a tuple of tensors (one per model "
                            f"input); got {got}")


def describe(sample: tuple) -> str:
    """``float32[1, 8], int64[1, 6]``."""
    return ", ".join(f"{_dtype(t)}{list(t.shape)}" for t in sample)


def check_like(sample: tuple, example: tuple, what: str, where: str) -> None:
    """``sample`` has the example's count, shapes and dtypes (the program is exported for it)."""
    if len(sample) != len(example) or any(
            a.shape != b.shape or a.dtype != b.dtype for a, b in zip(sample, example)):
        fix = ""
        if len(sample) == len(example) and all(a.shape == b.shape for a, b in zip(sample, example)):
            want = next(_dtype(b) for a, b in zip(sample, example) if a.dtype != b.dtype)
            fix = f". Convert it to {want} ({_CONVERT[want]})" if want in _CONVERT else ""
        raise StageError(where, f"{what} must match the example input (the model is exported "
                                f"for it): {describe(example)}; got {describe(sample)}{fix}")


def check_values(sample: tuple, what: str, where: str) -> None:
    """A declarable dtype per input, float values finite, int64 values within int32."""
    import torch

    for k, t in enumerate(sample):
        dtype = _dtype(t)
        if dtype not in DTYPES:
            fix = f". Convert it to float32 ({_CONVERT['float32']})" if t.is_floating_point() \
                else ""
            raise StageError(where, f"input {k} of {what} must be one of {', '.join(DTYPES)}; "
                                    f"got {dtype}{fix}")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            nan, inf = int(torch.isnan(t).sum()), int(torch.isinf(t).sum())
            raise StageError(where, f"input {k} of {what} must be finite; got {nan} NaN and "
                                    f"{inf} inf among its {t.numel()} values")
        if t.dtype == torch.int64 and t.numel():
            lo, hi = int(t.min()), int(t.max())
            if lo < _INT32[0] or hi > _INT32[1]:
                raise StageError(where, f"input {k} of {what} must lie within "
                                        f"{_INT32[0]}..{_INT32[1]} (int64 inputs are int32 in "
                                        f"the NPU graph); got {lo}..{hi}")


def nbytes(sample: tuple) -> int:
    return sum(t.numel() * t.element_size() for t in sample)


def check_set_size(example: tuple, count: int, where: str) -> None:
    """``count`` input tuples like ``example`` fit in ``MAX_SET_BYTES``."""
    total = nbytes(example) * count
    if total > MAX_SET_BYTES:
        raise StageError(where, f"the calibration and test inputs must fit in "
                                f"{MAX_SET_BYTES / 2**30:g} GiB; got {count} input tuples of "
                                f"{nbytes(example)} bytes ({total / 2**30:.1f} GiB). Lower "
                                f"calibration.samples in targets.yaml")


def _read(path: Path, where: str) -> object:
    import numpy as np
    import torch

    npy = path.suffix == ".npy"
    try:
        return torch.from_numpy(np.load(path)) if npy else torch.load(path, weights_only=True)
    except Exception as exc:  # whatever the file holds, name it
        saved = "an array saved with numpy.save" if npy else (
            "a tensor or a tuple of tensors saved with torch.save")
        reader = "numpy.load" if npy else "torch.load"
        raise StageError(where, f"calibration file {path} must be {saved}; {reader} could "
                                f"not read it ({_reason(exc)})") from exc


def _reason(exc: Exception) -> str:
    """``Type: the line that says why``: for torch's weights-only unpickler the line after its
    advice to load untrusted files unsafely (which is not the fix here)."""
    text = str(exc)
    marker = "WeightsUnpickler error:"
    if marker in text:
        text = text.split(marker, 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[0][:200] if lines else ""
    return f"{type(exc).__name__}: {reason}" if reason else type(exc).__name__


def calibration_files(folder: Path, where: str) -> list[Path]:
    """The sample files of a calibration folder, sorted: ``*.pt`` and ``*.npy``.

    Raises:
        StageError: there are none.
    """
    files = sorted(p for p in folder.iterdir() if p.suffix in (".pt", ".npy"))
    if not files:
        raise StageError(where, f"calibration folder must hold *.pt or *.npy files; got none "
                                f"in {folder}")
    return files


def load_folder(folder: Path, where: str, example: tuple | None = None) -> list[tuple]:
    """Load calibration samples: every ``*.pt`` (tensor or tuple) or ``*.npy`` file, sorted.

    Args:
        folder: the calibration folder.
        example: when given, every sample must match its shapes and dtypes.

    Raises:
        StageError: no sample files, or one that is unreadable or does not fit (naming it).
    """
    samples, total = [], 0
    for path in calibration_files(folder, where):
        what = f"calibration file {path}"
        sample = as_inputs(_read(path, where), what, where)
        if example is not None:
            check_like(sample, example, what, where)
        check_values(sample, what, where)
        total += nbytes(sample)
        if total > MAX_SET_BYTES:
            raise StageError(where, f"calibration folder {folder} must hold at most "
                                    f"{MAX_SET_BYTES / 2**30:g} GiB of samples; got more by "
                                    f"{path.name}. Calibrate on fewer files")
        samples.append(sample)
    return samples
