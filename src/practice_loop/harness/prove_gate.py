"""The invariants of a candidate ``search_gate`` policy (issue 21), and its differences.

A gate policy is two tables (docs/adr/0002): the status each ``GateReason`` carries and the
eligible reason of each searchable ``ResidualKind``. The rules that pick a reason are code and
never change with a policy. Table invariants read the file as written, so that a candidate
the kernel would refuse is still judged clause by clause; property invariants run the kernel's
own ``decide_search_gate(..., policy=candidate)`` (and the budget after it) on generated
contexts (``practice_strategies.chains``, derandomized).

The gate decision record validates its ``policy_version`` against the kernel's registry
(docs/adr/0002 "Record invariants"), so a candidate cannot be decided under unless it is
registered: ``candidate_registered`` adds it to a copy of the registry for the duration of
the property checks only and puts the original back, whatever happens; a version the kernel
already registers is never replaced (a changed table under it is then decided as the kernel
decides any unregistered value: it fails closed).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

from ..kernel import (
    AssessmentStatus,
    GateReason,
    RecordError,
    ResidualKind,
    SearchGatePolicy,
    SearchGateStatus,
    decide_compute_budget,
    decide_search_gate,
)
from ..kernel import gate as gate_module
from ..kernel.gate import FAIL_CLOSED_REASONS, SEARCH_GATE_IN_FORCE
from .policy_file import GATE_IN_FORCE, SEARCHABLE_KINDS, GateTable, gate_table_of
from .policy_invariants import Difference, Invariant, generated_chains


@contextlib.contextmanager
def candidate_registered(policy: SearchGatePolicy) -> Iterator[None]:
    """``policy`` honoured by the kernel for the block only (never over a registered
    version); the kernel's registry is put back on the way out."""
    original = gate_module.GATE_POLICIES
    if policy.version in original:
        yield
        return
    gate_module.GATE_POLICIES = types.MappingProxyType({**original, policy.version: policy})
    try:
        yield
    finally:
        gate_module.GATE_POLICIES = original


# --------------------------------------------------------------------------------------------
# Table invariants: every cell of both tables, as written.


def _unclassified_never_searchable(table: GateTable, _: object, __: int) -> list[str]:
    found = []
    if table.reason_of(ResidualKind.UNCLASSIFIED) is not None:
        found.append(
            f"unclassified is mapped to {table.reason_of(ResidualKind.UNCLASSIFIED).value}"  # type: ignore[union-attr]
        )
    status = table.status_of(GateReason.UNCLASSIFIED_RESIDUAL)
    if status is SearchGateStatus.ELIGIBLE:
        found.append(f"{GateReason.UNCLASSIFIED_RESIDUAL.value} is {status.value}")
    return found


def _runnable_assessment_blocked(table: GateTable, _: object, __: int) -> list[str]:
    status = table.status_of(GateReason.ASSESSMENT_RUNNABLE)
    if status is SearchGateStatus.BLOCKED:
        return []
    return [f"{GateReason.ASSESSMENT_RUNNABLE.value} is {status.value}, not BLOCKED"]


def _malformed_context_unassessable(table: GateTable, _: object, __: int) -> list[str]:
    return [
        f"{reason.value} is {status.value}, not UNASSESSABLE"
        for reason, status in table.statuses
        if reason in FAIL_CLOSED_REASONS and status is not SearchGateStatus.UNASSESSABLE
    ]


def _kind_maps_to_its_reason(table: GateTable, _: object, __: int) -> list[str]:
    found = []
    for kind in SEARCHABLE_KINDS:
        reason = table.reason_of(kind)
        if reason is None or reason.value != f"eligible_{kind.value}":
            shown = "nothing" if reason is None else reason.value
            found.append(f"{kind.value} is mapped to {shown}, not eligible_{kind.value}")
    return found


def _eligible_exactly_by_code(table: GateTable, _: object, __: int) -> list[str]:
    return [
        f"{reason.value} is {status.value}"
        for reason, status in table.statuses
        if reason.value.startswith("eligible_") != (status is SearchGateStatus.ELIGIBLE)
    ]


