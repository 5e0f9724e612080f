"""``ComputeBudgetDecision`` and the ``compute_budget.v1`` table (ADR-0227).

The budget is a resource ceiling only (ADR-0227 §3). The table is data: one row per eligible
gate reason; every non-``ELIGIBLE`` gate is ``BUDGET_BLOCKED`` with all limits zero, and an
eligible reason with no row is ``BUDGET_UNASSESSABLE`` with all limits zero (§8). A limit
depends on nothing but the gate's status and reason code: no adaptive scaling.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Mapping
from typing import Annotated, ClassVar

from .checks import (
    Defect,
    code,
    digest,
    member_of,
    non_negative_int,
    optional,
    or_blank,
    text,
    tuple_of,
    version,
)
from .gate import SearchGateDecision, SearchGateStatus
from .record import Record, inspect_record, nested
from .span import SourceSpan, spans_check

COMPUTE_BUDGET_POLICY_VERSION = "compute_budget.v1"


class ComputeBudgetStatus(enum.Enum):
    BUDGET_ALLOWED = "BUDGET_ALLOWED"
    BUDGET_BLOCKED = "BUDGET_BLOCKED"
    BUDGET_ZERO = "BUDGET_ZERO"
    BUDGET_UNASSESSABLE = "BUDGET_UNASSESSABLE"


class BudgetReason(enum.Enum):
    """The fail-closed reasons; allowed and zero reasons come from the table's rows."""

    BLOCKED_GATE_INELIGIBLE = "budget_blocked_gate_ineligible"
    BLOCKED_GATE_BLOCKED = "budget_blocked_gate_blocked"
    BLOCKED_GATE_UNASSESSABLE = "budget_blocked_gate_unassessable"
    UNKNOWN_REASON_CODE = "budget_unassessable_unknown_reason_code"
    GATE_MALFORMED = "budget_unassessable_gate_malformed"
    GATE_POLICY_UNSUPPORTED = "budget_unassessable_gate_policy_unsupported"
    GATE_IDENTITY_MISMATCH = "budget_unassessable_gate_identity_mismatch"
    POLICY_UNSUPPORTED = "budget_unassessable_policy_unsupported"


_BLOCKED_BY_GATE_STATUS = types.MappingProxyType(
    {
        SearchGateStatus.INELIGIBLE: BudgetReason.BLOCKED_GATE_INELIGIBLE,
        SearchGateStatus.BLOCKED: BudgetReason.BLOCKED_GATE_BLOCKED,
        SearchGateStatus.UNASSESSABLE: BudgetReason.BLOCKED_GATE_UNASSESSABLE,
    }
)

LIMIT_FIELDS = ("max_candidates", "max_depth", "max_steps", "max_parallelism")


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetLimits(Record):
    max_candidates: Annotated[int, non_negative_int]
    max_depth: Annotated[int, non_negative_int]
    max_steps: Annotated[int, non_negative_int]
    max_parallelism: Annotated[int, non_negative_int]

    def all_zero(self) -> bool:
        return not any(getattr(self, name) for name in LIMIT_FIELDS)


ZERO_LIMITS = BudgetLimits(0, 0, 0, 0)


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetPolicyRow(Record):
    """One row of a budget table: an eligible gate reason and what it is granted.

    A row is either ``BUDGET_ALLOWED`` with at least one candidate and one step and
    parallelism exactly 1 (ADR-0227 §8), or ``BUDGET_ZERO`` with every limit zero.
    """

    gate_reason_code: Annotated[str, code]
    status: Annotated[ComputeBudgetStatus, member_of(ComputeBudgetStatus)]
    reason_code: Annotated[str, code]
    limits: Annotated[BudgetLimits, nested(BudgetLimits)]

    def _cross_check(self) -> tuple[str, Defect] | None:
        if not self.gate_reason_code.startswith("eligible_"):
            return "gate_reason_code", Defect.INCONSISTENT_FIELDS
        if self.status is ComputeBudgetStatus.BUDGET_ZERO:
            return None if self.limits.all_zero() else ("limits", Defect.INCONSISTENT_FIELDS)
        if self.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            return "status", Defect.INCONSISTENT_FIELDS
        limits = self.limits
        if limits.max_candidates < 1 or limits.max_steps < 1 or limits.max_parallelism != 1:
            return "limits", Defect.INCONSISTENT_FIELDS
        return None


