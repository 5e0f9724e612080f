"""Proving policy versions (issue 8; ADR-0227 §6, §8; ADR-0231 §10): the policy-file loader
refuses each malformed file with its exact reason and key, every registered version keeps
every invariant, each invariant can fail, and every example in docs/examples gets exactly
the outcome docs/examples/expected.json gives it."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest

from practice_loop import cli
from practice_loop.harness import prove_budget
from practice_loop.harness.catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
    UNREGISTERED_OPERATOR_SET_VERSION,
)
from practice_loop.harness.policy_examples import outcome_of, prove_example, read_examples
from practice_loop.harness.policy_file import (
    ANY_OTHER_REASON,
    MAX_POLICY_FILE_BYTES,
    POLICY_FILE_FORMAT,
    VERSION_IN_FORCE,
    BudgetTable,
    PolicyFileError,
    PolicyFileReason,
    kernel_policy,
    parse_budget_table,
    required_row_keys,
    table_of,
)
from practice_loop.harness.policy_invariants import InvariantStatus
from practice_loop.harness.prove_budget import (
    INVARIANTS,
    _gates,
    check_invariants,
    table_differences,
)
from practice_loop.kernel import (
    COMPUTE_BUDGET_IN_FORCE,
    COMPUTE_BUDGET_V1,
    ComputeBudgetStatus,
    SearchGateStatus,
    decide_compute_budget,
)
from practice_loop.kernel.budget import BUDGET_POLICIES, BudgetReason
from practice_strategies import resealed

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
FEW = 30  # generated gates per property: enough to reach every frame-reachable reason
# Candidates are built from the v1 tables the ADRs give, under a version no kernel registers
# yet, so each test means the same whichever version a later adoption puts in force.
BUDGET_V1 = table_of(COMPUTE_BUDGET_V1)


def _document(
    table: BudgetTable = BUDGET_V1, version: str = UNREGISTERED_BUDGET_VERSION
) -> dict[str, Any]:
    return {
        "format": POLICY_FILE_FORMAT,
        "policy": "compute_budget",
        "version": version,
        "rows": [
            {
                "gate_status": row.gate_status.value,
                "gate_reason_code": row.gate_reason_code,
                "status": row.status.value,
                "reason_code": row.reason_code,
                "max_candidates": row.limits[0],
                "max_depth": row.limits[1],
                "max_steps": row.limits[2],
                "max_parallelism": row.limits[3],
            }
            for row in table.rows
        ],
    }


def _bytes(document: object) -> bytes:
    return json.dumps(document).encode("utf-8")


def _refusal(raw: bytes) -> PolicyFileError:
    with pytest.raises(PolicyFileError) as caught:
        parse_budget_table(raw, "test")
    return caught.value


def _changed(path: str, value: object, document: dict[str, Any] | None = None) -> dict[str, Any]:
    """The v2 document with ``rows[i].key`` (or a top key) set to ``value``."""
    document = document or _document()
    if path.startswith("rows["):
        index, key = path[5:].split("].")
        document["rows"][int(index)][key] = value
    else:
        document[path] = value
    return document


def test_the_v2_document_of_the_v1_rows_loads():
    """The loader reads back exactly the table it was written from (issue 8)."""
    table = parse_budget_table(_bytes(_document()), "test")
    assert table.rows == BUDGET_V1.rows and table.version == UNREGISTERED_BUDGET_VERSION
    in_force = parse_budget_table(_bytes(_document(VERSION_IN_FORCE)), "test")
    assert in_force.rows == VERSION_IN_FORCE.rows


def _without(key: str) -> dict[str, Any]:
    document = _document()
    del document[key]
    return document


def _without_row_key(key: str) -> dict[str, Any]:
    document = _document()
    del document["rows"][3][key]
    return document


def _without_row(index: int) -> dict[str, Any]:
    document = _document()
    del document["rows"][index]
    return document


def _with_duplicate_row() -> dict[str, Any]:
    document = _document()
    document["rows"].append(dict(document["rows"][3]))
    return document


# (case, the bytes, the exact reason, where it is reported)
REFUSALS = [
    ("not utf-8", b'{"format": "\xff"}', PolicyFileReason.NOT_UTF8, "byte 12"),
    ("not json", b'{\n  "format": ,\n}', PolicyFileReason.NOT_JSON, "line 2 column 13"),
    ("duplicate key", b'{"format": 1, "format": 2}', PolicyFileReason.DUPLICATE_KEY, "format"),
    ("top not an object", b"[]", PolicyFileReason.WRONG_TYPE, "$"),
    ("unknown top key", _bytes({**_document(), "scale": 2}), PolicyFileReason.UNKNOWN_KEY, "scale"),
    ("missing version", _bytes(_without("version")), PolicyFileReason.MISSING_KEY, "version"),
    ("format", _bytes(_changed("format", "v0")), PolicyFileReason.FORMAT_UNSUPPORTED, "format"),
    (
        "gate policy files",
        _bytes(_changed("policy", "search_gate")),
        PolicyFileReason.POLICY_KIND_UNSUPPORTED,
        "policy",
    ),
    (
        "version shape",
        _bytes(_changed("version", "budget.v2")),
        PolicyFileReason.VERSION_MALFORMED,
        "version",
    ),
    ("rows not a list", _bytes(_changed("rows", {})), PolicyFileReason.WRONG_TYPE, "rows"),
    (
        "unknown row key",
        _bytes(_changed("rows[3].scale_with", "failures")),
        PolicyFileReason.UNKNOWN_KEY,
        "rows[3].scale_with",
    ),
    (
        "missing row key",
        _bytes(_without_row_key("max_steps")),
        PolicyFileReason.MISSING_KEY,
        "rows[3].max_steps",
    ),
    (
        "gate status",
        _bytes(_changed("rows[0].gate_status", "MAYBE")),
        PolicyFileReason.UNKNOWN_GATE_STATUS,
        "rows[0].gate_status",
    ),
    (
        "gate reason",
        _bytes(_changed("rows[3].gate_reason_code", "eligible_anything")),
        PolicyFileReason.UNKNOWN_GATE_REASON,
        "rows[3].gate_reason_code",
    ),
    (
        "a denied status names an eligible reason",
        _bytes(_changed("rows[0].gate_reason_code", "eligible_missing_role")),
        PolicyFileReason.UNKNOWN_GATE_REASON,
        "rows[0].gate_reason_code",
    ),
    (
        "budget status",
        _bytes(_changed("rows[3].status", "BUDGET_PLENTY")),
        PolicyFileReason.UNKNOWN_STATUS,
        "rows[3].status",
    ),
    (
        "reason code",
        _bytes(_changed("rows[3].reason_code", "Allowed!")),
        PolicyFileReason.REASON_CODE_MALFORMED,
        "rows[3].reason_code",
    ),
    (
        "negative limit",
        _bytes(_changed("rows[3].max_depth", -1)),
        PolicyFileReason.NEGATIVE_LIMIT,
        "rows[3].max_depth",
    ),
    (
        "bool limit",
        _bytes(_changed("rows[3].max_depth", True)),
        PolicyFileReason.WRONG_TYPE,
        "rows[3].max_depth",
    ),
    (
        "formula limit",
        _bytes(_changed("rows[3].max_candidates", "5 * failures")),
        PolicyFileReason.WRONG_TYPE,
        "rows[3].max_candidates",
    ),
    (
        "huge limit",
        _bytes(_changed("rows[3].max_steps", 2**60)),
        PolicyFileReason.LIMIT_OUT_OF_RANGE,
        "rows[3].max_steps",
    ),
    ("duplicate row", _bytes(_with_duplicate_row()), PolicyFileReason.DUPLICATE_ROW, "rows[8]"),
    ("missing row", _bytes(_without_row(4)), PolicyFileReason.MISSING_ROW, "rows"),
    ("too large", b" " * (MAX_POLICY_FILE_BYTES + 1), PolicyFileReason.TOO_LARGE, "$"),
]


@pytest.mark.parametrize(
    ("raw", "reason", "where"), [case[1:] for case in REFUSALS], ids=[case[0] for case in REFUSALS]
)
def test_a_malformed_policy_file_is_refused_with_its_reason_and_key(raw, reason, where):
    """Issue 8: unknown keys, missing rows, negative limits, unknown reason codes or
    statuses are refused, naming the line or key; ADR-0227 §8 for the table's cells."""
    refusal = _refusal(raw)
    assert (refusal.reason, refusal.where) == (reason, where)
    assert where in str(refusal)


