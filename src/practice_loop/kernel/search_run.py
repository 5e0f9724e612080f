"""The geometric search run envelope (ADR-0228) and its lifecycle (docs/adr/0004).

``open_search_run`` checks every initialization obligation of ADR-0228 §9 and answers with
exactly one of:

* ``SearchRunRefusal``: no run; no attempt; no budget consumed (§4, §13, §16);
* ``GeometricSearchRun`` under ``geometric_search_run.v1``: the inert zero-attempt run for an
  empty operator set, exactly as §13 gives it;
* ``OpenedSearchRun`` under ``geometric_search_run.v2``: the identity that operators bind to
  (ADR-0231 §7.3.12-15); ``record_attempts`` then turns it and the operators' attempts into the
  final ``GeometricSearchRun``, which names the opened run and seals attempts and accounting.

This module imports only value types from upstream (ADR-0228 §15): it never calls the
assessment, projection, gate or budget producers.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Mapping
from typing import Annotated, ClassVar

from .budget import LIMIT_FIELDS, ComputeBudgetDecision, ComputeBudgetStatus
from .checks import (
    Defect,
    check_int,
    code,
    digest,
    exactly,
    flag,
    is_version,
    member_of,
    non_negative_int,
    optional,
    or_blank,
    positive_int,
    text,
    tuple_of,
    version,
    version_pairs,
)
from .gate import SearchGateDecision, SearchGateStatus
from .identity import MAX_SAFE_INT
from .record import Record, inspect_record, nested
from .span import SourceSpan, spans_check
from .trust import remembered

GEOMETRIC_SEARCH_RUN_POLICY_VERSION = "geometric_search_run.v1"
GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION = "geometric_search_run.v2"
SEARCH_RUN_SCHEMA_VERSION = "geometric_search_run_schema.v1"
EMPTY_OPERATOR_SET_VERSION = "operator_set.empty.v1"
CANDIDATE_OPERATOR_SET_VERSION = "candidate_operators.v1"

# What this runner supports (ADR-0228 §9: anything else fails closed). These are local
# constants, not imports, so the run depends on no producer module.
SUPPORTED_RUN_POLICY_VERSIONS = (
    GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
)
# fmt: off
# One version a line: `prove-policy --adopt` adds a line here (docs/proving-policy-versions.md).
SUPPORTED_BUDGET_POLICY_VERSIONS = (
    "compute_budget.v1",
)
# fmt: on
SUPPORTED_OPERATOR_SET_VERSIONS = (
    EMPTY_OPERATOR_SET_VERSION,
    CANDIDATE_OPERATOR_SET_VERSION,
)


class RunDisposition(enum.Enum):
    NOT_STARTED = "not_started"
    BLOCKED_BY_BUDGET = "blocked_by_budget"
    BLOCKED_BY_GATE = "blocked_by_gate"
    INVALID_INPUT = "invalid_input"
    EXHAUSTED_NO_CANDIDATE = "exhausted_no_candidate"
    CANDIDATE_REPLAY_PENDING = "candidate_replay_pending"
    CANDIDATE_REPLAY_CLOSED = "candidate_replay_closed"
    CANDIDATE_REPLAY_REFUSED = "candidate_replay_refused"


# ADR-0228 §7: the admissible type-state pairs.
REFUSAL_DISPOSITIONS = frozenset(
    {
        RunDisposition.NOT_STARTED,
        RunDisposition.BLOCKED_BY_BUDGET,
        RunDisposition.BLOCKED_BY_GATE,
        RunDisposition.INVALID_INPUT,
    }
)
RUN_DISPOSITIONS = frozenset(RunDisposition) - REFUSAL_DISPOSITIONS


class RunExhaustionCode(enum.Enum):
    OPERATOR_SET_EMPTY = "operator_set_empty"
    OPERATOR_SPACE_DEPLETED = "operator_space_depleted"
    MAX_CANDIDATES_REACHED = "max_candidates_reached"
    MAX_DEPTH_REACHED = "max_depth_reached"
    MAX_STEPS_REACHED = "max_steps_reached"


BUDGET_EXHAUSTION_CODES = frozenset(
    {
        RunExhaustionCode.MAX_CANDIDATES_REACHED,
        RunExhaustionCode.MAX_DEPTH_REACHED,
        RunExhaustionCode.MAX_STEPS_REACHED,
    }
)


class CandidateReplayStatus(enum.Enum):
    REPLAY_PENDING = "replay_pending"
    REPLAY_CLOSED = "replay_closed"
    REPLAY_REFUSED = "replay_refused"


class RunRefusalReason(enum.Enum):
    """Every reason a run is refused, with the disposition it carries (``REFUSAL_TABLE``)."""

    REQUIRED_RECORD_ABSENT = "required_record_absent"
    RUN_POLICY_VERSION_UNSUPPORTED = "run_policy_version_unsupported"
    SCHEMA_VERSION_UNSUPPORTED = "schema_version_unsupported"
    INPUT_MALFORMED = "input_malformed"
    GATE_MALFORMED = "gate_malformed"
    GATE_POLICY_VERSION_UNSUPPORTED = "gate_policy_version_unsupported"
    GATE_IDENTITY_MISMATCH = "gate_identity_mismatch"
    BUDGET_LIMIT_NEGATIVE = "budget_limit_negative"
    BUDGET_MALFORMED = "budget_malformed"
    BUDGET_POLICY_VERSION_UNSUPPORTED = "budget_policy_version_unsupported"
    BUDGET_ID_MISMATCH = "budget_id_mismatch"
    BUDGET_GATE_DECISION_MISMATCH = "budget_gate_decision_mismatch"
    BUDGET_GATE_POLICY_MISMATCH = "budget_gate_policy_mismatch"
    BUDGET_GATE_INPUT_MISMATCH = "budget_gate_input_mismatch"
    INPUT_GATE_MISMATCH = "input_gate_mismatch"
    INPUT_BUDGET_MISMATCH = "input_budget_mismatch"
    RESIDUAL_IDS_MISMATCH = "residual_ids_mismatch"
    PROBLEM_FRAME_MISMATCH = "problem_frame_mismatch"
    ASSESSMENT_MISMATCH = "assessment_mismatch"
    OPERATOR_SET_MALFORMED = "operator_set_malformed"
    OPERATOR_SET_VERSION_UNSUPPORTED = "operator_set_version_unsupported"
    OPERATOR_SET_MISMATCH = "operator_set_mismatch"
    OPERATOR_SET_NOT_AUTHORIZED = "operator_set_not_authorized"
    GATE_NOT_ELIGIBLE = "gate_not_eligible"
    BUDGET_NOT_ALLOWED = "budget_not_allowed"
    BUDGET_CEILING_ZERO = "budget_ceiling_zero"
    BUDGET_PARALLELISM_NOT_ONE = "budget_parallelism_not_one"
    OPENED_RUN_MALFORMED = "opened_run_malformed"
    ATTEMPTS_MALFORMED = "attempts_malformed"
    ATTEMPT_ORDER_INVALID = "attempt_order_invalid"
    ATTEMPT_LINEAGE_INVALID = "attempt_lineage_invalid"
    ATTEMPT_NOT_PENDING = "attempt_not_pending"
    ATTEMPT_OPERATOR_UNDECLARED = "attempt_operator_undeclared"
    ATTEMPT_CHARGE_UNDECLARED = "attempt_charge_undeclared"
    ATTEMPT_LIMIT_EXCEEDED = "attempt_limit_exceeded"


_R = RunRefusalReason
_D = RunDisposition
# ADR-0228 §16, reason by reason. Absence is ``not_started``; a denied gate or budget is
# ``blocked_by_*``; every integrity failure is ``invalid_input``.
REFUSAL_TABLE: Mapping[RunRefusalReason, RunDisposition] = types.MappingProxyType(
    {reason: _D.INVALID_INPUT for reason in RunRefusalReason}
    | {
        _R.REQUIRED_RECORD_ABSENT: _D.NOT_STARTED,
        _R.GATE_NOT_ELIGIBLE: _D.BLOCKED_BY_GATE,
        _R.BUDGET_NOT_ALLOWED: _D.BLOCKED_BY_BUDGET,
        _R.BUDGET_CEILING_ZERO: _D.BLOCKED_BY_BUDGET,
    }
)


def refusal_disposition(reason: RunRefusalReason) -> RunDisposition:
    """The disposition a refusal carries (ADR-0228 §16). It is never a run's: a refusal has
    no attempts and no consumption to report (§7).

    post: __return__ in REFUSAL_DISPOSITIONS and __return__ not in RUN_DISPOSITIONS
    post: (__return__ is _D.NOT_STARTED) == (reason is _R.REQUIRED_RECORD_ABSENT)
    post: (__return__ is _D.BLOCKED_BY_GATE) == (reason is _R.GATE_NOT_ELIGIBLE)
    """
    return REFUSAL_TABLE[reason]


# --------------------------------------------------------------------------------------------
# Attempts and accounting


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetCharge(Record):
    """ADR-0228 §8: exactly one candidate and a positive, predeclared number of steps."""

    candidates: Annotated[int, positive_int]
    steps: Annotated[int, positive_int]

    def _cross_check(self) -> tuple[str, Defect] | None:
        return None if self.candidates == 1 else ("candidates", Defect.INCONSISTENT_FIELDS)


@dataclasses.dataclass(frozen=True, slots=True)
class CandidateAttempt(Record):
    """One ordered attempt (ADR-0228 §8). ``attempt_id`` hashes exactly the fields that
    §10 lists: every field but itself and prose.

    ``step_index`` is the number of steps charged before this attempt, so the index and the
    charges of a run check each other.
    """

    attempt_id: Annotated[str, digest]
    attempt_index: Annotated[int, non_negative_int]
    parent_attempt_id: Annotated[str | None, optional(digest)]
    operator_id: Annotated[str, code]
    operator_version: Annotated[str, version]
    input_digest: Annotated[str, digest]
    candidate_digest: Annotated[str, digest]
    budget_charge: Annotated[BudgetCharge, nested(BudgetCharge)]
    depth: Annotated[int, positive_int]
    step_index: Annotated[int, non_negative_int]
    replay_status: Annotated[CandidateReplayStatus, member_of(CandidateReplayStatus)]
    replay_blockers: Annotated[tuple[str, ...], tuple_of(code)]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "attempt_id"
    SELF_SEALED: ClassVar = False

    def _cross_check(self) -> tuple[str, Defect] | None:
        # Only a replay refusal has blockers to report.
        refused = self.replay_status is CandidateReplayStatus.REPLAY_REFUSED
        if refused != bool(self.replay_blockers):
            return "replay_blockers", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetConsumed(Record):
    """ADR-0228 §9 accounting; ``max_*`` copied from the validated budget decision."""

    candidates_considered: Annotated[int, non_negative_int]
    max_candidates: Annotated[int, non_negative_int]
    depth_reached: Annotated[int, non_negative_int]
    max_depth: Annotated[int, non_negative_int]
    steps_used: Annotated[int, non_negative_int]
    max_steps: Annotated[int, non_negative_int]
    parallelism_used: Annotated[int, non_negative_int]
    max_parallelism: Annotated[int, non_negative_int]
    exhausted: Annotated[bool, flag]

    def _cross_check(self) -> tuple[str, Defect] | None:
        if self.candidates_considered > self.max_candidates:
            return "candidates_considered", Defect.INCONSISTENT_FIELDS
        if self.depth_reached > self.max_depth:
            return "depth_reached", Defect.INCONSISTENT_FIELDS
        if self.steps_used > self.max_steps:
            return "steps_used", Defect.INCONSISTENT_FIELDS
        if self.parallelism_used not in (0, 1) or self.parallelism_used > self.max_parallelism:
            return "parallelism_used", Defect.INCONSISTENT_FIELDS
        return None


def budget_equations_hold(consumed: BudgetConsumed, attempts: tuple[CandidateAttempt, ...]) -> bool:
    """Every equation of ADR-0228 §9 between the accounting and the attempts."""
    charges = tuple((a.budget_charge.candidates, a.budget_charge.steps, a.depth) for a in attempts)
    return accounting_balances(consumed, charges)


def accounting_balances(
    consumed: BudgetConsumed, charges: tuple[tuple[int, int, int], ...]
) -> bool:
    """ADR-0228 §9's equations over the attempts' charges, each (candidates, steps, depth):
    what ``budget_equations_hold`` checks, apart from the attempts' sealed identities.

    post: (not __return__) or consumed.candidates_considered == len(charges)
    post: not __return__ or _fits(charges, _ceiling_of(consumed))
    post: not __return__ or consumed.parallelism_used == min(len(charges), 1)
    """
    return (
        consumed.candidates_considered == len(charges)
        and consumed.candidates_considered == sum(candidates for candidates, _, _ in charges)
        and consumed.candidates_considered <= consumed.max_candidates
        and consumed.depth_reached == max((depth for _, _, depth in charges), default=0)
        and consumed.depth_reached <= consumed.max_depth
        and consumed.steps_used == sum(steps for _, steps, _ in charges)
        and consumed.steps_used <= consumed.max_steps
        and consumed.parallelism_used == (1 if charges else 0)
        and consumed.parallelism_used <= consumed.max_parallelism == 1
    )


def _ceiling_of(consumed: BudgetConsumed) -> tuple[int, int, int]:
    return consumed.max_candidates, consumed.max_depth, consumed.max_steps


def lineage_defect(attempts: tuple[CandidateAttempt, ...]) -> RunRefusalReason | None:
    """Order and lineage of a run's attempts: indices 0..n-1, cumulative step indices, and
    each parent an earlier attempt one level up (roots are at depth 1)."""
    depth_by_id: dict[str, int] = {}
    steps_before = 0
    for position, attempt in enumerate(attempts):
        if attempt.attempt_index != position or attempt.step_index != steps_before:
            return RunRefusalReason.ATTEMPT_ORDER_INVALID
        parent = attempt.parent_attempt_id
        expected_depth = 1 if parent is None else depth_by_id.get(parent, -1) + 1
        if attempt.depth != expected_depth or attempt.attempt_id in depth_by_id:
            return RunRefusalReason.ATTEMPT_LINEAGE_INVALID
        depth_by_id[attempt.attempt_id] = attempt.depth
        steps_before += attempt.budget_charge.steps
    return None


# --------------------------------------------------------------------------------------------
# The closed operator-set manifest (ADR-0228 §8, ADR-0231 §10)


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorManifestRow(Record):
    """One operator's static declaration (ADR-0228 §8, ADR-0231 §10): what it may consume,
    what it must check, what it emits, what it charges, how deep, how its attempts are
    ordered, what it must never do, and what replay must check of its candidates."""

    operator_name: Annotated[str, code]
    operator_version: Annotated[str, version]
    allowed_residual_kinds: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    allowed_residual_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    allowed_candidate_organs: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    max_attempts_per_run: Annotated[int, positive_int]
    budget_charge: Annotated[BudgetCharge, nested(BudgetCharge)]
    depth: Annotated[int, positive_int]
    max_parallelism: Annotated[int, positive_int]
    schema_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]
    policy_versions: Annotated[tuple[tuple[str, str], ...], version_pairs]
    input_obligations: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    output_candidate_shape: Annotated[str, code]
    ordering_key: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    forbidden_side_effects: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    replay_obligations: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        # ADR-0228 §11: v1 is serial.
        return (
            None if self.max_parallelism == 1 else ("max_parallelism", Defect.INCONSISTENT_FIELDS)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorSetManifest(Record):
    """A closed, ordered allowlist of operators under one version; no discovery (§6)."""

    operator_set_version: Annotated[str, version]
    operators: Annotated[tuple[OperatorManifestRow, ...], tuple_of(nested(OperatorManifestRow))]

    def _cross_check(self) -> tuple[str, Defect] | None:
        keys = [(row.operator_name, row.operator_version) for row in self.operators]
        if len(keys) != len(set(keys)):
            return "operators", Defect.DUPLICATE_ENTRY
        return None

    def row_for(self, operator_name: str, operator_version: str) -> OperatorManifestRow | None:
        for row in self.operators:
            if (row.operator_name, row.operator_version) == (operator_name, operator_version):
                return row
        return None


def operator_set_id(manifest: OperatorSetManifest) -> str:
    """ADR-0228 §10: the digest of the ordered manifest and its version."""
    return remembered(manifest, "digest", lambda: manifest.content_digest(drop_explanations=True))


EMPTY_OPERATOR_SET = OperatorSetManifest(EMPTY_OPERATOR_SET_VERSION, ())


# --------------------------------------------------------------------------------------------
# Input


@dataclasses.dataclass(frozen=True, slots=True)
class GeometricSearchInput(Record):
    """ADR-0228 §6. ``input_digest()`` hashes exactly these twelve fields."""

    problem_frame_digest: Annotated[str, digest]
    contract_assessment_id: Annotated[str, digest]
    residual_ids: Annotated[tuple[str, ...], tuple_of(digest)]
    gate_decision_id: Annotated[str, digest]
    gate_policy_version: Annotated[str, version]
    gate_input_digest: Annotated[str, digest]
    budget_id: Annotated[str, digest]
    budget_policy_version: Annotated[str, version]
    operator_set_id: Annotated[str, digest]
    operator_set_version: Annotated[str, version]
    run_policy_version: Annotated[str, version]
    schema_version: Annotated[str, version]

    def input_digest(self) -> str:
        return remembered(self, "digest", lambda: self.content_digest())


def search_input_for(
    gate_decision: SearchGateDecision,
    budget_decision: ComputeBudgetDecision,
    operator_set: OperatorSetManifest,
    run_policy_version: str = GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
) -> GeometricSearchInput:
    """The input that binds exactly these records; raises ``RecordError`` if they cannot be
    bound (for instance a gate that names no assessment)."""
    return GeometricSearchInput(
        problem_frame_digest=gate_decision.problem_frame_digest,  # type: ignore[arg-type]
        contract_assessment_id=gate_decision.contract_assessment_id,  # type: ignore[arg-type]
        residual_ids=gate_decision.residual_ids,
        gate_decision_id=gate_decision.decision_id,
        gate_policy_version=gate_decision.policy_version,
        gate_input_digest=gate_decision.input_digest,
        budget_id=budget_decision.budget_id,
        budget_policy_version=budget_decision.policy_version,
        operator_set_id=operator_set_id(operator_set),
        operator_set_version=operator_set.operator_set_version,
        run_policy_version=run_policy_version,
        schema_version=SEARCH_RUN_SCHEMA_VERSION,
    )


# --------------------------------------------------------------------------------------------
# Outcomes


@dataclasses.dataclass(frozen=True, slots=True)
class SearchRunRefusal(Record):
    """ADR-0228 §7: fail-closed initialization. Not a run; no attempts; no consumption.

    Optional identities are set only when they were validated (§7); ``run_policy_version``
    is ``""`` when the requested version was not even well formed.
    """

    outcome_id: Annotated[str, digest]
    run_policy_version: Annotated[str, or_blank(version)]
    input_digest: Annotated[str | None, optional(digest)]
    gate_decision_id: Annotated[str | None, optional(digest)]
    budget_id: Annotated[str | None, optional(digest)]
    run_disposition: Annotated[RunDisposition, member_of(RunDisposition)]
    reason_codes: Annotated[tuple[str, ...], tuple_of(code, non_empty=True)]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "outcome_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        if self.run_disposition not in REFUSAL_DISPOSITIONS:
            return "run_disposition", Defect.INCONSISTENT_FIELDS
        return None


# The fields a final run copies from the run it opened (ADR-0228 §7; docs/adr/0004): the
# versions and the upstream identities every run record copies from its validated input.
RUN_COPIED_FIELDS = (
    "run_policy_version",
    "schema_version",
    "problem_frame_digest",
    "contract_assessment_id",
    "residual_ids",
    "gate_decision_id",
    "budget_id",
    "operator_set_id",
    "operator_set_version",
    "input_digest",
)


@dataclasses.dataclass(frozen=True, slots=True)
class OpenedSearchRun(Record):
    """A ``geometric_search_run.v2`` run opened with zero attempts (docs/adr/0004).

    It is the run identity operators bind to (ADR-0231 §7.2) and carries the validated
    ceiling; it is not a ``GeometricSearchRun`` and has no disposition.
    """

    run_id: Annotated[str, digest]
    run_policy_version: Annotated[str, exactly(GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION)]
    schema_version: Annotated[str, exactly(SEARCH_RUN_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    contract_assessment_id: Annotated[str, digest]
    residual_ids: Annotated[tuple[str, ...], tuple_of(digest, non_empty=True)]
    gate_decision_id: Annotated[str, digest]
    budget_id: Annotated[str, digest]
    operator_set_id: Annotated[str, digest]
    operator_set_version: Annotated[str, version]
    input_digest: Annotated[str, digest]
    max_candidates: Annotated[int, positive_int]
    max_depth: Annotated[int, non_negative_int]
    max_steps: Annotated[int, positive_int]
    max_parallelism: Annotated[int, positive_int]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "run_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        return (
            None if self.max_parallelism == 1 else ("max_parallelism", Defect.INCONSISTENT_FIELDS)
        )


@dataclasses.dataclass(frozen=True, slots=True)
class GeometricSearchRun(Record):
    """ADR-0228 §7. ``run_id`` self-seals every field but prose, with itself blanked.

    ``opened_run_id`` exists only under ``geometric_search_run.v2``; a v1 run neither
    carries nor hashes it, so v1 identities are exactly those of ADR-0228.
    """

    run_id: Annotated[str, digest]
    run_policy_version: Annotated[str, exactly(*SUPPORTED_RUN_POLICY_VERSIONS)]
    schema_version: Annotated[str, exactly(SEARCH_RUN_SCHEMA_VERSION)]
    problem_frame_digest: Annotated[str, digest]
    contract_assessment_id: Annotated[str, digest]
    residual_ids: Annotated[tuple[str, ...], tuple_of(digest, non_empty=True)]
    gate_decision_id: Annotated[str, digest]
    budget_id: Annotated[str, digest]
    operator_set_id: Annotated[str, digest]
    operator_set_version: Annotated[str, version]
    input_digest: Annotated[str, digest]
    candidate_attempts: Annotated[tuple[CandidateAttempt, ...], tuple_of(nested(CandidateAttempt))]
    budget_consumed: Annotated[BudgetConsumed, nested(BudgetConsumed)]
    run_disposition: Annotated[RunDisposition, member_of(RunDisposition)]
    exhaustion_code: Annotated[RunExhaustionCode | None, optional(member_of(RunExhaustionCode))]
    explanation: Annotated[str, text]
    opened_run_id: Annotated[str | None, optional(digest)] = None

    ID_FIELD: ClassVar = "run_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        attempts = self.candidate_attempts
        consumed = self.budget_consumed
        statuses = {attempt.replay_status for attempt in attempts}
        v1 = self.run_policy_version == GEOMETRIC_SEARCH_RUN_POLICY_VERSION
        checks: tuple[tuple[str, bool], ...] = (
            ("run_disposition", self.run_disposition in RUN_DISPOSITIONS),
            # v1 authorizes only the inert shell over the empty set (ADR-0228 §4, §13, §18);
            # operator_set_empty below then forbids attempts and a non-empty set.
            ("opened_run_id", (self.opened_run_id is None) == v1),
            (
                "exhaustion_code",
                not v1 or self.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY,
            ),
            ("candidate_attempts", lineage_defect(attempts) is None),
            ("budget_consumed", budget_equations_hold(consumed, attempts)),
            # An exhausted run carries exactly one code; a budget code iff a ceiling stopped it.
            (
                "exhaustion_code",
                consumed.exhausted == (self.exhaustion_code in BUDGET_EXHAUSTION_CODES),
            ),
            (
                "exhaustion_code",
                (self.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY)
                == (self.operator_set_version == EMPTY_OPERATOR_SET_VERSION),
            ),
            ("run_disposition", self._disposition_matches(statuses)),
        )
        for field_name, holds in checks:
            if not holds:
                return field_name, Defect.INCONSISTENT_FIELDS
        return None

    def _disposition_matches(self, statuses: set[CandidateReplayStatus]) -> bool:
        disposition = self.run_disposition
        if disposition is RunDisposition.EXHAUSTED_NO_CANDIDATE:
            return not self.candidate_attempts and self.exhaustion_code is not None
        if not self.candidate_attempts or self.exhaustion_code not in (
            None,
            *BUDGET_EXHAUSTION_CODES,
        ):
            return False
        if disposition is RunDisposition.CANDIDATE_REPLAY_PENDING:
            return CandidateReplayStatus.REPLAY_PENDING in statuses and (
                CandidateReplayStatus.REPLAY_CLOSED not in statuses
            )
        if disposition is RunDisposition.CANDIDATE_REPLAY_CLOSED:
            return CandidateReplayStatus.REPLAY_CLOSED in statuses
        return statuses == {CandidateReplayStatus.REPLAY_REFUSED}

    def _identity_excluded(self) -> frozenset[str]:
        if self.run_policy_version == GEOMETRIC_SEARCH_RUN_POLICY_VERSION:
            return frozenset({"opened_run_id"})
        return frozenset()


SearchRunOutcome = SearchRunRefusal | GeometricSearchRun


# --------------------------------------------------------------------------------------------
# Initialization (ADR-0228 §9, §16)


def _input_failure(search_input: object) -> RunRefusalReason | None:
    if type(search_input) is not GeometricSearchInput:
        return RunRefusalReason.INPUT_MALFORMED
    # The versions are named before any other defect (ADR-0228 §16 gives them a row); the
    # type is checked first so that a hostile value is never compared.
    run_policy = getattr(search_input, "run_policy_version", None)
    if type(run_policy) is not str or run_policy not in SUPPORTED_RUN_POLICY_VERSIONS:
        return RunRefusalReason.RUN_POLICY_VERSION_UNSUPPORTED
    schema = getattr(search_input, "schema_version", None)
    if type(schema) is not str or schema != SEARCH_RUN_SCHEMA_VERSION:
        return RunRefusalReason.SCHEMA_VERSION_UNSUPPORTED
    if inspect_record(search_input, GeometricSearchInput) is not None:
        return RunRefusalReason.INPUT_MALFORMED
    return None


def _gate_failure(gate: object) -> RunRefusalReason | None:
    found = inspect_record(gate, SearchGateDecision)
    if found is None:
        return None
    if found.field == "policy_version" and found.defect is Defect.VERSION_UNSUPPORTED:
        return RunRefusalReason.GATE_POLICY_VERSION_UNSUPPORTED
    if found.defect is Defect.IDENTITY_MISMATCH:
        return RunRefusalReason.GATE_IDENTITY_MISMATCH
    return RunRefusalReason.GATE_MALFORMED


def _budget_failure(budget: object) -> RunRefusalReason | None:
    if type(budget) is not ComputeBudgetDecision:
        return RunRefusalReason.BUDGET_MALFORMED
    # Negative limits are named before any other defect: ADR-0228 §16 gives them a row.
    for name in LIMIT_FIELDS:
        value = getattr(budget, name, None)
        if check_int(value, minimum=-MAX_SAFE_INT) is None and value < 0:  # type: ignore[operator]
            return RunRefusalReason.BUDGET_LIMIT_NEGATIVE
    found = inspect_record(budget, ComputeBudgetDecision)
    if found is not None:
        if found.defect is Defect.IDENTITY_MISMATCH:
            return RunRefusalReason.BUDGET_ID_MISMATCH
        return RunRefusalReason.BUDGET_MALFORMED
    if budget.policy_version not in SUPPORTED_BUDGET_POLICY_VERSIONS:
        return RunRefusalReason.BUDGET_POLICY_VERSION_UNSUPPORTED
    return None


def _operator_set_failure(operator_set: object, run_policy_version: str) -> RunRefusalReason | None:
    if inspect_record(operator_set, OperatorSetManifest) is not None:
        return RunRefusalReason.OPERATOR_SET_MALFORMED
    assert isinstance(operator_set, OperatorSetManifest)
    set_version = operator_set.operator_set_version
    if set_version not in SUPPORTED_OPERATOR_SET_VERSIONS:
        return RunRefusalReason.OPERATOR_SET_VERSION_UNSUPPORTED
    if (set_version == EMPTY_OPERATOR_SET_VERSION) != (not operator_set.operators):
        return RunRefusalReason.OPERATOR_SET_MALFORMED
    # ADR-0228 §4, §18: v1 authorizes only the inert shell over an empty operator set.
    if run_policy_version == GEOMETRIC_SEARCH_RUN_POLICY_VERSION and operator_set.operators:
        return RunRefusalReason.OPERATOR_SET_NOT_AUTHORIZED
    return None


def _binding_failure(
    search_input: GeometricSearchInput,
    gate: SearchGateDecision,
    budget: ComputeBudgetDecision,
    operator_set: OperatorSetManifest,
) -> RunRefusalReason | None:
    """Cross-identities, in ADR-0228 §9's order; the first that differs is named."""
    checks = (
        (budget.gate_decision_id == gate.decision_id, _R.BUDGET_GATE_DECISION_MISMATCH),
        (budget.gate_policy_version == gate.policy_version, _R.BUDGET_GATE_POLICY_MISMATCH),
        (budget.gate_input_digest == gate.input_digest, _R.BUDGET_GATE_INPUT_MISMATCH),
        (
            (
                search_input.gate_decision_id,
                search_input.gate_policy_version,
                search_input.gate_input_digest,
            )
            == (gate.decision_id, gate.policy_version, gate.input_digest),
            _R.INPUT_GATE_MISMATCH,
        ),
        (
            (search_input.budget_id, search_input.budget_policy_version)
            == (budget.budget_id, budget.policy_version),
            _R.INPUT_BUDGET_MISMATCH,
        ),
        (search_input.residual_ids == gate.residual_ids, _R.RESIDUAL_IDS_MISMATCH),
        (search_input.problem_frame_digest == gate.problem_frame_digest, _R.PROBLEM_FRAME_MISMATCH),
        (
            search_input.contract_assessment_id == gate.contract_assessment_id,
            _R.ASSESSMENT_MISMATCH,
        ),
        (
            (search_input.operator_set_id, search_input.operator_set_version)
            == (operator_set_id(operator_set), operator_set.operator_set_version),
            _R.OPERATOR_SET_MISMATCH,
        ),
    )
    for holds, reason in checks:
        if not holds:
            return reason
    return None