@dataclasses.dataclass(frozen=True, slots=True)
class ComputeBudgetPolicy(Record):
    """A versioned budget table: the rows for eligible gate reasons, each reason once. The
    rows for a denied gate and for an unknown reason are fixed by ADR-0227 §8 (every limit
    zero), so no table carries them. Its identity is ``policy_id``."""

    version: Annotated[str, version]
    rows: Annotated[tuple[BudgetPolicyRow, ...], tuple_of(nested(BudgetPolicyRow))]

    def _cross_check(self) -> tuple[str, Defect] | None:
        reasons = [row.gate_reason_code for row in self.rows]
        if len(reasons) != len(set(reasons)):
            return "rows", Defect.DUPLICATE_ENTRY
        return None

    @property
    def policy_id(self) -> str:
        """The table's canonical identity: any change to the version or a row changes it."""
        return self.content_digest()

    def row_for(self, gate_reason_code: str) -> BudgetPolicyRow | None:
        for row in self.rows:
            if row.gate_reason_code == gate_reason_code:
                return row
        return None


def _allowed(
    gate_reason: str, kind: str, candidates: int, depth: int, steps: int
) -> BudgetPolicyRow:
    return BudgetPolicyRow(
        gate_reason,
        ComputeBudgetStatus.BUDGET_ALLOWED,
        f"budget_allowed_{kind}",
        BudgetLimits(candidates, depth, steps, 1),
    )


# ADR-0227 §8, row for row.
COMPUTE_BUDGET_V1 = ComputeBudgetPolicy(
    COMPUTE_BUDGET_POLICY_VERSION,
    (
        _allowed("eligible_missing_role", "missing_role", 5, 2, 10),
        _allowed("eligible_missing_relation", "missing_relation", 5, 2, 10),
        _allowed("eligible_missing_proposal", "missing_proposal", 3, 1, 5),
        _allowed("eligible_target_unbound", "target_unbound", 5, 2, 10),
    ),
)

# The versions this kernel knows; a policy is honoured only when it is the registered value.
BUDGET_POLICIES: Mapping[str, ComputeBudgetPolicy] = types.MappingProxyType(
    {
        COMPUTE_BUDGET_V1.version: COMPUTE_BUDGET_V1,
    }
)

# The version in force: the one the loop decides under and every default names. Adopting a
# proven version moves this one line (``practice-loop prove-policy --adopt``).
COMPUTE_BUDGET_IN_FORCE = COMPUTE_BUDGET_V1


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetVerdict(Record):
    """What a budget table grants a validated gate decision, before any record is sealed:
    the status, the reason code and the limits (ADR-0227 §4, §8)."""

    status: Annotated[ComputeBudgetStatus, member_of(ComputeBudgetStatus)]
    reason_code: Annotated[str, code]
    limits: Annotated[BudgetLimits, nested(BudgetLimits)]


def budget_verdict(
    gate_status: SearchGateStatus,
    gate_reason_code: str,
    policy: ComputeBudgetPolicy = COMPUTE_BUDGET_IN_FORCE,
) -> BudgetVerdict:
    """The table lookup of ``decide_compute_budget`` for a validated gate decision under a
    validated ``policy``: it reads the gate's status and reason code and nothing else (no
    adaptive scaling, ADR-0227 §8) and builds no identity.

    Its contract is ``compute_budget_v1``'s, for every valid table: CrossHair checks it on
    the v1 table, because it cannot build a valid table symbolically (every code is
    pattern-checked); tests/cover/test_contracts.py samples it on generated tables.
    """
    if gate_status is not SearchGateStatus.ELIGIBLE:
        blocked = _BLOCKED_BY_GATE_STATUS[gate_status].value
        return BudgetVerdict(ComputeBudgetStatus.BUDGET_BLOCKED, blocked, ZERO_LIMITS)
    row = policy.row_for(gate_reason_code)
    if row is None:
        unknown = BudgetReason.UNKNOWN_REASON_CODE.value
        return BudgetVerdict(ComputeBudgetStatus.BUDGET_UNASSESSABLE, unknown, ZERO_LIMITS)
    return BudgetVerdict(row.status, row.reason_code, row.limits)


