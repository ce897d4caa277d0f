"""Export stage: the user's model file -> its torch.export'ed, normalised program, and the
calibration and test inputs drawn for it (``pipeline/export/``)."""

from __future__ import annotations

from pathlib import Path

from pipeline.stages.declare import File, Stage


def export(source: Path, attr: str, out_dir: Path, **options) -> dict[str, Path]:
    """``pipeline.export.program.export`` (its arguments) for the lowering's operators."""
    from pipeline.export.program import export as export_files
    from pipeline.tosa.registry import lowered_targets

    return export_files(source, attr, out_dir, lowered=lowered_targets, **options)


def run(i: dict, o: dict, options: dict, params: dict, where: str) -> None:
    factory = params.get("input_factory")
    calibration = options.get("calibration", {"samples": 0, "seed": 0})
    folder = params.get("calibration_folder")
    export(Path(params["source"]), options["source_attr"], o["model"].parent,
           inputs=options.get("inputs"),
           input_factory=(Path(factory[0]), factory[1]) if factory else None,
           seed=options["seed"], calibration_samples=calibration["samples"],
           calibration_seed=calibration["seed"],
           calibration_folder=Path(folder) if folder else None, where=where)


STAGE = Stage(
    name="export",
    doc="torch.export a model and draw its calibration and test inputs",
    run=run,
    inputs={"source": File("python"), "imports/*": File("python"),
            "input_factory": File("python"), "calibration/*": File("samples")},
    outputs={"model": File("program", "model.pt2"),
             "calibration": File("samples", "calibration.pt"),
             "test_inputs": File("samples", "test_inputs.pt")},
)