def _changed_table_new_version(table: GateTable, _: object, __: int) -> list[str]:
    registered = gate_module.GATE_POLICIES.get(table.version)
    if registered is None:
        return []
    kept = gate_table_of(registered)
    if (kept.statuses, kept.eligible) == (table.statuses, table.eligible):
        return []
    return [
        f"{table.version} is already the registered version with other tables: a changed"
        " table needs a new version"
    ]


def _kernel_accepts(table: GateTable, _: object, __: int) -> list[str]:
    from .policy_file import kernel_gate_policy

    built = kernel_gate_policy(table)
    return [f"the kernel refuses the policy: {built}"] if isinstance(built, RecordError) else []


# --------------------------------------------------------------------------------------------
# Property invariants: the kernel's own gate under the candidate, on generated contexts.


def _decided(policy: SearchGatePolicy, examples: int) -> list[tuple[Any, Any, Any, str | None]]:
    """Each generated chain, the candidate's decision of its context, the budget decided on
    that decision, and the decision's defect (``None`` when it validates), all computed while
    the candidate is honoured."""
    found = []
    with candidate_registered(policy):
        for chain in generated_chains(examples):
            decision = decide_search_gate(chain.assessment, chain.residuals, policy)
            defect = decision.find_defect()
            budget = decide_compute_budget(decision)
            found.append((chain, decision, budget, None if defect is None else defect.describe()))
    return found


