"""``SearchGateDecision`` and the ``search_gate.v1`` policy (docs/adr/0002).

The gate answers one question: may a bounded exploration of this residual context be
considered? It does not search, allocate, repair or judge (ADR-0226 §7B, §8.3). It always
answers with a decision; malformed or inconsistent input is ``UNASSESSABLE``, never an
exception, and every non-``ELIGIBLE`` status is a denial.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from .assessment import AssessmentStatus, ContractAssessment
from .identity import (
    Defect,
    Record,
    RecordDefect,
    SourceSpan,
    code,
    digest,
    exactly,
    inspect_record,
    member_of,
    optional,
    sha256_digest,
    spans_check,
    text,
    tuple_of,
)
from .residual import ContractResidual, ResidualKind, project_residuals

SEARCH_GATE_POLICY_VERSION = "search_gate.v1"
GATE_INPUT_SCHEMA_VERSION = "search_gate_input.v1"


class SearchGateStatus(enum.Enum):
    ELIGIBLE = "ELIGIBLE"
    INELIGIBLE = "INELIGIBLE"
    BLOCKED = "BLOCKED"
    UNASSESSABLE = "UNASSESSABLE"


class GateReason(enum.Enum):
    """Every reason ``search_gate.v1`` can give, listed in rule order."""

    ASSESSMENT_MALFORMED = "gate_unassessable_assessment_malformed"
    RESIDUALS_MALFORMED = "gate_unassessable_residuals_malformed"
    RESIDUAL_CONTEXT_MISMATCH = "gate_unassessable_residual_context_mismatch"
    ASSESSMENT_RUNNABLE = "gate_blocked_assessment_runnable"
    NO_RESIDUAL = "gate_unassessable_no_residual"
    UNCLASSIFIED_RESIDUAL = "gate_ineligible_unclassified_residual"
    MULTIPLE_RESIDUALS = "gate_ineligible_multiple_residuals"
    RESIDUAL_WITHOUT_EVIDENCE = "gate_blocked_residual_without_evidence"
    ELIGIBLE_MISSING_ROLE = "eligible_missing_role"
    ELIGIBLE_MISSING_RELATION = "eligible_missing_relation"
    ELIGIBLE_MISSING_PROPOSAL = "eligible_missing_proposal"
    ELIGIBLE_TARGET_UNBOUND = "eligible_target_unbound"


# The status each reason carries; a decision whose pair is not here is malformed.
GATE_STATUS_BY_REASON: dict[GateReason, SearchGateStatus] = {
    GateReason.ASSESSMENT_MALFORMED: SearchGateStatus.UNASSESSABLE,
    GateReason.RESIDUALS_MALFORMED: SearchGateStatus.UNASSESSABLE,
    GateReason.RESIDUAL_CONTEXT_MISMATCH: SearchGateStatus.UNASSESSABLE,
    GateReason.ASSESSMENT_RUNNABLE: SearchGateStatus.BLOCKED,
    GateReason.NO_RESIDUAL: SearchGateStatus.UNASSESSABLE,
    GateReason.UNCLASSIFIED_RESIDUAL: SearchGateStatus.INELIGIBLE,
    GateReason.MULTIPLE_RESIDUALS: SearchGateStatus.INELIGIBLE,
    GateReason.RESIDUAL_WITHOUT_EVIDENCE: SearchGateStatus.BLOCKED,
    GateReason.ELIGIBLE_MISSING_ROLE: SearchGateStatus.ELIGIBLE,
    GateReason.ELIGIBLE_MISSING_RELATION: SearchGateStatus.ELIGIBLE,
    GateReason.ELIGIBLE_MISSING_PROPOSAL: SearchGateStatus.ELIGIBLE,
    GateReason.ELIGIBLE_TARGET_UNBOUND: SearchGateStatus.ELIGIBLE,
}

_REASON_BY_VALUE = {reason.value: reason for reason in GateReason}

# search_gate.v1: the reason a single residual of each searchable kind is given.
ELIGIBLE_REASON_BY_KIND: dict[ResidualKind, GateReason] = {
    ResidualKind.MISSING_ROLE: GateReason.ELIGIBLE_MISSING_ROLE,
    ResidualKind.MISSING_RELATION: GateReason.ELIGIBLE_MISSING_RELATION,
    ResidualKind.MISSING_PROPOSAL: GateReason.ELIGIBLE_MISSING_PROPOSAL,
    ResidualKind.TARGET_UNBOUND: GateReason.ELIGIBLE_TARGET_UNBOUND,
}


@dataclasses.dataclass(frozen=True, slots=True)
class SearchGateDecision(Record):
    """The gate's answer (ADR-0226 §7B, fields of ADR-0227 §4).

    ``problem_frame_digest`` and ``contract_assessment_id`` bind the decision to the exact
    refused assessment so that a run can check them (ADR-0228 §16); they are ``None`` only
    when the assessment could not be validated.
    """

    decision_id: str
    policy_version: str
    input_digest: str
    status: SearchGateStatus
    reason_code: str
    problem_frame_digest: str | None
    contract_assessment_id: str | None
    residual_ids: tuple[str, ...]
    candidate_organ: str | None
    evidence_spans: tuple[SourceSpan, ...]
    explanation: str

    ID_FIELD: ClassVar = "decision_id"
    SCHEMA: ClassVar = (
        ("decision_id", digest),
        ("policy_version", exactly(SEARCH_GATE_POLICY_VERSION)),
        ("input_digest", digest),
        ("status", member_of(SearchGateStatus)),
        ("reason_code", code),
        ("problem_frame_digest", optional(digest)),
        ("contract_assessment_id", optional(digest)),
        ("residual_ids", tuple_of(digest)),
        ("candidate_organ", optional(code)),
        ("evidence_spans", spans_check),
        ("explanation", text),
    )

    def _cross_check(self) -> tuple[str, Defect] | None:
        # A well-formed reason this policy does not know stays representable: ADR-0227 §8
        # gives it a row of its own (BUDGET_UNASSESSABLE). A known reason fixes the status.
        known = _REASON_BY_VALUE.get(self.reason_code)
        if known is not None and GATE_STATUS_BY_REASON[known] is not self.status:
            return "status", Defect.INCONSISTENT_FIELDS
        # The three assessment-derived fields are present together or absent together.
        derived = (self.problem_frame_digest, self.contract_assessment_id, self.candidate_organ)
        if len({value is None for value in derived}) != 1:
            return "contract_assessment_id", Defect.INCONSISTENT_FIELDS
        if self.status is SearchGateStatus.ELIGIBLE and (
            len(self.residual_ids) != 1 or self.candidate_organ is None or not self.evidence_spans
        ):
            return "residual_ids", Defect.INCONSISTENT_FIELDS
        expected = gate_input_digest(
            self.problem_frame_digest, self.contract_assessment_id, self.residual_ids
        )
        if self.input_digest != expected:
            return "input_digest", Defect.IDENTITY_MISMATCH
        return None

    @property
    def allowed(self) -> bool:
        """ADR-0226 §7B's ``allowed`` disposition; every other status is ``denied``."""
        return self.status is SearchGateStatus.ELIGIBLE


