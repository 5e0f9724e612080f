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
from practice_loop.harness.catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
    UNREGISTERED_OPERATOR_SET_VERSION,
    next_unregistered_version,
)
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
    table_of,
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
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_V1,
    COMPUTE_BUDGET_IN_FORCE,
    COMPUTE_BUDGET_V1,
    SEARCH_GATE_IN_FORCE,
    SEARCH_GATE_V1,
    GateReason,
    SearchGateStatus,
)
from practice_loop.kernel import budget as budget_module

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
FEW = 30


def _cross(policies: PolicySet) -> dict[str, object]:
    return {result.name: result for result in check_cross_policy(policies, FEW)}


# Candidates are named by versions no kernel registers: the shipped examples' own versions
# may have been adopted (``prove-policy --adopt``).


def _budget_row(index: int, **changes: object) -> BudgetTable:
    """VERSION_IN_FORCE under a new version with one row changed (rows in table order: the
    three denied statuses, the four eligible reasons, any other reason)."""
    rows = list(VERSION_IN_FORCE.rows)
    rows[index] = dataclasses.replace(rows[index], **changes)
    return BudgetTable(UNREGISTERED_BUDGET_VERSION, tuple(rows), "test")


def _gate_status(reason: GateReason, status: SearchGateStatus) -> GateTable:
    statuses = tuple((r, status if r is reason else s) for r, s in GATE_IN_FORCE.statuses)
    return GateTable(UNREGISTERED_GATE_VERSION, statuses, GATE_IN_FORCE.eligible, "test")


def _operator_pins(**pins: str) -> OperatorTable:
    row = OPERATORS_IN_FORCE.operators[0]
    moved = tuple((name, pins.get(name, version)) for name, version in row.policy_versions)
    row = dataclasses.replace(row, policy_versions=moved)
    return OperatorTable(UNREGISTERED_OPERATOR_SET_VERSION, (row,), "test")


def _restated(folder: Path, name: str, version: str, **pins: str) -> Path:
    """The shipped example ``name`` under ``version``, its operator rows' ``pins`` moved,
    written into ``folder``."""
    document = json.loads((EXAMPLES / name).read_text("utf-8"))
    document["version"] = version
    for operator in document.get("operators", ()):
        operator["policy_versions"].update(pins)
    path = folder / name
    path.write_text(json.dumps(document, indent=2), "utf-8")
    return path


