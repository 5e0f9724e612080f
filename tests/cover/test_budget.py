"""``compute_budget.v1``: ``decide_compute_budget`` and the ``ComputeBudgetDecision`` record.

Proves ADR-0227 §3-§9 (and ADR-0226 §7C / §8.4): the §8 table row by row from a literal copy
written here, the §7 ``budget_id`` from a payload built here with ``hashlib`` and ``json``
(never the kernel's hashing helpers), fail-closed refusals with exact reason codes, policy
value validation, no adaptive scaling, determinism and non-mutation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from practice_loop.kernel import (
    COMPUTE_BUDGET_IN_FORCE,
    COMPUTE_BUDGET_POLICY_VERSION,
    COMPUTE_BUDGET_V1,
    SEARCH_GATE_IN_FORCE,
    SEARCH_GATE_V1,
    AssessmentStatus,
    BudgetLimits,
    BudgetPolicyRow,
    BudgetReason,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    ContractAssessment,
    Defect,
    GateReason,
    RecordError,
    SearchGateDecision,
    SearchGateStatus,
    SourceSpan,
    canonical_json,
    decide_compute_budget,
    decide_search_gate,
)
from practice_loop.kernel.budget import (
    BUDGET_POLICIES,
    BudgetVerdict,
    _blocked_with_nothing,
    _serial,
    _v1_row_or_none,
)
from practice_loop.kernel.gate import GATE_POLICIES
from practice_strategies import (
    Chain,
    Impostor,
    chains,
    codes,
    eligible_chains,
    fields_for_sealing,
    malformed_digests,
    oracle,
    other_digest,
    resealed,
    share,
    spans,
    tampered,
)

# isort: split
# After the kernel: importing the catalogue first imports the kernel from inside it, and the
# record strategies' registration (hypothesis_hook), which needs the catalogue, then fails.
from practice_loop.harness.catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
)

ALLOWED = ComputeBudgetStatus.BUDGET_ALLOWED
BLOCKED = ComputeBudgetStatus.BUDGET_BLOCKED
ZERO = ComputeBudgetStatus.BUDGET_ZERO
UNASSESSABLE = ComputeBudgetStatus.BUDGET_UNASSESSABLE
LIMITS = ("max_candidates", "max_depth", "max_steps", "max_parallelism")
SPAN = SourceSpan("seven", 4, 9, 0)

# ADR-0227 §8, written out again: gate reason code, budget reason code and the four limits.
ADR_0227_TABLE = [
    ("eligible_missing_role", "budget_allowed_missing_role", 5, 2, 10, 1),
    ("eligible_missing_relation", "budget_allowed_missing_relation", 5, 2, 10, 1),
    ("eligible_missing_proposal", "budget_allowed_missing_proposal", 3, 1, 5, 1),
    ("eligible_target_unbound", "budget_allowed_target_unbound", 5, 2, 10, 1),
]


def _adr_0227_budget_id(budget: Any) -> str:
    """ADR-0227 §7: the eleven fields in order, canonical JSON, full lowercase SHA-256."""
    payload = {
        "policy_version": budget.policy_version,
        "gate_decision_id": budget.gate_decision_id,
        "gate_policy_version": budget.gate_policy_version,
        "gate_input_digest": budget.gate_input_digest,
        "status": budget.status.value,
        "reason_code": budget.reason_code,
        "max_candidates": budget.max_candidates,
        "max_depth": budget.max_depth,
        "max_steps": budget.max_steps,
        "max_parallelism": budget.max_parallelism,
        "evidence_spans": [
            {"text": s.text, "start": s.start, "end": s.end, "sentence_index": s.sentence_index}
            for s in budget.evidence_spans
        ],
    }
    assert len(payload) == 11
    encoded = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()


def _limits(budget: Any) -> tuple[int, ...]:
    return tuple(getattr(budget, name) for name in LIMITS)


def _assert_sealed(budget: Any) -> None:
    """A complete, well-formed record whose §7 identity reproduces three ways."""
    assert type(budget) is ComputeBudgetDecision
    assert budget.find_defect() is None
    assert budget.budget_id == _adr_0227_budget_id(budget) == oracle.budget_id(budget)
    assert budget.max_wallclock_ms is None


def _assert_fail_closed(budget: Any, reason: str) -> None:
    """ADR-0227 §3, §8: an unassessable budget carries no resource at all."""
    _assert_sealed(budget)
    assert budget.status is UNASSESSABLE
    assert budget.reason_code == reason
    assert _limits(budget) == (0, 0, 0, 0)


def _assert_no_gate(budget: Any) -> None:
    assert budget.gate_decision_id == budget.gate_policy_version == budget.gate_input_digest == ""
    assert budget.evidence_spans == ()


@pytest.mark.obligation("LOCAL-0005/budget_codes")
def test_vocabulary_is_closed() -> None:
    """ADR-0227 §5, §6: the four statuses, the policy version and the fail-closed reasons."""
    assert [s.value for s in ComputeBudgetStatus] == [
        "BUDGET_ALLOWED",
        "BUDGET_BLOCKED",
        "BUDGET_ZERO",
        "BUDGET_UNASSESSABLE",
    ]
    assert COMPUTE_BUDGET_POLICY_VERSION == "compute_budget.v1"
    assert {r.value for r in BudgetReason} == {
        "budget_blocked_gate_ineligible",
        "budget_blocked_gate_blocked",
        "budget_blocked_gate_unassessable",
        "budget_unassessable_unknown_reason_code",
        "budget_unassessable_gate_malformed",
        "budget_unassessable_gate_policy_unsupported",
        "budget_unassessable_gate_identity_mismatch",
        "budget_unassessable_policy_unsupported",
    }


@pytest.mark.obligation(
    "ADR-0227/13.4",
    "ADR-0227/8.eligible_missing_role",
    "ADR-0227/8.eligible_missing_relation",
    "ADR-0227/8.eligible_missing_proposal",
    "ADR-0227/8.eligible_target_unbound",
)
def test_v1_table_is_the_adr_table() -> None:
    """ADR-0227 §8: compute_budget.v1 holds exactly the four ELIGIBLE rows, each allowed."""
    rows = [
        (
            row.gate_reason_code,
            row.reason_code,
            row.limits.max_candidates,
            row.limits.max_depth,
            row.limits.max_steps,
            row.limits.max_parallelism,
        )
        for row in COMPUTE_BUDGET_V1.rows
    ]
    assert rows == ADR_0227_TABLE
    assert all(row.status is ALLOWED for row in COMPUTE_BUDGET_V1.rows)
    assert COMPUTE_BUDGET_V1.version == "compute_budget.v1"


# --------------------------------------------------------------------------------------------
# The §8 table, row by row


@pytest.mark.obligation(
    "ADR-0227/8.eligible_missing_role",
    "ADR-0227/8.eligible_missing_relation",
    "ADR-0227/8.eligible_missing_proposal",
    "ADR-0227/8.eligible_target_unbound",
    "LOCAL-0005/budget_codes",
)
@pytest.mark.parametrize(
    "gate_reason, reason_code, candidates, depth, steps, parallelism",
    ADR_0227_TABLE,
    ids=[row[0] for row in ADR_0227_TABLE],
)
@share(6)
@given(data=st.data())
def test_eligible_row(
    gate_reason: str,
    reason_code: str,
    candidates: int,
    depth: int,
    steps: int,
    parallelism: int,
    data: st.DataObject,
) -> None:
    """ADR-0227 §8 rows 2-5: an ELIGIBLE gate with a known reason gets exactly its row: the
    ADR's literal row under compute_budget.v1, and the in-force table's row by default."""
    chain: Chain = data.draw(chains(GateReason(gate_reason)))
    gate = chain.gate
    assert gate.status is SearchGateStatus.ELIGIBLE and gate.reason_code == gate_reason
    assert gate.policy_version == SEARCH_GATE_IN_FORCE.version
    in_force = COMPUTE_BUDGET_IN_FORCE.row_for(gate_reason)
    assert in_force is not None  # every table in force budgets the four eligible reasons
    v1 = decide_compute_budget(gate, COMPUTE_BUDGET_V1)
    default = decide_compute_budget(gate)
    for budget, policy_version, reason, limits in (
        (v1, "compute_budget.v1", reason_code, (candidates, depth, steps, parallelism)),
        (
            default,
            COMPUTE_BUDGET_IN_FORCE.version,
            in_force.reason_code,
            _limits(in_force.limits),
        ),
    ):
        _assert_sealed(budget)
        assert budget.status is ALLOWED
        assert budget.reason_code == reason
        assert _limits(budget) == limits
        assert budget.max_parallelism == 1
        assert budget.policy_version == policy_version
        assert budget.gate_decision_id == gate.decision_id
        assert budget.gate_policy_version == gate.policy_version
        assert budget.gate_input_digest == gate.input_digest
        assert budget.evidence_spans == gate.evidence_spans
    # The loop decides under the table in force: the default is that decision.
    assert default == decide_compute_budget(gate, COMPUTE_BUDGET_IN_FORCE) == chain.budget


def _unassessable_gate(make: Callable[[Chain], tuple[Any, Any]]) -> Any:
    return chains().map(lambda c: decide_search_gate(*make(c)))


def _refused_without_blockers(c: Chain) -> tuple[Any, Any]:
    fields = fields_for_sealing(c.assessment, status=AssessmentStatus.REFUSED, blockers=())
    return ContractAssessment.sealed(**fields), ()


# Non-ELIGIBLE gates from real chains: the gate status search_gate.v1 gives them (ADR-0226),
# the reason the gate gives and how they were made. The gate is decided under the gate policy
# in force, which may give the reason another non-ELIGIBLE status.
NON_ELIGIBLE = [
    pytest.param(
        "BLOCKED",
        GateReason.ASSESSMENT_RUNNABLE,
        chains(GateReason.ASSESSMENT_RUNNABLE),
        id="blocked_runnable",
    ),
    pytest.param(
        "BLOCKED",
        GateReason.RESIDUAL_WITHOUT_EVIDENCE,
        chains(GateReason.RESIDUAL_WITHOUT_EVIDENCE),
        id="blocked_no_evidence",
    ),
    pytest.param(
        "INELIGIBLE",
        GateReason.UNCLASSIFIED_RESIDUAL,
        chains(GateReason.UNCLASSIFIED_RESIDUAL),
        id="ineligible_hazard",
    ),
    pytest.param(
        "INELIGIBLE",
        GateReason.MULTIPLE_RESIDUALS,
        chains(GateReason.MULTIPLE_RESIDUALS),
        id="ineligible_multiple",
    ),
    pytest.param(
        "UNASSESSABLE",
        GateReason.ASSESSMENT_MALFORMED,
        _unassessable_gate(lambda c: (None, c.residuals)),
        id="unassessable_assessment_malformed",
    ),
    pytest.param(
        "UNASSESSABLE",
        GateReason.RESIDUALS_MALFORMED,
        _unassessable_gate(lambda c: (c.assessment, list(c.residuals))),
        id="unassessable_residuals_malformed",
    ),
    pytest.param(
        "UNASSESSABLE",
        GateReason.RESIDUAL_CONTEXT_MISMATCH,
        eligible_chains().map(lambda c: decide_search_gate(c.assessment, ())),
        id="unassessable_context_mismatch",
    ),
    pytest.param(
        "UNASSESSABLE",
        GateReason.NO_RESIDUAL,
        _unassessable_gate(_refused_without_blockers),
        id="unassessable_no_residual",
    ),
]


@pytest.mark.obligation(
    "ADR-0227/8.non_eligible",
    "ADR-0227/13.5",
    "ADR-0226/8.4",
    "LOCAL-0005/budget_codes",
)
@pytest.mark.parametrize("v1_gate_status, gate_reason, source", NON_ELIGIBLE)
@share(8)
@given(data=st.data())
def test_non_eligible_gate_is_blocked_with_zero_limits(
    v1_gate_status: str, gate_reason: GateReason, source: Any, data: st.DataObject
) -> None:
    """ADR-0227 §8 row 1 and §3: any non-ELIGIBLE gate gives BUDGET_BLOCKED, every limit 0,
    under compute_budget.v1 and under the table in force (the default)."""
    assert SEARCH_GATE_V1.status_for(gate_reason).value == v1_gate_status
    gate_status = SEARCH_GATE_IN_FORCE.status_for(gate_reason)
    assert gate_status is not SearchGateStatus.ELIGIBLE
    drawn = data.draw(source)
    gate = drawn.gate if isinstance(drawn, Chain) else drawn
    assert gate.reason_code == gate_reason.value
    assert gate.status is gate_status
    for budget, policy_version in (
        (decide_compute_budget(gate), COMPUTE_BUDGET_IN_FORCE.version),
        (decide_compute_budget(gate, COMPUTE_BUDGET_V1), "compute_budget.v1"),
    ):
        _assert_sealed(budget)
        assert budget.status is BLOCKED
        assert budget.reason_code == f"budget_blocked_gate_{gate_status.value.lower()}"
        assert _limits(budget) == (0, 0, 0, 0)
        assert budget.policy_version == policy_version
        assert budget.gate_decision_id == gate.decision_id
        assert budget.gate_policy_version == gate.policy_version
        assert budget.gate_input_digest == gate.input_digest
        assert budget.evidence_spans == gate.evidence_spans


@pytest.mark.obligation("ADR-0227/8.eligible_unknown_code")
@share(4)
@given(
    chain=eligible_chains(),
    code=st.one_of(
        st.just("eligible_unknown_kind"),
        codes.map(lambda c: f"eligible_{c}"),
        codes,
    ),
)
def test_eligible_gate_with_unknown_reason_is_unassessable(chain: Chain, code: str) -> None:
    """ADR-0227 §8 last row: ELIGIBLE with an unknown reason code is BUDGET_UNASSESSABLE,
    under compute_budget.v1 and under the table in force (the default)."""
    assume(code not in {row[0] for row in ADR_0227_TABLE})
    assume(COMPUTE_BUDGET_IN_FORCE.row_for(code) is None)
    gate = SearchGateDecision.sealed(**fields_for_sealing(chain.gate, reason_code=code))
    assert gate.status is SearchGateStatus.ELIGIBLE and gate.find_defect() is None
    for budget, policy_version in (
        (decide_compute_budget(gate), COMPUTE_BUDGET_IN_FORCE.version),
        (decide_compute_budget(gate, COMPUTE_BUDGET_V1), "compute_budget.v1"),
    ):
        _assert_fail_closed(budget, "budget_unassessable_unknown_reason_code")
        assert budget.policy_version == policy_version
        assert budget.gate_decision_id == gate.decision_id
        assert budget.gate_input_digest == gate.input_digest
        assert budget.evidence_spans == gate.evidence_spans


# --------------------------------------------------------------------------------------------
# budget_id (§7)


budgets = st.one_of(
    chains().map(lambda c: c.budget),
    eligible_chains().map(
        lambda c: decide_compute_budget(
            SearchGateDecision.sealed(
                **fields_for_sealing(c.gate, reason_code="eligible_unknown_kind")
            )
        )
    ),
    eligible_chains().map(lambda c: decide_compute_budget(tampered(c.gate, reason_code=5))),
    eligible_chains().map(lambda c: decide_compute_budget(c.gate, None)),  # type: ignore[arg-type]
)
"""Budgets of every status and reason, including those with blank gate fields."""


@pytest.mark.obligation(
    "ADR-0227/13.3",
    "LOCAL-0003/budget_id_payload",
    "LOCAL-0003/value_encoding",
)
@share(3)
@given(budget=budgets)
def test_budget_id_is_the_adr_payload(budget: ComputeBudgetDecision) -> None:
    """ADR-0227 §7: budget_id is SHA-256 of canonical JSON over exactly the eleven fields."""
    assert budget.budget_id == _adr_0227_budget_id(budget)
    assert budget.budget_id == oracle.budget_id(budget)
    assert len(budget.budget_id) == 64 and set(budget.budget_id) <= set("0123456789abcdef")
    assert budget.status is not ZERO  # no registered table has a zero row


@pytest.mark.obligation("ADR-0227/13.3", "LOCAL-0003/budget_id_payload")
@share(4)
@given(
    chain=chains(),
    prose=st.text(max_size=40),
    wallclock=st.one_of(st.none(), st.integers(0, 2**53 - 1)),
)
def test_excluded_fields_do_not_change_budget_id(
    chain: Chain, prose: str, wallclock: int | None
) -> None:
    """ADR-0227 §5, §7 exclusions: explanation and max_wallclock_ms never enter budget_id."""
    budget = chain.budget
    for changed in (
        tampered(budget, explanation=prose),
        tampered(budget, max_wallclock_ms=wallclock),
        tampered(budget, explanation=prose, max_wallclock_ms=wallclock),
    ):
        assert changed.compute_id() == budget.budget_id
        assert _adr_0227_budget_id(changed) == budget.budget_id
        assert changed.find_defect() is None


def _other_status(status: ComputeBudgetStatus) -> ComputeBudgetStatus:
    return BLOCKED if status is ALLOWED else ALLOWED


# Each of the eleven §7 fields with a change of value.
CHANGES: list[tuple[str, Callable[[Any], Any]]] = [
    # A version no budget is decided under, and one no gate is: never the budget's own.
    ("policy_version", lambda b: UNREGISTERED_BUDGET_VERSION),
    ("gate_decision_id", lambda b: other_digest(b.gate_decision_id)),
    ("gate_policy_version", lambda b: UNREGISTERED_GATE_VERSION),
    ("gate_input_digest", lambda b: other_digest(b.gate_input_digest)),
    ("status", lambda b: _other_status(b.status)),
    ("reason_code", lambda b: b.reason_code + "_x"),
    ("max_candidates", lambda b: b.max_candidates + 1),
    ("max_depth", lambda b: b.max_depth + 1),
    ("max_steps", lambda b: b.max_steps + 1),
    ("max_parallelism", lambda b: b.max_parallelism + 1),
    ("evidence_spans", lambda b: b.evidence_spans + (SPAN,)),
]


@pytest.mark.obligation("ADR-0226/9.18", "LOCAL-0003/budget_id_payload")
@pytest.mark.parametrize("field, change", CHANGES, ids=[name for name, _ in CHANGES])
@share(12)
@given(chain=eligible_chains())
def test_each_identity_field_changes_budget_id(
    field: str, change: Callable[[Any], Any], chain: Chain
) -> None:
    """ADR-0227 §7 items 1-11: changing any one hashed field changes budget_id."""
    budget = chain.budget
    changed = tampered(budget, **{field: change(budget)})
    assert changed.compute_id() != budget.budget_id
    assert changed.compute_id() == _adr_0227_budget_id(changed) == oracle.budget_id(changed)


@share(4)
@given(chain=chains(GateReason.ELIGIBLE_MISSING_RELATION), extra=spans())
def test_span_order_and_duplicates_change_budget_id(chain: Chain, extra: SourceSpan) -> None:
    """ADR-0227 §7.11: spans are an ordered list; reorder or duplicate and budget_id changes."""
    budget, spans_ = chain.budget, chain.budget.evidence_spans
    assume(spans_[::-1] != spans_)
    variants = [spans_[::-1], spans_ + spans_[:1], spans_ + spans_, spans_ + (extra,)]
    ids = {budget.budget_id}
    for variant in variants:
        ids.add(_adr_0227_budget_id(tampered(budget, evidence_spans=variant)))
        # The same order change made upstream flows through the gate, preserved as given.
        regated = decide_compute_budget(resealed(chain.gate, evidence_spans=variant))
        _assert_sealed(regated)
        assert regated.status is ALLOWED
        assert regated.evidence_spans == variant
        assert regated.budget_id == _adr_0227_budget_id(
            tampered(
                budget,
                **{
                    "evidence_spans": variant,
                    "gate_decision_id": regated.gate_decision_id,
                },
            )
        )
        ids.add(regated.budget_id)
    assert len(ids) == 1 + 2 * len(variants)


# --------------------------------------------------------------------------------------------
# Fail-closed inputs


def _empty_gate(gate: Any) -> Any:
    return object.__new__(SearchGateDecision)


MALFORMED_GATES: list[tuple[str, Callable[[Any], Any]]] = [
    ("none", lambda g: None),
    ("json_of_the_gate", lambda g: g.to_json()),
    ("empty_record", _empty_gate),
    ("status_is_the_string_eligible", lambda g: tampered(g, status="ELIGIBLE")),
    ("status_is_a_budget_status", lambda g: tampered(g, status=ALLOWED)),
    ("reason_code_is_5", lambda g: tampered(g, reason_code=5)),
    ("reason_code_is_a_bool", lambda g: tampered(g, reason_code=True)),
    ("candidate_organ_is_a_bool", lambda g: tampered(g, candidate_organ=False)),
    ("policy_version_is_an_int", lambda g: tampered(g, policy_version=1)),
    ("policy_version_malformed", lambda g: tampered(g, policy_version="Search_Gate.V1")),
    ("input_digest_upper_case", lambda g: tampered(g, input_digest=g.input_digest.upper())),
    ("input_digest_truncated", lambda g: tampered(g, input_digest=g.input_digest[:63])),
    ("decision_id_not_hex", lambda g: tampered(g, decision_id="g" * 64)),
    ("residual_ids_a_list", lambda g: tampered(g, residual_ids=list(g.residual_ids))),
    ("evidence_span_not_a_span", lambda g: tampered(g, evidence_spans=("seven",))),
    ("explanation_not_text", lambda g: tampered(g, explanation=None)),
    ("resealed_without_its_residual", lambda g: resealed(g, residual_ids=())),
    ("resealed_with_another_status", lambda g: resealed(g, status=SearchGateStatus.BLOCKED)),
]


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0226/9.9")
@pytest.mark.parametrize(
    "corrupt", [c for _, c in MALFORMED_GATES], ids=[n for n, _ in MALFORMED_GATES]
)
@share(20)
@given(chain=eligible_chains())
def test_malformed_gate_is_unassessable(corrupt: Callable[[Any], Any], chain: Chain) -> None:
    """ADR-0227 §8, §13.5: a gate that is not a well-formed record fails closed, zero limits."""
    for budget, policy_version in (
        (decide_compute_budget(corrupt(chain.gate)), COMPUTE_BUDGET_IN_FORCE.version),
        (decide_compute_budget(corrupt(chain.gate), COMPUTE_BUDGET_V1), "compute_budget.v1"),
    ):
        _assert_fail_closed(budget, "budget_unassessable_gate_malformed")
        _assert_no_gate(budget)
        assert budget.policy_version == policy_version


@pytest.mark.obligation("ADR-0227/13.5")
@share(6)
@given(
    chain=chains(), bad=malformed_digests, field=st.sampled_from(["decision_id", "input_digest"])
)
def test_malformed_gate_digest_is_unassessable(chain: Chain, bad: str, field: str) -> None:
    """ADR-0227 §4: decision_id and input_digest must be full lowercase SHA-256 digests."""
    budget = decide_compute_budget(tampered(chain.gate, **{field: bad}))
    _assert_fail_closed(budget, "budget_unassessable_gate_malformed")
    _assert_no_gate(budget)


IDENTITY_CHANGES: list[tuple[str, Callable[[Any], Any]]] = [
    ("input_digest", lambda g: tampered(g, input_digest=other_digest(g.input_digest))),
    ("decision_id", lambda g: tampered(g, decision_id=other_digest(g.decision_id))),
    (
        "frame_digest",
        lambda g: tampered(g, problem_frame_digest=other_digest(g.problem_frame_digest)),
    ),
    ("residual_id", lambda g: tampered(g, residual_ids=(other_digest(g.residual_ids[0]),))),
    ("evidence_spans", lambda g: tampered(g, evidence_spans=g.evidence_spans + (SPAN,))),
    ("reason_code", lambda g: tampered(g, reason_code="eligible_missing_proposal")),
    ("unknown_reason_code", lambda g: tampered(g, reason_code="eligible_unknown_kind")),
]


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0226/9.11")
@pytest.mark.parametrize(
    "corrupt", [c for _, c in IDENTITY_CHANGES], ids=[n for n, _ in IDENTITY_CHANGES]
)
@share(20)
@given(chain=eligible_chains())
def test_gate_whose_identity_does_not_reproduce(
    corrupt: Callable[[Any], Any], chain: Chain
) -> None:
    """ADR-0227 §4, §9: a gate whose decision_id no longer reproduces gets no budget."""
    gate = corrupt(chain.gate)
    assume(gate != chain.gate)
    budget = decide_compute_budget(gate)
    _assert_fail_closed(budget, "budget_unassessable_gate_identity_mismatch")
    _assert_no_gate(budget)


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0226/9.10")
@share(6)
@given(
    chain=chains(),
    # The next version, the version in force with a digit added (a prefix match would pass
    # it) and another policy's name.
    version=st.sampled_from(
        [UNREGISTERED_GATE_VERSION, f"{SEARCH_GATE_IN_FORCE.version}0", "gate.v1"]
    ),
)
def test_unsupported_gate_policy_is_unassessable(chain: Chain, version: str) -> None:
    """ADR-0227 §4, §9: a gate decided under another policy version is never budgeted."""
    assert version not in GATE_POLICIES
    for gate in (
        resealed(chain.gate, policy_version=version),
        tampered(chain.gate, policy_version=version),
    ):
        budget = decide_compute_budget(gate)
        _assert_fail_closed(budget, "budget_unassessable_gate_policy_unsupported")
        _assert_no_gate(budget)


def _changed_row(rows: tuple[BudgetPolicyRow, ...]) -> tuple[BudgetPolicyRow, ...]:
    first = rows[0]
    return (dataclasses.replace(first, limits=BudgetLimits(6, 2, 10, 1)),) + rows[1:]


ZERO_ROW = BudgetPolicyRow(
    "eligible_missing_role", ZERO, "budget_zero_missing_role", BudgetLimits(0, 0, 0, 0)
)
EXTRA_ROW = BudgetPolicyRow(
    "eligible_other_kind", ALLOWED, "budget_allowed_other_kind", BudgetLimits(1, 1, 1, 1)
)
V1_ROWS = COMPUTE_BUDGET_V1.rows

# A policy that is not the registered compute_budget.v1 value, and the version it shows.
UNSUPPORTED_POLICIES = [
    pytest.param(
        ComputeBudgetPolicy("compute_budget.v1", _changed_row(V1_ROWS)),
        "compute_budget.v1",
        id="v1_with_a_changed_row",
    ),
    pytest.param(
        ComputeBudgetPolicy("compute_budget.v1", V1_ROWS[:-1]),
        "compute_budget.v1",
        id="v1_with_a_row_dropped",
    ),
    pytest.param(
        ComputeBudgetPolicy("compute_budget.v1", V1_ROWS + (EXTRA_ROW,)),
        "compute_budget.v1",
        id="v1_with_a_row_added",
    ),
    pytest.param(
        ComputeBudgetPolicy("compute_budget.v1", (ZERO_ROW,) + V1_ROWS[1:]),
        "compute_budget.v1",
        id="v1_with_a_zero_row",
    ),
    pytest.param(
        ComputeBudgetPolicy(UNREGISTERED_BUDGET_VERSION, V1_ROWS),
        UNREGISTERED_BUDGET_VERSION,
        id="unregistered_version_with_the_v1_rows",
    ),
    pytest.param(
        ComputeBudgetPolicy(UNREGISTERED_BUDGET_VERSION, COMPUTE_BUDGET_IN_FORCE.rows),
        UNREGISTERED_BUDGET_VERSION,
        id="unregistered_version_with_the_rows_in_force",
    ),
    pytest.param(
        tampered(COMPUTE_BUDGET_V1, rows=list(V1_ROWS)), "compute_budget.v1", id="v1_rows_as_a_list"
    ),
    pytest.param(None, "", id="none"),
    pytest.param({"version": "compute_budget.v1", "rows": []}, "", id="dict"),
    pytest.param("compute_budget.v1", "", id="version_string"),
    pytest.param(V1_ROWS, "", id="bare_rows"),
    pytest.param(Impostor(version="compute_budget.v1"), "", id="class_equal_to_every_class"),
]


@pytest.mark.obligation("ADR-0227/13.4", "ADR-0226/9.10")
@pytest.mark.parametrize("policy, shown_version", UNSUPPORTED_POLICIES)
@share(12)
@given(chain=chains())
def test_unsupported_policy_is_unassessable(policy: Any, shown_version: str, chain: Chain) -> None:
    """ADR-0227 §6, §9: only a registered table's value (compute_budget.v1's here) is
    honoured."""
    for gate in (chain.gate, None):
        budget = decide_compute_budget(gate, policy)  # type: ignore[arg-type]
        _assert_fail_closed(budget, "budget_unassessable_policy_unsupported")
        _assert_no_gate(budget)
        assert budget.policy_version == shown_version


@pytest.mark.obligation("LOCAL-0005/budget_codes")
@share(6)
@given(chain=chains(GateReason.ELIGIBLE_MISSING_ROLE))
def test_budget_zero_needs_an_unregistered_zero_row(chain: Chain) -> None:
    """ADR-0227 §5: BUDGET_ZERO needs a zero row; no registered table has one (v1 is
    registered with exactly its ADR value), so a table with one is refused under any version."""
    assert BUDGET_POLICIES["compute_budget.v1"] == COMPUTE_BUDGET_V1
    assert all(key == policy.version for key, policy in BUDGET_POLICIES.items())
    assert BUDGET_POLICIES[COMPUTE_BUDGET_IN_FORCE.version] is COMPUTE_BUDGET_IN_FORCE
    assert all(row.status is not ZERO for p in BUDGET_POLICIES.values() for row in p.rows)
    # v1, the version in force (the same one until another is adopted) and an unregistered one.
    versions = ("compute_budget.v1", COMPUTE_BUDGET_IN_FORCE.version, UNREGISTERED_BUDGET_VERSION)
    for version in dict.fromkeys(versions):
        policy = ComputeBudgetPolicy(version, (ZERO_ROW,) + V1_ROWS[1:])
        assert policy.find_defect() is None
        assert policy.row_for("eligible_missing_role") == ZERO_ROW
        budget = decide_compute_budget(chain.gate, policy)
        _assert_fail_closed(budget, "budget_unassessable_policy_unsupported")
        assert budget.policy_version == version


@pytest.mark.obligation("ADR-0227/13.4")
@share(6)
@given(chain=chains())
def test_an_equal_copy_of_v1_is_honoured(chain: Chain) -> None:
    """ADR-0227 §6: the v1 policy, and the one in force, are identified by their value, not
    by object identity."""
    copy = ComputeBudgetPolicy("compute_budget.v1", tuple(V1_ROWS))
    assert canonical_json(decide_compute_budget(chain.gate, copy).to_json()) == canonical_json(
        decide_compute_budget(chain.gate, COMPUTE_BUDGET_V1).to_json()
    )
    in_force = COMPUTE_BUDGET_IN_FORCE
    copy = ComputeBudgetPolicy(in_force.version, tuple(in_force.rows))
    assert copy is not in_force
    assert canonical_json(decide_compute_budget(chain.gate, copy).to_json()) == canonical_json(
        chain.budget.to_json()
    )


class _RaisingAttributes:
    """A hostile policy-shaped object: reading any attribute raises."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name}")