def _decisions_follow_table(
    table: GateTable, policy: SearchGatePolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    for chain, decision, _budget, defect in _decided(policy, examples):
        expected_reason = chain.gate.reason_code  # the rules are code: v1's reason
        expected = (policy.version, expected_reason, table.status_of(GateReason(expected_reason)))
        got = (decision.policy_version, decision.reason_code, decision.status)
        if got != expected or defect is not None:
            found.append(
                f"context {chain.gate.input_digest[:12]}: decided"
                f" {got[0]}/{got[1]}/{got[2].value}, not {expected[0]}/{expected[1]}/"
                f"{expected[2].value}" + (f" ({defect})" if defect else "")
            )
    return found[:5]


def _eligibility_never_widens(
    _: GateTable, policy: SearchGatePolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    for chain, decision, budget, _defect in _decided(policy, examples):
        if not decision.allowed:
            continue
        residuals = chain.residuals
        narrow = (
            chain.assessment.status is AssessmentStatus.REFUSED
            and len(residuals) == 1
            and residuals[0].kind is not ResidualKind.UNCLASSIFIED
            and bool(residuals[0].evidence_spans)
            and decision.reason_code == f"eligible_{residuals[0].kind.value}"
        )
        if not narrow:
            kinds = ",".join(residual.kind.value for residual in residuals) or "none"
            found.append(
                f"context {chain.gate.input_digest[:12]} ({chain.assessment.status.value},"
                f" residuals {kinds}) is allowed as {decision.reason_code}, budget"
                f" {budget.reason_code}"
            )
    return found[:5]


def _identities_follow_version(
    table: GateTable, policy: SearchGatePolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    decided = _decided(policy, examples)
    # Against every registered version, not only the one in force: a policy that differs from
    # any of them must not share its identities (ADR-0231 §10).
    for version, registered in gate_module.GATE_POLICIES.items():
        if registered == policy:
            continue
        if policy.policy_id == registered.policy_id:
            found.append(f"the policy's policy_id equals {version}'s")
        for chain, decision, budget, _defect in decided:
            theirs = decide_search_gate(chain.assessment, chain.residuals, registered)
            if decision.decision_id == theirs.decision_id:
                found.append(f"context {chain.gate.input_digest[:12]}: the same decision_id")
                break
            if budget.budget_id == decide_compute_budget(theirs).budget_id:
                found.append(f"context {chain.gate.input_digest[:12]}: the same budget_id")
                break
    return found


GATE_INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "unclassified_never_searchable",
        "ADR-0226 §7B (eligibility narrower than residual existence); docs/adr/0001",
        "no eligible reason for an unclassified residual, and its reason is never ELIGIBLE",
        _unclassified_never_searchable,
    ),
    Invariant(
        "runnable_assessment_blocked",
        "ADR-0226 §8.1, §8.3; docs/adr/0002 rule 4",
        "a runnable assessment (gate_blocked_assessment_runnable) is BLOCKED",
        _runnable_assessment_blocked,
    ),
    Invariant(
        "malformed_context_unassessable",
        "ADR-0226 §7B, §8.7; ADR-0227 §4-§5",
        "a malformed, mismatched or empty context, or an unsupported policy, is UNASSESSABLE",
        _malformed_context_unassessable,
    ),
    Invariant(
        "kind_maps_to_its_eligible_reason",
        "ADR-0226 §7B; ADR-0227 §8; ADR-0231 §6",
        "every searchable residual kind maps to exactly eligible_<kind>",
        _kind_maps_to_its_reason,
    ),
    Invariant(
        "eligible_exactly_by_code",
        "ADR-0226 §7B; ADR-0227 §8 (the budget keys on the code)",
        "a reason is ELIGIBLE exactly when its code is an eligible_ code",
        _eligible_exactly_by_code,
    ),
    Invariant(
        "changed_table_new_version",
        "ADR-0226 §7B (policy_version); docs/adr/0002 Consequences",
        "a policy that differs from a registered version carries a version of its own",
        _changed_table_new_version,
    ),
    Invariant(
        "kernel_accepts_policy",
        "docs/adr/0003 (records validate on construction)",
        "the kernel builds the tables as a SearchGatePolicy",
        _kernel_accepts,
    ),
    Invariant(
        "decisions_follow_table",
        "ADR-0226 §7B; docs/adr/0002 (Policy as a value)",
        "on generated contexts, the kernel's gate under the candidate gives the rules' reason,"
        " the table's status for it and the candidate's version, and the decision validates",
        _decisions_follow_table,
        needs_kernel_policy=True,
    ),
    Invariant(
        "eligibility_never_widens",
        "ADR-0226 §7B, §8.3, §8.4",
        "on generated contexts, only one classified, evidenced residual of a refused assessment"
        " is allowed, under its own eligible reason",
        _eligibility_never_widens,
        needs_kernel_policy=True,
    ),
    Invariant(
        "identities_follow_version",
        "ADR-0226 §7B; ADR-0227 §7",
        "a changed policy changes policy_id, every decision_id and every budget_id downstream",
        _identities_follow_version,
        needs_kernel_policy=True,
    ),
)


# --------------------------------------------------------------------------------------------
# Differences from another version, row by row and on generated contexts.


def gate_table_differences(table: GateTable, other: GateTable = GATE_IN_FORCE) -> list[Difference]:
    differences = []
    theirs, ours = dict(other.statuses), dict(table.statuses)
    for reason in GateReason:
        if theirs[reason] is not ours[reason]:
            differences.append(
                Difference("table", reason.value, theirs[reason].value, ours[reason].value)
            )
    kinds_theirs, kinds_ours = dict(other.eligible), dict(table.eligible)
    for kind in ResidualKind:
        old, new = kinds_theirs.get(kind), kinds_ours.get(kind)
        if old is not new:
            differences.append(
                Difference(
                    "table",
                    f"residual kind {kind.value}",
                    "not searchable" if old is None else old.value,
                    "not searchable" if new is None else new.value,
                )
            )
    return differences


def gate_generated_differences(
    policy: SearchGatePolicy, examples: int, other: SearchGatePolicy = SEARCH_GATE_IN_FORCE
) -> list[Difference]:
    """Each reason whose decision (status, and the budget it leads to) differs on the
    generated contexts between ``other`` and the candidate, with one example context."""
    theirs = {id(chain): (d, b) for chain, d, b, _ in _decided(other, examples)}
    differences: dict[str, Difference] = {}
    for chain, decision, budget, _ in _decided(policy, examples):
        old, old_budget = theirs[id(chain)]
        before = f"{old.status.value} {old.reason_code}, budget {old_budget.reason_code}"
        after = f"{decision.status.value} {decision.reason_code}, budget {budget.reason_code}"
        if before != after and old.reason_code not in differences:
            differences[old.reason_code] = Difference(
                "generated context",
                f"{old.reason_code} (e.g. context {chain.gate.input_digest[:12]})",
                before,
                after,
            )
    return list(differences.values())