def admission_failure(
    gate_status: SearchGateStatus,
    budget_status: ComputeBudgetStatus,
    max_candidates: int,
    max_steps: int,
    max_parallelism: int,
) -> RunRefusalReason | None:
    """Gate, then budget, then the v1 structural ceiling (ADR-0228 §9, §11), over the values
    of a validated gate and budget decision.

    pre: min(max_candidates, max_steps, max_parallelism) >= 0
    post: __return__ is not None or gate_status is SearchGateStatus.ELIGIBLE
    post: __return__ is not None or budget_status is ComputeBudgetStatus.BUDGET_ALLOWED
    post: __return__ is not None or max_parallelism == 1 <= min(max_candidates, max_steps)
    post: gate_status is SearchGateStatus.ELIGIBLE or __return__ is _R.GATE_NOT_ELIGIBLE
    post: __return__ is None or refusal_disposition(__return__) is not _D.NOT_STARTED
    """
    if gate_status is not SearchGateStatus.ELIGIBLE:
        return RunRefusalReason.GATE_NOT_ELIGIBLE
    if budget_status is not ComputeBudgetStatus.BUDGET_ALLOWED:
        return RunRefusalReason.BUDGET_NOT_ALLOWED
    if max_candidates == 0 or max_steps == 0:
        return RunRefusalReason.BUDGET_CEILING_ZERO
    if max_parallelism != 1:
        return RunRefusalReason.BUDGET_PARALLELISM_NOT_ONE
    return None