class _RaisingVersion:
    """A hostile policy-shaped object whose ``version`` property raises."""

    @property
    def version(self) -> str:
        raise ValueError("no version")


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0226/9.9")
@pytest.mark.parametrize(
    "policy",
    [_RaisingAttributes(), _RaisingVersion()],
    ids=["raising_getattr", "raising_version_property"],
)
def test_hostile_policy_object_fails_closed(policy: Any) -> None:
    """ADR-0227 §13.5, ADR-0226 §7C: malformed policy input is a refusal, never an exception."""
    budget = decide_compute_budget(None, policy)  # type: ignore[arg-type]
    _assert_fail_closed(budget, "budget_unassessable_policy_unsupported")
    _assert_no_gate(budget)


garbage = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.lists(st.integers() | st.text(max_size=4), max_size=3),
    st.tuples(st.integers() | st.none()),
    st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3),
    st.from_type(type),
    spans(),
    st.just(BudgetLimits(5, 2, 10, 1)),
    st.just(V1_ROWS[0]),
    st.builds(Impostor),
)


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0226/9.9")
@given(
    gate=garbage,
    policy=st.one_of(st.sampled_from([COMPUTE_BUDGET_V1, COMPUTE_BUDGET_IN_FORCE]), garbage),
)
def test_garbage_never_raises(gate: object, policy: object) -> None:
    """ADR-0227 §13.5: decide_compute_budget always answers; garbage fails closed."""
    budget = decide_compute_budget(gate, policy)  # type: ignore[arg-type]
    expected = (
        "budget_unassessable_gate_malformed"
        if policy is COMPUTE_BUDGET_V1 or policy is COMPUTE_BUDGET_IN_FORCE
        else "budget_unassessable_policy_unsupported"
    )
    _assert_fail_closed(budget, expected)
    _assert_no_gate(budget)


