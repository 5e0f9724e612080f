"""A candidate set of policy versions, proved together (issue 21).

A developer may change several policies at once: ``prove-policy FILE [FILE...]`` takes one
file per kind that changes, and the version in force stands for every kind not given. Each
file keeps its own kind's invariants; the set adds the invariants that tie the kinds to each
other (``CROSS_POLICY_INVARIANTS``), read over every cell of the set's three tables, so that
a budget that cannot pay for the set's operator, or an operator pinning a version no policy
of the set or of the kernel has, is named with its clause. A kind given twice is a usage
error (``PolicySetError``), never a silent choice of one file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..kernel import ComputeBudgetStatus, ResidualKind, SearchGateStatus
from .policy_file import (
    ANY_OTHER_REASON,
    BUDGET_POLICY_KIND,
    GATE_IN_FORCE,
    GATE_POLICY_KIND,
    OPERATORS_IN_FORCE,
    OPERATORS_POLICY_KIND,
    VERSION_IN_FORCE,
    BudgetTable,
    GateTable,
    OperatorTable,
    PolicyTable,
)
from .policy_invariants import Invariant, InvariantResult, run_invariants
from .prove_operators import REGISTERED_PINS, first_attempt_refusal


class PolicySetError(ValueError):
    """The files do not make one candidate set (a kind given twice)."""


def kind_of(table: PolicyTable) -> str:
    if isinstance(table, GateTable):
        return GATE_POLICY_KIND
    if isinstance(table, OperatorTable):
        return OPERATORS_POLICY_KIND
    return BUDGET_POLICY_KIND


@dataclasses.dataclass(frozen=True, slots=True)
class PolicySet:
    """One table of each kind: the candidates given, the version in force for the rest."""

    budget: BudgetTable
    gate: GateTable
    operators: OperatorTable
    candidates: tuple[str, ...]  # the kinds given as files, in POLICY_KINDS order

    @classmethod
    def of(cls, tables: Sequence[PolicyTable]) -> PolicySet:
        given: dict[str, PolicyTable] = {}
        for table in tables:
            kind = kind_of(table)
            if kind in given:
                raise PolicySetError(
                    f"two {kind} candidates ({given[kind].source} and {table.source}):"
                    " a set holds one file per kind"
                )
            given[kind] = table
        budget = given.get(BUDGET_POLICY_KIND, VERSION_IN_FORCE)
        gate = given.get(GATE_POLICY_KIND, GATE_IN_FORCE)
        operators = given.get(OPERATORS_POLICY_KIND, OPERATORS_IN_FORCE)
        assert isinstance(budget, BudgetTable) and isinstance(gate, GateTable)
        assert isinstance(operators, OperatorTable)
        kinds = (BUDGET_POLICY_KIND, GATE_POLICY_KIND, OPERATORS_POLICY_KIND)
        return cls(budget, gate, operators, tuple(kind for kind in kinds if kind in given))

    def describe(self) -> str:
        return ", ".join(
            f"{table.version}{'' if kind in self.candidates else ' (in force)'}"
            for kind, table in (
                (BUDGET_POLICY_KIND, self.budget),
                (GATE_POLICY_KIND, self.gate),
                (OPERATORS_POLICY_KIND, self.operators),
            )
        )


def _eligible_reasons(gate: GateTable) -> list[str]:
    return [reason.value for reason, status in gate.statuses if status is SearchGateStatus.ELIGIBLE]


def _eligible_reasons_have_budget_rows(policies: PolicySet, _: object, __: int) -> list[str]:
    named = {
        row.gate_reason_code
        for row in policies.budget.rows
        if row.gate_status is SearchGateStatus.ELIGIBLE and row.gate_reason_code != ANY_OTHER_REASON
    }
    return [
        f"{reason} is ELIGIBLE under {policies.gate.version}, but {policies.budget.version} has"
        " no row of its own for it: every such gate would be budget_unassessable"
        for reason in _eligible_reasons(policies.gate)
        if reason not in named
    ]


def _operator_fits_the_sets_budget(policies: PolicySet, _: object, __: int) -> list[str]:
    found = []
    eligible = set(_eligible_reasons(policies.gate))
    for operator in policies.operators.operators:
        for kind_value in operator.allowed_residual_kinds:
            kind = next((kind for kind in ResidualKind if kind.value == kind_value), None)
            reason = None if kind is None else policies.gate.reason_of(kind)
            if reason is None or reason.value not in eligible:
                continue  # the set's gate never lets this kind be searched
            row = policies.budget.row(SearchGateStatus.ELIGIBLE, reason.value)
            if row.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
                continue
            refused = first_attempt_refusal(operator, row.limits)
            if refused is not None:
                found.append(
                    f"{operator.describe()} of {policies.operators.version} does not fit"
                    f" {policies.budget.version} {reason.value} {row.limits} ({refused.value})"
                )
    return found


def _pinned_versions_exist(policies: PolicySet, _: object, __: int) -> list[str]:
    known = {name: set(versions) for name, versions in REGISTERED_PINS.items()}
    known[BUDGET_POLICY_KIND].add(policies.budget.version)
    known[GATE_POLICY_KIND].add(policies.gate.version)
    found = []
    for operator in policies.operators.operators:
        for name, pinned in operator.policy_versions:
            if name not in known:
                found.append(
                    f"{operator.describe()} pins {name}, a policy the kernel does not know"
                )
            elif pinned not in known[name]:
                found.append(
                    f"{operator.describe()} pins {pinned}, neither a registered {name} version"
                    f" nor the set's ({', '.join(sorted(known[name]))})"
                )
    return found


CROSS_POLICY_INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "eligible_reasons_have_budget_rows",
        "ADR-0227 §8; ADR-0226 §7B",
        "every reason the set's gate makes ELIGIBLE has a row of its own in the set's budget",
        _eligible_reasons_have_budget_rows,
    ),
    Invariant(
        "operator_fits_the_sets_budget",
        "ADR-0231 §6, §7.3.17-20; ADR-0227 §8",
        "each operator's fixed charge and depth fit every allowed row the set's budget gives"
        " the reasons the set's gate makes eligible for the kinds it serves",
        _operator_fits_the_sets_budget,
    ),
    Invariant(
        "pinned_versions_exist",
        "ADR-0231 §10; ADR-0227 §6",
        "every policy version an operator pins is registered or is the set's own",
        _pinned_versions_exist,
    ),
)


def check_cross_policy(policies: PolicySet, examples: int) -> list[InvariantResult]:
    return run_invariants(CROSS_POLICY_INVARIANTS, policies, policies, examples)