def test_every_cell_of_the_adr_table_is_required():
    """ADR-0227 §8: a row per denied status, per eligible reason, and for any other reason."""
    keys = required_row_keys()
    assert len(keys) == len(set(keys)) == 8
    assert {row.key for row in VERSION_IN_FORCE.rows} == set(keys)
    assert (SearchGateStatus.ELIGIBLE, ANY_OTHER_REASON) in keys


@pytest.mark.parametrize("version", sorted(BUDGET_POLICIES))
def test_every_registered_version_keeps_every_invariant(version):
    """Issue 8: the invariant suite holds for every registered version."""
    results = check_invariants(table_of(BUDGET_POLICIES[version]), FEW)
    assert [(r.name, r.status) for r in results] == [
        (invariant.name, InvariantStatus.HELD) for invariant in INVARIANTS
    ]


def test_the_generated_gates_reach_every_frame_reachable_status():
    """The property invariants see denied and eligible gates alike (ADR-0227 §8)."""
    assert {gate.status for gate in _gates(FEW)} == set(SearchGateStatus) - {
        SearchGateStatus.UNASSESSABLE
    }


def _row_changed(table: BudgetTable, index: int, **changes: Any) -> BudgetTable:
    rows = list(table.rows)
    rows[index] = dataclasses.replace(rows[index], **changes)
    return dataclasses.replace(table, version=UNREGISTERED_BUDGET_VERSION, rows=tuple(rows))


# Each table invariant, and a one-cell change of v1 that breaks it (rows in table order:
# the three denied statuses, the four eligible reasons, any other reason).
BREAKS = [
    ("denied_gate_blocked", 1, {"limits": (0, 0, 1, 0)}),
    ("unknown_reason_unassessable", 7, {"status": ComputeBudgetStatus.BUDGET_ZERO}),
    ("eligible_rows_allowed_or_zero", 3, {"limits": (0, 2, 10, 1)}),
    ("serial_only", 3, {"limits": (5, 2, 10, 2)}),
    ("reason_codes_match_status", 3, {"reason_code": "budget_zero_missing_role"}),
    ("kernel_accepts_table", 4, {"status": ComputeBudgetStatus.BUDGET_BLOCKED}),
    ("run_admits_exactly_allowed", 4, {"limits": (0, 2, 10, 1)}),
]