# --------------------------------------------------------------------------------------------
# Policy value validation


def _refused(make: Callable[[], Any]) -> Any:
    with pytest.raises(RecordError) as raised:
        make()
    return raised.value.found


ROW_DEFECTS: list[tuple[str, str, ComputeBudgetStatus, tuple[int, int, int, int]]] = [
    ("parallelism_2", "eligible_missing_role", ALLOWED, (5, 2, 10, 2)),
    ("parallelism_0", "eligible_missing_role", ALLOWED, (5, 2, 10, 0)),
    ("zero_candidates", "eligible_missing_role", ALLOWED, (0, 2, 10, 1)),
    ("zero_steps", "eligible_missing_role", ALLOWED, (5, 2, 0, 1)),
    ("zero_row_with_candidates", "eligible_missing_role", ZERO, (1, 0, 0, 0)),
    ("zero_row_with_depth", "eligible_missing_role", ZERO, (0, 1, 0, 0)),
    ("zero_row_with_steps", "eligible_missing_role", ZERO, (0, 0, 1, 0)),
    ("zero_row_with_parallelism", "eligible_missing_role", ZERO, (0, 0, 0, 1)),
    ("blocked_row", "eligible_missing_role", BLOCKED, (0, 0, 0, 0)),
    ("unassessable_row", "eligible_missing_role", UNASSESSABLE, (0, 0, 0, 0)),
    ("non_eligible_gate_reason", "gate_blocked_assessment_runnable", ALLOWED, (5, 2, 10, 1)),
    ("gate_reason_without_prefix", "missing_role", ALLOWED, (5, 2, 10, 1)),
]