def gate_input_digest(
    problem_frame_digest: str | None,
    contract_assessment_id: str | None,
    residual_ids: tuple[str, ...],
) -> str:
    """The residual context's identity, from fields the decision itself carries, so that any
    holder of the decision can reproduce it (ADR-0228 §6); unvalidated parts are ``None``
    and malformed residuals contribute no id."""
    return sha256_digest(
        {
            "schema_version": GATE_INPUT_SCHEMA_VERSION,
            "problem_frame_digest": problem_frame_digest,
            "contract_assessment_id": contract_assessment_id,
            "residual_ids": list(residual_ids),
        }
    )


def _residuals_defect(residuals: object) -> RecordDefect | None:
    if type(residuals) is not tuple:
        return RecordDefect("residuals", "$", Defect.SEQUENCE_NOT_TUPLE)
    for residual in residuals:
        found = inspect_record(residual, ContractResidual)
        if found is not None:
            return found
    return None


def search_gate_reason(
    assessment_ok: bool,
    residuals_ok: bool,
    runnable: bool,
    projected: bool,
    residuals: tuple[tuple[ResidualKind, bool], ...],
) -> GateReason:
    """search_gate.v1's rules, first match wins (docs/adr/0002), over what the context shows:
    whether the assessment and the residuals validated, whether the assessment is runnable,
    whether the residuals are exactly its projection (read only for a valid refused
    assessment with valid residuals), and each residual as its kind and whether it carries
    evidence. Pure and free of hashing, so CrossHair checks it symbolically
    (docs/contracts.md).

    post: _allows(__return__) == _admit(assessment_ok, residuals_ok, runnable, projected, residuals)
    post: not _allows(__return__) or __return__ is ELIGIBLE_REASON_BY_KIND[residuals[0][0]]
    post: assessment_ok or __return__ is GateReason.ASSESSMENT_MALFORMED
    post: not assessment_ok or residuals_ok or __return__ is GateReason.RESIDUALS_MALFORMED
    """
    if not assessment_ok:
        return GateReason.ASSESSMENT_MALFORMED
    if not residuals_ok:
        return GateReason.RESIDUALS_MALFORMED
    if runnable:
        return GateReason.RESIDUAL_CONTEXT_MISMATCH if residuals else GateReason.ASSESSMENT_RUNNABLE
    # The context must be exactly the projection of this assessment: complete, in order,
    # nothing added or forged.
    if not projected:
        return GateReason.RESIDUAL_CONTEXT_MISMATCH
    if not residuals:
        return GateReason.NO_RESIDUAL
    if any(kind is ResidualKind.UNCLASSIFIED for kind, _ in residuals):
        return GateReason.UNCLASSIFIED_RESIDUAL
    if len(residuals) > 1:
        return GateReason.MULTIPLE_RESIDUALS
    kind, has_evidence = residuals[0]
    if not has_evidence:
        return GateReason.RESIDUAL_WITHOUT_EVIDENCE
    return ELIGIBLE_REASON_BY_KIND[kind]


