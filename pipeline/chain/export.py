"""Export: ``torch.export`` of a model, normalised for the lowering."""

from __future__ import annotations

from pipeline.tosa.registry import lowered_targets


def export(model, example: tuple, where: str = ""):
    """``torch.export`` of ``model`` on ``example``, normalised (``pipeline.normalise``).

    Raises:
        StageError: torch.export cannot capture the model.
    """
    from pipeline.export.program import export_program

    return export_program(model, example, where, lowered=lowered_targets)


def normalise(program):
    """The normal form of an exported program (``pipeline.normalise``)."""
    from pipeline.normalise import normalise as normal_form

    return normal_form(program, lowered_targets())