@pytest.mark.obligation("ADR-0227/13.4")
@pytest.mark.parametrize(
    "gate_reason, status, limits", [r[1:] for r in ROW_DEFECTS], ids=[r[0] for r in ROW_DEFECTS]
)
def test_policy_row_refuses_inconsistent_values(
    gate_reason: str, status: ComputeBudgetStatus, limits: tuple[int, int, int, int]
) -> None:
    """ADR-0227 §8 constraints: rows are ELIGIBLE-only, ALLOWED (parallelism 1) or all zero."""
    found = _refused(
        lambda: BudgetPolicyRow(gate_reason, status, "budget_x", BudgetLimits(*limits))
    )
    assert found.record == "BudgetPolicyRow"
    assert found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0005/budget_codes")
def test_policy_row_accepts_the_two_lawful_shapes() -> None:
    """ADR-0227 §8: an ALLOWED row with parallelism 1, or a BUDGET_ZERO row with all zeros."""
    BudgetPolicyRow("eligible_missing_role", ALLOWED, "budget_x", BudgetLimits(1, 0, 1, 1))
    BudgetPolicyRow("eligible_missing_role", ZERO, "budget_x", BudgetLimits(0, 0, 0, 0))


@pytest.mark.obligation("LOCAL-0003/bool_fields")
@given(
    position=st.integers(0, 3),
    value=st.one_of(st.integers(max_value=-1), st.booleans()),
)
def test_budget_limits_refuse_negative_and_bool(position: int, value: int) -> None:
    """ADR-0226 §7C: limits are explicit non-negative ints (a bool is not an int)."""
    limits = [5, 2, 10, 1]
    limits[position] = value
    found = _refused(lambda: BudgetLimits(*limits))
    assert found.field == LIMITS[position]
    if type(value) is bool:
        assert found.defect is Defect.BOOL_NOT_INT
    elif value < -(2**53 - 1):
        assert found.defect is Defect.INT_OUT_OF_RANGE
    else:
        assert found.defect is Defect.NEGATIVE_VALUE


