"""``SearchGateDecision`` and the ``search_gate.v1`` policy (docs/adr/0002).

The gate answers one question: may a bounded exploration of this residual context be
considered? It does not search, allocate, repair or judge (ADR-0226 §7B, §8.3). It always
answers with a decision; malformed or inconsistent input is ``UNASSESSABLE``, never an
exception, and every non-``ELIGIBLE`` status is a denial.

The rules are code; the tables they read (each reason's status, each searchable kind's
eligible reason) are a versioned value, ``SearchGatePolicy``, honoured only when it is the
value registered for its version (issue 8).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import types
from collections.abc import Mapping
from typing import Annotated, ClassVar

from .assessment import AssessmentStatus, ContractAssessment
from .checks import (
    Defect,
    RecordDefect,
    code,
    digest,
    is_digest,
    is_version,
    member_of,
    optional,
    text,
    tuple_of,
    version,
)
from .identity import sha256_digest
from .record import Record, inspect_record, nested
from .residual import ContractResidual, ResidualKind, project_residuals
from .span import SourceSpan, spans_check

SEARCH_GATE_POLICY_VERSION = "search_gate.v1"
GATE_INPUT_SCHEMA_VERSION = "search_gate_input.v1"


class SearchGateStatus(enum.Enum):
    ELIGIBLE = "ELIGIBLE"
    INELIGIBLE = "INELIGIBLE"
    BLOCKED = "BLOCKED"
    UNASSESSABLE = "UNASSESSABLE"


class GateReason(enum.Enum):
    """Every reason ``search_gate.v1`` can give, listed in rule order."""

    POLICY_UNSUPPORTED = "gate_unassessable_policy_unsupported"
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


# search_gate.v1's tables, written out as docs/adr/0002 gives them; ``SEARCH_GATE_V1`` is built
# from them and the decision reads the policy value, never these. First, the status each
# reason carries, in rule order.
GATE_STATUS_BY_REASON: Mapping[GateReason, SearchGateStatus] = types.MappingProxyType(
    {
        GateReason.POLICY_UNSUPPORTED: SearchGateStatus.UNASSESSABLE,
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
)

_REASON_BY_VALUE = types.MappingProxyType({reason.value: reason for reason in GateReason})

# Then the reason a single residual of each searchable kind is given.
ELIGIBLE_REASON_BY_KIND: Mapping[ResidualKind, GateReason] = types.MappingProxyType(
    {
        ResidualKind.MISSING_ROLE: GateReason.ELIGIBLE_MISSING_ROLE,
        ResidualKind.MISSING_RELATION: GateReason.ELIGIBLE_MISSING_RELATION,
        ResidualKind.MISSING_PROPOSAL: GateReason.ELIGIBLE_MISSING_PROPOSAL,
        ResidualKind.TARGET_UNBOUND: GateReason.ELIGIBLE_TARGET_UNBOUND,
    }
)

# The reasons that answer for input the gate could not assess: ADR-0227 §4-§5 and
# docs/adr/0002 make UNASSESSABLE the fail-closed answer, so no policy may give them another.
FAIL_CLOSED_REASONS = frozenset(
    {
        GateReason.POLICY_UNSUPPORTED,
        GateReason.ASSESSMENT_MALFORMED,
        GateReason.RESIDUALS_MALFORMED,
        GateReason.RESIDUAL_CONTEXT_MISMATCH,
        GateReason.NO_RESIDUAL,
    }
)
SEARCHABLE_KINDS = tuple(kind for kind in ResidualKind if kind is not ResidualKind.UNCLASSIFIED)


@dataclasses.dataclass(frozen=True, slots=True)
class GateReasonStatus(Record):
    """One row of a gate policy's status table: a reason and the status it carries."""

    reason: Annotated[GateReason, member_of(GateReason)]
    status: Annotated[SearchGateStatus, member_of(SearchGateStatus)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        # ADR-0226 §7B, docs/adr/0002 rule 9: a reason is eligible exactly when its code
        # says so, so that the budget's rows (ADR-0227 §8) key on the code alone.
        eligible = self.status is SearchGateStatus.ELIGIBLE
        if self.reason.value.startswith("eligible_") != eligible:
            return "status", Defect.INCONSISTENT_FIELDS
        # ADR-0227 §4-§5: what could not be assessed is UNASSESSABLE, under every policy.
        if self.reason in FAIL_CLOSED_REASONS and self.status is not SearchGateStatus.UNASSESSABLE:
            return "status", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class EligibleReasonRow(Record):
    """One row of a gate policy's kind table: a searchable residual kind and its reason."""

    kind: Annotated[ResidualKind, member_of(ResidualKind)]
    reason: Annotated[GateReason, member_of(GateReason)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        # docs/adr/0001: an unclassified residual is never searchable.
        if self.kind is ResidualKind.UNCLASSIFIED:
            return "kind", Defect.INCONSISTENT_FIELDS
        # ADR-0227 §4, §8 name the eligible reason after the kind, and ADR-0231 §7.3.7 admits
        # an operator by that name: a reason naming another kind would misdirect both.
        if self.reason.value != f"eligible_{self.kind.value}":
            return "reason", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class SearchGatePolicy(Record):
    """A versioned gate policy: every ``GateReason`` once, in rule order, with its status,
    and every searchable ``ResidualKind`` once, in enum order, with its eligible reason.
    Its identity is ``policy_id``."""

    version: Annotated[str, version]
    reason_statuses: Annotated[tuple[GateReasonStatus, ...], tuple_of(nested(GateReasonStatus))]
    eligible_reasons: Annotated[tuple[EligibleReasonRow, ...], tuple_of(nested(EligibleReasonRow))]

    def _cross_check(self) -> tuple[str, Defect] | None:
        # One fixed order per table, so that equal tables have one canonical form and one id.
        reasons = [row.reason for row in self.reason_statuses]
        if len(reasons) != len(set(reasons)):
            return "reason_statuses", Defect.DUPLICATE_ENTRY
        if reasons != list(GateReason):  # docs/adr/0002: every reason has a status
            return "reason_statuses", Defect.INCONSISTENT_FIELDS
        kinds = [row.kind for row in self.eligible_reasons]
        if len(kinds) != len(set(kinds)):
            return "eligible_reasons", Defect.DUPLICATE_ENTRY
        if kinds != list(SEARCHABLE_KINDS):  # docs/adr/0002 rule 9: every searchable kind
            return "eligible_reasons", Defect.INCONSISTENT_FIELDS
        return None

    @property
    def policy_id(self) -> str:
        """The policy's canonical identity: any change to the version or a row changes it."""
        return self.content_digest()

    def status_for(self, reason: GateReason) -> SearchGateStatus:
        for row in self.reason_statuses:
            if row.reason is reason:
                return row.status
        raise KeyError(reason)  # unreachable for a validated policy: every reason has a row

    def eligible_reason_for(self, kind: ResidualKind) -> GateReason:
        for row in self.eligible_reasons:
            if row.kind is kind:
                return row.reason
        raise KeyError(kind)  # unreachable for a validated policy and a searchable kind


SEARCH_GATE_V1 = SearchGatePolicy(
    SEARCH_GATE_POLICY_VERSION,
    tuple(GateReasonStatus(reason, status) for reason, status in GATE_STATUS_BY_REASON.items()),
    tuple(EligibleReasonRow(kind, reason) for kind, reason in ELIGIBLE_REASON_BY_KIND.items()),
)

# The versions this kernel knows; a policy is honoured only when it is the registered value,
# and a decision validates only under a registered version.
GATE_POLICIES: Mapping[str, SearchGatePolicy] = types.MappingProxyType(
    {
        SEARCH_GATE_V1.version: SEARCH_GATE_V1,
    }
)

# The version in force: the one the loop decides under, every default names and an
# unsupported policy's refusal is decided under. Adopting a proven version moves this one
# line (``practice-loop prove-policy --adopt``).
SEARCH_GATE_IN_FORCE = SEARCH_GATE_V1


def registered_gate_policy(policy: object) -> bool:
    """``policy`` is a well-formed ``SearchGatePolicy`` equal to the value registered for its
    version. Reads nothing from any other object: its attribute access could run any code."""
    if inspect_record(policy, SearchGatePolicy) is not None:
        return False
    registered = GATE_POLICIES.get(policy.version)  # type: ignore[attr-defined]
    return type(registered) is SearchGatePolicy and (registered is policy or registered == policy)


def _registered_version(value: object) -> Defect | None:
    """A gate policy version this kernel has registered (the defects of ``exactly``)."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    if type(GATE_POLICIES.get(value)) is SearchGatePolicy:
        return None
    return Defect.VERSION_UNSUPPORTED if is_version(value) else Defect.VERSION_MALFORMED


@dataclasses.dataclass(frozen=True, slots=True)
class SearchGateDecision(Record):
    """The gate's answer (ADR-0226 §7B, fields of ADR-0227 §4).

    ``problem_frame_digest`` and ``contract_assessment_id`` bind the decision to the exact
    refused assessment so that a run can check them (ADR-0228 §16); they are ``None`` only
    when the assessment could not be validated.
    """

    decision_id: Annotated[str, digest]
    policy_version: Annotated[str, _registered_version]
    input_digest: Annotated[str, digest]
    status: Annotated[SearchGateStatus, member_of(SearchGateStatus)]
    reason_code: Annotated[str, code]
    problem_frame_digest: Annotated[str | None, optional(digest)]
    contract_assessment_id: Annotated[str | None, optional(digest)]
    residual_ids: Annotated[tuple[str, ...], tuple_of(digest)]
    candidate_organ: Annotated[str | None, optional(code)]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "decision_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        # A well-formed reason this policy does not know stays representable: ADR-0227 §8
        # gives it a row of its own (BUDGET_UNASSESSABLE). A known reason fixes the status,
        # as the registered policy of the decision's version gives it.
        known = _REASON_BY_VALUE.get(self.reason_code)
        policy = GATE_POLICIES[self.policy_version]
        if known is not None and policy.status_for(known) is not self.status:
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
    if (
        (problem_frame_digest is None or is_digest(problem_frame_digest))
        and (contract_assessment_id is None or is_digest(contract_assessment_id))
        and type(residual_ids) is tuple
        and all(is_digest(residual_id) for residual_id in residual_ids)
    ):
        # The usual context, every part a digest or None: its canonical bytes are written
        # from a template, as the encoder would write them (hex needs no escaping).
        return hashlib.sha256(
            _GATE_INPUT_TEMPLATE
            % (
                _quoted_or_null(contract_assessment_id),
                _quoted_or_null(problem_frame_digest),
                b",".join(b'"%s"' % residual_id.encode("ascii") for residual_id in residual_ids),
            )
        ).hexdigest()
    return sha256_digest(
        {
            "schema_version": GATE_INPUT_SCHEMA_VERSION,
            "problem_frame_digest": problem_frame_digest,
            "contract_assessment_id": contract_assessment_id,
            "residual_ids": list(residual_ids),
        }
    )


_GATE_INPUT_TEMPLATE = (
    b'{"contract_assessment_id":%b,"problem_frame_digest":%b,"residual_ids":[%b],'
    b'"schema_version":"' + GATE_INPUT_SCHEMA_VERSION.encode("ascii") + b'"}'
)


def _quoted_or_null(checked_digest: str | None) -> bytes:
    return b"null" if checked_digest is None else b'"%s"' % checked_digest.encode("ascii")


def _residuals_defect(residuals: object) -> RecordDefect | None:
    if type(residuals) is not tuple:
        return RecordDefect("residuals", "$", Defect.SEQUENCE_NOT_TUPLE)
    for residual in residuals:
        found = inspect_record(residual, ContractResidual)
        if found is not None:
            return found
    return None


def gate_reason_under(
    policy: SearchGatePolicy,
    assessment_ok: bool,
    residuals_ok: bool,
    runnable: bool,
    projected: bool,
    residuals: tuple[tuple[ResidualKind, bool], ...],
) -> GateReason:
    """The gate's rules, first match wins (docs/adr/0002), over what the context shows:
    whether the assessment and the residuals validated, whether the assessment is runnable,
    whether the residuals are exactly its projection (read only for a valid refused
    assessment with valid residuals), and each residual as its kind and whether it carries
    evidence. The eligible reason is read from ``policy``, a validated policy.

    Its contract is ``search_gate_reason``'s under every valid policy, since each names the
    eligible reason after the kind: CrossHair checks it on ``search_gate.v1`` because it
    cannot build a valid policy symbolically (with a policy argument it reaches no eligible
    path at all); tests/cover/test_gate_policy.py samples it on generated policies.
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
    return policy.eligible_reason_for(kind)


def search_gate_reason(
    assessment_ok: bool,
    residuals_ok: bool,
    runnable: bool,
    projected: bool,
    residuals: tuple[tuple[ResidualKind, bool], ...],
) -> GateReason:
    """``gate_reason_under`` the ``search_gate.v1`` policy. Pure and free of hashing, so
    CrossHair checks it symbolically (docs/contracts.md).

    post: _allows(__return__) == _admit(assessment_ok, residuals_ok, runnable, projected, residuals)
    post: not _allows(__return__) or __return__ is ELIGIBLE_REASON_BY_KIND[residuals[0][0]]
    post: assessment_ok or __return__ is GateReason.ASSESSMENT_MALFORMED
    post: not assessment_ok or residuals_ok or __return__ is GateReason.RESIDUALS_MALFORMED
    """
    return gate_reason_under(
        SEARCH_GATE_V1, assessment_ok, residuals_ok, runnable, projected, residuals
    )


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
    assessment: ContractAssessment,
    residuals: tuple[ContractResidual, ...],
    policy: SearchGatePolicy = SEARCH_GATE_IN_FORCE,
) -> SearchGateDecision:
    """Decide eligibility for one complete residual context under ``policy``.

    A policy that is not the registered value for its version decides nothing: the answer
    is ``gate_unassessable_policy_unsupported`` under the kernel's current version, whose
    table gives that reason its fail-closed status (docs/adr/0002, "Policy as a value").
    """
    assessment_defect = inspect_record(assessment, ContractAssessment)
    valid_assessment = assessment if assessment_defect is None else None
    residuals_defect = _residuals_defect(residuals)
    valid_residuals: tuple[ContractResidual, ...] = residuals if residuals_defect is None else ()  # type: ignore[assignment]
    found = assessment_defect if assessment_defect is not None else residuals_defect
    if registered_gate_policy(policy):
        runnable = (
            valid_assessment is not None and valid_assessment.status is AssessmentStatus.RUNNABLE
        )
        # The projection is computed (and hashed) only where the policy reads it.
        projected = found is None and not runnable and _is_projection(assessment, valid_residuals)
        reason = gate_reason_under(
            policy,
            assessment_ok=assessment_defect is None,
            residuals_ok=residuals_defect is None,
            runnable=runnable,
            projected=projected,
            residuals=tuple((r.kind, bool(r.evidence_spans)) for r in valid_residuals),
        )
        decided_under = policy
        detail = found.describe() if found is not None else ""
    else:
        reason, decided_under = GateReason.POLICY_UNSUPPORTED, SEARCH_GATE_IN_FORCE
        detail = f"not the registered gate policy {_shown_version(policy)}".rstrip()
    residual_ids = tuple(residual.residual_id for residual in valid_residuals)
    status = decided_under.status_for(reason)
    explanation = f"{status.value}: {reason.value}" + (f" ({detail})" if detail else "")
    frame_digest = valid_assessment.problem_frame_digest if valid_assessment else None
    assessment_id = valid_assessment.assessment_id if valid_assessment else None
    return SearchGateDecision.sealed(
        policy_version=decided_under.version,
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


def _shown_version(policy: object) -> str:
    """The version an unregistered policy claims, when it is a well-formed version of a
    ``SearchGatePolicy``; nothing is read from any other object."""
    if type(policy) is not SearchGatePolicy:
        return ""
    claimed = getattr(policy, "version", "")
    return claimed if type(claimed) is str and version(claimed) is None else ""