@pytest.mark.parametrize(("name", "index", "changes"), BREAKS, ids=[b[0] for b in BREAKS])
def test_each_table_invariant_fails_on_a_table_that_breaks_it(name, index, changes):
    """A check that cannot fail proves nothing: each table invariant names its breach."""
    results = {r.name: r for r in check_invariants(_row_changed(BUDGET_V1, index, **changes), FEW)}
    assert results[name].status is InvariantStatus.BROKEN
    assert results[name].violations


def test_a_changed_table_under_a_registered_version_is_refused():
    """ADR-0227 §6, ADR-0231 §10: a changed table needs a version of its own."""
    table = dataclasses.replace(
        _row_changed(BUDGET_V1, 5, limits=(5, 2, 10, 1)), version="compute_budget.v1"
    )
    results = {r.name: r for r in check_invariants(table, FEW)}
    assert results["changed_table_new_version"].status is InvariantStatus.BROKEN
    assert results["identities_follow_version"].status is InvariantStatus.BROKEN


def test_the_kernel_honours_a_candidate_only_where_it_is_registered():
    """ADR-0227 §8 fail-closed: an unregistered table is BUDGET_UNASSESSABLE with nothing;
    the same table passed as registered is decided by its rows."""
    candidate = kernel_policy(_row_changed(BUDGET_V1, 5, limits=(5, 2, 10, 1)))
    assert not isinstance(candidate, Exception)
    gate = next(g for g in _gates(FEW) if g.reason_code == "eligible_missing_proposal")
    refused = decide_compute_budget(gate, candidate)
    assert refused.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
    assert refused.reason_code == BudgetReason.POLICY_UNSUPPORTED.value
    assert refused.max_candidates == refused.max_steps == 0
    honoured = decide_compute_budget(gate, candidate, registered={candidate.version: candidate})
    assert (honoured.max_candidates, honoured.max_depth, honoured.max_steps) == (5, 2, 10)
    assert honoured.policy_version == UNREGISTERED_BUDGET_VERSION
    assert honoured.budget_id != decide_compute_budget(gate, COMPUTE_BUDGET_V1).budget_id


def _budget_results(table: BudgetTable) -> dict[str, Any]:
    return {r.name: r for r in check_invariants(table, FEW)}


def _rule_broken_decisions(broken: Any) -> Any:
    """``decide_compute_budget`` as the prover calls it, with ``broken(gate, decision)``
    deciding what a broken kernel returns instead."""
    real = prove_budget.decide_compute_budget

    def decide(gate: Any, *args: Any, **kwargs: Any) -> Any:
        return broken(gate, real(gate, *args, **kwargs))

    return decide


def _scaled(decision: Any) -> Any:
    """An adaptive grant: one more candidate than the row gives."""
    if decision.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
        return decision
    return resealed(decision, max_candidates=decision.max_candidates + 1)


def _offsets(span: Any) -> tuple[int, int]:
    return span.start, span.end


# A table the kernel accepts cannot break the property invariants (the kernel enforces them),
# so each is shown to fail against a kernel whose rule is broken, as the prover calls it.
PROPERTY_BREAKS = [
    ("limits_from_status_and_reason", "decide_compute_budget",
     _rule_broken_decisions(lambda gate, decision: _scaled(decision))),
    # The explanation, prose, leaks into the grant.
    ("explanation_stability", "decide_compute_budget",
     _rule_broken_decisions(
         lambda gate, decision: _scaled(decision) if "reworded" in gate.explanation else decision
     )),
    # The kernel decides on the gate's spans sorted, so their order no longer counts.
    ("span_order_sensitivity", "decide_compute_budget",
     lambda gate, *args, **kwargs: decide_compute_budget(
         resealed(gate, evidence_spans=tuple(sorted(gate.evidence_spans, key=_offsets))),
         *args, **kwargs,
     )),
    # A run that admits every attempt offered, whatever the ceiling.
    ("ceiling_never_exceeded", "admit_within_ceiling",
     lambda sequence, ceiling: (len(sequence), None)),
    # The operator's charge is never checked against the grant.
    ("operator_charge_within_grant", "attempt_charge_failure", lambda *args: None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "attribute", "broken"), PROPERTY_BREAKS, ids=[b[0] for b in PROPERTY_BREAKS]
)
def test_each_budget_property_invariant_fails_against_a_kernel_with_its_rule_broken(
    name, attribute, broken, monkeypatch
):
    """Issue 21 done-when: each property invariant of a budget table (ADR-0227 §8, §9;
    ADR-0228 §9; ADR-0231 §7.3) names its breach when the rule it guards is broken."""
    candidate = _row_changed(BUDGET_V1, 5, limits=(5, 2, 10, 1))
    assert _budget_results(candidate)[name].status is InvariantStatus.HELD
    monkeypatch.setattr(prove_budget, attribute, broken)
    result = _budget_results(candidate)[name]
    assert result.status is InvariantStatus.BROKEN and result.violations


