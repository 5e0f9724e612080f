"""The first candidate operator, ``missing_role_candidate.v1`` (ADR-0231).

One operator, one eligible residual context, one attempt index, one candidate, one result or
refusal (§1). The operator proposes; it never judges: its candidate stays ``replay_pending``
until the replay adapter (``replay``) classifies it (§12). It reads only typed records: the
direction it proposes is the one ``GroundedUnaryDeltaCue`` of the frame, never a re-reading of
the source text (§6).

Upstream records are consumed as values: this module calls no producer (§16.1).
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable, Mapping
from typing import Annotated, ClassVar, NamedTuple

from .assessment import ContractAssessment
from .budget import ComputeBudgetDecision, ComputeBudgetStatus
from .checks import (
    Defect,
    code,
    digest,
    exactly,
    member_of,
    non_negative_int,
    optional,
    positive_int,
    text,
    tuple_of,
    version,
    version_pairs,
)
from .frame import (
    UNARY_DELTA_ORGAN,
    UNARY_DELTA_RELATION,
    Direction,
    ProblemFrame,
    Role,
    problem_frame_digest,
)
from .gate import SearchGateDecision, SearchGateStatus
from .identity import sha256_digest
from .record import Record, inspect_record, nested
from .residual import ContractResidual, ResidualKind
from .search_run import (
    CANDIDATE_OPERATOR_SET_VERSION,
    BudgetCharge,
    CandidateAttempt,
    CandidateReplayStatus,
    OpenedSearchRun,
    OperatorManifestRow,
    OperatorSetManifest,
    operator_set_id,
)
from .span import SourceSpan, span_in_source, spans_check

CANDIDATE_OPERATOR_POLICY_VERSION = "candidate_operator.v1"
OPERATOR_FAMILY = "residual_missing_role"
OPERATOR_NAME = "missing_role_candidate"
OPERATOR_VERSION = "missing_role_candidate.v1"
CANDIDATE_PAYLOAD_KIND = "role_binding_delta"
CANDIDATE_SCHEMA_VERSION = "candidate_reconstruction.v1"
CUE_SOURCE = "GroundedUnaryDeltaCue.direction"

# ADR-0231 §7.2: the schema and policy versions an operator input binds, names ascending.
SCHEMA_VERSIONS = (
    ("candidate_reconstruction", CANDIDATE_SCHEMA_VERSION),
    ("contract_assessment", "contract_assessment.v1"),
    ("contract_residual", "contract_residual.v1"),
    ("geometric_search_run_schema", "geometric_search_run_schema.v1"),
    ("problem_frame", "problem_frame.v1"),
)
# candidate_operators.v1's pins; an operator input binds those of the set in force
# (``POLICY_VERSIONS``, below).
V1_POLICY_VERSIONS = (
    ("candidate_operator", CANDIDATE_OPERATOR_POLICY_VERSION),
    ("compute_budget", "compute_budget.v1"),
    ("geometric_search_run", "geometric_search_run.v2"),
    ("search_gate", "search_gate.v1"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateOperatorPolicy(Record):
    """ADR-0231 §7.1, with the static constraints the selected operator must carry."""

    operator_policy_version: Annotated[str, version]
    operator_family: Annotated[str, code]
    operator_name: Annotated[str, code]
    operator_version: Annotated[str, version]
    allowed_residual_kinds: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    allowed_candidate_organs: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    max_attempts_per_run: Annotated[int, positive_int]
    determinism_requirements: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    forbidden_authority_paths: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    allowed_residual_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    budget_charge: Annotated[BudgetCharge, nested(BudgetCharge)]
    depth: Annotated[int, positive_int]
    max_parallelism: Annotated[int, positive_int]


# ADR-0231 §6, §7.1: the one authorized policy.
MISSING_ROLE_CANDIDATE_POLICY = CandidateOperatorPolicy(
    operator_policy_version=CANDIDATE_OPERATOR_POLICY_VERSION,
    operator_family=OPERATOR_FAMILY,
    operator_name=OPERATOR_NAME,
    operator_version=OPERATOR_VERSION,
    allowed_residual_kinds=(ResidualKind.MISSING_ROLE.value,),
    allowed_candidate_organs=(UNARY_DELTA_ORGAN,),
    max_attempts_per_run=1,
    determinism_requirements=("canonical_identity", "closed_operator_set", "serial_only"),
    forbidden_authority_paths=(
        "answer",
        "mutation",
        "promotion",
        "proof_replay",
        "contract_replay",
        "ranking",
        "repair",
        "selection",
        "serving",
        "trace_sealing",
        "workbench",
    ),
    allowed_residual_codes=("direction_unbound",),
    budget_charge=BudgetCharge(candidates=1, steps=1),
    depth=1,
    max_parallelism=1,
)

# ADR-0231 §10: the static, closed, one-row operator-set table.
CANDIDATE_OPERATOR_SET_V1 = OperatorSetManifest(
    CANDIDATE_OPERATOR_SET_VERSION,
    (
        OperatorManifestRow(
            operator_name=OPERATOR_NAME,
            operator_version=OPERATOR_VERSION,
            allowed_residual_kinds=MISSING_ROLE_CANDIDATE_POLICY.allowed_residual_kinds,
            allowed_residual_codes=MISSING_ROLE_CANDIDATE_POLICY.allowed_residual_codes,
            allowed_candidate_organs=MISSING_ROLE_CANDIDATE_POLICY.allowed_candidate_organs,
            max_attempts_per_run=1,
            budget_charge=BudgetCharge(candidates=1, steps=1),
            depth=1,
            max_parallelism=1,
            schema_versions=SCHEMA_VERSIONS,
            policy_versions=V1_POLICY_VERSIONS,
            input_obligations=(
                "single_grounded_unary_delta_cue",
                "cue_span_justified_by_residual",
                "identities_reproduce",
            ),
            output_candidate_shape=CANDIDATE_PAYLOAD_KIND,
            ordering_key=("attempt_index",),
            forbidden_side_effects=(
                "filesystem",
                "network",
                "clock",
                "randomness",
                "environment",
                "subprocess",
                "mutation",
            ),
            replay_obligations=("contract_replay", "proof_replay"),
        ),
    ),
)

# The candidate operator sets this kernel registers, besides the search run's empty set
# (ADR-0228 §9: the run accepts no other).
CANDIDATE_OPERATOR_SETS: Mapping[str, OperatorSetManifest] = types.MappingProxyType(
    {
        CANDIDATE_OPERATOR_SET_V1.operator_set_version: CANDIDATE_OPERATOR_SET_V1,
    }
)

# The set in force: the one the loop runs, every default names and a trace must bind
# (ADR-0231 §10). Adopting a proven version moves this one line (``practice-loop
# prove-policy --adopt``).
CANDIDATE_OPERATOR_SET = CANDIDATE_OPERATOR_SET_V1
CANDIDATE_OPERATOR_SET_ID = operator_set_id(CANDIDATE_OPERATOR_SET)
# ADR-0231 §7.2: what an operator input binds are the pins of the set in force's row for the
# one operator (so that moving a pin moves every input's identity with it).
_OPERATOR_ROW_IN_FORCE = next(
    row for row in CANDIDATE_OPERATOR_SET.operators if row.operator_name == OPERATOR_NAME
)
POLICY_VERSIONS = _OPERATOR_ROW_IN_FORCE.policy_versions


class OperatorRefusalReason(enum.Enum):
    """Every reason the operator refuses (ADR-0231 §17), numbered preconditions in order."""

    INPUT_MALFORMED = "input_malformed"
    RECORD_MALFORMED = "record_malformed"
    POLICY_UNSUPPORTED = "operator_policy_unsupported"  # §7.3.1
    OPERATOR_UNSUPPORTED = "operator_name_or_version_unsupported"  # §7.3.2-3
    RESIDUAL_KIND_UNSUPPORTED = "residual_kind_unsupported"  # §7.3.4
    CANDIDATE_ORGAN_UNSUPPORTED = "candidate_organ_unsupported"  # §7.3.5
    RESIDUAL_CODE_UNSUPPORTED = "residual_code_unsupported"  # §7.3.6
    GATE_NOT_ELIGIBLE = "gate_not_eligible"  # §7.3.7-8
    BUDGET_NOT_ALLOWED = "budget_not_allowed"  # §7.3.9-10
    GATE_BUDGET_MISMATCH = "gate_budget_mismatch"  # §7.3.11
    RUN_MISMATCH = "run_mismatch"  # §7.3.12-13
    OPERATOR_SET_MISMATCH = "operator_set_mismatch"  # §7.3.14-15
    ATTEMPT_INDEX_NEGATIVE = "attempt_index_negative"  # §7.3.16
    ATTEMPT_INDEX_BEYOND_BUDGET = "attempt_index_beyond_budget"  # §7.3.17
    ATTEMPT_INDEX_BEYOND_POLICY = "attempt_index_beyond_policy"  # §7.3.18
    CHARGE_EXCEEDS_BUDGET = "charge_exceeds_budget"  # §7.3.19
    PARALLELISM_NOT_ONE = "parallelism_not_one"  # §7.3.20
    EVIDENCE_SPANS_INVALID = "evidence_spans_invalid"  # §7.3.21
    VERSIONS_NOT_CANONICAL = "versions_not_canonical"  # §7.3.22
    IDENTITY_MISMATCH = "identity_mismatch"
    RESIDUAL_FIELD_MISSING = "residual_field_missing"
    CUE_MISSING = "typed_cue_missing"
    CUE_AMBIGUOUS = "typed_cue_ambiguous"
    CUE_NOT_JUSTIFIED = "typed_cue_not_justified"


_R = OperatorRefusalReason


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateOperatorInput(Record):
    """ADR-0231 §7.2. ``input_digest`` hashes every other field (§14), itself left out."""

    input_digest: Annotated[str, digest]
    operator_policy_version: Annotated[str, version]
    operator_name: Annotated[str, code]
    operator_version: Annotated[str, version]
    problem_frame_digest: Annotated[str, digest]
    original_contract_assessment_id: Annotated[str, digest]
    residual_id: Annotated[str, digest]
    residual_kind: Annotated[str, code]
    search_gate_decision_id: Annotated[str, digest]
    compute_budget_id: Annotated[str, digest]
    geometric_search_run_id: Annotated[str, digest]
    operator_set_id: Annotated[str, digest]
    operator_set_version: Annotated[str, version]
    attempt_index: Annotated[int, non_negative_int]
    schema_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]
    policy_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]

    ID_FIELD: ClassVar = "input_digest"
    SELF_SEALED: ClassVar = False


@dataclasses.dataclass(frozen=True, slots=True)
class RoleBindingDelta(Record):
    """The candidate payload (ADR-0231 §8.1): bind the proposal's missing ``direction`` role
    to the typed direction of the frame's one grounded cue, citing the cue's exact span."""

    kind: Annotated[str, exactly(CANDIDATE_PAYLOAD_KIND)]
    candidate_organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    relation_type: Annotated[str, exactly(UNARY_DELTA_RELATION)]
    role: Annotated[Role, member_of(Role)]
    source: Annotated[str, exactly(CUE_SOURCE)]
    direction: Annotated[Direction, member_of(Direction)]
    cue_span: Annotated[SourceSpan, nested(SourceSpan)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        return None if self.role is Role.DIRECTION else ("role", Defect.INCONSISTENT_FIELDS)


def candidate_digest_of(
    frame_digest: str, organ: str, payload: RoleBindingDelta, spans: tuple[SourceSpan, ...]
) -> str:
    """ADR-0231 §9: candidate content only; no run, attempt, operator or prose."""
    return sha256_digest(
        {
            "problem_frame_digest": frame_digest,
            "candidate_organ": organ,
            "candidate_payload": payload.to_json(),
            "evidence_spans": [span.to_json() for span in spans],
        }
    )


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateReconstruction(Record):
    """ADR-0231 §8.1 and §9: one candidate and the envelope that binds it.

    ``candidate_digest`` hashes the candidate content only (frame digest, organ, payload,
    ordered spans); ``candidate_reconstruction_digest`` self-seals the whole envelope,
    including run, attempt, operator set, residual, and versions. They never coincide (§9).
    """

    candidate_digest: Annotated[str, digest]
    candidate_reconstruction_digest: Annotated[str, digest]
    candidate_organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    candidate_payload: Annotated[RoleBindingDelta, nested(RoleBindingDelta)]
    evidence_spans: Annotated[tuple[SourceSpan, ...], tuple_of(nested(SourceSpan), non_empty=True)]
    operator_name: Annotated[str, code]
    operator_version: Annotated[str, version]
    operator_provenance: Annotated[tuple[tuple[str, str], ...], version_pairs]
    source_residual_id: Annotated[str, digest]
    problem_frame_digest: Annotated[str, digest]
    original_contract_assessment_id: Annotated[str, digest]
    geometric_search_run_id: Annotated[str, digest]
    attempt_id: Annotated[str, digest]
    attempt_index: Annotated[int, non_negative_int]
    operator_set_id: Annotated[str, digest]
    schema_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]
    policy_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]

    ID_FIELD: ClassVar = "candidate_reconstruction_digest"

    def _cross_check(self) -> tuple[str, Defect] | None:
        if self.candidate_digest != candidate_digest_of(
            self.problem_frame_digest,
            self.candidate_organ,
            self.candidate_payload,
            self.evidence_spans,
        ):
            return "candidate_digest", Defect.IDENTITY_MISMATCH
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateOperatorResult(Record):
    """ADR-0231 §8.2, carrying the attempt and the reconstruction it names, so that the run
    can record the one and the replay adapter can judge the other. Not closure (§18.23)."""

    operator_result_id: Annotated[str, digest]
    operator_policy_version: Annotated[str, exactly(CANDIDATE_OPERATOR_POLICY_VERSION)]
    input_digest: Annotated[str, digest]
    geometric_search_run_id: Annotated[str, digest]
    attempt_id: Annotated[str, digest]
    attempt_index: Annotated[int, non_negative_int]
    candidate_digest: Annotated[str, digest]
    candidate_reconstruction_digest: Annotated[str, digest]
    candidate_organ: Annotated[str, exactly(UNARY_DELTA_ORGAN)]
    operator_name: Annotated[str, exactly(OPERATOR_NAME)]
    operator_version: Annotated[str, exactly(OPERATOR_VERSION)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]
    candidate_attempt: Annotated[CandidateAttempt, nested(CandidateAttempt)]
    reconstruction: Annotated[CandidateReconstruction, nested(CandidateReconstruction)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "operator_result_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        attempt, rebuilt = self.candidate_attempt, self.reconstruction
        bound = (
            attempt.attempt_id == self.attempt_id == rebuilt.attempt_id,
            attempt.attempt_index == self.attempt_index == rebuilt.attempt_index,
            attempt.candidate_digest == self.candidate_digest == rebuilt.candidate_digest,
            attempt.input_digest == self.input_digest,
            rebuilt.candidate_reconstruction_digest == self.candidate_reconstruction_digest,
            rebuilt.geometric_search_run_id == self.geometric_search_run_id,
            attempt.evidence_spans == self.evidence_spans == rebuilt.evidence_spans,
            # ADR-0231 §17: a result remains replay_pending; it is never closure.
            attempt.replay_status is CandidateReplayStatus.REPLAY_PENDING,
        )
        return None if all(bound) else ("candidate_attempt", Defect.INCONSISTENT_FIELDS)


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateOperatorRefusal(Record):
    """ADR-0231 §8.3: no partial candidate; identities only where validated (§8.3)."""

    operator_refusal_id: Annotated[str, digest]
    operator_policy_version: Annotated[str, exactly(CANDIDATE_OPERATOR_POLICY_VERSION)]
    input_digest: Annotated[str | None, optional(digest)]
    geometric_search_run_id: Annotated[str | None, optional(digest)]
    residual_id: Annotated[str | None, optional(digest)]
    operator_name: Annotated[str, exactly(OPERATOR_NAME)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "operator_refusal_id"


CandidateOperatorOutcome = CandidateOperatorResult | CandidateOperatorRefusal


def candidate_operator_input(
    *,
    assessment: ContractAssessment,
    residual: ContractResidual,
    gate_decision: SearchGateDecision,
    budget_decision: ComputeBudgetDecision,
    opened_run: OpenedSearchRun,
    attempt_index: int = 0,
) -> CandidateOperatorInput:
    """The input that binds exactly these records (raises ``RecordError`` if it cannot)."""
    return CandidateOperatorInput.sealed(
        operator_policy_version=CANDIDATE_OPERATOR_POLICY_VERSION,
        operator_name=OPERATOR_NAME,
        operator_version=OPERATOR_VERSION,
        problem_frame_digest=assessment.problem_frame_digest,
        original_contract_assessment_id=assessment.assessment_id,
        residual_id=residual.residual_id,
        residual_kind=residual.kind.value,
        search_gate_decision_id=gate_decision.decision_id,
        compute_budget_id=budget_decision.budget_id,
        geometric_search_run_id=opened_run.run_id,
        operator_set_id=opened_run.operator_set_id,
        operator_set_version=opened_run.operator_set_version,
        attempt_index=attempt_index,
        schema_versions=SCHEMA_VERSIONS,
        policy_versions=POLICY_VERSIONS,
    )


# Input defects that are numbered preconditions get the precondition's own reason.
_INPUT_DEFECT_REASONS = types.MappingProxyType(
    {
        ("attempt_index", Defect.NEGATIVE_VALUE): _R.ATTEMPT_INDEX_NEGATIVE,
        ("schema_versions", Defect.PAIRS_NOT_SORTED_UNIQUE): _R.VERSIONS_NOT_CANONICAL,
        ("policy_versions", Defect.PAIRS_NOT_SORTED_UNIQUE): _R.VERSIONS_NOT_CANONICAL,
        ("input_digest", Defect.IDENTITY_MISMATCH): _R.IDENTITY_MISMATCH,
    }
)


def _records_failure(operator_input: object, records: dict[str, tuple[object, type]]) -> _R | None:
    found = inspect_record(operator_input, CandidateOperatorInput)
    if found is not None:
        return _INPUT_DEFECT_REASONS.get((found.field, found.defect), _R.INPUT_MALFORMED)
    for value, record_type in records.values():
        if inspect_record(value, record_type) is not None:
            return _R.RECORD_MALFORMED
    return None


def _residual_matches_blocker(residual: ContractResidual, assessment: ContractAssessment) -> bool:
    if residual.blocker_index >= len(assessment.blockers):
        return False
    blocker = assessment.blockers[residual.blocker_index]
    return (blocker.code.value, blocker.role, blocker.evidence_spans) == (
        residual.residual_code,
        residual.role,
        residual.evidence_spans,
    )


def operator_admission_failure(
    gate_status: SearchGateStatus,
    gate_reason_code: str,
    budget_status: ComputeBudgetStatus,
    budget_reason_code: str,
) -> _R | None:
    """ADR-0231 §7.3.7-10: the operator runs only behind a gate eligible for a missing role
    and the budget allowed for it.

    post: __return__ in (None, _R.GATE_NOT_ELIGIBLE, _R.BUDGET_NOT_ALLOWED)
    post: __return__ is not None or gate_status is SearchGateStatus.ELIGIBLE
    post: __return__ is not None or gate_reason_code == "eligible_missing_role"
    post: __return__ is not None or budget_status is ComputeBudgetStatus.BUDGET_ALLOWED
    post: __return__ is not None or budget_reason_code == "budget_allowed_missing_role"
    """
    if not (
        gate_status is SearchGateStatus.ELIGIBLE
        and gate_reason_code == f"eligible_{ResidualKind.MISSING_ROLE.value}"
    ):
        return _R.GATE_NOT_ELIGIBLE
    if not (
        budget_status is ComputeBudgetStatus.BUDGET_ALLOWED
        and budget_reason_code == f"budget_allowed_{ResidualKind.MISSING_ROLE.value}"
    ):
        return _R.BUDGET_NOT_ALLOWED
    return None


def attempt_charge_failure(
    attempt_index: int,
    budget_limits: tuple[int, int, int, int],
    charge: tuple[int, int],
    policy_limits: tuple[int, int, int],
) -> _R | None:
    """ADR-0231 §7.3.17-20: attempt ``attempt_index`` (the ``attempt_index + 1``-th), charged
    the policy's (candidates, steps) each, fits the budget's (max_candidates, max_depth,
    max_steps, max_parallelism) and the policy's (depth, max_attempts_per_run,
    max_parallelism), every earlier attempt charged too. Plain ints, so that CrossHair
    reasons over the arithmetic alone, not over building a record.
    §7.3.16, a negative index, is the input's own validation.

    pre: attempt_index >= 0 and min(budget_limits) >= 0 and min(policy_limits) >= 1
    post: __return__ is not None or (attempt_index + 1) * charge[1] <= budget_limits[2]
    post: __return__ is not None or attempt_index + 1 <= budget_limits[0]
    post: __return__ is not None or policy_limits[0] <= budget_limits[1]
    post: __return__ is not None or attempt_index < policy_limits[1]
    post: __return__ is not None or budget_limits[3] == policy_limits[2] == 1
    """
    max_candidates, max_depth, max_steps, max_parallelism = budget_limits
    depth, max_attempts, policy_parallelism = policy_limits
    candidates, steps = charge
    if attempt_index >= max_candidates:
        return _R.ATTEMPT_INDEX_BEYOND_BUDGET
    if attempt_index >= max_attempts:
        return _R.ATTEMPT_INDEX_BEYOND_POLICY
    if not (
        (attempt_index + 1) * candidates <= max_candidates
        and depth <= max_depth
        and (attempt_index + 1) * steps <= max_steps
    ):
        return _R.CHARGE_EXCEEDS_BUDGET
    if not max_parallelism == policy_parallelism == 1:
        return _R.PARALLELISM_NOT_ONE
    return None


class _Chain(NamedTuple):
    """The validated records one precondition check reads (ADR-0231 §7.2)."""

    operator_input: CandidateOperatorInput
    policy: CandidateOperatorPolicy
    frame: ProblemFrame
    assessment: ContractAssessment
    residual: ContractResidual
    gate: SearchGateDecision
    budget: ComputeBudgetDecision
    run: OpenedSearchRun
    operator_set: OperatorSetManifest


def _policy_registered(c: _Chain) -> _R | None:
    return None if c.policy == MISSING_ROLE_CANDIDATE_POLICY else _R.POLICY_UNSUPPORTED


def _policy_version_supported(c: _Chain) -> _R | None:
    holds = c.operator_input.operator_policy_version == c.policy.operator_policy_version
    return None if holds else _R.POLICY_UNSUPPORTED


def _operator_supported(c: _Chain) -> _R | None:
    named = (c.operator_input.operator_name, c.operator_input.operator_version)
    holds = named == (c.policy.operator_name, c.policy.operator_version)
    return None if holds else _R.OPERATOR_UNSUPPORTED


def _one_frame_digest(c: _Chain) -> _R | None:
    holds = (
        c.operator_input.problem_frame_digest
        == problem_frame_digest(c.frame)
        == c.assessment.problem_frame_digest
        == c.residual.problem_frame_digest
        == c.gate.problem_frame_digest
        == c.run.problem_frame_digest
    )
    return None if holds else _R.IDENTITY_MISMATCH


def _one_assessment_id(c: _Chain) -> _R | None:
    holds = (
        c.operator_input.original_contract_assessment_id
        == c.assessment.assessment_id
        == c.residual.contract_assessment_id
        == c.gate.contract_assessment_id
        == c.run.contract_assessment_id
    )
    return None if holds else _R.IDENTITY_MISMATCH


def _one_residual(c: _Chain) -> _R | None:
    residual_id = c.residual.residual_id
    holds = c.operator_input.residual_id == residual_id and (
        c.gate.residual_ids == (residual_id,) == c.run.residual_ids
    )
    return None if holds else _R.IDENTITY_MISMATCH


def _residual_projects_blocker(c: _Chain) -> _R | None:
    # The residual is a faithful projection of the assessment's blocker (ADR-0225 via
    # docs/adr/0001): same code, role and spans, read from the value, no producer called.
    holds = _residual_matches_blocker(c.residual, c.assessment)
    return None if holds else _R.IDENTITY_MISMATCH


def _input_names_gate_budget_run(c: _Chain) -> _R | None:
    named = (c.operator_input.search_gate_decision_id, c.operator_input.compute_budget_id)
    holds = (
        named == (c.gate.decision_id, c.budget.budget_id)
        and c.operator_input.geometric_search_run_id == c.run.run_id
    )
    return None if holds else _R.IDENTITY_MISMATCH


def _residual_kind_supported(c: _Chain) -> _R | None:
    kind = c.residual.kind.value
    holds = c.operator_input.residual_kind == kind and kind in c.policy.allowed_residual_kinds
    return None if holds else _R.RESIDUAL_KIND_UNSUPPORTED


def _candidate_organ_supported(c: _Chain) -> _R | None:
    organ = c.residual.candidate_organ
    holds = organ in c.policy.allowed_candidate_organs and c.gate.candidate_organ == organ
    return None if holds else _R.CANDIDATE_ORGAN_UNSUPPORTED


def _residual_code_supported(c: _Chain) -> _R | None:
    holds = c.residual.residual_code in c.policy.allowed_residual_codes
    return None if holds else _R.RESIDUAL_CODE_UNSUPPORTED


def _gate_and_budget_admit(c: _Chain) -> _R | None:
    # A pure decision over values (docs/contracts.md).
    return operator_admission_failure(
        c.gate.status, c.gate.reason_code, c.budget.status, c.budget.reason_code
    )


def _budget_binds_gate(c: _Chain) -> _R | None:
    holds = c.budget.gate_decision_id == c.gate.decision_id
    return None if holds else _R.GATE_BUDGET_MISMATCH


def _run_binds_gate_and_budget(c: _Chain) -> _R | None:
    holds = c.run.gate_decision_id == c.gate.decision_id and c.run.budget_id == c.budget.budget_id
    return None if holds else _R.RUN_MISMATCH


def _operator_set_registered(c: _Chain) -> _R | None:
    run_named = (c.run.operator_set_id, c.run.operator_set_version)
    input_named = (c.operator_input.operator_set_id, c.operator_input.operator_set_version)
    recomputed = (operator_set_id(c.operator_set), c.operator_set.operator_set_version)
    holds = run_named == input_named == recomputed and c.operator_set == CANDIDATE_OPERATOR_SET
    return None if holds else _R.OPERATOR_SET_MISMATCH


def _attempt_fits_charge(c: _Chain) -> _R | None:
    # A pure decision over values (docs/contracts.md).
    return attempt_charge_failure(
        c.operator_input.attempt_index,
        (c.budget.max_candidates, c.budget.max_depth, c.budget.max_steps, c.budget.max_parallelism),
        (c.policy.budget_charge.candidates, c.policy.budget_charge.steps),
        (c.policy.depth, c.policy.max_attempts_per_run, c.policy.max_parallelism),
    )


def _residual_has_role_and_spans(c: _Chain) -> _R | None:
    holds = c.residual.role is not None and bool(c.residual.evidence_spans)
    return None if holds else _R.RESIDUAL_FIELD_MISSING


def _evidence_spans_in_source(c: _Chain) -> _R | None:
    source = c.frame.source_text
    holds = all(span_in_source(span, source) for span in c.residual.evidence_spans)
    return None if holds else _R.EVIDENCE_SPANS_INVALID


def _versions_are_own(c: _Chain) -> _R | None:
    named = (c.operator_input.schema_versions, c.operator_input.policy_versions)
    return None if named == (SCHEMA_VERSIONS, POLICY_VERSIONS) else _R.IDENTITY_MISMATCH


def _cue_present(c: _Chain) -> _R | None:
    return None if c.frame.cues else _R.CUE_MISSING


def _cue_single(c: _Chain) -> _R | None:
    return None if len(c.frame.cues) < 2 else _R.CUE_AMBIGUOUS


def _cue_justified(c: _Chain) -> _R | None:
    # The cue's span must already be evidence of this residual.
    holds = c.frame.cues[0].span in c.residual.evidence_spans
    return None if holds else _R.CUE_NOT_JUSTIFIED


# ADR-0231 §7.3 in order, with the identity bindings of §7.2 and §17 where docs/adr/0008
# puts them; the first check that fails names the refusal.
_PRECONDITIONS: tuple[Callable[[_Chain], _R | None], ...] = (
    _policy_registered,  # §7.3.1
    _policy_version_supported,  # §7.3.1
    _operator_supported,  # §7.3.2-3
    _one_frame_digest,  # §7.2, §17 (run identity mismatch)
    _one_assessment_id,  # §7.2, §17 (run identity mismatch)
    _one_residual,  # §7.2, §17 (run identity mismatch)
    _residual_projects_blocker,  # §7.2: typed state, not identities alone
    _input_names_gate_budget_run,  # §7.2, §17 (run identity mismatch)
    _residual_kind_supported,  # §7.3.4
    _candidate_organ_supported,  # §7.3.5
    _residual_code_supported,  # §7.3.6
    _gate_and_budget_admit,  # §7.3.7-10
    _budget_binds_gate,  # §7.3.11
    _run_binds_gate_and_budget,  # §7.3.12-13
    _operator_set_registered,  # §7.3.14-15
    _attempt_fits_charge,  # §7.3.17-20 (§7.3.16 is the input's own validation)
    _residual_has_role_and_spans,  # §17 (missing residual fields)
    _evidence_spans_in_source,  # §7.3.21
    _versions_are_own,  # §7.2, §7.3.22 (canonical order is the input's own validation)
    _cue_present,  # §6, §17 (missing typed cue)
    _cue_single,  # §6, §17 (ambiguous typed cue)
    _cue_justified,  # §6, §13
)


def _precondition_failure(chain: _Chain) -> _R | None:
    """ADR-0231 §7.3, in order, with the identity bindings of §7.2 and §17."""
    for check in _PRECONDITIONS:
        failure = check(chain)
        if failure is not None:
            return failure
    return None


def _refusal(
    reason: _R, operator_input: object, run: object, residual: object
) -> CandidateOperatorRefusal:
    input_ok = inspect_record(operator_input, CandidateOperatorInput) is None
    run_ok = inspect_record(run, OpenedSearchRun) is None
    residual_ok = inspect_record(residual, ContractResidual) is None
    return CandidateOperatorRefusal.sealed(
        operator_policy_version=CANDIDATE_OPERATOR_POLICY_VERSION,
        input_digest=operator_input.input_digest if input_ok else None,  # type: ignore[union-attr]
        geometric_search_run_id=run.run_id if run_ok else None,  # type: ignore[union-attr]
        residual_id=residual.residual_id if residual_ok else None,  # type: ignore[union-attr]
        operator_name=OPERATOR_NAME,
        reason_codes=(reason.value,),
        explanation=f"refused: {reason.value}",
    )


def propose_candidate(
    operator_input: CandidateOperatorInput,
    *,
    frame: ProblemFrame,
    assessment: ContractAssessment,
    residual: ContractResidual,
    gate_decision: SearchGateDecision,
    budget_decision: ComputeBudgetDecision,
    opened_run: OpenedSearchRun,
    operator_set: OperatorSetManifest = CANDIDATE_OPERATOR_SET,
    policy: CandidateOperatorPolicy = MISSING_ROLE_CANDIDATE_POLICY,
) -> CandidateOperatorOutcome:
    """Run ``missing_role_candidate.v1`` once: one candidate, or a typed refusal (ADR-0231).

    The candidate binds the direction role to the frame's single grounded cue; its evidence
    is the residual's spans, in order, duplicates kept (§13). The attempt it makes is charged
    ``BudgetCharge(1, 1)`` at depth 1 and stays ``replay_pending`` (§6, §14).
    """
    records = {
        "frame": (frame, ProblemFrame),
        "assessment": (assessment, ContractAssessment),
        "residual": (residual, ContractResidual),
        "gate": (gate_decision, SearchGateDecision),
        "budget": (budget_decision, ComputeBudgetDecision),
        "run": (opened_run, OpenedSearchRun),
        "operator_set": (operator_set, OperatorSetManifest),
        "policy": (policy, CandidateOperatorPolicy),
    }
    reason = _records_failure(operator_input, records) or _precondition_failure(
        _Chain(
            operator_input,
            policy,
            frame,
            assessment,
            residual,
            gate_decision,
            budget_decision,
            opened_run,
            operator_set,
        )
    )
    if reason is not None:
        return _refusal(reason, operator_input, opened_run, residual)
    cue = frame.cues[0]
    payload = RoleBindingDelta(
        kind=CANDIDATE_PAYLOAD_KIND,
        candidate_organ=UNARY_DELTA_ORGAN,
        relation_type=UNARY_DELTA_RELATION,
        role=Role.DIRECTION,
        source=CUE_SOURCE,
        direction=cue.direction,
        cue_span=cue.span,
    )
    spans = residual.evidence_spans
    content_digest = candidate_digest_of(
        operator_input.problem_frame_digest, UNARY_DELTA_ORGAN, payload, spans
    )
    attempt = CandidateAttempt.sealed(
        attempt_index=operator_input.attempt_index,
        parent_attempt_id=None,
        operator_id=OPERATOR_NAME,
        operator_version=OPERATOR_VERSION,
        input_digest=operator_input.input_digest,
        candidate_digest=content_digest,
        budget_charge=policy.budget_charge,
        depth=policy.depth,
        step_index=operator_input.attempt_index * policy.budget_charge.steps,
        replay_status=CandidateReplayStatus.REPLAY_PENDING,
        replay_blockers=(),
        evidence_spans=spans,
        explanation=f"propose direction={cue.direction.value} from the grounded cue",
    )
    reconstruction = CandidateReconstruction.sealed(
        candidate_digest=content_digest,
        candidate_organ=UNARY_DELTA_ORGAN,
        candidate_payload=payload,
        evidence_spans=spans,
        operator_name=OPERATOR_NAME,
        operator_version=OPERATOR_VERSION,
        operator_provenance=(
            ("candidate_operator", CANDIDATE_OPERATOR_POLICY_VERSION),
            ("candidate_operators", CANDIDATE_OPERATOR_SET.operator_set_version),
            (OPERATOR_NAME, OPERATOR_VERSION),
        ),
        source_residual_id=residual.residual_id,
        problem_frame_digest=operator_input.problem_frame_digest,
        original_contract_assessment_id=operator_input.original_contract_assessment_id,
        geometric_search_run_id=opened_run.run_id,
        attempt_id=attempt.attempt_id,
        attempt_index=attempt.attempt_index,
        operator_set_id=operator_input.operator_set_id,
        schema_versions=operator_input.schema_versions,
        policy_versions=operator_input.policy_versions,
    )
    return CandidateOperatorResult.sealed(
        operator_policy_version=CANDIDATE_OPERATOR_POLICY_VERSION,
        input_digest=operator_input.input_digest,
        geometric_search_run_id=opened_run.run_id,
        attempt_id=attempt.attempt_id,
        attempt_index=attempt.attempt_index,
        candidate_digest=content_digest,
        candidate_reconstruction_digest=reconstruction.candidate_reconstruction_digest,
        candidate_organ=UNARY_DELTA_ORGAN,
        operator_name=OPERATOR_NAME,
        operator_version=OPERATOR_VERSION,
        reason_codes=("candidate_constructed",),
        evidence_spans=spans,
        candidate_attempt=attempt,
        reconstruction=reconstruction,
        explanation="one candidate: bind direction from the single grounded cue; replay pending",
    )