def initialization_failure(
    search_input: GeometricSearchInput,
    gate_decision: SearchGateDecision,
    budget_decision: ComputeBudgetDecision,
    operator_set: OperatorSetManifest,
) -> RunRefusalReason | None:
    """The first initialization obligation of ADR-0228 §9 that fails, or ``None``.

    post: __return__ is None or __return__ in REFUSAL_TABLE
    """
    if any(
        record is None for record in (search_input, gate_decision, budget_decision, operator_set)
    ):
        return RunRefusalReason.REQUIRED_RECORD_ABSENT
    return (
        _input_failure(search_input)
        or _gate_failure(gate_decision)
        or _budget_failure(budget_decision)
        or _operator_set_failure(operator_set, search_input.run_policy_version)
        or _binding_failure(search_input, gate_decision, budget_decision, operator_set)
        or admission_failure(
            gate_decision.status,
            budget_decision.status,
            budget_decision.max_candidates,
            budget_decision.max_steps,
            budget_decision.max_parallelism,
        )
    )


def _refusal(
    reason: RunRefusalReason,
    *,
    run_policy_version: object,
    input_digest: str | None,
    gate_decision_id: str | None,
    budget_id: str | None,
    detail: str = "",
) -> SearchRunRefusal:
    disposition = refusal_disposition(reason)
    return SearchRunRefusal.sealed(
        run_policy_version=run_policy_version if is_version(run_policy_version) else "",
        input_digest=input_digest,
        gate_decision_id=gate_decision_id,
        budget_id=budget_id,
        run_disposition=disposition,
        reason_codes=(reason.value,),
        explanation=f"{disposition.value}: {reason.value}" + (f" ({detail})" if detail else ""),
    )