def test_policy_id_changes_with_any_cell_and_the_version():
    """ADR-0231 §10: the table's identity is its content."""
    base = kernel_policy(dataclasses.replace(BUDGET_V1, version=UNREGISTERED_BUDGET_VERSION))
    assert not isinstance(base, Exception) and base.policy_id != COMPUTE_BUDGET_V1.policy_id
    assert kernel_policy(BUDGET_V1) == COMPUTE_BUDGET_V1
    assert kernel_policy(VERSION_IN_FORCE) == COMPUTE_BUDGET_IN_FORCE
    for index in range(3, 7):
        changed = kernel_policy(_row_changed(BUDGET_V1, index, limits=(1, 1, 1, 1)))
        assert not isinstance(changed, Exception)
        assert changed.policy_id != base.policy_id


def test_differences_are_listed_row_by_row():
    """Issue 8: the decision differences from another version (v1 here; the version in force
    by default), over the finite table."""
    table = _row_changed(BUDGET_V1, 5, limits=(5, 2, 10, 1))
    (difference,) = table_differences(table, BUDGET_V1)
    assert difference.gate == "ELIGIBLE/eligible_missing_proposal"
    assert "candidates 3" in difference.in_force and "candidates 5" in difference.candidate
    assert table_differences(VERSION_IN_FORCE) == []


@pytest.mark.parametrize(
    "example", read_examples(EXAMPLES)["examples"], ids=lambda example: example["file"]
)
def test_each_example_policy_file_gets_its_documented_outcome(example):
    """Issue 8 done-when: the valid example proves with its differences listed; each invalid
    one fails naming the broken invariant (and its ADR clause) or the refused key. An
    adoption moves these outcomes in its patch (prove-policy --adopt)."""
    proved = prove_example(EXAMPLES / example["file"])
    assert outcome_of(proved) == example["expected"]
    (proof,) = proved.proofs
    assert all(r.clause.startswith(("ADR-", "docs/adr/")) for r in proved.cross_policy)
    assert all(r.clause.startswith(("ADR-", "docs/adr/")) for r in proof.invariants)
    # A valid successor lists how it differs from the version in force, unless it has been
    # adopted (prove-policy --adopt) and is that version.
    if example["expected"]["proven"] and proof.comparisons[0].version != proof.version:
        assert proof.differences, "a valid successor lists how it differs"


def test_the_command_proves_the_valid_example_and_writes_both_reports(tmp_path, capsys):
    """Issue 8: exit 0 only when every invariant holds and the golden vectors reproduce;
    a report in Markdown and JSON."""
    status = cli.main(
        [
            "prove-policy",
            str(EXAMPLES / "compute_budget.v2.json"),
            "--out",
            str(tmp_path),
            "--examples",
            str(FEW),
            "--crosshair-seconds",
            "0",
        ]
    )
    assert status == 0, capsys.readouterr().out
    report = json.loads((tmp_path / "proof.json").read_text("utf-8"))
    assert report["proven"] is True and report["golden_vectors"] == {"checked": True, "moved": []}
    markdown = (tmp_path / "proof.md").read_text("utf-8")
    assert "PROVEN" in markdown
    # Issue 18: the report names the code and the tools that proved it.
    context = report["context"]
    assert set(context) >= {"commit", "python", "practice-loop", "hypothesis", "crosshair-tool"}
    assert context["hypothesis"] == importlib.metadata.version("hypothesis")
    assert f"hypothesis `{context['hypothesis']}`" in markdown


def test_the_command_fails_an_invalid_example_and_refuses_a_missing_file(tmp_path, capsys):
    """Exit 1 when an invariant breaks (naming it), 2 when the file cannot be read."""
    invalid = EXAMPLES / "invalid-nonzero-blocked-row.json"
    arguments = ["--out", str(tmp_path), "--examples", str(FEW), "--crosshair-seconds", "0"]
    assert cli.main(["prove-policy", str(invalid), *arguments]) == 1
    out = capsys.readouterr().out
    assert "broken   denied_gate_blocked (ADR-0227 §8, §3)" in out and "NOT PROVEN" in out
    assert cli.main(["prove-policy", str(tmp_path / "absent.json"), *arguments]) == 2


# --------------------------------------------------------------------------------------------
# search_gate files (issue 21): the loader, each invariant broken once, the command.

from practice_loop.harness import prove_gate  # noqa: E402
from practice_loop.harness.policy_file import (  # noqa: E402
    GATE_IN_FORCE,
    GateTable,
    gate_table_of,
    kernel_gate_policy,
    parse_policy_file,
)
from practice_loop.kernel import SEARCH_GATE_V1, GateReason, ResidualKind  # noqa: E402
from practice_loop.kernel import gate as gate_module  # noqa: E402

GATE_V1 = gate_table_of(SEARCH_GATE_V1)


def _gate_document(table: GateTable = GATE_V1, version: str = UNREGISTERED_GATE_VERSION) -> dict:
    return {
        "format": POLICY_FILE_FORMAT,
        "policy": "search_gate",
        "version": version,
        "reason_statuses": [
            {"reason_code": reason.value, "status": status.value}
            for reason, status in table.statuses
        ],
        "eligible_reasons": [
            {"residual_kind": kind.value, "reason_code": reason.value}
            for kind, reason in table.eligible
        ],
    }


