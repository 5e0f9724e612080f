"""The proof-gated answer (ADR-0226 §6, §7E, §8.6-8).

An answer exists only in two ways: a runnable original assessment whose proof closes (the
existing path, no search), or a refused one for which at least one candidate replayed to
``contract_and_proof_closed`` and every closed candidate agrees. Anything else leaves the
original refusal standing. The stage trusts no verdict it is handed: it re-runs the organ's
contract and proof over each closed candidate's frame and checks that frame is the original
plus one binding, before a value can pass.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, ClassVar

from .assessment import AssessmentStatus, ContractAssessment, assess
from .checks import (
    Defect,
    code,
    digest,
    exactly,
    label,
    member_of,
    non_negative_int,
    optional,
    text,
    tuple_of,
)
from .frame import ProblemFrame, Role, problem_frame_digest
from .proof import ProofRecord, ProofStatus, check_proof
from .record import Record, inspect_record
from .replay import ReplayDisposition, ReplayRefusal, ReplayResult

ANSWER_SCHEMA_VERSION = "proof_gated_answer.v1"


class AnswerPath(enum.Enum):
    DIRECT = "direct"
    PRACTICE = "practice"


class AnswerRefusalReason(enum.Enum):
    INPUT_MALFORMED = "input_malformed"
    EVIDENCE_MISMATCH = "evidence_mismatch"
    SEARCH_ON_RUNNABLE = "search_on_runnable"
    DIRECT_PROOF_MISSING = "direct_proof_missing"
    DIRECT_PROOF_REFUSED = "direct_proof_refused"
    REPLAY_NOT_REPRODUCIBLE = "replay_not_reproducible"
    CANDIDATES_DISAGREE = "candidates_disagree"
    ORIGINAL_REFUSAL_STANDS = "original_refusal_stands"


@dataclasses.dataclass(frozen=True, slots=True)
class ProofGatedAnswer(Record):
    """A value, its unit, the path that licensed it, and the proof and replays behind it."""

    answer_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(ANSWER_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    original_contract_assessment_id: Annotated[str, digest]
    path: Annotated[AnswerPath, member_of(AnswerPath)]
    value: Annotated[int, non_negative_int]
    unit: Annotated[str, label]
    proof_id: Annotated[str, digest]
    replay_ids: Annotated[tuple[str, ...], tuple_of(digest)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "answer_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        # A direct answer has no replay behind it; a practice answer has at least one.
        direct = self.path is AnswerPath.DIRECT
        return (
            None if direct == (not self.replay_ids) else ("replay_ids", Defect.INCONSISTENT_FIELDS)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class AnswerRefusal(Record):
    """No answer. ``reason_codes[0]`` is why; the original blockers follow when it stands."""

    answer_refusal_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(ANSWER_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str | None, optional(digest)]
    original_contract_assessment_id: Annotated[str | None, optional(digest)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "answer_refusal_id"


AnswerOutcome = ProofGatedAnswer | AnswerRefusal


def _refusal(
    reason: AnswerRefusalReason, assessment: object, extra: tuple[str, ...] = ()
) -> AnswerRefusal:
    valid = inspect_record(assessment, ContractAssessment) is None
    return AnswerRefusal.sealed(
        schema_version=ANSWER_SCHEMA_VERSION,
        problem_frame_digest=assessment.problem_frame_digest if valid else None,  # type: ignore[union-attr]
        original_contract_assessment_id=assessment.assessment_id if valid else None,  # type: ignore[union-attr]
        reason_codes=(reason.value, *extra),
        explanation=f"no answer: {reason.value}" + (f" ({', '.join(extra)})" if extra else ""),
    )


def _only_one_binding_added(original: ProblemFrame, candidate: ProblemFrame) -> bool:
    """The candidate frame is the original with exactly one binding added to its one
    proposal: the missing direction, typed and spanned exactly as one of the frame's own
    grounded cues (ADR-0231 §6). Nothing else may differ."""
    if len(original.proposals) != 1 or len(candidate.proposals) != 1:
        return False
    if dataclasses.replace(candidate, proposals=original.proposals) != original:
        return False
    before, after = original.proposals[0], candidate.proposals[0]
    if before.relation_type != after.relation_type or before.binding(Role.DIRECTION):
        return False
    added = [binding for binding in after.bindings if binding not in before.bindings]
    if len(after.bindings) != len(before.bindings) + 1 or len(added) != 1:
        return False
    (binding,) = added
    return binding.role is Role.DIRECTION and any(
        (binding.direction, binding.evidence_spans) == (cue.direction, (cue.span,))
        for cue in original.cues
    )


def _reproduced_closure(frame: ProblemFrame, replay: ReplayResult) -> ProofRecord | None:
    """Re-run contract and proof over the replay's candidate frame; the closed proof, or
    ``None`` when the replay's evidence does not reproduce to closure."""
    candidate = replay.candidate_frame
    if not _only_one_binding_added(frame, candidate):
        return None
    # check_proof refuses an assessment that is not runnable. A closed replay's proof is bound
    # to its assessment and a proof's identity covers the assessment it checked, so equal
    # proof ids mean the replay's assessment is the organ's own as well.
    proof = check_proof(candidate, assess(candidate))
    if type(proof) is not ProofRecord or replay.replay_proof is None:
        return None
    if proof.proof_id != replay.replay_proof.proof_id or proof.status is not ProofStatus.CLOSED:
        return None
    return proof


