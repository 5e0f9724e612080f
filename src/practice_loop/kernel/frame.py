"""The ``ProblemFrame`` and the values of the ``unary_delta_transition`` organ.

A frame is exact evidence: every span is a verbatim slice of ``source_text`` at its offsets,
facts and bindings are ordered as the reader produced them, and duplicates are kept. The
frame decides nothing; ``assessment.assess`` is the only judge of it (ADR-0226 §8.1).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated

from .checks import (
    Defect,
    code,
    exactly,
    label,
    member_of,
    non_negative_int,
    optional,
    text,
    tuple_of,
)
from .record import Record, nested
from .span import SourceSpan, span_check, span_in_source, spans_check
from .trust import remembered

PROBLEM_FRAME_SCHEMA_VERSION = "problem_frame.v1"
UNARY_DELTA_ORGAN = "unary_delta_transition"
UNARY_DELTA_RELATION = "state_change.unary_delta"
MAX_SOURCE_LENGTH = 10_000
MAX_FRAME_SPANS = 256
# Facts, cues, proposals, bindings and hazards together: each becomes at most a few records
# downstream (a hazard with no span still becomes a blocker and a residual), so this bounds
# every trace as the span caps bound its evidence (docs/adr/0005).
MAX_FRAME_ITEMS = 256
MAX_EVIDENCE_CHARS = 20_000


class Direction(enum.Enum):
    """The sign of a unary change: ``result = initial + delta`` or ``initial - delta``."""

    INCREASE = "increase"
    DECREASE = "decrease"


class Role(enum.Enum):
    """The roles of the ``state_change.unary_delta`` proposal, in assessment order."""

    INITIAL = "initial"
    DELTA = "delta"
    DIRECTION = "direction"
    TARGET = "target"


class HazardCode(enum.Enum):
    """Reader findings that put a question outside the organ's contract."""

    MULTIPLE_CHANGES = "multiple_changes"
    RATE_OR_RATIO = "rate_or_ratio"
    FRACTION_OR_PERCENT = "fraction_or_percent"
    NON_INTEGER_QUANTITY = "non_integer_quantity"
    MULTIPLE_ENTITIES = "multiple_entities"
    UNSUPPORTED_OPERATION = "unsupported_operation"


@dataclasses.dataclass(frozen=True, slots=True)
class QuantityFact(Record):
    """One quantity read from the text: an exact non-negative integer with unit and entity."""

    fact_id: Annotated[str, code]
    value: Annotated[int, non_negative_int]
    unit: Annotated[str, label]
    entity: Annotated[str, label]
    span: Annotated[SourceSpan, span_check]


@dataclasses.dataclass(frozen=True, slots=True)
class GroundedUnaryDeltaCue(Record):
    """A typed direction with the exact span of the words that ground it (ADR-0231 §6)."""

    direction: Annotated[Direction, member_of(Direction)]
    span: Annotated[SourceSpan, span_check]


@dataclasses.dataclass(frozen=True, slots=True)
class QuestionTarget(Record):
    """What the question asks for: the entity and unit of the result."""

    entity: Annotated[str, label]
    unit: Annotated[str, label]
    span: Annotated[SourceSpan, span_check]


@dataclasses.dataclass(frozen=True, slots=True)
class FrameHazard(Record):
    """A hazard the reader found, with the spans that show it."""

    code: Annotated[HazardCode, member_of(HazardCode)]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]