def _gate_changed(path: str, value: object) -> bytes:
    """The v2 gate document with ``table[i].key`` (or a top key) set to ``value``;
    ``value`` None deletes the key."""
    document = _gate_document()
    if "[" in path:
        table, rest = path.split("[", 1)
        index, key = rest.split("].")
        target = document[table][int(index)]
    else:
        target, key = document, path
    if value is None:
        del target[key]
    else:
        target[key] = value
    return _bytes(document)


def _gate_rows_edited(table: str, edit: Any) -> bytes:
    document = _gate_document()
    document[table] = edit(document[table])
    return _bytes(document)


GATE_REFUSALS = [
    ("unknown top key", _gate_changed("rows", []), PolicyFileReason.UNKNOWN_KEY, "rows"),
    ("no eligible table", _gate_changed("eligible_reasons", None), PolicyFileReason.MISSING_KEY,
     "eligible_reasons"),
    ("version shape", _gate_changed("version", "compute_budget.v2"),
     PolicyFileReason.VERSION_MALFORMED, "version"),
    ("format", _gate_changed("format", "v0"), PolicyFileReason.FORMAT_UNSUPPORTED, "format"),
    ("unknown kind", _gate_changed("policy", "search_gates"),
     PolicyFileReason.POLICY_KIND_UNSUPPORTED, "policy"),
    ("statuses not a list", _gate_changed("reason_statuses", {}), PolicyFileReason.WRONG_TYPE,
     "reason_statuses"),
    ("unknown reason", _gate_changed("reason_statuses[2].reason_code", "gate_maybe"),
     PolicyFileReason.UNKNOWN_GATE_REASON, "reason_statuses[2].reason_code"),
    ("unknown status", _gate_changed("reason_statuses[2].status", "PERHAPS"),
     PolicyFileReason.UNKNOWN_GATE_STATUS, "reason_statuses[2].status"),
    ("status not text", _gate_changed("reason_statuses[2].status", 3),
     PolicyFileReason.WRONG_TYPE, "reason_statuses[2].status"),
    ("a rule written as a formula", _gate_changed("reason_statuses[4].when", "runnable"),
     PolicyFileReason.UNKNOWN_KEY, "reason_statuses[4].when"),
    ("missing status", _gate_changed("reason_statuses[4].status", None),
     PolicyFileReason.MISSING_KEY, "reason_statuses[4].status"),
    ("duplicate reason", _gate_rows_edited("reason_statuses", lambda rows: [*rows, rows[4]]),
     PolicyFileReason.DUPLICATE_ROW, "reason_statuses[13]"),
    ("missing reason", _gate_rows_edited("reason_statuses", lambda rows: rows[:-1]),
     PolicyFileReason.MISSING_ROW, "reason_statuses"),
    ("unknown residual kind", _gate_changed("eligible_reasons[0].residual_kind", "missing_unit"),
     PolicyFileReason.UNKNOWN_RESIDUAL_KIND, "eligible_reasons[0].residual_kind"),
    ("unknown eligible reason", _gate_changed("eligible_reasons[1].reason_code", "eligible_all"),
     PolicyFileReason.UNKNOWN_GATE_REASON, "eligible_reasons[1].reason_code"),
    ("duplicate kind", _gate_rows_edited("eligible_reasons", lambda rows: [*rows, rows[0]]),
     PolicyFileReason.DUPLICATE_ROW, "eligible_reasons[4]"),
    ("missing kind", _gate_rows_edited("eligible_reasons", lambda rows: rows[1:]),
     PolicyFileReason.MISSING_ROW, "eligible_reasons"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "reason", "where"),
    [case[1:] for case in GATE_REFUSALS],
    ids=[case[0] for case in GATE_REFUSALS],
)
def test_a_malformed_gate_file_is_refused_with_its_reason_and_key(raw, reason, where):
    """Issue 21: a search_gate file is refused with one typed reason and the key path, as a
    budget file is (docs/adr/0002's two tables, every reason and searchable kind stated)."""
    with pytest.raises(PolicyFileError) as caught:
        parse_policy_file(raw, "test")
    assert (caught.value.reason, caught.value.where) == (reason, where)


def test_a_gate_file_reads_back_the_kernel_policy_in_any_row_order():
    """Issue 21: the file's rows map to SearchGatePolicy in rule order, whatever order they
    are written in; v1 restated is v1's value, and a table of the kernel's value round-trips."""
    document = _gate_document(version="search_gate.v1")
    document["reason_statuses"].reverse()
    table = parse_policy_file(_bytes(document), "test")
    assert isinstance(table, GateTable)
    assert (table.statuses, table.eligible) == (GATE_V1.statuses, GATE_V1.eligible)
    assert kernel_gate_policy(table) == SEARCH_GATE_V1
    assert kernel_gate_policy(GATE_IN_FORCE) == gate_module.SEARCH_GATE_IN_FORCE