def _initialization_refusal(
    reason: RunRefusalReason, search_input: object, gate_decision: object, budget_decision: object
) -> SearchRunRefusal:
    """A refusal naming only the identities that validated on their own (ADR-0228 §7)."""
    input_ok = inspect_record(search_input, GeometricSearchInput) is None
    gate_ok = inspect_record(gate_decision, SearchGateDecision) is None
    budget_ok = inspect_record(budget_decision, ComputeBudgetDecision) is None
    # Read nothing from a foreign object: its attribute access could run any code.
    requested = (
        getattr(search_input, "run_policy_version", "")
        if type(search_input) is GeometricSearchInput
        else ""
    )
    return _refusal(
        reason,
        run_policy_version=requested,
        input_digest=search_input.input_digest() if input_ok else None,  # type: ignore[union-attr]
        gate_decision_id=gate_decision.decision_id if gate_ok else None,  # type: ignore[union-attr]
        budget_id=budget_decision.budget_id if budget_ok else None,  # type: ignore[union-attr]
    )


def open_search_run(
    search_input: GeometricSearchInput,
    gate_decision: SearchGateDecision,
    budget_decision: ComputeBudgetDecision,
    operator_set: OperatorSetManifest = EMPTY_OPERATOR_SET,
) -> SearchRunRefusal | GeometricSearchRun | OpenedSearchRun:
    """Open a run over exactly these records, or refuse to (ADR-0228 §9, §13, §16).

    Under ``geometric_search_run.v1`` (empty operator set) the answer is the inert run of
    §13; under ``geometric_search_run.v2`` it is an ``OpenedSearchRun`` for
    ``record_attempts``.
    """
    reason = initialization_failure(search_input, gate_decision, budget_decision, operator_set)
    if reason is not None:
        return _initialization_refusal(reason, search_input, gate_decision, budget_decision)
    common = {
        name: getattr(search_input, name) for name in RUN_COPIED_FIELDS if name != "input_digest"
    }
    common["input_digest"] = search_input.input_digest()
    ceiling = {name: getattr(budget_decision, name) for name in LIMIT_FIELDS}
    if search_input.run_policy_version == GEOMETRIC_SEARCH_RUN_POLICY_VERSION:
        return GeometricSearchRun.sealed(
            **common,
            candidate_attempts=(),
            budget_consumed=_consumed((), ceiling, exhausted=False),
            run_disposition=RunDisposition.EXHAUSTED_NO_CANDIDATE,
            exhaustion_code=RunExhaustionCode.OPERATOR_SET_EMPTY,
            explanation="exhausted_no_candidate: operator_set_empty (inert v1 shell)",
            opened_run_id=None,
        )
    return OpenedSearchRun.sealed(
        **common, **ceiling, explanation="opened: zero attempts, awaiting operators"
    )


