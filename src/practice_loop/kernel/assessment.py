"""``ContractAssessment`` and the ``unary_delta_transition`` organ's ``assess()``.

``assess`` is the sole runnable/refused authority (ADR-0226 §8.1). It reads a frame and
nothing else; it never repairs a binding or infers a missing role. A frame that is not well
formed is not judged at all: the answer is a ``StageRefusal``.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from typing import Annotated, ClassVar

from .checks import Defect, digest, exactly, member_of, optional, text, tuple_of
from .frame import (
    UNARY_DELTA_ORGAN,
    UNARY_DELTA_RELATION,
    HazardCode,
    ProblemFrame,
    Role,
    problem_frame_digest,
)
from .record import Record, inspect_record, nested
from .refusal import Stage, StageRefusal, refuse
from .span import SourceSpan, spans_check
from .trust import remembered

ASSESSMENT_SCHEMA_VERSION = "contract_assessment.v1"
UNARY_DELTA_ORGAN_VERSION = "unary_delta_transition.v1"


class AssessmentStatus(enum.Enum):
    RUNNABLE = "runnable"
    REFUSED = "refused"


class BlockerCode(enum.Enum):
    """Why the organ refuses a frame. ``residual.RESIDUAL_KIND_BY_BLOCKER`` types each one."""

    HAZARD_MULTIPLE_CHANGES = "hazard_multiple_changes"
    HAZARD_RATE_OR_RATIO = "hazard_rate_or_ratio"
    HAZARD_FRACTION_OR_PERCENT = "hazard_fraction_or_percent"
    HAZARD_NON_INTEGER_QUANTITY = "hazard_non_integer_quantity"
    HAZARD_MULTIPLE_ENTITIES = "hazard_multiple_entities"
    HAZARD_UNSUPPORTED_OPERATION = "hazard_unsupported_operation"
    PROPOSAL_MISSING = "proposal_missing"
    PROPOSAL_AMBIGUOUS = "proposal_ambiguous"
    RELATION_UNSUPPORTED = "relation_unsupported"
    INITIAL_UNBOUND = "initial_unbound"
    DELTA_UNBOUND = "delta_unbound"
    DIRECTION_UNBOUND = "direction_unbound"
    TARGET_UNBOUND = "target_unbound"
    ROLE_CONFLICT = "role_conflict"
    ENTITY_MISMATCH = "entity_mismatch"
    UNIT_MISMATCH = "unit_mismatch"


_HAZARD_BLOCKERS = types.MappingProxyType(
    {hazard: BlockerCode(f"hazard_{hazard.value}") for hazard in HazardCode}
)
_UNBOUND_BLOCKERS = types.MappingProxyType(
    {
        Role.INITIAL: BlockerCode.INITIAL_UNBOUND,
        Role.DELTA: BlockerCode.DELTA_UNBOUND,
        Role.DIRECTION: BlockerCode.DIRECTION_UNBOUND,
        Role.TARGET: BlockerCode.TARGET_UNBOUND,
    }
)


@dataclasses.dataclass(frozen=True, slots=True)
class Blocker(Record):
    """One reason for refusal, with the role it concerns and its exact evidence spans."""

    code: Annotated[BlockerCode, member_of(BlockerCode)]
    role: Annotated[Role | None, optional(member_of(Role))]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]


@dataclasses.dataclass(frozen=True, slots=True)
class ContractAssessment(Record):
    """The organ's judgement of one frame. Runnable exactly when it carries no blocker.

    A refused assessment with no blocker is representable (another producer could emit it);
    the gate treats it as unassessable rather than guessing a residual.
    """

    assessment_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(ASSESSMENT_SCHEMA_VERSION)]
    organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    organ_version: Annotated[str, exactly(UNARY_DELTA_ORGAN_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    status: Annotated[AssessmentStatus, member_of(AssessmentStatus)]
    blockers: Annotated[tuple[Blocker, ...], tuple_of(nested(Blocker))]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "assessment_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        if self.status is AssessmentStatus.RUNNABLE and self.blockers:
            return "blockers", Defect.INCONSISTENT_FIELDS
        return None


def _find_blockers(frame: ProblemFrame) -> list[Blocker]:
    """The organ's contract, checked in a fixed order so blockers are ordered stably."""
    blockers = [
        Blocker(_HAZARD_BLOCKERS[hazard.code], None, hazard.evidence_spans)
        for hazard in frame.hazards
    ]
    fact_spans = tuple(fact.span for fact in frame.facts)
    if not frame.proposals:
        blockers.append(Blocker(BlockerCode.PROPOSAL_MISSING, None, fact_spans))
        return blockers
    if len(frame.proposals) > 1:
        blockers.append(Blocker(BlockerCode.PROPOSAL_AMBIGUOUS, None, fact_spans))
        return blockers
    proposal = frame.proposals[0]
    bound_spans = tuple(span for binding in proposal.bindings for span in binding.evidence_spans)
    if proposal.relation_type != UNARY_DELTA_RELATION:
        blockers.append(Blocker(BlockerCode.RELATION_UNSUPPORTED, None, bound_spans))
        return blockers
    for role, blocker_code in _UNBOUND_BLOCKERS.items():
        if proposal.binding(role) is not None:
            continue
        # An unbound direction carries every grounded cue as evidence: the spans a later
        # operator may lawfully cite (ADR-0231 §6, §13). Other roles carry what is bound.
        cue_spans = tuple(cue.span for cue in frame.cues) if role is Role.DIRECTION else ()
        blockers.append(Blocker(blocker_code, role, bound_spans + cue_spans))
    if blockers:
        return blockers
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id)  # type: ignore[union-attr, arg-type]
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id)  # type: ignore[union-attr, arg-type]
    assert initial is not None and delta is not None and frame.target is not None
    spans = (initial.span, delta.span, frame.target.span)
    # One state of one entity changes once: the two roles are two facts, and the facts and
    # the question share the entity and the unit (docs/adr/0005).
    if initial.fact_id == delta.fact_id:
        blockers.append(Blocker(BlockerCode.ROLE_CONFLICT, None, spans))
    if not initial.entity == delta.entity == frame.target.entity:
        blockers.append(Blocker(BlockerCode.ENTITY_MISMATCH, None, spans))
    if not initial.unit == delta.unit == frame.target.unit:
        blockers.append(Blocker(BlockerCode.UNIT_MISMATCH, None, spans))
    return blockers