def test_search_gate_v1_keeps_every_gate_invariant():
    """Issue 21: the registered gate policy keeps every invariant of its kind."""
    from practice_loop.harness.prove_policy import run_invariants

    for version, policy in gate_module.GATE_POLICIES.items():
        results = run_invariants(prove_gate.GATE_INVARIANTS, gate_table_of(policy), policy, FEW)
        assert [(r.name, r.status) for r in results] == [
            (invariant.name, InvariantStatus.HELD) for invariant in prove_gate.GATE_INVARIANTS
        ], version


def _gate_with(
    version: str = UNREGISTERED_GATE_VERSION,
    statuses: dict[GateReason, SearchGateStatus] | None = None,
    eligible: dict[ResidualKind, GateReason] | None = None,
) -> GateTable:
    changed = {**dict(GATE_V1.statuses), **(statuses or {})}
    kinds = {**dict(GATE_V1.eligible), **(eligible or {})}
    return GateTable(
        version,
        tuple((reason, changed[reason]) for reason in GateReason),
        tuple((kind, kinds[kind]) for kind in ResidualKind if kind in kinds),
        "test",
    )


G = SearchGateStatus
# Each table invariant of the gate, and a candidate that breaks it.
GATE_BREAKS = [
    ("unclassified_never_searchable",
     _gate_with(eligible={ResidualKind.UNCLASSIFIED: GateReason.ELIGIBLE_MISSING_ROLE})),
    ("runnable_assessment_blocked",
     _gate_with(statuses={GateReason.ASSESSMENT_RUNNABLE: G.INELIGIBLE})),
    ("malformed_context_unassessable",
     _gate_with(statuses={GateReason.ASSESSMENT_MALFORMED: G.BLOCKED})),
    ("kind_maps_to_its_eligible_reason",
     _gate_with(eligible={ResidualKind.TARGET_UNBOUND: GateReason.ELIGIBLE_MISSING_ROLE})),
    ("eligible_exactly_by_code",
     _gate_with(statuses={GateReason.MULTIPLE_RESIDUALS: G.ELIGIBLE})),
    ("changed_table_new_version",
     _gate_with("search_gate.v1", {GateReason.MULTIPLE_RESIDUALS: G.BLOCKED})),
    ("kernel_accepts_policy",
     _gate_with(statuses={GateReason.ELIGIBLE_TARGET_UNBOUND: G.BLOCKED})),
    ("decisions_follow_table",
     _gate_with("search_gate.v1", {GateReason.MULTIPLE_RESIDUALS: G.BLOCKED})),
]  # fmt: skip


def _gate_results(table: GateTable) -> dict[str, Any]:
    from practice_loop.harness.prove_policy import run_invariants

    built = kernel_gate_policy(table)
    return {r.name: r for r in run_invariants(prove_gate.GATE_INVARIANTS, table, built, FEW)}


@pytest.mark.parametrize(("name", "table"), GATE_BREAKS, ids=[b[0] for b in GATE_BREAKS])
def test_each_gate_invariant_fails_on_a_candidate_that_breaks_it(name, table):
    """Issue 21 done-when: each gate invariant (ADR-0226 §7B, §8) names its breach."""
    result = _gate_results(table)[name]
    assert result.status is InvariantStatus.BROKEN and result.violations
    assert result.clause.startswith(("ADR-", "docs/adr/"))


def test_the_gate_property_invariants_fail_against_a_kernel_with_the_rule_broken(monkeypatch):
    """A candidate the kernel accepts cannot break the property invariants (the kernel
    enforces them), so each is shown to fail against a kernel whose rule is broken: the gate
    allowing a missing relation under the missing role's reason, and a policy_id that ignores
    the table."""
    table = _gate_with(statuses={GateReason.RESIDUAL_WITHOUT_EVIDENCE: G.INELIGIBLE})
    assert all(r.status is InvariantStatus.HELD for r in _gate_results(table).values())
    rules = gate_module.gate_reason_under

    def widened(policy, assessment_ok, residuals_ok, runnable, projected, residuals):
        reason = rules(policy, assessment_ok, residuals_ok, runnable, projected, residuals)
        if reason is GateReason.ELIGIBLE_MISSING_RELATION:
            return GateReason.ELIGIBLE_MISSING_ROLE  # a missing relation sent to the role operator
        return reason

    monkeypatch.setattr(gate_module, "gate_reason_under", widened)
    broken = _gate_results(table)
    assert broken["eligibility_never_widens"].status is InvariantStatus.BROKEN
    assert broken["decisions_follow_table"].status is InvariantStatus.BROKEN
    monkeypatch.undo()
    v1_id = SEARCH_GATE_V1.policy_id
    monkeypatch.setattr(gate_module.SearchGatePolicy, "policy_id", property(lambda _: v1_id))
    assert _gate_results(table)["identities_follow_version"].status is InvariantStatus.BROKEN


def test_the_kernel_registry_is_restored_after_a_gate_proof():
    """ADR-0009's concern: proving a candidate never leaves it honoured by the kernel."""
    before = gate_module.GATE_POLICIES
    candidate = kernel_gate_policy(_gate_with(statuses={GateReason.MULTIPLE_RESIDUALS: G.BLOCKED}))
    assert not isinstance(candidate, Exception)
    with pytest.raises(RuntimeError), prove_gate.candidate_registered(candidate):
        assert gate_module.GATE_POLICIES[candidate.version] == candidate
        raise RuntimeError("a crash midway")
    assert gate_module.GATE_POLICIES is before and candidate.version not in before