def _consumed(
    attempts: tuple[CandidateAttempt, ...], ceiling: dict[str, int], *, exhausted: bool
) -> BudgetConsumed:
    return BudgetConsumed(
        candidates_considered=len(attempts),
        max_candidates=ceiling["max_candidates"],
        depth_reached=max((attempt.depth for attempt in attempts), default=0),
        max_depth=ceiling["max_depth"],
        steps_used=sum(attempt.budget_charge.steps for attempt in attempts),
        max_steps=ceiling["max_steps"],
        parallelism_used=1 if attempts else 0,
        max_parallelism=ceiling["max_parallelism"],
        exhausted=exhausted,
    )


# --------------------------------------------------------------------------------------------
# Recording attempts (docs/adr/0004)


def admit_within_ceiling(
    charges: tuple[tuple[int, int, int], ...], ceiling: tuple[int, int, int]
) -> tuple[int, RunExhaustionCode | None]:
    """How many attempts, in order, fit the ceiling, and which ceiling the first one that
    does not fit would break. Each charge is (candidates, steps, depth) and the ceiling is
    (max_candidates, max_depth, max_steps). An attempt is admitted only when its complete
    charge fits (ADR-0228 §9), so the budget is never exceeded.

    pre: all(min(charge) >= 1 for charge in charges) and min(ceiling) >= 0
    post: 0 <= __return__[0] <= len(charges)
    post: (__return__[1] is None) == (__return__[0] == len(charges))
    post: _fits(charges[: __return__[0]], ceiling)
    post: __return__[1] is None or not _fits(charges[: __return__[0] + 1], ceiling)
    post: __return__[1] is not RunExhaustionCode.MAX_DEPTH_REACHED or _too_deep(charges, ceiling)
    """
    max_candidates, max_depth, max_steps = ceiling
    candidates_used = steps_used = 0
    for admitted, (candidates, steps, depth) in enumerate(charges):
        if candidates_used + candidates > max_candidates:
            return admitted, RunExhaustionCode.MAX_CANDIDATES_REACHED
        if depth > max_depth:
            return admitted, RunExhaustionCode.MAX_DEPTH_REACHED
        if steps_used + steps > max_steps:
            return admitted, RunExhaustionCode.MAX_STEPS_REACHED
        candidates_used += candidates
        steps_used += steps
    return len(charges), None