@dataclasses.dataclass(frozen=True, slots=True)
class RoleBinding(Record):
    """One role of a proposal bound to evidence.

    ``initial`` and ``delta`` name a fact; ``direction`` carries a typed direction; ``target``
    binds the question target. Exactly the field its role needs is set.
    """

    role: Annotated[Role, member_of(Role)]
    fact_id: Annotated[str | None, optional(code)]
    direction: Annotated[Direction | None, optional(member_of(Direction))]
    evidence_spans: Annotated[tuple[SourceSpan, ...], tuple_of(span_check, non_empty=True)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        needs_fact = self.role in (Role.INITIAL, Role.DELTA)
        needs_direction = self.role is Role.DIRECTION
        if (self.fact_id is not None) != needs_fact:
            return "fact_id", Defect.INCONSISTENT_FIELDS
        if (self.direction is not None) != needs_direction:
            return "direction", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class StateChangeProposal(Record):
    """A construction hypothesis: a relation with its role bindings, each role at most once."""

    relation_type: Annotated[str, label]
    bindings: Annotated[tuple[RoleBinding, ...], tuple_of(nested(RoleBinding))]

    def _cross_check(self) -> tuple[str, Defect] | None:
        roles = [binding.role for binding in self.bindings]
        if len(roles) != len(set(roles)):
            return "bindings", Defect.DUPLICATE_ENTRY
        return None

    def binding(self, role: Role) -> RoleBinding | None:
        for candidate in self.bindings:
            if candidate.role is role:
                return candidate
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class ProblemFrame(Record):
    """The exact frame one organ is asked to judge.

    Cross checks: fact ids are unique, every binding names a fact that exists, a ``target``
    binding needs a question target, and every span anywhere in the frame is exactly the
    source text at its offsets.
    """

    schema_version: Annotated[str, exactly(PROBLEM_FRAME_SCHEMA_VERSION)]
    organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    source_text: Annotated[str, text]
    facts: Annotated[tuple[QuantityFact, ...], tuple_of(nested(QuantityFact))]
    cues: Annotated[tuple[GroundedUnaryDeltaCue, ...], tuple_of(nested(GroundedUnaryDeltaCue))]
    proposals: Annotated[tuple[StateChangeProposal, ...], tuple_of(nested(StateChangeProposal))]
    target: Annotated[QuestionTarget | None, optional(nested(QuestionTarget))]
    hazards: Annotated[tuple[FrameHazard, ...], tuple_of(nested(FrameHazard))]

    def _cross_check(self) -> tuple[str, Defect] | None:
        fact_ids = [fact.fact_id for fact in self.facts]
        if len(fact_ids) != len(set(fact_ids)):
            return "facts", Defect.DUPLICATE_ENTRY
        for proposal in self.proposals:
            for binding in proposal.bindings:
                if binding.fact_id is not None and binding.fact_id not in fact_ids:
                    return "proposals", Defect.REFERENCE_UNKNOWN
                if binding.role is Role.TARGET and self.target is None:
                    return "proposals", Defect.REFERENCE_UNKNOWN
        if len(self.source_text) > MAX_SOURCE_LENGTH:
            return "source_text", Defect.TEXT_TOO_LONG
        items = len(self.facts) + len(self.cues) + len(self.hazards)
        items += sum(1 + len(proposal.bindings) for proposal in self.proposals)
        if items > MAX_FRAME_ITEMS:
            return "$", Defect.SEQUENCE_TOO_LONG
        return evidence_defect(self.all_spans(), self.source_text)

    def all_spans(self) -> tuple[SourceSpan, ...]:
        spans: list[SourceSpan] = [fact.span for fact in self.facts]
        spans.extend(cue.span for cue in self.cues)
        for proposal in self.proposals:
            for binding in proposal.bindings:
                spans.extend(binding.evidence_spans)
        if self.target is not None:
            spans.append(self.target.span)
        for hazard in self.hazards:
            spans.extend(hazard.evidence_spans)
        return tuple(spans)

    def fact(self, fact_id: str) -> QuantityFact | None:
        for candidate in self.facts:
            if candidate.fact_id == fact_id:
                return candidate
        return None


def evidence_defect(spans: tuple[SourceSpan, ...], source_text: str) -> tuple[str, Defect] | None:
    """Where a frame's evidence is defective: more spans or span text than a frame may carry,
    or a span that is not the source text at its offsets (docs/adr/0003, docs/adr/0005).

    post: __return__ is not None or all(s.end <= len(source_text) for s in spans)
    post: __return__ is not None or all(source_text[s.start : s.end] == s.text for s in spans)
    post: __return__ is not None or len(spans) <= MAX_FRAME_SPANS
    post: __return__ in (None, ("$", Defect.SEQUENCE_TOO_LONG), _NOT_IN_SOURCE)
    """
    # A sealed trace repeats the frame's evidence a bounded number of times; these caps
    # keep every trace inside the canonical size profile (docs/adr/0005).
    if len(spans) > MAX_FRAME_SPANS or sum(len(s.text) for s in spans) > MAX_EVIDENCE_CHARS:
        return "$", Defect.SEQUENCE_TOO_LONG
    for span in spans:
        if not span_in_source(span, source_text):
            return _NOT_IN_SOURCE
    return None


_NOT_IN_SOURCE = ("source_text", Defect.SPAN_NOT_IN_SOURCE)


def problem_frame_digest(frame: ProblemFrame) -> str:
    """The frame's identity: every field, spans in order, duplicates kept (ADR-0228 §6)."""
    return remembered(frame, "digest", lambda: frame.content_digest(drop_explanations=True))
