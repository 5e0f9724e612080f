"""The invariants of a candidate ``compute_budget`` table (issues 8 and 21), and its
differences from another version.

Table invariants read every cell of the finite table (ADR-0227 §8); property invariants run
the kernel's own decision, run and operator functions under the candidate on generated gates
(``practice_strategies.chains``, derandomized so that a report reproduces). The registered
versions are proved by ``tests/cover/test_prove_policy.py`` on every run, a candidate by
``practice-loop prove-policy``.
"""

from __future__ import annotations

from typing import Any

from ..kernel import (
    BudgetCharge,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    RecordError,
    SearchGateDecision,
    SearchGateStatus,
    decide_compute_budget,
)
from ..kernel.budget import BUDGET_POLICIES, COMPUTE_BUDGET_IN_FORCE
from ..kernel.operators import MISSING_ROLE_CANDIDATE_POLICY, attempt_charge_failure
from ..kernel.search_run import admission_failure, admit_within_ceiling
from .policy_file import (
    ANY_OTHER_REASON,
    VERSION_IN_FORCE,
    BudgetTable,
    TableRow,
    kernel_policy,
    required_row_keys,
    table_of,
)
from .policy_invariants import (
    Difference,
    Invariant,
    InvariantResult,
    generated_chains,
    run_invariants,
)

DEFAULT_EXAMPLES = 200


# --------------------------------------------------------------------------------------------
# Table invariants: every cell of the finite table.

_ZERO = (0, 0, 0, 0)


def _named_eligible(row: TableRow) -> bool:
    return row.gate_status is SearchGateStatus.ELIGIBLE and row.gate_reason_code != ANY_OTHER_REASON


def _denied_gate_blocked(table: BudgetTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} gives {row.status.value} {row.limits}, not BUDGET_BLOCKED with every"
        " limit 0"
        for row in table.rows
        if row.gate_status is not SearchGateStatus.ELIGIBLE
        and (row.status is not ComputeBudgetStatus.BUDGET_BLOCKED or row.limits != _ZERO)
    ]


def _unknown_reason_unassessable(table: BudgetTable, _: object, __: int) -> list[str]:
    row = table.row(SearchGateStatus.ELIGIBLE, ANY_OTHER_REASON)
    if row.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE and row.limits == _ZERO:
        return []
    return [f"{row.describe()} gives {row.status.value} {row.limits}"]


def _eligible_allowed_or_zero(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in filter(_named_eligible, table.rows):
        candidates, _depth, steps, _parallelism = row.limits
        if row.status is ComputeBudgetStatus.BUDGET_ZERO and row.limits != _ZERO:
            found.append(f"{row.describe()} is BUDGET_ZERO with limits {row.limits}")
        elif row.status is ComputeBudgetStatus.BUDGET_ALLOWED and min(candidates, steps) < 1:
            found.append(f"{row.describe()} is BUDGET_ALLOWED without a candidate and a step")
        elif row.status not in (
            ComputeBudgetStatus.BUDGET_ALLOWED,
            ComputeBudgetStatus.BUDGET_ZERO,
        ):
            found.append(f"{row.describe()} is {row.status.value}")
    return found


def _serial_only(table: BudgetTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} grants max_parallelism {row.limits[3]}"
        for row in table.rows
        if row.limits[3] != (1 if row.status is ComputeBudgetStatus.BUDGET_ALLOWED else 0)
    ]