def compute_budget_v1(gate_status: SearchGateStatus, gate_reason_code: str) -> BudgetVerdict:
    """``budget_verdict`` under the ``compute_budget.v1`` table: the function a candidate
    table is compared with (``practice-loop policy-diff``, docs/contracts.md).

    post: gate_status is SearchGateStatus.ELIGIBLE or _blocked_with_nothing(__return__)
    post: __return__.status is ComputeBudgetStatus.BUDGET_ALLOWED or __return__.limits.all_zero()
    post: __return__.status is not ComputeBudgetStatus.BUDGET_ALLOWED or _serial(__return__)
    post: gate_reason_code.startswith("eligible_") or __return__.limits.all_zero()
    post: gate_status is not SearchGateStatus.ELIGIBLE or _v1_row_or_none(__return__)
    """
    return budget_verdict(gate_status, gate_reason_code, COMPUTE_BUDGET_V1)


def _blocked_with_nothing(verdict: BudgetVerdict) -> bool:
    """ADR-0227 §8: a denied gate is ``BUDGET_BLOCKED`` with every limit zero."""
    return verdict.status is ComputeBudgetStatus.BUDGET_BLOCKED and verdict.limits.all_zero()


def _serial(verdict: BudgetVerdict) -> bool:
    """ADR-0227 §8: an allowed budget grants a candidate and a step, parallelism exactly 1,
    and no negative limit."""
    limits = verdict.limits
    return (
        limits.max_candidates >= 1
        and limits.max_steps >= 1
        and limits.max_depth >= 0
        and limits.max_parallelism == 1
    )