def _fits(charges: tuple[tuple[int, int, int], ...], ceiling: tuple[int, int, int]) -> bool:
    """ADR-0228 §9's inequalities: these charges together stay within the ceiling."""
    max_candidates, max_depth, max_steps = ceiling
    return (
        sum(candidates for candidates, _, _ in charges) <= max_candidates
        and all(depth <= max_depth for _, _, depth in charges)
        and sum(steps for _, steps, _ in charges) <= max_steps
    )


def _too_deep(charges: tuple[tuple[int, int, int], ...], ceiling: tuple[int, int, int]) -> bool:
    return any(depth > ceiling[1] for _, _, depth in charges)


def run_disposition_for(
    kept: int, stop: RunExhaustionCode | None, has_operators: bool
) -> tuple[RunDisposition, RunExhaustionCode | None]:
    """The disposition and exhaustion code of a run that kept ``kept`` attempts, stopped by
    ``stop`` (a budget code) or not, over a declared or empty operator set (ADR-0228 §7, §9).

    pre: kept >= 0
    pre: stop is None or stop in BUDGET_EXHAUSTION_CODES
    post: __return__[0] in RUN_DISPOSITIONS
    post: (__return__[0] is _D.CANDIDATE_REPLAY_PENDING) == (kept > 0)
    post: kept > 0 or __return__[1] is not None
    post: (__return__[1] in BUDGET_EXHAUSTION_CODES) == (stop is not None)
    post: kept or stop or has_operators or __return__[1] is RunExhaustionCode.OPERATOR_SET_EMPTY
    post: __return__[1] is not RunExhaustionCode.OPERATOR_SET_EMPTY or not has_operators
    """
    if kept:
        return RunDisposition.CANDIDATE_REPLAY_PENDING, stop
    if stop is not None:
        return RunDisposition.EXHAUSTED_NO_CANDIDATE, stop
    if not has_operators:
        return RunDisposition.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.OPERATOR_SET_EMPTY
    return RunDisposition.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.OPERATOR_SPACE_DEPLETED