@pytest.mark.obligation("ADR-0227/13.4")
@pytest.mark.parametrize(
    "rows",
    [
        V1_ROWS + V1_ROWS[:1],
        (V1_ROWS[0], dataclasses.replace(V1_ROWS[0], limits=BudgetLimits(1, 1, 1, 1))),
        (V1_ROWS[0], ZERO_ROW),
    ],
    ids=["same_row_twice", "same_reason_other_limits", "same_reason_zero_row"],
)
def test_policy_refuses_duplicate_rows(rows: tuple[BudgetPolicyRow, ...]) -> None:
    """ADR-0227 §8: the table is closed, one row per gate reason."""
    found = _refused(lambda: ComputeBudgetPolicy("compute_budget.v1", rows))
    assert found.field == "rows"
    assert found.defect is Defect.DUPLICATE_ENTRY


def _decision(status: ComputeBudgetStatus, **limits: int) -> ComputeBudgetDecision:
    values = {name: 0 for name in LIMITS} | limits
    return ComputeBudgetDecision.sealed(
        policy_version="compute_budget.v1",
        gate_decision_id="ab" * 32,
        gate_policy_version="search_gate.v1",
        gate_input_digest="cd" * 32,
        status=status,
        reason_code="budget_test",
        max_wallclock_ms=None,
        evidence_spans=(SPAN,),
        explanation="test",
        **values,
    )


