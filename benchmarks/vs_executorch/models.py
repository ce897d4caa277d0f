"""The models of a targets file as our export and quantize stages see them, and the inputs
the export stage draws for them (both flows get the same)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

SQNR_INPUTS = 64  # inputs of the SQNR table (--sqnr-inputs)
SQNR_SEED_OFFSET = 5000  # the extra SQNR inputs: seeds the export stage never draws


@dataclass(frozen=True)
class ModelEntry:
    """One model of a targets file, as the build's export and quantize stages see it."""

    name: str
    path: Path
    attr: str
    inputs: tuple = ()  # input spec dicts (shape, dtype, range), or () with a factory
    factory: tuple | None = None  # (file, function) making one input tuple
    seed: int = 0
    calibration: dict = field(default_factory=lambda: {"samples": 16, "seed": 1})
    observer: str = "mse"  # the calibration observer the build would use
    techniques: dict = field(default_factory=dict)  # calibration.equalization / bias_correction

    def export_options(self) -> dict:
        """Keyword options of our export stage for this model."""
        folder = self.calibration.get("folder")
        return {"inputs": [dict(s) for s in self.inputs] or None,
                "input_factory": self.factory, "seed": self.seed,
                "calibration_samples": self.calibration.get("samples") or 16,
                "calibration_seed": self.calibration.get("seed") or 1,
                "calibration_folder": Path(folder) if folder else None}


def model_entries(targets: Path) -> list[ModelEntry]:
    """Every model under ``models:`` of a targets file, in file order.

    Raises:
        ConfigError: the file is not a valid targets file (every problem listed).
    """
    from pipeline.config import load_config

    entries = []
    for name, model in load_config(targets).models.items():
        factory = model.input_factory
        calibration = model.calibration
        entries.append(ModelEntry(
            name, model.source_path, model.source_attr,
            tuple(s.model_dump(mode="json") for s in model.input_specs or ()),
            (factory.path, factory.attr) if factory is not None else None, model.seed,
            {"samples": calibration.samples, "seed": calibration.seed,
             "folder": str(calibration.folder) if calibration.folder else None},
            calibration.observer,
            {"equalization": calibration.equalization,
             "bias_correction": calibration.bias_correction}))
    return entries


def select_models(targets: Path, requested: str | None) -> list[ModelEntry]:
    """The models of the targets file, in file order, or those ``requested`` in that order.

    Raises:
        SystemExit: a requested name the file does not list (the message lists them), or a
            targets file that does not load (its problems).
    """
    from pipeline.errors import ConfigError

    try:
        entries = model_entries(targets)
    except ConfigError as exc:
        sys.exit(f"bench_vs_executorch: --targets {targets}: {exc}")
    if not requested:
        return entries
    by_name = {e.name: e for e in entries}
    names = [n for n in requested.split(",") if n]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        sys.exit(f"bench_vs_executorch: --models must name models of {targets} "
                 f"({', '.join(by_name)}); got {', '.join(unknown)}")
    return [by_name[n] for n in names]


def load_model(entry: ModelEntry):
    """The entry's nn.Module in eval mode; raises on any problem."""
    from pipeline.export.program import load_attr

    return load_attr(entry.path, entry.attr, f"{entry.name}/import")().eval()


def draw_inputs(entry: ModelEntry) -> tuple[tuple, list]:
    """(example, calibration samples) drawn as our export stage draws them, without it."""
    import torch

    from pipeline.export.program import load_attr, load_folder, random_inputs

    options = entry.export_options()
    make = load_attr(*entry.factory, f"{entry.name}/inputs") if entry.factory else None

    def draw(seed: int) -> tuple:
        if make is None:
            return random_inputs(entry.inputs, seed)
        torch.manual_seed(seed)
        return as_tuple(make())

    if options["calibration_folder"] is not None:
        calibration = load_folder(options["calibration_folder"], f"{entry.name}/calibration")
    else:
        calibration = [draw(options["calibration_seed"] + i)
                       for i in range(options["calibration_samples"])]
    return draw(entry.seed), calibration


def sqnr_inputs(entry: ModelEntry, tests: list, count: int) -> list:
    """``count`` input tuples: our export's test inputs, then more drawn the same way from
    seeds the export never uses."""
    import torch

    from pipeline.export.program import load_attr, random_inputs

    seeds = [entry.seed + SQNR_SEED_OFFSET + i for i in range(max(0, count - len(tests)))]
    if entry.factory is None:
        more = [random_inputs(entry.inputs, seed) for seed in seeds]
    else:
        make, more = load_attr(*entry.factory, f"{entry.name}/inputs"), []
        for seed in seeds:
            torch.manual_seed(seed)
            more.append(as_tuple(make()))
    return list(tests)[:count] + more


def as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)