def _attempt_failure(
    attempts: object, operator_set: OperatorSetManifest
) -> RunRefusalReason | None:
    if type(attempts) is not tuple or any(
        inspect_record(attempt, CandidateAttempt) is not None for attempt in attempts
    ):
        return RunRefusalReason.ATTEMPTS_MALFORMED
    per_operator: dict[tuple[str, str], int] = {}
    for attempt in attempts:
        row = operator_set.row_for(attempt.operator_id, attempt.operator_version)
        if attempt.replay_status is not CandidateReplayStatus.REPLAY_PENDING:
            return RunRefusalReason.ATTEMPT_NOT_PENDING
        if row is None:
            return RunRefusalReason.ATTEMPT_OPERATOR_UNDECLARED
        if attempt.budget_charge != row.budget_charge or attempt.depth != row.depth:
            return RunRefusalReason.ATTEMPT_CHARGE_UNDECLARED
        key = (attempt.operator_id, attempt.operator_version)
        per_operator[key] = per_operator.get(key, 0) + 1
        if per_operator[key] > row.max_attempts_per_run:
            return RunRefusalReason.ATTEMPT_LIMIT_EXCEEDED
    return lineage_defect(attempts)


def record_attempts(
    opened_run: OpenedSearchRun,
    operator_set: OperatorSetManifest,
    attempts: tuple[CandidateAttempt, ...],
) -> GeometricSearchRun | SearchRunRefusal:
    """Seal an opened run with its operators' attempts, in the order given.

    Each attempt is admitted only when its complete charge fits (ADR-0228 §9); the first that
    does not stops the run with the matching exhaustion code, and every attempt before it is
    kept. Attempts that cannot be reproduced against the operator manifest refuse the whole
    run (§16): nothing is recorded from an undeclared operator.
    """
    if inspect_record(opened_run, OpenedSearchRun) is not None:
        return _refusal(
            RunRefusalReason.OPENED_RUN_MALFORMED,
            run_policy_version="",
            input_digest=None,
            gate_decision_id=None,
            budget_id=None,
        )
    failure = _operator_set_failure(operator_set, opened_run.run_policy_version)
    if failure is None and (
        operator_set_id(operator_set) != opened_run.operator_set_id
        or operator_set.operator_set_version != opened_run.operator_set_version
    ):
        failure = RunRefusalReason.OPERATOR_SET_MISMATCH
    failure = failure or _attempt_failure(attempts, operator_set)
    if failure is not None:
        return _refusal(
            failure,
            run_policy_version=opened_run.run_policy_version,
            input_digest=opened_run.input_digest,
            gate_decision_id=opened_run.gate_decision_id,
            budget_id=opened_run.budget_id,
            detail=f"opened run {opened_run.run_id}",
        )
    ceiling = {name: getattr(opened_run, name) for name in LIMIT_FIELDS}
    admitted, stop = admit_within_ceiling(
        tuple((a.budget_charge.candidates, a.budget_charge.steps, a.depth) for a in attempts),
        (ceiling["max_candidates"], ceiling["max_depth"], ceiling["max_steps"]),
    )
    kept = attempts[:admitted]
    disposition, code_ = run_disposition_for(len(kept), stop, bool(operator_set.operators))
    fields = {name: getattr(opened_run, name) for name in RUN_COPIED_FIELDS}
    return GeometricSearchRun.sealed(
        **fields,
        candidate_attempts=kept,
        budget_consumed=_consumed(kept, ceiling, exhausted=stop is not None),
        run_disposition=disposition,
        exhaustion_code=code_,
        explanation=f"{disposition.value}: {len(kept)} attempt(s)"
        + (f", {code_.value}" if code_ else ""),
        opened_run_id=opened_run.run_id,
    )