def _allows(reason: GateReason) -> bool:
    return GATE_STATUS_BY_REASON[reason] is SearchGateStatus.ELIGIBLE


def _admit(
    assessment_ok: bool,
    residuals_ok: bool,
    runnable: bool,
    projected: bool,
    residuals: tuple[tuple[ResidualKind, bool], ...],
) -> bool:
    """The one context search_gate.v1 allows, stated at once rather than rule by rule: a
    valid refused assessment, its exact projection, and a single searchable residual with
    evidence (ADR-0226 §7B). ``search_gate_reason``'s contract holds the rules to it."""
    single = len(residuals) == 1 and residuals[0][0] is not ResidualKind.UNCLASSIFIED
    return (
        assessment_ok and residuals_ok and not runnable and projected and single and residuals[0][1]
    )


def _is_projection(assessment: ContractAssessment, residuals: tuple[ContractResidual, ...]) -> bool:
    """The residuals are the assessment's own projection, id for id, in order."""
    projected = project_residuals(assessment)
    return type(projected) is tuple and [r.residual_id for r in projected] == [
        r.residual_id for r in residuals
    ]


def decide_search_gate(
    assessment: ContractAssessment, residuals: tuple[ContractResidual, ...]
) -> SearchGateDecision:
    """Decide eligibility for one complete residual context under ``search_gate.v1``."""
    assessment_defect = inspect_record(assessment, ContractAssessment)
    valid_assessment = assessment if assessment_defect is None else None
    residuals_defect = _residuals_defect(residuals)
    valid_residuals: tuple[ContractResidual, ...] = residuals if residuals_defect is None else ()  # type: ignore[assignment]
    found = assessment_defect if assessment_defect is not None else residuals_defect
    runnable = valid_assessment is not None and valid_assessment.status is AssessmentStatus.RUNNABLE
    # The projection is computed (and hashed) only where the policy reads it.
    reason = search_gate_reason(
        assessment_ok=assessment_defect is None,
        residuals_ok=residuals_defect is None,
        runnable=runnable,
        projected=found is None and not runnable and _is_projection(assessment, valid_residuals),
        residuals=tuple((r.kind, bool(r.evidence_spans)) for r in valid_residuals),
    )
    detail = found.describe() if found is not None else ""
    residual_ids = tuple(residual.residual_id for residual in valid_residuals)
    status = GATE_STATUS_BY_REASON[reason]
    explanation = f"{status.value}: {reason.value}" + (f" ({detail})" if detail else "")
    frame_digest = valid_assessment.problem_frame_digest if valid_assessment else None
    assessment_id = valid_assessment.assessment_id if valid_assessment else None
    return SearchGateDecision.sealed(
        policy_version=SEARCH_GATE_POLICY_VERSION,
        input_digest=gate_input_digest(frame_digest, assessment_id, residual_ids),
        status=status,
        reason_code=reason.value,
        problem_frame_digest=frame_digest,
        contract_assessment_id=assessment_id,
        residual_ids=residual_ids,
        candidate_organ=valid_assessment.organ if valid_assessment else None,
        evidence_spans=tuple(span for r in valid_residuals for span in r.evidence_spans),
        explanation=explanation,
    )
