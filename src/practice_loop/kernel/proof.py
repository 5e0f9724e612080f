"""The ``unary_delta_transition`` organ's arithmetic proof obligations.

Proof runs only over a runnable assessment of the very frame it is given (ADR-0226 §7E). It
re-derives the result from the bound facts and checks each obligation independently of the
contract; a contract that closes can still fail its proof (a count that would go negative).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, ClassVar

from .assessment import AssessmentStatus, ContractAssessment, assess
from .checks import (
    Defect,
    digest,
    exactly,
    flag,
    label,
    member_of,
    non_negative_int,
    optional,
    text,
    tuple_of,
)
from .frame import Direction, ProblemFrame, Role, problem_frame_digest
from .identity import MAX_SAFE_INT
from .record import Record, inspect_record, nested
from .refusal import Stage, StageRefusal, refuse

PROOF_SCHEMA_VERSION = "unary_delta_proof.v1"


class ProofStatus(enum.Enum):
    CLOSED = "closed"
    REFUSED = "refused"


class Obligation(enum.Enum):
    """The organ's proof obligations, checked in this order."""

    UNITS_AGREE = "units_agree"
    RESULT_NON_NEGATIVE = "result_non_negative"
    RESULT_WITHIN_SAFE_RANGE = "result_within_safe_range"


@dataclasses.dataclass(frozen=True, slots=True)
class ObligationOutcome(Record):
    obligation: Annotated[Obligation, member_of(Obligation)]
    holds: Annotated[bool, flag]


@dataclasses.dataclass(frozen=True, slots=True)
class ProofRecord(Record):
    """Every obligation's outcome; ``derived_value`` is set only when all of them hold."""

    proof_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(PROOF_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    contract_assessment_id: Annotated[str, digest]
    status: Annotated[ProofStatus, member_of(ProofStatus)]
    obligations: Annotated[
        tuple[ObligationOutcome, ...], tuple_of(nested(ObligationOutcome), non_empty=True)
    ]
    derived_value: Annotated[int | None, optional(non_negative_int)]
    derived_unit: Annotated[str | None, optional(label)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "proof_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        # Every obligation, once, in order: a proof that skips one is no proof.
        if tuple(outcome.obligation for outcome in self.obligations) != tuple(Obligation):
            return "obligations", Defect.INCONSISTENT_FIELDS
        closed = all(outcome.holds for outcome in self.obligations)
        if closed != (self.status is ProofStatus.CLOSED):
            return "status", Defect.INCONSISTENT_FIELDS
        if closed != (self.derived_value is not None) or closed != (self.derived_unit is not None):
            return "derived_value", Defect.INCONSISTENT_FIELDS
        return None


def proof_obligations(
    initial: int, delta: int, direction: Direction, units_agree: bool
) -> tuple[tuple[ObligationOutcome, ...], int]:
    """The organ's obligations over the bound values, in order, and the derived result: the
    arithmetic of proof, apart from the records it is read from and sealed into.

    pre: 0 <= initial <= MAX_SAFE_INT and 0 <= delta <= MAX_SAFE_INT
    post: __return__[1] == (initial + delta if direction is Direction.INCREASE else initial - delta)
    post: tuple(outcome.obligation for outcome in __return__[0]) == tuple(Obligation)
    post: __return__[0][0].holds == units_agree
    post: all(o.holds for o in __return__[0][1:]) == (0 <= __return__[1] <= MAX_SAFE_INT)
    """
    sign = 1 if direction is Direction.INCREASE else -1
    result = initial + sign * delta
    outcomes = (
        ObligationOutcome(Obligation.UNITS_AGREE, units_agree),
        ObligationOutcome(Obligation.RESULT_NON_NEGATIVE, result >= 0),
        ObligationOutcome(Obligation.RESULT_WITHIN_SAFE_RANGE, result <= MAX_SAFE_INT),
    )
    return outcomes, result


def check_proof(frame: ProblemFrame, assessment: ContractAssessment) -> ProofRecord | StageRefusal:
    """Run the proof obligations for a runnable assessment of ``frame``.

    Refusal reasons: ``frame_malformed``, ``assessment_malformed``,
    ``assessment_frame_mismatch`` (the assessment judged another frame),
    ``assessment_not_runnable`` (proof never runs over a refused contract) and
    ``assessment_not_reproducible`` (the organ does not give this assessment for this frame).
    """
    found = inspect_record(frame, ProblemFrame)
    if found is not None:
        return refuse(Stage.PROOF, "frame_malformed", found=found)
    frame_digest = problem_frame_digest(frame)
    found = inspect_record(assessment, ContractAssessment)
    if found is not None:
        return refuse(Stage.PROOF, "assessment_malformed", subject_digest=frame_digest, found=found)
    if assessment.problem_frame_digest != frame_digest:
        return refuse(Stage.PROOF, "assessment_frame_mismatch", subject_digest=frame_digest)
    if assessment.status is not AssessmentStatus.RUNNABLE:
        return refuse(Stage.PROOF, "assessment_not_runnable", subject_digest=frame_digest)
    # Only the organ's own judgement of this frame licenses proof; a forged "runnable"
    # record with a matching frame digest is not one.
    reproduced = assess(frame)
    if (
        type(reproduced) is not ContractAssessment
        or reproduced.assessment_id != assessment.assessment_id
    ):
        return refuse(Stage.PROOF, "assessment_not_reproducible", subject_digest=frame_digest)
    # Runnable means the contract bound all four roles and named existing facts.
    proposal = frame.proposals[0]
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id)  # type: ignore[union-attr, arg-type]
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id)  # type: ignore[union-attr, arg-type]
    direction = proposal.binding(Role.DIRECTION).direction  # type: ignore[union-attr]
    assert initial is not None and delta is not None and frame.target is not None
    units_agree = initial.unit == delta.unit == frame.target.unit
    outcomes, result = proof_obligations(initial.value, delta.value, direction, units_agree)
    closed = all(outcome.holds for outcome in outcomes)
    failed = [outcome.obligation.value for outcome in outcomes if not outcome.holds]
    return ProofRecord.sealed(
        schema_version=PROOF_SCHEMA_VERSION,
        problem_frame_digest=frame_digest,
        contract_assessment_id=assessment.assessment_id,
        status=ProofStatus.CLOSED if closed else ProofStatus.REFUSED,
        obligations=outcomes,
        derived_value=result if closed else None,
        derived_unit=frame.target.unit if closed else None,
        explanation=(
            f"closed: {initial.value} {'+' if direction is Direction.INCREASE else '-'} "
            f"{delta.value} = {result}"
            if closed
            else "refused: " + ", ".join(failed)
        ),
    )