def _budget_and_pinning_operators(folder: Path) -> list[Path]:
    """compute_budget.v2.json and invalid-operators-unregistered-budget.json (whose one row
    pins the budget beside it), each under a version no kernel registers; the operators also
    pin the gate in force, so the set is whole."""
    folder.mkdir()
    budget = _restated(folder, "compute_budget.v2.json", UNREGISTERED_BUDGET_VERSION)
    operators = _restated(
        folder,
        "invalid-operators-unregistered-budget.json",
        UNREGISTERED_OPERATOR_SET_VERSION,
        compute_budget=UNREGISTERED_BUDGET_VERSION,
        search_gate=SEARCH_GATE_IN_FORCE.version,
    )
    return [budget, operators]


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
        f"gate_ineligible_multiple_residuals is ELIGIBLE under {UNREGISTERED_GATE_VERSION}",
    ),
    (
        # missing_role's row grants no step: the operator's one-step charge cannot be paid.
        "operator_fits_the_sets_budget",
        [_budget_row(3, limits=(5, 2, 0, 1))],
        f"does not fit {UNREGISTERED_BUDGET_VERSION} eligible_missing_role",
    ),
    (
        "pinned_versions_exist",
        [_operator_pins(search_gate=UNREGISTERED_GATE_VERSION)],
        f"pins {UNREGISTERED_GATE_VERSION}, neither a registered search_gate version nor the set's",
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


def test_a_pin_is_satisfied_by_the_sets_own_version(tmp_path):
    """ADR-0231 §10: an operator set may pin the budget version proved beside it; alone, the
    same file pins a version nothing registers."""
    budget, operators = map(load_policy_file, _budget_and_pinning_operators(tmp_path / "set"))
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
    (
        UNREGISTERED_BUDGET_VERSION,
        f"{UNREGISTERED_BUDGET_VERSION} is not a registered compute_budget version",
    ),
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


def test_the_version_in_force_comes_first_and_once(monkeypatch):
    # A second registered version, so that one named before the version in force is not it.
    in_force = COMPUTE_BUDGET_IN_FORCE.version
    other = next_unregistered_version("compute_budget", budget_module.BUDGET_POLICIES)
    registered = {
        **budget_module.BUDGET_POLICIES,
        other: kernel_policy(dataclasses.replace(VERSION_IN_FORCE, version=other)),
    }
    monkeypatch.setattr(budget_module, "BUDGET_POLICIES", types.MappingProxyType(registered))
    chosen = versions_to_compare(
        [other, in_force, other, in_force], {"compute_budget": UNREGISTERED_BUDGET_VERSION}
    )
    assert chosen == {"compute_budget": [in_force, other]}


def test_a_candidate_is_compared_with_every_registered_version_named(monkeypatch):
    """Issue 21: differences from the version in force and from any registered version named,
    each listed row by row and on generated inputs."""
    candidate = EXAMPLES / "compute_budget.v2.json"
    # A second registered version past the candidate's: v1 with a missing relation granted
    # fewer steps.
    v1 = COMPUTE_BUDGET_V1.version
    named = next_unregistered_version(
        "compute_budget", {**budget_module.BUDGET_POLICIES, load_policy_file(candidate).version: 0}
    )
    rows = list(table_of(COMPUTE_BUDGET_V1).rows)
    rows[4] = dataclasses.replace(rows[4], limits=(5, 2, 7, 1))
    registered = {
        **budget_module.BUDGET_POLICIES,
        named: kernel_policy(BudgetTable(named, tuple(rows), "test")),
    }
    monkeypatch.setattr(budget_module, "BUDGET_POLICIES", types.MappingProxyType(registered))
    proved = prove_set(
        [candidate],
        against=[v1, named],
        examples=FEW,
        crosshair_seconds=0,
        check_golden_vectors=False,
    )
    (proof,) = proved.proofs
    # The version in force first, then each one named, once (v1 may be the version in force).
    versions = [comparison.version for comparison in proof.comparisons]
    assert versions == list(dict.fromkeys([COMPUTE_BUDGET_IN_FORCE.version, v1, named]))
    by_version = {comparison.version: comparison for comparison in proof.comparisons}
    rows_differing = {(d.found_by, d.gate.split(" ")[0]) for d in by_version[named].differences}
    # The candidate changes v1's missing proposal row, ``named`` v1's missing relation row:
    # both differ from ``named``, only the first from v1.
    assert rows_differing >= {
        ("table", "ELIGIBLE/eligible_missing_proposal"),
        ("table", "ELIGIBLE/eligible_missing_relation"),
    }
    assert {d.gate for d in by_version[v1].differences if d.found_by == "table"} == {
        "ELIGIBLE/eligible_missing_proposal"
    }
    assert any(d.found_by == "generated gate" for d in by_version[named].differences)


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


# The shipped files whose decisions differ from v1 of their kind, and a fragment of what
# CrossHair must report for each. They are compared with v1, named explicitly: an adopted
# file may be the version in force. Every kind's decision function returns codes, never enum
# members: crosshair diffbehavior counts two members of one enum as equal (docs/contracts.md).
CROSSHAIR_FINDS = [
    (
        "compute_budget",
        COMPUTE_BUDGET_V1.version,
        "compute_budget.v2.json",
        "eligible_missing_proposal",
    ),
    ("search_gate", SEARCH_GATE_V1.version, "search_gate.v2.json", "'INELIGIBLE'"),
    (
        "candidate_operators",
        CANDIDATE_OPERATOR_SET_V1.operator_set_version,
        "invalid-operators-charge-too-deep.json",
        "charge_exceeds_budget",
    ),
]


@pytest.mark.parametrize(
    ("kind", "v1", "file", "fragment"), CROSSHAIR_FINDS, ids=[c[0] for c in CROSSHAIR_FINDS]
)
def test_crosshair_finds_the_shipped_difference_of_every_kind(kind, v1, file, fragment):
    """Issue 21: each kind's candidate is compared with a registered version through
    `crosshair diffbehavior`, and what it finds is a difference the table shows too."""
    pytest.importorskip("crosshair")
    found, line = crosshair_differences(KINDS[kind], v1, EXAMPLES / file, 12)
    assert line.startswith("different"), line
    assert any(fragment in difference.gate for difference in found), found


def test_crosshair_finds_no_difference_where_the_rows_are_the_same():
    """candidate_operators.v2 restates v1's row: only the version differs, so CrossHair finds
    no decision that does."""
    pytest.importorskip("crosshair")
    kind = KINDS["candidate_operators"]
    v1 = CANDIDATE_OPERATOR_SET_V1.operator_set_version
    found, line = crosshair_differences(kind, v1, EXAMPLES / "candidate_operators.v2.json", 3)
    assert (found, line.split(" ")[0]) == ([], "no_difference_found")


def test_the_command_proves_a_set_and_reports_it(tmp_path, capsys):
    """Issue 21: two files make one set; the report gives each candidate and the invariants
    across the set, and the operator set's pin is satisfied by the budget beside it."""
    files = _budget_and_pinning_operators(tmp_path / "set")
    arguments = ["--out", str(tmp_path), "--examples", str(FEW), "--crosshair-seconds", "0"]
    status = cli.main(["prove-policy", *map(str, files), *arguments])
    out = capsys.readouterr().out
    assert status == 0, out
    report = json.loads((tmp_path / "proof.json").read_text("utf-8"))
    assert report["proven"] is True
    assert report["set"] == (
        f"{UNREGISTERED_BUDGET_VERSION}, {SEARCH_GATE_IN_FORCE.version} (in force),"
        f" {UNREGISTERED_OPERATOR_SET_VERSION}"
    )
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
