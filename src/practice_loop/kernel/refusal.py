"""Stage refusals: the typed answer of a stage whose input is malformed (docs/adr/0003)."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, ClassVar

from .checks import RecordDefect, code, digest, member_of, optional, text, tuple_of
from .record import Record


class Stage(enum.Enum):
    """Stages whose malformed input ends in a ``StageRefusal`` (the gate, budget and run
    have refusal shapes of their own, fixed by their ADRs)."""

    ASSESSMENT = "assessment"
    PROOF = "proof"
    RESIDUAL = "residual"
    LOOP = "loop"


@dataclasses.dataclass(frozen=True, slots=True)
class StageRefusal(Record):
    """A typed refusal: the stage, what it could identify without guessing, and closed codes.

    ``reason_codes[0]`` is the stage's reason; a second code, when present, is the
    ``Defect`` that caused it.
    """

    refusal_id: Annotated[str, digest]
    stage: Annotated[Stage, member_of(Stage)]
    subject_digest: Annotated[str | None, optional(digest)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "refusal_id"


def refuse(
    stage: Stage,
    reason: str,
    *,
    subject_digest: str | None = None,
    found: RecordDefect | None = None,
    explanation: str = "",
) -> StageRefusal:
    """Build a ``StageRefusal``; a defect adds its code and its place to the explanation."""
    codes = (reason,) if found is None else (reason, found.defect.value)
    detail = explanation or reason.replace("_", " ")
    if found is not None:
        detail = f"{detail} ({found.describe()})"
    return StageRefusal.sealed(
        stage=stage,
        subject_digest=subject_digest,
        reason_codes=codes,
        explanation=detail,
    )