def _v1_row_or_none(verdict: BudgetVerdict) -> bool:
    """An eligible gate gets one of the four ADR-0227 §8 rows verbatim, or nothing at all."""
    granted = (verdict.status, verdict.reason_code, verdict.limits)
    rows = {(row.status, row.reason_code, row.limits) for row in COMPUTE_BUDGET_V1.rows}
    unknown = BudgetReason.UNKNOWN_REASON_CODE.value
    return granted in rows or (
        verdict.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
        and verdict.reason_code == unknown
        and verdict.limits.all_zero()
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ComputeBudgetDecision(Record):
    """ADR-0227 §5. ``budget_id`` hashes exactly the eleven fields of §7."""

    budget_id: Annotated[str, digest]
    policy_version: Annotated[str, or_blank(version)]
    gate_decision_id: Annotated[str, or_blank(digest)]
    gate_policy_version: Annotated[str, or_blank(version)]
    gate_input_digest: Annotated[str, or_blank(digest)]
    status: Annotated[ComputeBudgetStatus, member_of(ComputeBudgetStatus)]
    reason_code: Annotated[str, code]
    max_candidates: Annotated[int, non_negative_int]
    max_depth: Annotated[int, non_negative_int]
    max_steps: Annotated[int, non_negative_int]
    max_wallclock_ms: Annotated[int | None, optional(non_negative_int)]
    max_parallelism: Annotated[int, non_negative_int]
    evidence_spans: Annotated[tuple[SourceSpan, ...], spans_check]
    explanation: Annotated[str, text]

    ID_FIELD: ClassVar = "budget_id"

    def _cross_check(self) -> tuple[str, Defect] | None:
        blanks = (self.policy_version, self.gate_decision_id, self.gate_policy_version)
        unassessable = self.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
        if "" in blanks + (self.gate_input_digest,) and not unassessable:
            return "gate_decision_id", Defect.INCONSISTENT_FIELDS
        # ADR-0227 §3: anything but an allowed budget carries no resource at all.
        if self.status is not ComputeBudgetStatus.BUDGET_ALLOWED and any(
            getattr(self, name) for name in LIMIT_FIELDS
        ):
            return "status", Defect.INCONSISTENT_FIELDS
        return None

    # ADR-0227 §7: the identity hashes exactly eleven fields; budget_id itself, explanation
    # and max_wallclock_ms are left out.
    SELF_SEALED: ClassVar = False
    IDENTITY_EXCLUDED: ClassVar = frozenset({"max_wallclock_ms"})


def _decision(
    policy_version: str,
    gate: SearchGateDecision | None,
    status: ComputeBudgetStatus,
    reason_code: str,
    limits: BudgetLimits,
    explanation: str,
) -> ComputeBudgetDecision:
    return ComputeBudgetDecision.sealed(
        policy_version=policy_version,
        gate_decision_id=gate.decision_id if gate else "",
        gate_policy_version=gate.policy_version if gate else "",
        gate_input_digest=gate.input_digest if gate else "",
        status=status,
        reason_code=reason_code,
        max_candidates=limits.max_candidates,
        max_depth=limits.max_depth,
        max_steps=limits.max_steps,
        max_wallclock_ms=None,
        max_parallelism=limits.max_parallelism,
        evidence_spans=gate.evidence_spans if gate else (),
        explanation=explanation,
    )


def decide_compute_budget(
    gate_decision: SearchGateDecision,
    policy: ComputeBudgetPolicy = COMPUTE_BUDGET_IN_FORCE,
    *,
    registered: Mapping[str, ComputeBudgetPolicy] = BUDGET_POLICIES,
) -> ComputeBudgetDecision:
    """Map one gate decision to one budget decision under ``policy`` (ADR-0227 §4, §8).

    ``policy`` is honoured only when it is the value ``registered`` holds for its version:
    the kernel's own versions by default; a prover passes a candidate version explicitly
    (``practice-loop prove-policy``, docs/proving-policy-versions.md). Always returns a
    decision: malformed input and unsupported policies fail closed to
    ``BUDGET_UNASSESSABLE`` with every limit zero.
    """
    unassessable = ComputeBudgetStatus.BUDGET_UNASSESSABLE
    policy_ok = (
        inspect_record(policy, ComputeBudgetPolicy) is None
        and type(registered.get(policy.version)) is ComputeBudgetPolicy
        and registered[policy.version] == policy
    )
    if not policy_ok:
        # Read nothing from a foreign object: its attribute access could run any code.
        given = getattr(policy, "version", "") if type(policy) is ComputeBudgetPolicy else ""
        shown = given if type(given) is str and version(given) is None else ""
        reason = BudgetReason.POLICY_UNSUPPORTED.value
        return _decision(shown, None, unassessable, reason, ZERO_LIMITS, reason)
    found = inspect_record(gate_decision, SearchGateDecision)
    if found is not None:
        if found.field == "policy_version" and found.defect is Defect.VERSION_UNSUPPORTED:
            reason = BudgetReason.GATE_POLICY_UNSUPPORTED
        elif found.defect is Defect.IDENTITY_MISMATCH:
            reason = BudgetReason.GATE_IDENTITY_MISMATCH
        else:
            reason = BudgetReason.GATE_MALFORMED
        detail = f"{reason.value} ({found.describe()})"
        return _decision(policy.version, None, unassessable, reason.value, ZERO_LIMITS, detail)
    verdict = budget_verdict(gate_decision.status, gate_decision.reason_code, policy)
    if verdict.status is ComputeBudgetStatus.BUDGET_BLOCKED:
        detail = verdict.reason_code
    elif verdict.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE:
        detail = f"{verdict.reason_code}: no row for {gate_decision.reason_code}"
    else:
        detail = f"{verdict.status.value}: {verdict.reason_code}"
    return _decision(
        policy.version, gate_decision, verdict.status, verdict.reason_code, verdict.limits, detail
    )