@pytest.mark.obligation("ADR-0227/13.2", "ADR-0226/8.4")
@pytest.mark.parametrize("field", LIMITS)
@pytest.mark.parametrize("status", [BLOCKED, ZERO, UNASSESSABLE], ids=lambda s: s.value)
def test_non_allowed_decision_with_a_limit_is_refused(
    status: ComputeBudgetStatus, field: str
) -> None:
    """ADR-0227 §3: anything but BUDGET_ALLOWED carries no resource; the record refuses it."""
    _assert_sealed(_decision(status))
    _decision(ALLOWED, **{field: 1})
    found = _refused(lambda: _decision(status, **{field: 1}))
    assert found.record == "ComputeBudgetDecision"
    assert found.defect is Defect.INCONSISTENT_FIELDS


# --------------------------------------------------------------------------------------------
# No adaptive scaling, determinism, non-mutation


@pytest.mark.obligation("ADR-0227/13.2")
@share(4)
@given(
    pair=st.sampled_from([GateReason(row[0]) for row in ADR_0227_TABLE]).flatmap(
        lambda reason: st.tuples(chains(reason), chains(reason))
    )
)
def test_no_adaptive_scaling(pair: tuple[Chain, Chain]) -> None:
    """ADR-0227 §8 constraints: limits depend on the reason code alone, never on the context."""
    first, second = pair
    one = decide_compute_budget(first.gate)
    two = decide_compute_budget(second.gate)
    assert first.gate.reason_code == second.gate.reason_code
    assert (one.status, one.reason_code) == (two.status, two.reason_code)
    assert _limits(one) == _limits(two)
    assert one.max_wallclock_ms is two.max_wallclock_ms is None
    # Deciding other gates in between changes nothing: the policy keeps no state.
    assert decide_compute_budget(first.gate) == one