def decide_answer(
    frame: ProblemFrame,
    assessment: ContractAssessment,
    *,
    direct_proof: ProofRecord | None = None,
    replays: tuple[ReplayResult | ReplayRefusal, ...] = (),
) -> AnswerOutcome:
    """The only place a value becomes an answer (ADR-0226 §8.6)."""
    R = AnswerRefusalReason
    if (
        inspect_record(frame, ProblemFrame) is not None
        or inspect_record(assessment, ContractAssessment) is not None
        or (direct_proof is not None and inspect_record(direct_proof, ProofRecord) is not None)
        or type(replays) is not tuple
        or any(
            inspect_record(r, ReplayResult) is not None
            and inspect_record(r, ReplayRefusal) is not None
            for r in replays
        )
    ):
        return _refusal(R.INPUT_MALFORMED, assessment)
    frame_digest = problem_frame_digest(frame)
    results = [r for r in replays if type(r) is ReplayResult]
    if any(
        (r.problem_frame_digest, r.original_contract_assessment_id)
        != (frame_digest, assessment.assessment_id)
        for r in results
    ):
        return _refusal(R.EVIDENCE_MISMATCH, assessment)
    # Only the organ's own judgement of this very frame counts (ADR-0226 §8.1); its identity
    # covers the frame's digest, so an assessment of another frame is refused here too.
    reproduced = assess(frame)
    if type(reproduced) is not ContractAssessment or (
        reproduced.assessment_id != assessment.assessment_id
    ):
        return _refusal(R.EVIDENCE_MISMATCH, assessment)
    if assessment.status is AssessmentStatus.RUNNABLE:
        return _direct(frame, assessment, direct_proof, replays)
    if direct_proof is not None:
        return _refusal(R.EVIDENCE_MISMATCH, assessment)
    closed = [r for r in results if r.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED]
    blockers = tuple(blocker.code.value for blocker in assessment.blockers)
    if not closed:
        return _refusal(R.ORIGINAL_REFUSAL_STANDS, assessment, blockers)
    proofs = [_reproduced_closure(frame, replay) for replay in closed]
    if any(proof is None for proof in proofs):
        return _refusal(R.REPLAY_NOT_REPRODUCIBLE, assessment, blockers)
    values = {(proof.derived_value, proof.derived_unit) for proof in proofs}  # type: ignore[union-attr]
    if len(values) != 1:
        return _refusal(R.CANDIDATES_DISAGREE, assessment, blockers)
    (value, unit), first = values.pop(), proofs[0]
    return ProofGatedAnswer.sealed(
        schema_version=ANSWER_SCHEMA_VERSION,
        problem_frame_digest=frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
        path=AnswerPath.PRACTICE,
        value=value,
        unit=unit,
        proof_id=first.proof_id,  # type: ignore[union-attr]
        replay_ids=tuple(replay.replay_id for replay in closed),
        explanation=f"answered through practice: {value} {unit}",
    )


def _direct(
    frame: ProblemFrame,
    assessment: ContractAssessment,
    proof: ProofRecord | None,
    replays: tuple[object, ...],
) -> AnswerOutcome:
    """The existing path: a runnable assessment, its own proof, and no search (ADR-0226 §6)."""
    R = AnswerRefusalReason
    if replays:
        return _refusal(R.SEARCH_ON_RUNNABLE, assessment)
    if proof is None:
        return _refusal(R.DIRECT_PROOF_MISSING, assessment)
    reproduced = check_proof(frame, assessment)
    if type(reproduced) is not ProofRecord or reproduced.proof_id != proof.proof_id:
        return _refusal(R.EVIDENCE_MISMATCH, assessment)
    if proof.status is not ProofStatus.CLOSED:
        failed = tuple(o.obligation.value for o in proof.obligations if not o.holds)
        return _refusal(R.DIRECT_PROOF_REFUSED, assessment, failed)
    return ProofGatedAnswer.sealed(
        schema_version=ANSWER_SCHEMA_VERSION,
        problem_frame_digest=assessment.problem_frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
        path=AnswerPath.DIRECT,
        value=proof.derived_value,
        unit=proof.derived_unit,
        proof_id=proof.proof_id,
        replay_ids=(),
        explanation=f"answered directly: {proof.derived_value} {proof.derived_unit}",
    )