def test_gate_differences_are_listed_row_by_row_and_on_generated_contexts():
    """Issue 21: a gate candidate's differences from search_gate.v1, by table and by the
    kernel's decisions (with the budget they lead to) on generated contexts."""
    table = _gate_with(statuses={GateReason.RESIDUAL_WITHOUT_EVIDENCE: G.INELIGIBLE})
    (row,) = prove_gate.gate_table_differences(table, GATE_V1)
    assert (row.gate, row.in_force, row.candidate) == (
        "gate_blocked_residual_without_evidence",
        "BLOCKED",
        "INELIGIBLE",
    )
    policy = kernel_gate_policy(table)
    assert not isinstance(policy, Exception)
    (decided,) = prove_gate.gate_generated_differences(policy, FEW, SEARCH_GATE_V1)
    assert "budget budget_blocked_gate_blocked" in decided.in_force
    assert "budget budget_blocked_gate_ineligible" in decided.candidate
    assert prove_gate.gate_table_differences(GATE_IN_FORCE) == []


def test_the_command_proves_the_gate_example(tmp_path, capsys):
    """Issue 21: prove-policy accepts a search_gate file instead of refusing its kind."""
    arguments = ["--out", str(tmp_path), "--examples", str(FEW), "--crosshair-seconds", "0"]
    example = str(EXAMPLES / "search_gate.v2.json")
    assert cli.main(["prove-policy", example, "--against", "search_gate.v1", *arguments]) == 0
    report = json.loads((tmp_path / "proof.json").read_text("utf-8"))
    (candidate,) = report["candidates"]
    assert candidate["policy"] == "search_gate"
    # The version in force first, then v1 unless it is the one in force.
    in_force = gate_module.SEARCH_GATE_IN_FORCE.version
    assert [c["version"] for c in candidate["comparisons"]] == list(
        dict.fromkeys([in_force, "search_gate.v1"])
    )
    assert "### Differences from search_gate.v1" in (tmp_path / "proof.md").read_text("utf-8")
    invalid = EXAMPLES / "invalid-gate-runnable-ineligible.json"
    assert cli.main(["prove-policy", str(invalid), *arguments]) == 1
    assert "broken   runnable_assessment_blocked" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# candidate_operators files (issue 21; ADR-0231 §6, §10, §11).

from practice_loop.harness import prove_operators  # noqa: E402
from practice_loop.harness.policy_file import (  # noqa: E402
    OPERATORS_IN_FORCE,
    OperatorTable,
    kernel_operator_set,
    operator_table_of,
)
from practice_loop.kernel import CANDIDATE_OPERATOR_SET, CANDIDATE_OPERATOR_SET_V1  # noqa: E402

OPERATORS_V1 = operator_table_of(CANDIDATE_OPERATOR_SET_V1)


def _operator_document() -> dict:
    row = OPERATORS_V1.operators[0]
    written: dict[str, Any] = {}
    for field in dataclasses.fields(row):
        value = getattr(row, field.name)
        if field.name == "budget_charge":
            value = {"candidates": value[0], "steps": value[1]}
        elif field.name in ("schema_versions", "policy_versions"):
            value = dict(value)
        elif isinstance(value, tuple):
            value = list(value)
        written[field.name] = value
    return {
        "format": POLICY_FILE_FORMAT,
        "policy": "candidate_operators",
        "version": UNREGISTERED_OPERATOR_SET_VERSION,
        "operators": [written],
    }


def _operator_changed(key: str, value: object) -> bytes:
    document = _operator_document()
    if key.startswith("operators[0]."):
        target, name = document["operators"][0], key.removeprefix("operators[0].")
        if "." in name:
            parent, name = name.split(".")
            target = target[parent]
    else:
        target, name = document, key
    if value is None:
        del target[name]
    else:
        target[name] = value
    return _bytes(document)


def _two_rows() -> bytes:
    document = _operator_document()
    document["operators"].append(document["operators"][0])
    return _bytes(document)