def _reason_codes_match(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.rows:
        if not _named_eligible(row):
            # The fixed rows keep the reason codes the kernel gives them.
            expected_ok = row.reason_code == VERSION_IN_FORCE.row(*row.key).reason_code
        elif row.status is ComputeBudgetStatus.BUDGET_ALLOWED:
            expected_ok = row.reason_code.startswith("budget_allowed_")
        else:
            expected_ok = row.reason_code.startswith("budget_zero_")
        if not expected_ok:
            found.append(f"{row.describe()} ({row.status.value}) names {row.reason_code!r}")
    return found


def _version_is_new(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for registered_version, policy in BUDGET_POLICIES.items():
        if table.version == registered_version and table.rows != table_of(policy).rows:
            found.append(
                f"{table.version} is already the registered version with another table: a"
                " changed table needs a new version"
            )
    return found


def _kernel_accepts(table: BudgetTable, _: object, __: int) -> list[str]:
    built = kernel_policy(table)
    return [f"the kernel refuses the table: {built}"] if isinstance(built, RecordError) else []


# --------------------------------------------------------------------------------------------
# Property invariants: the kernel's own functions under the candidate, on generated gates.


def _gates(examples: int) -> list[SearchGateDecision]:
    return [chain.gate for chain in generated_chains(examples)]


def _decide(gate: SearchGateDecision, policy: ComputeBudgetPolicy) -> ComputeBudgetDecision:
    return decide_compute_budget(gate, policy, registered={policy.version: policy})


def _granted(decision: ComputeBudgetDecision) -> tuple[object, ...]:
    limits = tuple(
        getattr(decision, name)
        for name in ("max_candidates", "max_depth", "max_steps", "max_parallelism")
    )
    return decision.status, decision.reason_code, limits


def _limits_from_status_and_reason(
    table: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    for gate in _gates(examples):
        row = table.row(gate.status, gate.reason_code)
        if not _named_eligible(row):
            continue  # the kernel fixes the other rows; the table invariants judge them
        decided = _granted(_decide(gate, policy))
        if decided != (row.status, row.reason_code, row.limits):
            found.append(
                f"gate {gate.decision_id[:12]} ({gate.status.value}/{gate.reason_code}) is"
                f" granted {_granted_text(decided)}, not its row {row.describe()}"
            )
    return found[:5]


def _identities_follow_version(
    table: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    # Against every registered version, not only the one in force: a table that differs from
    # any of them must not share its identities (ADR-0231 §10).
    for version, registered in BUDGET_POLICIES.items():
        if registered == policy:
            continue
        if policy.policy_id == registered.policy_id:
            found.append(f"the table's policy_id equals {version}'s")
        for gate in _gates(examples):
            if _decide(gate, policy).budget_id == _decide(gate, registered).budget_id:
                found.append(f"gate {gate.decision_id[:12]}: the same budget_id as under {version}")
                break
    return found


def _explanation_stability(
    _: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    from practice_strategies import resealed

    assert policy is not None
    found = []
    for gate in _gates(examples):
        reworded = resealed(gate, explanation=gate.explanation + " (reworded)")
        before, after = _decide(gate, policy), _decide(reworded, policy)
        if before.budget_id != after.budget_id or _granted(before) != _granted(after):
            found.append(
                f"gate {gate.decision_id[:12]}: rewording its explanation moved the budget"
            )
    return found[:5]


def _span_order_sensitivity(
    _: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    from practice_strategies import resealed

    assert policy is not None
    found = []
    for gate in _gates(examples):
        spans = gate.evidence_spans
        if tuple(reversed(spans)) == spans:
            continue  # a palindrome of spans has no other order to try this way
        reordered = resealed(gate, evidence_spans=tuple(reversed(spans)))
        if _decide(gate, policy).budget_id == _decide(reordered, policy).budget_id:
            found.append(f"gate {gate.decision_id[:12]}: reordered spans kept the budget_id")
    return found[:5]


def _run_admits_exactly_allowed(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.rows:
        candidates, _depth, steps, parallelism = row.limits
        refusal = admission_failure(row.gate_status, row.status, candidates, steps, parallelism)
        allowed = (
            row.gate_status is SearchGateStatus.ELIGIBLE
            and row.status is ComputeBudgetStatus.BUDGET_ALLOWED
        )
        if (refusal is None) != allowed:
            shown = "opens" if refusal is None else f"is refused ({refusal.value})"
            found.append(f"{row.describe()} ({row.status.value}): a run {shown}")
    return found


def _ceiling_never_exceeded(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    charges = tuple((1, steps, depth) for steps in (1, 2, 3) for depth in (1, 2))
    for row in table.rows:
        if row.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        candidates, depth, steps, _ = row.limits
        ceiling = (candidates, depth, steps)
        for start in range(len(charges)):
            sequence = charges[start:] + charges[:start]
            kept, _stop = admit_within_ceiling(sequence, ceiling)
            admitted = sequence[:kept]
            if (
                sum(charge[0] for charge in admitted) > candidates
                or sum(charge[1] for charge in admitted) > steps
                or any(charge[2] > depth for charge in admitted)
            ):
                found.append(f"{row.describe()}: a run admitted {admitted} over {ceiling}")
    return found


def _operator_charge_within_grant(table: BudgetTable, _: object, __: int) -> list[str]:
    policy = MISSING_ROLE_CANDIDATE_POLICY
    charge: BudgetCharge = policy.budget_charge
    policy_limits = (policy.depth, policy.max_attempts_per_run, policy.max_parallelism)
    found = []
    for row in table.rows:
        if row.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        for attempt_index in range(row.limits[0] + 1):
            charged = (charge.candidates, charge.steps)
            if attempt_charge_failure(attempt_index, row.limits, charged, policy_limits) is None:
                used = attempt_index + 1
                if (
                    used * charge.candidates > row.limits[0]
                    or used * charge.steps > row.limits[2]
                    or policy.depth > row.limits[1]
                ):
                    found.append(f"{row.describe()}: attempt {attempt_index} admitted beyond it")
    return found


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "denied_gate_blocked",
        "ADR-0227 §8, §3",
        "every non-ELIGIBLE gate gets BUDGET_BLOCKED with every limit 0",
        _denied_gate_blocked,
    ),
    Invariant(
        "unknown_reason_unassessable",
        "ADR-0227 §8",
        "an eligible reason without a row gets BUDGET_UNASSESSABLE with every limit 0",
        _unknown_reason_unassessable,
    ),
    Invariant(
        "eligible_rows_allowed_or_zero",
        "ADR-0227 §5, §8",
        "a named eligible row is BUDGET_ALLOWED with a candidate and a step, or BUDGET_ZERO with"
        " nothing",
        _eligible_allowed_or_zero,
    ),
    Invariant(
        "serial_only",
        "ADR-0227 §8 (no concurrency bounds expansion)",
        "an allowed row grants max_parallelism exactly 1, every other row 0",
        _serial_only,
    ),
    Invariant(
        "reason_codes_match_status",
        "ADR-0227 §5",
        "each row's reason code belongs to its status",
        _reason_codes_match,
    ),
    Invariant(
        "changed_table_new_version",
        "ADR-0227 §6, ADR-0231 §10",
        "a table that differs from a registered version carries a version of its own",
        _version_is_new,
    ),
    Invariant(
        "kernel_accepts_table",
        "docs/adr/0003 (records validate on construction)",
        "the kernel builds the table's eligible rows as a ComputeBudgetPolicy",
        _kernel_accepts,
    ),
    Invariant(
        "limits_from_status_and_reason",
        "ADR-0227 §8 (no adaptive scaling)",
        "on generated gates, the decision is exactly the row of the gate's status and reason",
        _limits_from_status_and_reason,
        needs_kernel_policy=True,
    ),
    Invariant(
        "identities_follow_version",
        "ADR-0227 §6, §7; ADR-0231 §10",
        "a changed table changes policy_id and every budget_id decided under it",
        _identities_follow_version,
        needs_kernel_policy=True,
    ),
    Invariant(
        "explanation_stability",
        "ADR-0227 §7 (explanation excluded)",
        "rewording a gate's explanation changes neither the grant nor the budget_id",
        _explanation_stability,
        needs_kernel_policy=True,
    ),
    Invariant(
        "span_order_sensitivity",
        "ADR-0227 §7, ADR-0228 §6",
        "reordering a gate's evidence spans changes the budget_id",
        _span_order_sensitivity,
        needs_kernel_policy=True,
    ),
    Invariant(
        "run_admits_exactly_allowed",
        "ADR-0228 §9, §11",
        "a search run opens on exactly the rows that allow a budget",
        _run_admits_exactly_allowed,
    ),
    Invariant(
        "ceiling_never_exceeded",
        "ADR-0228 §9",
        "a run admits attempts only while their whole charge fits each allowed row",
        _ceiling_never_exceeded,
    ),
    Invariant(
        "operator_charge_within_grant",
        "ADR-0231 §7.3.17-20",
        "the operator admits an attempt only when its fixed charge fits the grant",
        _operator_charge_within_grant,
    ),
)


def check_invariants(table: BudgetTable, examples: int = DEFAULT_EXAMPLES) -> list[InvariantResult]:
    return run_invariants(INVARIANTS, table, kernel_policy(table), examples)


# --------------------------------------------------------------------------------------------
# Differences from the version in force.


def _shown(row: TableRow) -> str:
    return _granted_text((row.status, row.reason_code, row.limits))


_LIMIT_NAMES = ("candidates", "depth", "steps", "parallelism")


def table_differences(
    table: BudgetTable, other: BudgetTable = VERSION_IN_FORCE
) -> list[Difference]:
    """Every cell whose grant differs from ``other``'s (by default the version in force)."""
    differences = []
    for gate_status, gate_reason in required_row_keys():
        old = other.row(gate_status, gate_reason)
        new = table.row(gate_status, gate_reason)
        if (old.status, old.reason_code, old.limits) != (new.status, new.reason_code, new.limits):
            differences.append(Difference("table", old.describe(), _shown(old), _shown(new)))
    return differences


def generated_differences(
    policy: ComputeBudgetPolicy, examples: int, other: ComputeBudgetPolicy = COMPUTE_BUDGET_IN_FORCE
) -> list[Difference]:
    """Each gate status and reason whose grant differs from ``other``'s on generated gates,
    with one example gate."""
    differences: dict[tuple[str, str], Difference] = {}
    for gate in _gates(examples):
        old, new = _granted(_decide(gate, other)), _granted(_decide(gate, policy))
        key = (gate.status.value, gate.reason_code)
        if old != new and key not in differences:
            differences[key] = Difference(
                "generated gate",
                f"{gate.status.value}/{gate.reason_code} (e.g. gate {gate.decision_id[:12]})",
                _granted_text(old),
                _granted_text(new),
            )
    return list(differences.values())


def _granted_text(granted: tuple[Any, ...]) -> str:
    status, reason, limits = granted
    shown = ", ".join(f"{name} {value}" for name, value in zip(_LIMIT_NAMES, limits, strict=True))
    return f"{status.value} {reason} ({shown})"