def assess(frame: ProblemFrame) -> ContractAssessment | StageRefusal:
    """Judge ``frame`` against the ``unary_delta_transition`` contract.

    Refuses (``StageRefusal``, reason ``frame_malformed``) a value that is not a well-formed
    ``ProblemFrame``; otherwise returns the assessment, runnable exactly when no blocker holds.
    """
    found = inspect_record(frame, ProblemFrame)
    if found is not None:
        return refuse(Stage.ASSESSMENT, "frame_malformed", found=found)
    # Proof, replay and answer each re-ask the organ about the same frame: judge it once.
    return remembered(frame, "assess", lambda: _judge(frame))


def _judge(frame: ProblemFrame) -> ContractAssessment:
    blockers = tuple(_find_blockers(frame))
    status = AssessmentStatus.REFUSED if blockers else AssessmentStatus.RUNNABLE
    explanation = (
        "refused: " + ", ".join(blocker.code.value for blocker in blockers)
        if blockers
        else "runnable: initial, delta, direction and target are bound and units agree"
    )
    return ContractAssessment.sealed(
        schema_version=ASSESSMENT_SCHEMA_VERSION,
        organ=UNARY_DELTA_ORGAN,
        organ_version=UNARY_DELTA_ORGAN_VERSION,
        problem_frame_digest=problem_frame_digest(frame),
        status=status,
        blockers=blockers,
        explanation=explanation,
    )