OPERATOR_REFUSALS = [
    ("unknown top key", _operator_changed("rows", []), PolicyFileReason.UNKNOWN_KEY, "rows"),
    ("version shape", _operator_changed("version", "operators.v2"),
     PolicyFileReason.VERSION_MALFORMED, "version"),
    ("operators not a list", _operator_changed("operators", {}), PolicyFileReason.WRONG_TYPE,
     "operators"),
    ("no operator", _operator_changed("operators", []), PolicyFileReason.MISSING_ROW,
     "operators"),
    ("duplicate operator", _two_rows(), PolicyFileReason.DUPLICATE_ROW, "operators[1]"),
    ("unknown row key", _operator_changed("operators[0].priority", 1),
     PolicyFileReason.UNKNOWN_KEY, "operators[0].priority"),
    ("missing depth", _operator_changed("operators[0].depth", None),
     PolicyFileReason.MISSING_KEY, "operators[0].depth"),
    ("malformed kind", _operator_changed("operators[0].allowed_residual_kinds", ["Missing Role"]),
     PolicyFileReason.CODE_MALFORMED, "operators[0].allowed_residual_kinds[0]"),
    ("kinds not a list", _operator_changed("operators[0].allowed_residual_codes", "direction"),
     PolicyFileReason.WRONG_TYPE, "operators[0].allowed_residual_codes"),
    ("malformed version", _operator_changed("operators[0].operator_version", "v one"),
     PolicyFileReason.VERSION_MALFORMED, "operators[0].operator_version"),
    ("pins not an object", _operator_changed("operators[0].policy_versions", []),
     PolicyFileReason.WRONG_TYPE, "operators[0].policy_versions"),
    ("malformed pin", _operator_changed("operators[0].policy_versions.search_gate", "gate 1"),
     PolicyFileReason.VERSION_MALFORMED, "operators[0].policy_versions.search_gate"),
    ("negative depth", _operator_changed("operators[0].depth", -1),
     PolicyFileReason.NEGATIVE_LIMIT, "operators[0].depth"),
    ("formula charge", _operator_changed("operators[0].budget_charge.steps", "1 + failures"),
     PolicyFileReason.WRONG_TYPE, "operators[0].budget_charge.steps"),
    ("charge key", _operator_changed("operators[0].budget_charge.refund", 1),
     PolicyFileReason.UNKNOWN_KEY, "operators[0].budget_charge.refund"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "reason", "where"),
    [case[1:] for case in OPERATOR_REFUSALS],
    ids=[case[0] for case in OPERATOR_REFUSALS],
)
def test_a_malformed_operator_file_is_refused_with_its_reason_and_key(raw, reason, where):
    """Issue 21: a candidate_operators file is refused with one typed reason and the key path
    (ADR-0231 §10's rows, every static constraint stated)."""
    with pytest.raises(PolicyFileError) as caught:
        parse_policy_file(raw, "test")
    assert (caught.value.reason, caught.value.where) == (reason, where)


def test_an_operator_file_reads_back_the_kernel_set():
    """Issue 21: candidate_operators.v1 written as a file is the kernel's manifest, and its
    operator_set_id."""
    document = _operator_document()
    document["version"] = "candidate_operators.v1"
    table = parse_policy_file(_bytes(document), "test")
    assert isinstance(table, OperatorTable)
    assert kernel_operator_set(table) == CANDIDATE_OPERATOR_SET_V1
    assert kernel_operator_set(OPERATORS_IN_FORCE) == CANDIDATE_OPERATOR_SET


def _operator_results(table: OperatorTable) -> dict[str, Any]:
    from practice_loop.harness.prove_policy import run_invariants

    built = kernel_operator_set(table)
    invariants = prove_operators.OPERATOR_INVARIANTS
    return {r.name: r for r in run_invariants(invariants, table, built, FEW)}


def test_the_registered_operator_set_keeps_every_invariant():
    """Issue 21: candidate_operators.v1, and the set in force, keep every invariant of
    their kind."""
    for table in (OPERATORS_V1, OPERATORS_IN_FORCE):
        results = _operator_results(table)
        assert {name: r.status for name, r in results.items()} == {
            invariant.name: InvariantStatus.HELD
            for invariant in prove_operators.OPERATOR_INVARIANTS
        }, table.version


def _operators_with(
    version: str = UNREGISTERED_OPERATOR_SET_VERSION, **changes: Any
) -> OperatorTable:
    row = dataclasses.replace(OPERATORS_V1.operators[0], **changes)
    return OperatorTable(version, (row,), "test")


OPERATOR_BREAKS = [
    ("closed_table", _operators_with(operator_name="fallback_candidate")),
    ("one_attempt_per_run", _operators_with(max_attempts_per_run=2)),
    ("fixed_charge_fits_every_budget", _operators_with(budget_charge=(1, 11))),
    ("serial_only", _operators_with(max_parallelism=2)),
    ("authorised_kinds_codes_organs", _operators_with(allowed_residual_codes=("any_code",))),
    ("changed_table_changes_id", _operators_with("candidate_operators.v1", depth=2)),
    ("kernel_accepts_table", _operators_with(allowed_candidate_organs=())),
    ("admits_within_grant", _operators_with(max_attempts_per_run=3)),
]


@pytest.mark.parametrize(("name", "table"), OPERATOR_BREAKS, ids=[b[0] for b in OPERATOR_BREAKS])
def test_each_operator_invariant_fails_on_a_candidate_that_breaks_it(name, table):
    """Issue 21 done-when: each operator-set invariant (ADR-0231 §6, §10, §11) names its
    breach."""
    result = _operator_results(table)[name]
    assert result.status is InvariantStatus.BROKEN and result.violations
    assert result.clause.startswith(("ADR-", "docs/adr/"))


def test_operator_differences_are_listed_field_by_field():
    """Issue 21: the version and every changed field of every operator row."""
    changed = _operators_with(depth=2)
    shown = [
        (d.gate, d.in_force, d.candidate)
        for d in prove_operators.operator_table_differences(changed, OPERATORS_V1)
    ]
    assert shown == [
        ("operator_set_version", "candidate_operators.v1", UNREGISTERED_OPERATOR_SET_VERSION),
        ("missing_role_candidate (missing_role_candidate.v1) depth", "1", "2"),
    ]
    assert prove_operators.operator_table_differences(OPERATORS_IN_FORCE) == []
