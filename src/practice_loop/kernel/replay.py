"""The contract/proof replay adapter (our ADR-0229, docs/adr/0006).

The adapter validates a candidate reconstruction on its own, applies it to a copy of the
frame, and runs the same organ's ``assess()`` and the proof obligations over the result
(ADR-0226 §7E, ADR-0228 §12). It reports one of three dispositions as a new record; it never
changes the original frame, assessment or run. Input it cannot validate is an adapter
refusal, never a semantic verdict.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, ClassVar

from .assessment import AssessmentStatus, ContractAssessment, assess
from .checks import Defect, RecordError, code, digest, exactly, member_of, optional, text, tuple_of
from .frame import ProblemFrame, Role, RoleBinding, StateChangeProposal, problem_frame_digest
from .operators import CandidateReconstruction, RoleBindingDelta
from .proof import ProofRecord, ProofStatus, check_proof
from .record import Record, inspect_record, nested
from .span import span_in_source

REPLAY_SCHEMA_VERSION = "candidate_replay.v1"
_ROLE_ORDER = (Role.INITIAL, Role.DELTA, Role.DIRECTION, Role.TARGET)


class ReplayDisposition(enum.Enum):
    """ADR-0226 §7E: the three permitted dispositions."""

    CONTRACT_REFUSED = "contract_refused"
    CONTRACT_CLOSED_BUT_PROOF_REFUSED = "contract_closed_but_proof_refused"
    CONTRACT_AND_PROOF_CLOSED = "contract_and_proof_closed"


class ReplayRefusalReason(enum.Enum):
    FRAME_MALFORMED = "frame_malformed"
    ASSESSMENT_MALFORMED = "assessment_malformed"
    RECONSTRUCTION_MALFORMED = "reconstruction_malformed"
    FRAME_MISMATCH = "frame_mismatch"
    ASSESSMENT_MISMATCH = "assessment_mismatch"
    ASSESSMENT_NOT_REFUSED = "assessment_not_refused"
    ASSESSMENT_NOT_REPRODUCIBLE = "assessment_not_reproducible"
    CANDIDATE_NOT_APPLICABLE = "candidate_not_applicable"
    CUE_NOT_IN_FRAME = "cue_not_in_frame"
    EVIDENCE_NOT_IN_FRAME = "evidence_not_in_frame"
    CUE_NOT_IN_EVIDENCE = "cue_not_in_evidence"


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayResult(Record):
    """A replay verdict over one candidate, with the evidence it was reached on: the candidate
    frame, the organ's new assessment of it and, when the contract closed, the proof."""

    replay_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(REPLAY_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    original_contract_assessment_id: Annotated[str, digest]
    candidate_digest: Annotated[str, digest]
    candidate_reconstruction_digest: Annotated[str, digest]
    attempt_id: Annotated[str, digest]
    candidate_frame: Annotated[ProblemFrame, nested(ProblemFrame)]
    replay_assessment: Annotated[ContractAssessment, nested(ContractAssessment)]
    replay_proof: Annotated[ProofRecord | None, optional(nested(ProofRecord))]
    disposition: Annotated[ReplayDisposition, member_of(ReplayDisposition)]
    replay_blockers: Annotated[tuple[str, ...], tuple_of(code)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "replay_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        frame_digest = problem_frame_digest(self.candidate_frame)
        if self.replay_assessment.problem_frame_digest != frame_digest:
            return "replay_assessment", Defect.INCONSISTENT_FIELDS
        expected = _disposition(self.replay_assessment, self.replay_proof)
        if expected is None or expected != (self.disposition, self.replay_blockers):
            return "disposition", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayRefusal(Record):
    """The adapter could not validate its input; no verdict was reached."""

    replay_refusal_id: Annotated[str, digest]
    schema_version: Annotated[str, exactly(REPLAY_SCHEMA_VERSION)]
    candidate_reconstruction_digest: Annotated[str | None, optional(digest)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "replay_refusal_id"


ReplayOutcome = ReplayResult | ReplayRefusal


def _disposition(
    assessment: ContractAssessment, proof: ProofRecord | None
) -> tuple[ReplayDisposition, tuple[str, ...]] | None:
    """The disposition a replay assessment and proof entail (``None`` when they disagree)."""
    bound = proof is not None and proof.contract_assessment_id == assessment.assessment_id
    return replay_disposition(
        contract_closed=assessment.status is AssessmentStatus.RUNNABLE,
        blocker_codes=tuple(blocker.code.value for blocker in assessment.blockers),
        proof_present=proof is not None,
        proof_bound=bound,
        proof_closed=proof is not None and proof.status is ProofStatus.CLOSED,
        failed_obligations=()
        if proof is None
        else tuple(o.obligation.value for o in proof.obligations if not o.holds),
    )


def replay_disposition(
    contract_closed: bool,
    blocker_codes: tuple[str, ...],
    proof_present: bool,
    proof_bound: bool,
    proof_closed: bool,
    failed_obligations: tuple[str, ...],
) -> tuple[ReplayDisposition, tuple[str, ...]] | None:
    """ADR-0226 §7E over the facts of a replay: closed exactly when the contract closed and
    every proof obligation of a proof bound to that assessment holds; proof never accompanies
    a refused contract. ``None`` when the facts disagree. The facts of a proof are those a
    valid ``ProofRecord`` has: it is closed exactly when no obligation failed.

    pre: proof_present or not (proof_bound or proof_closed or failed_obligations)
    pre: not proof_present or proof_closed == (not failed_obligations)
    post: __return__ is None or _closed(__return__) == (not __return__[1])
    post: __return__ is None or _closed(__return__) == (contract_closed and proof_closed)
    post: contract_closed or __return__ is None or __return__[0].value == "contract_refused"
    post: contract_closed or (__return__ is None) == proof_present
    post: not contract_closed or (__return__ is None) == (not proof_bound)
    """
    if not contract_closed:
        if proof_present:
            return None
        return ReplayDisposition.CONTRACT_REFUSED, blocker_codes or ("contract_refused",)
    if not proof_bound:
        return None
    if proof_closed:
        return ReplayDisposition.CONTRACT_AND_PROOF_CLOSED, ()
    return ReplayDisposition.CONTRACT_CLOSED_BUT_PROOF_REFUSED, failed_obligations


def _closed(outcome: tuple[ReplayDisposition, tuple[str, ...]]) -> bool:
    return outcome[0] is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED


def apply_candidate(frame: ProblemFrame, payload: RoleBindingDelta) -> ProblemFrame | None:
    """A new frame with the candidate's binding added to the one proposal, in role order;
    ``None`` when the payload does not apply to this frame. The input is never changed."""
    if len(frame.proposals) != 1 or payload.relation_type != frame.proposals[0].relation_type:
        return None
    proposal = frame.proposals[0]
    if proposal.binding(payload.role) is not None:
        return None
    added = RoleBinding(payload.role, None, payload.direction, (payload.cue_span,))
    bindings = sorted(
        (*proposal.bindings, added), key=lambda binding: _ROLE_ORDER.index(binding.role)
    )
    try:
        return dataclasses.replace(
            frame, proposals=(StateChangeProposal(proposal.relation_type, tuple(bindings)),)
        )
    except RecordError:
        return None


def _refuse(reason: ReplayRefusalReason, reconstruction: object) -> ReplayRefusal:
    valid = inspect_record(reconstruction, CandidateReconstruction) is None
    return ReplayRefusal.sealed(
        schema_version=REPLAY_SCHEMA_VERSION,
        candidate_reconstruction_digest=(
            reconstruction.candidate_reconstruction_digest if valid else None  # type: ignore[union-attr]
        ),
        reason_codes=(reason.value,),
        explanation=f"replay refused: {reason.value}",
    )


def replay_candidate(
    frame: ProblemFrame,
    original_assessment: ContractAssessment,
    reconstruction: CandidateReconstruction,
) -> ReplayOutcome:
    """Replay one candidate through the organ's contract and proof (docs/adr/0006)."""
    R = ReplayRefusalReason
    if inspect_record(frame, ProblemFrame) is not None:
        return _refuse(R.FRAME_MALFORMED, reconstruction)
    if inspect_record(original_assessment, ContractAssessment) is not None:
        return _refuse(R.ASSESSMENT_MALFORMED, reconstruction)
    if inspect_record(reconstruction, CandidateReconstruction) is not None:
        return _refuse(R.RECONSTRUCTION_MALFORMED, reconstruction)
    frame_digest = problem_frame_digest(frame)
    if frame_digest != reconstruction.problem_frame_digest:
        return _refuse(R.FRAME_MISMATCH, reconstruction)
    if original_assessment.assessment_id != reconstruction.original_contract_assessment_id:
        return _refuse(R.ASSESSMENT_MISMATCH, reconstruction)
    if original_assessment.status is not AssessmentStatus.REFUSED:
        return _refuse(R.ASSESSMENT_NOT_REFUSED, reconstruction)
    reproduced = assess(frame)
    if (
        type(reproduced) is not ContractAssessment
        or reproduced.assessment_id != original_assessment.assessment_id
    ):
        return _refuse(R.ASSESSMENT_NOT_REPRODUCIBLE, reconstruction)
    if not all(span_in_source(span, frame.source_text) for span in reconstruction.evidence_spans):
        return _refuse(R.EVIDENCE_NOT_IN_FRAME, reconstruction)
    payload = reconstruction.candidate_payload
    # The cue must be one the frame already holds, typed and spanned exactly as cited.
    if not any(
        cue.direction is payload.direction and cue.span == payload.cue_span for cue in frame.cues
    ):
        return _refuse(R.CUE_NOT_IN_FRAME, reconstruction)
    # ADR-0231 §13: the cited cue must be among the evidence the candidate carries.
    if payload.cue_span not in reconstruction.evidence_spans:
        return _refuse(R.CUE_NOT_IN_EVIDENCE, reconstruction)
    candidate_frame = apply_candidate(frame, payload)
    if candidate_frame is None:
        return _refuse(R.CANDIDATE_NOT_APPLICABLE, reconstruction)
    replay_assessment = assess(candidate_frame)
    assert type(replay_assessment) is ContractAssessment  # the candidate frame validated
    proof = None
    if replay_assessment.status is AssessmentStatus.RUNNABLE:
        proof = check_proof(candidate_frame, replay_assessment)
        assert type(proof) is ProofRecord  # runnable and reproduced by construction
    disposition, blockers = _disposition(replay_assessment, proof)  # type: ignore[misc]
    return ReplayResult.sealed(
        schema_version=REPLAY_SCHEMA_VERSION,
        problem_frame_digest=frame_digest,
        original_contract_assessment_id=original_assessment.assessment_id,
        candidate_digest=reconstruction.candidate_digest,
        candidate_reconstruction_digest=reconstruction.candidate_reconstruction_digest,
        attempt_id=reconstruction.attempt_id,
        candidate_frame=candidate_frame,
        replay_assessment=replay_assessment,
        replay_proof=proof,
        disposition=disposition,
        replay_blockers=blockers,
        explanation=f"{disposition.value}" + (f": {', '.join(blockers)}" if blockers else ""),
    )