@pytest.mark.obligation("ADR-0226/9.3")
@share(4)
@given(chain=chains())
def test_determinism_and_non_mutation(chain: Chain) -> None:
    """ADR-0226 §9, ADR-0227 §3: same gate, same bytes; gate and policy are left untouched."""
    policies = (COMPUTE_BUDGET_V1, COMPUTE_BUDGET_IN_FORCE)
    gate_bytes = canonical_json(chain.gate.to_json())
    policy_bytes = [canonical_json(policy.to_json()) for policy in policies]
    registered = dict(BUDGET_POLICIES)
    first = decide_compute_budget(chain.gate)
    second = decide_compute_budget(chain.gate, COMPUTE_BUDGET_IN_FORCE)
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert canonical_json(first.to_json()) == canonical_json(chain.budget.to_json())
    # compute_budget.v1, given explicitly, is as deterministic.
    under_v1 = [decide_compute_budget(chain.gate, COMPUTE_BUDGET_V1) for _ in range(2)]
    assert canonical_json(under_v1[0].to_json()) == canonical_json(under_v1[1].to_json())
    assert canonical_json(chain.gate.to_json()) == gate_bytes
    assert [canonical_json(policy.to_json()) for policy in policies] == policy_bytes
    assert chain.gate.find_defect() is None
    # Deciding registers nothing and changes no registered table.
    assert dict(BUDGET_POLICIES) == registered
    assert BUDGET_POLICIES["compute_budget.v1"] == COMPUTE_BUDGET_V1


