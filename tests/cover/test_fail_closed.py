"""No exception escapes a public stage function, whatever it is given (issue 2, "Bad input";
ARCHITECTURE §2: malformed input is a typed refusal)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import direction_unbound
from practice_loop.kernel import (
    EMPTY_OPERATOR_SET,
    ComputeBudgetDecision,
    ComputeBudgetStatus,
    RunDisposition,
    SearchGateDecision,
    SearchGateStatus,
    SearchRunRefusal,
    Stage,
    StageRefusal,
    assess,
    check_proof,
    decide_compute_budget,
    decide_search_gate,
    open_search_run,
    project_residuals,
    record_attempts,
)
from practice_strategies import Impostor, build_chain, tampered


class Hostile:
    """An object whose every dunder and attribute access raises."""

    def __getattr__(self, name):
        raise RuntimeError(f"read {name}")

    def __eq__(self, other):
        raise RuntimeError("compared")

    def __hash__(self):
        raise RuntimeError("hashed")

    def __bool__(self):
        raise RuntimeError("truth-tested")

    def __len__(self):
        raise RuntimeError("measured")

    def __iter__(self):
        raise RuntimeError("iterated")


class StrSubclass(str):
    pass


garbage = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(),
    st.binary(),
    st.lists(st.integers(), max_size=3),
    st.tuples(st.integers()),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
    st.builds(Hostile),
    st.builds(StrSubclass, st.text()),
    st.builds(Impostor),
)

CHAIN = build_chain(direction_unbound().frame)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0003/stages_reinspect")
@given(garbage)
def test_assess_refuses_anything_that_is_not_a_frame(value):
    refusal = assess(value)
    assert type(refusal) is StageRefusal
    assert refusal.stage is Stage.ASSESSMENT
    assert refusal.reason_codes == ("frame_malformed", "wrong_record_type")


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0005/proof_refusals")
@given(garbage, garbage)
def test_check_proof_refuses_garbage(frame, assessment):
    refusal = check_proof(frame, assessment)
    assert type(refusal) is StageRefusal and refusal.reason_codes[0] == "frame_malformed"
    refusal = check_proof(CHAIN.frame, assessment)
    assert type(refusal) is StageRefusal and refusal.reason_codes[0] == "assessment_malformed"


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0001/function")
@given(garbage)
def test_project_residuals_refuses_garbage(value):
    refusal = project_residuals(value)
    assert type(refusal) is StageRefusal
    assert refusal.reason_codes == ("assessment_malformed", "wrong_record_type")


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0002/function")
@given(garbage, garbage)
def test_gate_is_unassessable_on_garbage(assessment, residuals):
    decision = decide_search_gate(assessment, residuals)
    assert type(decision) is SearchGateDecision
    assert decision.status is SearchGateStatus.UNASSESSABLE
    decision = decide_search_gate(CHAIN.assessment, residuals)
    assert decision.status is SearchGateStatus.UNASSESSABLE
    assert decision.reason_code == "gate_unassessable_residuals_malformed"


@pytest.mark.obligation("ADR-0226/9.9", "ADR-0227/13.5")
@given(garbage, garbage)
def test_budget_is_unassessable_on_garbage(gate, policy):
    for decision in (decide_compute_budget(gate), decide_compute_budget(CHAIN.gate, policy)):
        assert type(decision) is ComputeBudgetDecision
        assert decision.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
        assert (
            decision.max_candidates,
            decision.max_depth,
            decision.max_steps,
            decision.max_parallelism,
        ) == (0, 0, 0, 0)


@pytest.mark.obligation("ADR-0226/9.9")
@given(garbage, st.integers(0, 3))
def test_open_search_run_refuses_garbage_in_any_position(value, position):
    args = [CHAIN.search_input, CHAIN.gate, CHAIN.budget, EMPTY_OPERATOR_SET]
    args[position] = value
    refusal = open_search_run(*args)
    assert type(refusal) is SearchRunRefusal
    expected = RunDisposition.NOT_STARTED if value is None else RunDisposition.INVALID_INPUT
    assert refusal.run_disposition is expected


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0004/record_attempts_checks")
@given(garbage, garbage, garbage)
def test_record_attempts_refuses_garbage(opened, operator_set, attempts):
    refusal = record_attempts(opened, operator_set, attempts)
    assert type(refusal) is SearchRunRefusal
    assert refusal.reason_codes == ("opened_run_malformed",)


def _outcomes(kind: str, broken: object) -> tuple[object, ...]:
    if kind == "frame":
        return (assess(broken),)
    if kind == "assessment":
        return (
            project_residuals(broken),
            check_proof(CHAIN.frame, broken),
            decide_search_gate(broken, CHAIN.residuals),
        )
    if kind == "gate":
        return (
            decide_compute_budget(broken),
            open_search_run(CHAIN.search_input, broken, CHAIN.budget),
        )
    if kind == "budget":
        return (open_search_run(CHAIN.search_input, CHAIN.gate, broken),)
    return (open_search_run(broken, CHAIN.gate, CHAIN.budget),)


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0003/stages_reinspect")
@pytest.mark.parametrize(
    "kind, field",
    [
        (kind, field.name)
        for kind in ("frame", "assessment", "gate", "budget", "search_input")
        for field in dataclasses.fields(getattr(CHAIN, kind))
    ],
)
def test_hostile_field_values_are_refused_not_raised(kind, field):
    """Any field holding an object whose every operation raises, or one whose class claims to
    equal every class, is a typed refusal."""
    record = getattr(CHAIN, kind)
    outcomes = [
        result
        for hostile in (Hostile(), Impostor())
        for result in _outcomes(kind, tampered(record, **{field: hostile}))
    ]
    for result in outcomes:
        assert type(result) in {
            StageRefusal,
            SearchGateDecision,
            ComputeBudgetDecision,
            SearchRunRefusal,
        }
        if type(result) is SearchGateDecision:
            assert result.status is SearchGateStatus.UNASSESSABLE
        if type(result) is ComputeBudgetDecision:
            assert result.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE
