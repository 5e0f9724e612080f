"""Candidate sets of policy versions (issue 21): the invariants that tie the three kinds
together each fail on a set built to break them, a kind given twice and a version
``--against`` cannot name are usage errors, every candidate is compared with any registered
version named, and CrossHair's comparison finds the shipped differences of every kind."""

from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path

import pytest

from practice_loop import cli
from practice_loop.harness.policy_compare import (
    KINDS,
    AgainstError,
    crosshair_differences,
    versions_to_compare,
)
from practice_loop.harness.policy_file import (
    GATE_IN_FORCE,
    OPERATORS_IN_FORCE,
    VERSION_IN_FORCE,
    BudgetTable,
    GateTable,
    OperatorTable,
    kernel_policy,
    load_policy_file,
)
from practice_loop.harness.policy_invariants import InvariantStatus
from practice_loop.harness.policy_set import (
    CROSS_POLICY_INVARIANTS,
    PolicySet,
    PolicySetError,
    check_cross_policy,
)
from practice_loop.harness.prove_operators import operator_generated_differences
from practice_loop.harness.prove_policy import prove_set
from practice_loop.kernel import CANDIDATE_OPERATOR_SET, GateReason, SearchGateStatus
from practice_loop.kernel import budget as budget_module

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
FEW = 30


def _cross(policies: PolicySet) -> dict[str, object]:
    return {result.name: result for result in check_cross_policy(policies, FEW)}


def _budget_row(index: int, **changes: object) -> BudgetTable:
    """VERSION_IN_FORCE under compute_budget.v2 with one row changed (rows in table order:
    the three denied statuses, the four eligible reasons, any other reason)."""
    rows = list(VERSION_IN_FORCE.rows)
    rows[index] = dataclasses.replace(rows[index], **changes)
    return BudgetTable("compute_budget.v2", tuple(rows), "test")


def _gate_status(reason: GateReason, status: SearchGateStatus) -> GateTable:
    statuses = tuple((r, status if r is reason else s) for r, s in GATE_IN_FORCE.statuses)
    return GateTable("search_gate.v2", statuses, GATE_IN_FORCE.eligible, "test")


def _operator_pins(**pins: str) -> OperatorTable:
    row = OPERATORS_IN_FORCE.operators[0]
    moved = tuple((name, pins.get(name, version)) for name, version in row.policy_versions)
    row = dataclasses.replace(row, policy_versions=moved)
    return OperatorTable("candidate_operators.v2", (row,), "test")


def test_the_versions_in_force_keep_every_cross_policy_invariant():
    """Issue 21: the set the kernel runs today is itself a proven set."""
    results = _cross(PolicySet.of([]))
    assert {name: r.status for name, r in results.items()} == {
        invariant.name: InvariantStatus.HELD for invariant in CROSS_POLICY_INVARIANTS
    }
    assert PolicySet.of([]).candidates == ()


# Each cross-policy invariant and a set that breaks it, with a fragment its violation names.
CROSS_BREAKS = [
    (
        "eligible_reasons_have_budget_rows",
        [_gate_status(GateReason.MULTIPLE_RESIDUALS, SearchGateStatus.ELIGIBLE)],
        "gate_ineligible_multiple_residuals is ELIGIBLE under search_gate.v2",
    ),
    (
        # missing_role's row grants no step: the operator's one-step charge cannot be paid.
        "operator_fits_the_sets_budget",
        [_budget_row(3, limits=(5, 2, 0, 1))],
        "does not fit compute_budget.v2 eligible_missing_role",
    ),
    (
        "pinned_versions_exist",
        [_operator_pins(search_gate="search_gate.v9")],
        "pins search_gate.v9, neither a registered search_gate version nor the set's",
    ),
]


@pytest.mark.parametrize(
    ("name", "tables", "fragment"), CROSS_BREAKS, ids=[b[0] for b in CROSS_BREAKS]
)
def test_each_cross_policy_invariant_fails_on_a_set_built_to_break_it(name, tables, fragment):
    """Issue 21 done-when: every eligible gate reason has a budget row (ADR-0227 §8), each
    operator's charge fits the set's budget (ADR-0231 §6), pinned versions exist (ADR-0231
    §10); each names its breach."""
    results = _cross(PolicySet.of(tables))
    result = results[name]
    assert result.status is InvariantStatus.BROKEN
    assert any(fragment in violation for violation in result.violations), result.violations
    assert result.clause.startswith("ADR-")


def test_a_pin_is_satisfied_by_the_sets_own_version():
    """ADR-0231 §10: an operator set may pin the budget version proved beside it; alone, the
    same file pins a version nothing registers."""
    operators = load_policy_file(EXAMPLES / "invalid-operators-unregistered-budget.json")
    budget = load_policy_file(EXAMPLES / "compute_budget.v2.json")
    alone = _cross(PolicySet.of([operators]))["pinned_versions_exist"]
    together = _cross(PolicySet.of([budget, operators]))["pinned_versions_exist"]
    assert alone.status is InvariantStatus.BROKEN
    assert together.status is InvariantStatus.HELD
    assert PolicySet.of([operators, budget]).candidates == ("compute_budget", "candidate_operators")


def test_a_kind_given_twice_is_a_usage_error(tmp_path, capsys):
    """Issue 21: a set holds one file per kind; two never become a silent choice."""
    budget = EXAMPLES / "compute_budget.v2.json"
    other = EXAMPLES / "invalid-nonzero-blocked-row.json"
    with pytest.raises(PolicySetError, match="two compute_budget candidates"):
        prove_set([budget, other], examples=FEW, crosshair_seconds=0, check_golden_vectors=False)
    status = cli.main(["prove-policy", str(budget), str(other), "--out", str(tmp_path)])
    assert status == 2
    assert "two compute_budget candidates" in capsys.readouterr().err
    assert not (tmp_path / "proof.json").exists()


AGAINST_ERRORS = [
    ("frobnicate.v1", "names no policy kind"),
    ("compute_budget.v7", "compute_budget.v7 is not a registered compute_budget version"),
    ("search_gate.v1", "search_gate.v1: no search_gate candidate to compare it with"),
]


@pytest.mark.parametrize(("version", "message"), AGAINST_ERRORS, ids=[a[0] for a in AGAINST_ERRORS])
def test_a_version_against_cannot_name_is_a_usage_error(version, message, tmp_path, capsys):
    """Issue 21: --against names a registered version of a candidate's kind, or exit 2."""
    with pytest.raises(AgainstError, match=message):
        versions_to_compare([version], {"compute_budget": "compute_budget.v2"})
    budget = str(EXAMPLES / "compute_budget.v2.json")
    status = cli.main(["prove-policy", budget, "--against", version, "--out", str(tmp_path)])
    assert status == 2
    assert message in capsys.readouterr().err


def test_the_version_in_force_comes_first_and_once():
    chosen = versions_to_compare(
        ["compute_budget.v1", "compute_budget.v1"], {"compute_budget": "compute_budget.v2"}
    )
    assert chosen == {"compute_budget": ["compute_budget.v1"]}


def test_a_candidate_is_compared_with_every_registered_version_named(monkeypatch):
    """Issue 21: differences from the version in force and from any registered version named,
    each listed row by row and on generated inputs."""
    # A second registered version: v1 with a missing relation granted fewer steps.
    rows = list(VERSION_IN_FORCE.rows)
    rows[4] = dataclasses.replace(rows[4], limits=(5, 2, 7, 1))
    v3 = kernel_policy(BudgetTable("compute_budget.v3", tuple(rows), "test"))
    registered = {**budget_module.BUDGET_POLICIES, "compute_budget.v3": v3}
    monkeypatch.setattr(budget_module, "BUDGET_POLICIES", types.MappingProxyType(registered))
    proved = prove_set(
        [EXAMPLES / "compute_budget.v2.json"],
        against=["compute_budget.v3"],
        examples=FEW,
        crosshair_seconds=0,
        check_golden_vectors=False,
    )
    (proof,) = proved.proofs
    in_force, named = proof.comparisons
    assert in_force.version == "compute_budget.v1" and named.version == "compute_budget.v3"
    rows_differing = {(d.found_by, d.gate.split(" ")[0]) for d in named.differences}
    # v2 changes the missing proposal's row, v3 the missing relation's: both differ from v3.
    assert rows_differing >= {
        ("table", "ELIGIBLE/eligible_missing_proposal"),
        ("table", "ELIGIBLE/eligible_missing_relation"),
    }
    assert {d.gate for d in in_force.differences if d.found_by == "table"} == {
        "ELIGIBLE/eligible_missing_proposal"
    }
    assert any(d.found_by == "generated gate" for d in named.differences)


def test_operator_admissions_are_compared_on_generated_budgets():
    """Issue 21: an operator set that admits attempts differently on the budgets generated
    chains were granted is listed with what each admits; the same rows list nothing."""
    row = dataclasses.replace(CANDIDATE_OPERATOR_SET.operators[0], depth=3)
    deeper = dataclasses.replace(CANDIDATE_OPERATOR_SET, operators=(row,))
    found = operator_generated_differences(deeper, FEW)
    assert found and all(d.found_by == "generated budget" for d in found)
    assert all(d.in_force != d.candidate for d in found)
    assert any("charge_exceeds_budget" in d.candidate for d in found)
    assert operator_generated_differences(CANDIDATE_OPERATOR_SET, FEW) == []


# The shipped files whose decisions differ from the version in force, and a fragment of what
# CrossHair must report for each. Every kind's decision function returns codes, never enum
# members: crosshair diffbehavior counts two members of one enum as equal (docs/contracts.md).
CROSSHAIR_FINDS = [
    ("compute_budget", "compute_budget.v2.json", "eligible_missing_proposal"),
    ("search_gate", "search_gate.v2.json", "'INELIGIBLE'"),
    ("candidate_operators", "invalid-operators-charge-too-deep.json", "charge_exceeds_budget"),
]


@pytest.mark.parametrize(
    ("kind", "file", "fragment"), CROSSHAIR_FINDS, ids=[c[0] for c in CROSSHAIR_FINDS]
)
def test_crosshair_finds_the_shipped_difference_of_every_kind(kind, file, fragment):
    """Issue 21: each kind's candidate is compared with the version in force through
    `crosshair diffbehavior`, and what it finds is a difference the table shows too."""
    pytest.importorskip("crosshair")
    found, line = crosshair_differences(KINDS[kind], KINDS[kind].in_force, EXAMPLES / file, 12)
    assert line.startswith("different"), line
    assert any(fragment in difference.gate for difference in found), found


def test_crosshair_finds_no_difference_where_the_rows_are_the_same():
    """candidate_operators.v2 restates v1's row: only the version differs, so CrossHair finds
    no decision that does."""
    pytest.importorskip("crosshair")
    kind = KINDS["candidate_operators"]
    found, line = crosshair_differences(
        kind, kind.in_force, EXAMPLES / "candidate_operators.v2.json", 3
    )
    assert (found, line.split(" ")[0]) == ([], "no_difference_found")


def test_the_command_proves_a_set_and_reports_it(tmp_path, capsys):
    """Issue 21: two files make one set; the report gives each candidate and the invariants
    across the set, and the operator set's pin is satisfied by the budget beside it."""
    files = [
        EXAMPLES / "compute_budget.v2.json",
        EXAMPLES / "invalid-operators-unregistered-budget.json",
    ]
    arguments = ["--out", str(tmp_path), "--examples", str(FEW), "--crosshair-seconds", "0"]
    status = cli.main(["prove-policy", *map(str, files), *arguments])
    out = capsys.readouterr().out
    assert status == 0, out
    report = json.loads((tmp_path / "proof.json").read_text("utf-8"))
    assert report["proven"] is True
    assert report["set"] == "compute_budget.v2, search_gate.v1 (in force), candidate_operators.v2"
    assert [c["policy"] for c in report["candidates"]] == ["compute_budget", "candidate_operators"]
    assert {r["name"]: r["status"] for r in report["cross_policy"]} == {
        invariant.name: "held" for invariant in CROSS_POLICY_INVARIANTS
    }
    assert "## Across the set" in (tmp_path / "proof.md").read_text("utf-8")


def test_a_report_folder_that_cannot_be_written_is_a_usage_error(tmp_path, capsys):
    """No traceback reaches a user: a report path under a file exits 2 naming it."""
    blocker = tmp_path / "a-file"
    blocker.write_text("", "utf-8")
    budget = str(EXAMPLES / "compute_budget.v2.json")
    arguments = ["--out", str(blocker / "report"), "--examples", str(FEW)]
    status = cli.main(["prove-policy", budget, *arguments, "--crosshair-seconds", "0"])
    assert status == 2
    assert f"cannot write {blocker / 'report'}" in capsys.readouterr().err