def test_the_contract_reads_an_unknown_reason_by_value_not_by_object():
    """The budget contract's own predicate accepts an unassessable verdict for an unknown
    reason whatever string object carries the code, as a decoded trace gives it (the kernel
    mutation score's survivor `==` made `is`, docs/adr/0015)."""
    from practice_loop.kernel.budget import _v1_row_or_none, compute_budget_v1

    verdict = compute_budget_v1(SearchGateStatus.ELIGIBLE, "eligible_not_in_the_table")
    assert verdict.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
    fresh = "".join(list(verdict.reason_code))
    assert fresh is not verdict.reason_code
    assert _v1_row_or_none(dataclasses.replace(verdict, reason_code=fresh))


# ------------------------------------------------------------------------------------------
# The contract predicates (issue 17): each one the CrossHair lane and test_contracts.py hold
# compute_budget_v1 to must itself refuse a verdict that breaks its clause, or a contract
# that can never fail would pass for one that holds.

ALLOWED = ComputeBudgetStatus.BUDGET_ALLOWED
BLOCKED = ComputeBudgetStatus.BUDGET_BLOCKED
UNASSESSABLE = ComputeBudgetStatus.BUDGET_UNASSESSABLE
UNKNOWN = BudgetReason.UNKNOWN_REASON_CODE.value


def _verdict(status, reason, candidates, depth, steps, parallelism) -> BudgetVerdict:
    return BudgetVerdict(status, reason, BudgetLimits(candidates, depth, steps, parallelism))


# (id, verdict, serial) for ADR-0227 §8: a candidate and a step at least, parallelism exactly 1.
SERIAL = [
    ("least", (1, 0, 1, 1), True),
    ("v1-row", (5, 2, 10, 1), True),
    ("no-candidate", (0, 0, 1, 1), False),
    ("no-step", (1, 0, 0, 1), False),
    ("no-parallelism", (1, 0, 1, 0), False),
    ("parallel", (1, 0, 1, 2), False),
]


@pytest.mark.obligation("ADR-0227/13.5", "ADR-0228/17.6")
@pytest.mark.parametrize(("limits", "serial"), [p[1:] for p in SERIAL], ids=[p[0] for p in SERIAL])
def test_the_serial_contract_refuses_a_grant_that_is_not_serial(limits, serial):
    assert _serial(_verdict(ALLOWED, "budget_allowed_x", *limits)) is serial


@pytest.mark.obligation("ADR-0227/13.5")
@pytest.mark.parametrize(
    ("verdict", "holds"),
    [
        (_verdict(BLOCKED, "budget_blocked_x", 0, 0, 0, 0), True),
        (_verdict(BLOCKED, "budget_blocked_x", 1, 0, 1, 1), False),
        (_verdict(ALLOWED, "budget_allowed_x", 0, 0, 0, 0), False),
    ],
    ids=["blocked-with-nothing", "blocked-with-resources", "zero-but-allowed"],
)
def test_the_denied_gate_contract_needs_blocked_and_nothing(verdict, holds):
    assert _blocked_with_nothing(verdict) is holds


_V1_FIRST = COMPUTE_BUDGET_V1.rows[0]


@pytest.mark.obligation("ADR-0227/13.4")
@pytest.mark.parametrize(
    ("verdict", "holds"),
    [
        (BudgetVerdict(_V1_FIRST.status, _V1_FIRST.reason_code, _V1_FIRST.limits), True),
        (_verdict(UNASSESSABLE, UNKNOWN, 0, 0, 0, 0), True),
        # Another reason on either side of the unknown one, so no ordering passes for equality.
        (_verdict(UNASSESSABLE, "budget_unassessable_a", 0, 0, 0, 0), False),
        (_verdict(UNASSESSABLE, "budget_unassessable_z", 0, 0, 0, 0), False),
        (_verdict(UNASSESSABLE, UNKNOWN, 1, 0, 1, 1), False),
        (_verdict(ALLOWED, UNKNOWN, 0, 0, 0, 0), False),
        (
            BudgetVerdict(_V1_FIRST.status, _V1_FIRST.reason_code, BudgetLimits(9, 9, 9, 1)),
            False,
        ),
    ],
    ids=[
        "v1-row",
        "unknown",
        "reason-before",
        "reason-after",
        "unknown-with-limits",
        "unknown-allowed",
        "v1-reason-other-limits",
    ],  # fmt: skip
)
def test_the_v1_contract_admits_only_a_v1_row_or_nothing(verdict, holds):
    assert _v1_row_or_none(verdict) is holds


@pytest.mark.obligation("ADR-0227/13.4", "ADR-0227/13.3")
def test_a_policy_is_identified_by_its_content_and_read_by_value():
    """policy_id is the digest of the table's canonical bytes; a row is found by the value
    of its reason, whatever string object names it; a long table of distinct reasons is
    well formed (the duplicate check compares counts, not small-int objects)."""
    policy_id = COMPUTE_BUDGET_V1.policy_id
    assert type(policy_id) is str
    assert policy_id == hashlib.sha256(canonical_json(COMPUTE_BUDGET_V1.to_json())).hexdigest()
    reason = _V1_FIRST.gate_reason_code
    rebuilt = "".join(list(reason))
    assert rebuilt is not reason
    assert COMPUTE_BUDGET_V1.row_for(rebuilt) == _V1_FIRST
    rows = tuple(
        dataclasses.replace(_V1_FIRST, gate_reason_code=f"eligible_reason_{n}") for n in range(300)
    )
    assert ComputeBudgetPolicy("compute_budget.v2", rows).find_defect() is None


@pytest.mark.obligation("ADR-0227/13.4", "ADR-0226/9.10")
@share(6)
@given(chain=chains())
def test_a_policy_whose_version_is_malformed_is_shown_blank_and_arguments_go_by_name(
    chain: Chain,
) -> None:
    """ADR-0227 §6: a malformed version is never echoed into the decision; and the gate and
    policy may be given by name, as the signature documents."""
    budget = decide_compute_budget(gate_decision=chain.gate, policy=tampered(
        COMPUTE_BUDGET_V1, version="Not a version"
    ))  # fmt: skip
    _assert_fail_closed(budget, "budget_unassessable_policy_unsupported")
    assert budget.policy_version == ""
