"""``search_gate.v1``: ``decide_search_gate`` and the ``SearchGateDecision`` record.

Proves ADR-0226 §7B / §8.3 and the gate fields of ADR-0227 §4, with the rule order of
ARCHITECTURE "Gate policy search_gate.v1" (first match wins). Every expected reason, status and
identity is written out here or recomputed by ``practice_strategies.oracle``; none is read back
from the kernel's own helpers. A decision taken under no named policy is the version in
force's (a proven successor may have been adopted): its status is the one that version's table
gives, and the same context decided under ``SEARCH_GATE_V1`` gets v1's status written out here.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from practice_loop.harness.catalogue.forging import UNREGISTERED_GATE_VERSION
from practice_loop.kernel import (
    AssessmentStatus,
    Blocker,
    BlockerCode,
    ContractAssessment,
    ContractResidual,
    Defect,
    GateReason,
    RecordError,
    ResidualKind,
    Role,
    SearchGateDecision,
    SearchGateStatus,
    SourceSpan,
    canonical_json,
    decide_search_gate,
    project_residuals,
)
from practice_loop.kernel.gate import (
    GATE_STATUS_BY_REASON,
    SEARCH_GATE_IN_FORCE,
    SEARCH_GATE_V1,
    SearchGatePolicy,
    gate_input_digest,
)
from practice_strategies import (
    ALL_ROLES,
    FRAME_RECIPES,
    Chain,
    Impostor,
    build_chain,
    chains,
    digests,
    eligible_chains,
    fields_for_sealing,
    oracle,
    other_digest,
    resealed,
    share,
    spans,
    tampered,
)

ORGAN = "unary_delta_transition"


def _by_value(reasons: Any) -> list[GateReason]:
    return sorted(reasons, key=lambda reason: reason.value)


def _ids(residuals: Any) -> tuple[str, ...]:
    return tuple(residual.residual_id for residual in residuals)


def _input_digest(assessment: Any | None, residual_ids: tuple[str, ...]) -> str:
    """docs/adr/0002 ``search_gate_input.v1`` from the context itself: an assessment that
    failed validation enters as ``None``, malformed residuals contribute no id."""
    return oracle.gate_input_digest(
        SimpleNamespace(
            problem_frame_digest=None if assessment is None else assessment.problem_frame_digest,
            contract_assessment_id=None if assessment is None else assessment.assessment_id,
            residual_ids=residual_ids,
        )
    )


def _assert_sealed(decision: Any, version: str = SEARCH_GATE_IN_FORCE.version) -> None:
    """A complete, well-formed record, decided under ``version`` (by default the version in
    force), whose identities the oracle reproduces."""
    assert type(decision) is SearchGateDecision
    assert decision.find_defect() is None
    assert decision.policy_version == version
    assert decision.decision_id == oracle.gate_decision_id(decision)
    assert decision.input_digest == oracle.gate_input_digest(decision)
    assert decision.allowed is (decision.status is SearchGateStatus.ELIGIBLE)


# ADR-0226 §7B as refined by ARCHITECTURE "Gate policy search_gate.v1": rule order, code, status.
RULES: list[tuple[GateReason, str, SearchGateStatus]] = [
    (
        GateReason.POLICY_UNSUPPORTED,
        "gate_unassessable_policy_unsupported",
        SearchGateStatus.UNASSESSABLE,
    ),
    (
        GateReason.ASSESSMENT_MALFORMED,
        "gate_unassessable_assessment_malformed",
        SearchGateStatus.UNASSESSABLE,
    ),
    (
        GateReason.RESIDUALS_MALFORMED,
        "gate_unassessable_residuals_malformed",
        SearchGateStatus.UNASSESSABLE,
    ),
    (
        GateReason.RESIDUAL_CONTEXT_MISMATCH,
        "gate_unassessable_residual_context_mismatch",
        SearchGateStatus.UNASSESSABLE,
    ),
    (GateReason.ASSESSMENT_RUNNABLE, "gate_blocked_assessment_runnable", SearchGateStatus.BLOCKED),
    (GateReason.NO_RESIDUAL, "gate_unassessable_no_residual", SearchGateStatus.UNASSESSABLE),
    (
        GateReason.UNCLASSIFIED_RESIDUAL,
        "gate_ineligible_unclassified_residual",
        SearchGateStatus.INELIGIBLE,
    ),
    (
        GateReason.MULTIPLE_RESIDUALS,
        "gate_ineligible_multiple_residuals",
        SearchGateStatus.INELIGIBLE,
    ),
    (
        GateReason.RESIDUAL_WITHOUT_EVIDENCE,
        "gate_blocked_residual_without_evidence",
        SearchGateStatus.BLOCKED,
    ),
    (GateReason.ELIGIBLE_MISSING_ROLE, "eligible_missing_role", SearchGateStatus.ELIGIBLE),
    (GateReason.ELIGIBLE_MISSING_RELATION, "eligible_missing_relation", SearchGateStatus.ELIGIBLE),
    (GateReason.ELIGIBLE_MISSING_PROPOSAL, "eligible_missing_proposal", SearchGateStatus.ELIGIBLE),
    (GateReason.ELIGIBLE_TARGET_UNBOUND, "eligible_target_unbound", SearchGateStatus.ELIGIBLE),
]


# The status each reason carries under search_gate.v1 (RULES), and under the gate in force.
V1_STATUS = {reason: status for reason, _, status in RULES}
IN_FORCE_STATUS = {row.reason: row.status for row in SEARCH_GATE_IN_FORCE.reason_statuses}


def _assert_v1_decides(assessment: Any, residuals: Any, default: SearchGateDecision) -> None:
    """The context ``default`` was decided on, decided under search_gate.v1 named explicitly:
    the same reason and context, with v1's status."""
    v1 = decide_search_gate(assessment, residuals, SEARCH_GATE_V1)
    _assert_sealed(v1, "search_gate.v1")
    reason = GateReason(default.reason_code)
    assert (v1.reason_code, v1.status) == (reason.value, V1_STATUS[reason])
    assert (v1.input_digest, v1.residual_ids) == (default.input_digest, default.residual_ids)


@pytest.mark.obligation("LOCAL-0002/rule_order")
def test_reason_vocabulary_is_closed_and_in_rule_order() -> None:
    """ADR-0226 §7B: the closed reason set, each with the one status it carries, in rule order."""
    assert [(r, r.value, GATE_STATUS_BY_REASON[r]) for r in GateReason] == RULES
    assert set(GATE_STATUS_BY_REASON) == set(GateReason)
    assert [s.value for s in SearchGateStatus] == [
        "ELIGIBLE",
        "INELIGIBLE",
        "BLOCKED",
        "UNASSESSABLE",
    ]


# --------------------------------------------------------------------------------------------
# Every reason a frame can reach


@pytest.mark.obligation(
    "LOCAL-0002/rule_4",
    "LOCAL-0002/rule_6",
    "LOCAL-0002/rule_7",
    "LOCAL-0002/rule_8",
    "LOCAL-0002/rule_9",
    "LOCAL-0002/input_digest",
    "LOCAL-0002/decision_fields",
    "LOCAL-0002/disposition",
)
@pytest.mark.parametrize("reason", _by_value(FRAME_RECIPES), ids=lambda r: r.value)
@share(6)
@given(data=st.data())
def test_frame_reachable_reason(reason: GateReason, data: st.DataObject) -> None:
    """ADR-0226 §7B: each frame-reachable context gets exactly its reason, status and identity."""
    chain: Chain = data.draw(chains(reason))
    gate, assessment, residuals = chain.gate, chain.assessment, chain.residuals
    _assert_sealed(gate)
    assert gate.reason_code == reason.value
    assert gate.status is IN_FORCE_STATUS[reason]
    _assert_v1_decides(assessment, residuals, gate)
    assert gate.input_digest == _input_digest(assessment, _ids(residuals))
    assert gate.problem_frame_digest == oracle.problem_frame_digest(chain.frame)
    assert gate.contract_assessment_id == assessment.assessment_id
    assert gate.candidate_organ == ORGAN
    assert gate.residual_ids == _ids(residuals)
    assert gate.evidence_spans == tuple(s for r in residuals for s in r.evidence_spans)
    if gate.status is SearchGateStatus.ELIGIBLE:
        assert len(gate.residual_ids) == 1
        (residual,) = residuals
        assert gate.residual_ids == (residual.residual_id,)
        assert gate.evidence_spans == residual.evidence_spans != ()
        assert gate.reason_code == f"eligible_{residual.kind.value}"
    else:
        assert not gate.allowed


# --------------------------------------------------------------------------------------------
# Unassessable contexts: each corruption and the exact reason it must cause


class _TupleSubclass(tuple):
    """A tuple by ``isinstance`` but not by exact type."""


def _refused_without_blockers(chain: Chain, other: Chain | None) -> tuple[Any, Any]:
    assessment = ContractAssessment.sealed(
        **fields_for_sealing(
            chain.assessment,
            status=AssessmentStatus.REFUSED,
            blockers=(),
            explanation="refused by another producer, no blocker given",
        )
    )
    return assessment, ()


def _other_residuals(chain: Chain, other: Chain | None) -> tuple[Any, Any]:
    assert other is not None
    assume(_ids(other.residuals) != _ids(chain.residuals))
    return chain.assessment, other.residuals


def _forged_residual(chain: Chain, other: Chain | None) -> tuple[Any, Any]:
    (residual,) = chain.residuals
    spans_twice = residual.evidence_spans + residual.evidence_spans[:1]
    return chain.assessment, (resealed(residual, evidence_spans=spans_twice),)


E = GateReason.ELIGIBLE_MISSING_ROLE
M = GateReason.MULTIPLE_RESIDUALS
R = GateReason.ASSESSMENT_RUNNABLE
A_BAD = GateReason.ASSESSMENT_MALFORMED
R_BAD = GateReason.RESIDUALS_MALFORMED
MISMATCH = GateReason.RESIDUAL_CONTEXT_MISMATCH
Corruption = Callable[[Chain, "Chain | None"], tuple[Any, Any]]


def case(
    name: str,
    chain_reason: GateReason,
    corrupt: Corruption,
    expected: GateReason,
    *,
    assessment_valid: bool = True,
    residuals_valid: bool = True,
    needs_other: bool = False,
) -> Any:
    """One labelled corruption: the chain it starts from, what it does, the reason it causes,
    and which parts of the context stay valid (and so enter ``input_digest``)."""
    values = (chain_reason, needs_other, corrupt, expected, assessment_valid, residuals_valid)
    return pytest.param(*values, id=name)


def _runnable_is_tampered(c: Chain, o: Chain | None) -> tuple[Any, Any]:
    return resealed(c.assessment, status=AssessmentStatus.RUNNABLE), c.residuals


def _frame_digest_changed(c: Chain, o: Chain | None) -> tuple[Any, Any]:
    digest = other_digest(c.assessment.problem_frame_digest)
    return tampered(c.assessment, problem_frame_digest=digest), c.residuals


def _blocker_index_tampered(c: Chain, o: Chain | None) -> tuple[Any, Any]:
    moved = tampered(c.residuals[1], blocker_index=0)
    return c.assessment, c.residuals[:1] + (moved,) + c.residuals[2:]


CORRUPTIONS = [
    case("assessment_is_none", E, lambda c, o: (None, c.residuals), A_BAD, assessment_valid=False),
    case(
        "assessment_is_the_frame",
        E,
        lambda c, o: (c.frame, c.residuals),
        A_BAD,
        assessment_valid=False,
    ),
    case(
        "assessment_is_a_residual",
        E,
        lambda c, o: (c.residuals[0], c.residuals),
        A_BAD,
        assessment_valid=False,
    ),
    case(
        "assessment_status_is_a_string",
        E,
        lambda c, o: (tampered(c.assessment, status="refused"), c.residuals),
        A_BAD,
        assessment_valid=False,
    ),
    case(
        "assessment_blockers_are_a_list",
        E,
        lambda c, o: (tampered(c.assessment, blockers=list(c.assessment.blockers)), c.residuals),
        A_BAD,
        assessment_valid=False,
    ),
    case(
        "assessment_frame_digest_changed", E, _frame_digest_changed, A_BAD, assessment_valid=False
    ),
    case(
        "assessment_resealed_runnable_with_blockers",
        E,
        _runnable_is_tampered,
        A_BAD,
        assessment_valid=False,
    ),
    case(
        "assessment_and_residuals_both_malformed",
        E,
        lambda c, o: (None, list(c.residuals)),
        A_BAD,
        assessment_valid=False,
        residuals_valid=False,
    ),
    case("residuals_are_none", E, lambda c, o: (c.assessment, None), R_BAD, residuals_valid=False),
    case(
        "residuals_are_a_list",
        M,
        lambda c, o: (c.assessment, list(c.residuals)),
        R_BAD,
        residuals_valid=False,
    ),
    case(
        "residuals_are_a_tuple_subclass",
        E,
        lambda c, o: (c.assessment, _TupleSubclass(c.residuals)),
        R_BAD,
        residuals_valid=False,
    ),
    case(
        "residuals_hold_a_string",
        E,
        lambda c, o: (c.assessment, c.residuals + ("x",)),
        R_BAD,
        residuals_valid=False,
    ),
    case(
        "residuals_hold_the_assessment",
        E,
        lambda c, o: (c.assessment, (c.assessment,) + c.residuals),
        R_BAD,
        residuals_valid=False,
    ),
    case(
        "residual_kind_tampered",
        E,
        lambda c, o: (c.assessment, (tampered(c.residuals[0], kind=ResidualKind.UNCLASSIFIED),)),
        R_BAD,
        residuals_valid=False,
    ),
    case(
        "residual_blocker_index_tampered", M, _blocker_index_tampered, R_BAD, residuals_valid=False
    ),
    case("residuals_dropped_entirely", E, lambda c, o: (c.assessment, ()), MISMATCH),
    case("residuals_last_dropped", M, lambda c, o: (c.assessment, c.residuals[:-1]), MISMATCH),
    case("residuals_reordered", M, lambda c, o: (c.assessment, c.residuals[::-1]), MISMATCH),
    case(
        "residuals_rotated",
        M,
        lambda c, o: (c.assessment, c.residuals[1:] + c.residuals[:1]),
        MISMATCH,
    ),
    case("residual_duplicated", E, lambda c, o: (c.assessment, c.residuals * 2), MISMATCH),
    case("residuals_from_another_chain", E, _other_residuals, MISMATCH, needs_other=True),
    case("residual_forged_and_resealed", E, _forged_residual, MISMATCH),
    case("runnable_assessment_with_residuals", R, _other_residuals, MISMATCH, needs_other=True),
    case(
        "refused_assessment_without_blockers", M, _refused_without_blockers, GateReason.NO_RESIDUAL
    ),
]


@pytest.mark.obligation(
    "LOCAL-0002/rule_1",
    "LOCAL-0002/rule_2",
    "LOCAL-0002/rule_3",
    "LOCAL-0002/rule_5",
    "LOCAL-0002/complete_context",
)
@pytest.mark.parametrize(
    "chain_reason, needs_other, corrupt, expected, assessment_valid, residuals_valid",
    CORRUPTIONS,
)
@share(12)
@given(data=st.data())
def test_unassessable_context_is_a_sealed_decision(
    chain_reason: GateReason,
    needs_other: bool,
    corrupt: Corruption,
    expected: GateReason,
    assessment_valid: bool,
    residuals_valid: bool,
    data: st.DataObject,
) -> None:
    """ADR-0226 §7B: a malformed or inconsistent context is UNASSESSABLE with its exact code."""
    chain = data.draw(chains(chain_reason), label="chain")
    other = data.draw(eligible_chains(), label="other") if needs_other else None
    assessment, residuals = corrupt(chain, other)
    decision = decide_search_gate(assessment, residuals)
    _assert_sealed(decision)
    assert decision.reason_code == expected.value
    assert decision.status is SearchGateStatus.UNASSESSABLE
    assert not decision.allowed
    valid_assessment = assessment if assessment_valid else None
    valid_ids = _ids(residuals) if residuals_valid else ()
    assert decision.input_digest == _input_digest(valid_assessment, valid_ids)
    if assessment_valid:
        assert decision.problem_frame_digest == assessment.problem_frame_digest
        assert decision.contract_assessment_id == assessment.assessment_id
        assert decision.candidate_organ == ORGAN
    else:
        assert decision.problem_frame_digest is None
        assert decision.contract_assessment_id is None
        assert decision.candidate_organ is None
    assert decision.residual_ids == valid_ids
    valid_residuals = residuals if residuals_valid else ()
    assert decision.evidence_spans == tuple(s for r in valid_residuals for s in r.evidence_spans)


garbage = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=8),
    st.lists(st.integers() | st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
    st.tuples(st.integers() | st.none() | st.text(max_size=4)),
    st.from_type(type),
    spans(),
    st.builds(Impostor),
)
"""Values of every shape but the right one; never an empty tuple (a valid residual set)."""


@pytest.mark.obligation("LOCAL-0002/function", "LOCAL-0002/rule_1", "ADR-0226/9.9")
@given(assessment=garbage, residuals=garbage)
def test_garbage_never_raises(assessment: object, residuals: object) -> None:
    """ADR-0226 §7B: the gate always answers; garbage is ASSESSMENT_MALFORMED, never an error."""
    decision = decide_search_gate(assessment, residuals)  # type: ignore[arg-type]
    _assert_sealed(decision)
    assert decision.reason_code == GateReason.ASSESSMENT_MALFORMED.value
    assert decision.status is SearchGateStatus.UNASSESSABLE
    assert decision.input_digest == _input_digest(None, ())
    assert decision.residual_ids == () and decision.evidence_spans == ()


@pytest.mark.obligation("LOCAL-0002/rule_order", "LOCAL-0002/rule_1")
@share(6)
@given(chain=chains(), residuals=garbage)
def test_a_malformed_assessment_is_named_before_malformed_residuals(
    chain: Chain, residuals: object
) -> None:
    """docs/adr/0002: rule 1 (the assessment) is tried before rule 2 (the residuals), so a
    context with both malformed is ASSESSMENT_MALFORMED, whatever the residuals are."""
    forged = tampered(chain.assessment, assessment_id="0" * 64)
    for context in ((forged, residuals), (forged, (forged,)), (None, chain.residuals)):
        decision = decide_search_gate(*context)  # type: ignore[arg-type]
        _assert_sealed(decision)
        assert decision.reason_code == GateReason.ASSESSMENT_MALFORMED.value


@pytest.mark.obligation("LOCAL-0002/rule_2")
@share(6)
@given(chain=chains(), residuals=garbage)
def test_garbage_residuals_with_a_real_assessment(chain: Chain, residuals: object) -> None:
    """ADR-0226 §7B: a valid assessment with a garbage residual set is RESIDUALS_MALFORMED."""
    decision = decide_search_gate(chain.assessment, residuals)  # type: ignore[arg-type]
    _assert_sealed(decision)
    assert decision.reason_code == GateReason.RESIDUALS_MALFORMED.value
    assert decision.input_digest == _input_digest(chain.assessment, ())
    assert decision.contract_assessment_id == chain.assessment.assessment_id


# --------------------------------------------------------------------------------------------
# First match wins

SPAN = SourceSpan("seven", 4, 9, 0)


def _blocker(code: BlockerCode, *, evidence: bool = True, role: Role | None = None) -> Blocker:
    return Blocker(code, role, (SPAN,) if evidence else ())


# Blockers of a refused assessment (built directly) and the one reason search_gate.v1 gives.
ORDERING: list[tuple[str, tuple[Blocker, ...], GateReason]] = [
    ("no_blocker", (), GateReason.NO_RESIDUAL),
    (
        "hazard_and_unbound_roles",
        (
            _blocker(BlockerCode.HAZARD_RATE_OR_RATIO),
            _blocker(BlockerCode.INITIAL_UNBOUND, role=Role.INITIAL),
            _blocker(BlockerCode.DELTA_UNBOUND, role=Role.DELTA),
        ),
        GateReason.UNCLASSIFIED_RESIDUAL,
    ),
    (
        "unbound_role_then_hazard",
        (
            _blocker(BlockerCode.TARGET_UNBOUND, role=Role.TARGET),
            _blocker(BlockerCode.HAZARD_MULTIPLE_ENTITIES),
        ),
        GateReason.UNCLASSIFIED_RESIDUAL,
    ),
    (
        "hazard_without_evidence",
        (_blocker(BlockerCode.HAZARD_MULTIPLE_CHANGES, evidence=False),),
        GateReason.UNCLASSIFIED_RESIDUAL,
    ),
    (
        "proposal_ambiguous",
        (_blocker(BlockerCode.PROPOSAL_AMBIGUOUS),),
        GateReason.UNCLASSIFIED_RESIDUAL,
    ),
    (
        "relation_unsupported",
        (_blocker(BlockerCode.RELATION_UNSUPPORTED),),
        GateReason.UNCLASSIFIED_RESIDUAL,
    ),
    (
        "two_residuals_without_evidence",
        (
            _blocker(BlockerCode.PROPOSAL_MISSING, evidence=False),
            _blocker(BlockerCode.TARGET_UNBOUND, evidence=False, role=Role.TARGET),
        ),
        GateReason.MULTIPLE_RESIDUALS,
    ),
    (
        "same_kind_twice",
        (
            _blocker(BlockerCode.INITIAL_UNBOUND, role=Role.INITIAL),
            _blocker(BlockerCode.DELTA_UNBOUND, role=Role.DELTA),
        ),
        GateReason.MULTIPLE_RESIDUALS,
    ),
    (
        "one_residual_without_evidence",
        (_blocker(BlockerCode.DIRECTION_UNBOUND, evidence=False, role=Role.DIRECTION),),
        GateReason.RESIDUAL_WITHOUT_EVIDENCE,
    ),
    (
        "initial_unbound",
        (_blocker(BlockerCode.INITIAL_UNBOUND, role=Role.INITIAL),),
        GateReason.ELIGIBLE_MISSING_ROLE,
    ),
    (
        "delta_unbound",
        (_blocker(BlockerCode.DELTA_UNBOUND, role=Role.DELTA),),
        GateReason.ELIGIBLE_MISSING_ROLE,
    ),
    (
        "direction_unbound",
        (_blocker(BlockerCode.DIRECTION_UNBOUND, role=Role.DIRECTION),),
        GateReason.ELIGIBLE_MISSING_ROLE,
    ),
    ("unit_mismatch", (_blocker(BlockerCode.UNIT_MISMATCH),), GateReason.ELIGIBLE_MISSING_RELATION),
    (
        "proposal_missing",
        (_blocker(BlockerCode.PROPOSAL_MISSING),),
        GateReason.ELIGIBLE_MISSING_PROPOSAL,
    ),
    (
        "target_unbound",
        (_blocker(BlockerCode.TARGET_UNBOUND, role=Role.TARGET),),
        GateReason.ELIGIBLE_TARGET_UNBOUND,
    ),
]


def _refused(blockers: tuple[Blocker, ...]) -> ContractAssessment:
    return ContractAssessment.sealed(
        schema_version="contract_assessment.v1",
        organ=ORGAN,
        organ_version="unary_delta_transition.v1",
        problem_frame_digest="ab" * 32,
        status=AssessmentStatus.REFUSED,
        blockers=blockers,
        explanation="refused",
    )


@pytest.mark.obligation("LOCAL-0002/rule_order")
@pytest.mark.parametrize(
    "blockers, expected", [case[1:] for case in ORDERING], ids=[case[0] for case in ORDERING]
)
def test_first_match_wins_over_built_assessments(
    blockers: tuple[Blocker, ...], expected: GateReason
) -> None:
    """ADR-0226 §7B rule order: unclassified > multiple > no evidence > eligible kind."""
    assessment = _refused(blockers)
    residuals = project_residuals(assessment)
    assert type(residuals) is tuple
    decision = decide_search_gate(assessment, residuals)
    _assert_sealed(decision)
    assert decision.reason_code == expected.value
    assert decision.status is IN_FORCE_STATUS[expected]
    assert decision.residual_ids == _ids(residuals)
    _assert_v1_decides(assessment, residuals, decision)


@pytest.mark.obligation("LOCAL-0002/rule_order", "LOCAL-0002/rule_6")
@share(6)
@given(
    chain=chains(
        GateReason.UNCLASSIFIED_RESIDUAL,
        hazard_count=1,
        proposal_count=1,
        with_target=True,
        bound_roles={Role.INITIAL},
    )
)
def test_hazard_with_several_residuals_is_unclassified(chain: Chain) -> None:
    """ADR-0226 §7B: a hazard AND several residuals is UNCLASSIFIED_RESIDUAL, not MULTIPLE."""
    kinds = [residual.kind for residual in chain.residuals]
    assert len(kinds) > 1
    assert ResidualKind.UNCLASSIFIED in kinds
    assert any(kind is not ResidualKind.UNCLASSIFIED for kind in kinds)
    assert chain.gate.reason_code == GateReason.UNCLASSIFIED_RESIDUAL.value
    assert chain.gate.status is IN_FORCE_STATUS[GateReason.UNCLASSIFIED_RESIDUAL]
    _assert_v1_decides(chain.assessment, chain.residuals, chain.gate)


@pytest.mark.obligation("LOCAL-0002/rule_6", "ADR-0226/9.12")
@share(6)
@given(
    chain=chains(
        GateReason.ASSESSMENT_RUNNABLE, hazard_count=1, bound_roles=ALL_ROLES, units_agree=True
    )
)
def test_lone_hazard_on_an_otherwise_runnable_frame_is_unclassified(chain: Chain) -> None:
    """ADR-0226 §7B: an unclassified fallback residual is never implicitly searchable."""
    (residual,) = chain.residuals
    assert residual.kind is ResidualKind.UNCLASSIFIED
    assert chain.gate.reason_code == GateReason.UNCLASSIFIED_RESIDUAL.value
    assert not chain.gate.allowed


# --------------------------------------------------------------------------------------------
# Identity, determinism, explanation exclusion, span order, non-mutation


@pytest.mark.obligation("ADR-0226/9.2")
@share(4)
@given(chain=chains())
def test_determinism_same_inputs_same_bytes(chain: Chain) -> None:
    """ADR-0226 §9: the same context gives the same decision, byte for byte."""
    first = decide_search_gate(chain.assessment, chain.residuals)
    second = decide_search_gate(chain.assessment, chain.residuals)
    again = build_chain(chain.frame).gate
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert canonical_json(first.to_json()) == canonical_json(again.to_json())
    assert canonical_json(first.to_json()) == canonical_json(chain.gate.to_json())
    assert first == second == again


@pytest.mark.obligation("LOCAL-0002/decision_fields")
@share(4)
@given(chain=chains(), prose=st.text(max_size=40))
def test_explanations_never_change_decision_id(chain: Chain, prose: str) -> None:
    """ADR-0227 §7 (excluded fields) applied upstream: prose never enters decision_id."""
    assessment = tampered(chain.assessment, explanation=prose)
    residuals = tuple(tampered(r, explanation=prose) for r in chain.residuals)
    decision = decide_search_gate(assessment, residuals)
    assert decision.decision_id == chain.gate.decision_id
    assert decision.input_digest == chain.gate.input_digest
    reworded = tampered(chain.gate, explanation=prose)
    assert reworded.find_defect() is None
    assert reworded.compute_id() == chain.gate.decision_id
    assert oracle.gate_decision_id(reworded) == chain.gate.decision_id


@pytest.mark.obligation("LOCAL-0002/decision_fields")
@share(4)
@given(chain=chains(GateReason.ELIGIBLE_MISSING_RELATION), extra=spans())
def test_span_order_and_duplicates_change_decision_id(chain: Chain, extra: SourceSpan) -> None:
    """ADR-0227 §7.11: evidence spans are ordered; reordering or duplicating changes the id."""
    gate = chain.gate
    (residual,) = chain.residuals
    assert gate.evidence_spans == residual.evidence_spans  # preserved as given
    spans_ = gate.evidence_spans
    assume(spans_[::-1] != spans_)
    variants = [spans_[::-1], spans_ + spans_[:1], spans_[:1] + spans_, spans_ + (extra,)]
    ids = {gate.decision_id}
    for variant in variants:
        moved = resealed(gate, evidence_spans=variant)
        assert moved.find_defect() is None
        assert moved.decision_id == oracle.gate_decision_id(moved)
        ids.add(moved.decision_id)
    assert len(ids) == 1 + len(variants)


@pytest.mark.obligation("ADR-0226/8.3")
@share(4)
@given(chain=chains())
def test_inputs_are_not_mutated(chain: Chain) -> None:
    """ADR-0226 §7B: the gate does not mutate the assessment or the residuals it reads."""
    residuals = chain.residuals
    before = canonical_json([chain.assessment.to_json(), [r.to_json() for r in residuals]])
    as_list = list(residuals)
    decide_search_gate(chain.assessment, residuals)
    decide_search_gate(chain.assessment, as_list)  # type: ignore[arg-type]
    after = canonical_json([chain.assessment.to_json(), [r.to_json() for r in residuals]])
    assert before == after
    assert as_list == list(residuals)
    assert all(type(r) is ContractResidual for r in as_list)


# --------------------------------------------------------------------------------------------
# Record cross checks


@pytest.mark.obligation("LOCAL-0002/record_invariants")
@share(6)
@given(chain=chains(), status=st.sampled_from(SearchGateStatus))
def test_known_reason_with_another_status_is_refused(
    chain: Chain, status: SearchGateStatus
) -> None:
    """ADR-0226 §7B: a known reason fixes the status; a disagreeing record cannot be built."""
    assume(status is not chain.gate.status)
    with pytest.raises(RecordError) as raised:
        SearchGateDecision.sealed(**fields_for_sealing(chain.gate, status=status))
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS
    assert raised.value.found.field == "status"


@pytest.mark.obligation("LOCAL-0002/record_invariants")
@share(6)
@given(
    chain=eligible_chains(), second=digests, reason=st.sampled_from(["eligible_unknown_kind", None])
)
def test_eligible_needs_exactly_one_residual(chain: Chain, second: str, reason: str | None) -> None:
    """ADR-0226 §7B: an ELIGIBLE decision names exactly one residual; zero or two is refused."""
    own = chain.gate.residual_ids
    code = reason or chain.gate.reason_code
    for residual_ids in ((), own + (second,), own * 2):
        with pytest.raises(RecordError) as raised:
            SearchGateDecision.sealed(
                **fields_for_sealing(chain.gate, residual_ids=residual_ids, reason_code=code)
            )
        assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS
        assert raised.value.found.field == "residual_ids"
    for missing in (
        {"candidate_organ": None},
        {"contract_assessment_id": None},
        {"evidence_spans": ()},
    ):
        with pytest.raises(RecordError) as raised:
            SearchGateDecision.sealed(**fields_for_sealing(chain.gate, reason_code=code, **missing))
        assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0002/input_digest", "ADR-0226/9.11")
@share(6)
@given(chain=chains(), other=digests)
def test_forged_input_digest_is_refused(chain: Chain, other: str) -> None:
    """docs/adr/0002 (ADR-0228 §6): input_digest must reproduce from the decision's fields."""
    gate = chain.gate
    assume(other != gate.input_digest)
    forgeries = [
        {"input_digest": other},
        {"problem_frame_digest": other_digest(gate.problem_frame_digest)},
        {"contract_assessment_id": other_digest(gate.contract_assessment_id)},
    ]
    if not gate.allowed:
        forgeries.append({"residual_ids": gate.residual_ids[::-1] + (other,)})
    for forgery in forgeries:
        with pytest.raises(RecordError) as raised:
            SearchGateDecision.sealed(**fields_for_sealing(gate, **forgery))
        assert raised.value.found.field == "input_digest"
        assert raised.value.found.defect is Defect.IDENTITY_MISMATCH


@pytest.mark.obligation("LOCAL-0002/record_invariants")
@share(6)
@given(
    chain=chains(),
    blank=st.sampled_from(["problem_frame_digest", "contract_assessment_id", "candidate_organ"]),
)
def test_assessment_fields_are_all_set_or_all_none(chain: Chain, blank: str) -> None:
    """docs/adr/0002: frame digest, assessment id and organ come together from the assessment."""
    with pytest.raises(RecordError) as raised:
        SearchGateDecision.sealed(**fields_for_sealing(chain.gate, **{blank: None}))
    assert raised.value.found.defect is Defect.INCONSISTENT_FIELDS


@pytest.mark.obligation("LOCAL-0002/record_invariants", "ADR-0227/8.eligible_unknown_code")
@share(6)
@given(chain=eligible_chains(), status=st.sampled_from(SearchGateStatus))
def test_unknown_well_formed_reason_is_representable(
    chain: Chain, status: SearchGateStatus
) -> None:
    """ADR-0227 §8 (unknown-code row): a well-formed reason the policy lacks stays a record."""
    code = f"{status.value.lower()}_unknown_kind"
    decision = SearchGateDecision.sealed(
        **fields_for_sealing(chain.gate, status=status, reason_code=code)
    )
    _assert_sealed(decision)
    assert decision.reason_code == code
    assert decision.status is status
    with pytest.raises(RecordError) as raised:
        SearchGateDecision.sealed(**fields_for_sealing(chain.gate, reason_code="Eligible-Kind"))
    assert raised.value.found.defect is Defect.CODE_MALFORMED


@pytest.mark.obligation("LOCAL-0002/input_digest")
@given(
    st.none() | digests | st.text(max_size=70),
    st.none() | digests | st.text(max_size=70),
    st.lists(digests | st.text(max_size=70), max_size=4).map(tuple),
)
def test_input_digest_is_the_hash_of_its_canonical_payload(frame_digest, assessment_id, ids):
    """The input digest of a context of digests is written from a template; it, and that of
    any other context, is SHA-256 of the canonical JSON of the payload (the oracle's own
    encoder, not the kernel's)."""
    payload = {
        "schema_version": "search_gate_input.v1",
        "problem_frame_digest": frame_digest,
        "contract_assessment_id": assessment_id,
        "residual_ids": list(ids),
    }
    assert gate_input_digest(frame_digest, assessment_id, ids) == oracle.digest_of(payload)


# --------------------------------------------------------------------------------------------
# What a refused decision explains (issue 17: survivors of the kernel's mutation score)


@given(chains(GateReason.ELIGIBLE_MISSING_ROLE))
def test_the_explanation_names_the_assessments_defect_before_the_residuals(chain: Chain):
    """When both the assessment and the residuals are malformed, the decision is
    assessment_malformed and its explanation names the assessment's defect, not theirs."""
    assessment = tampered(chain.assessment, assessment_id="0" * 64)
    residuals = (tampered(chain.residuals[0], residual_id="1" * 64),)
    decision = decide_search_gate(assessment, residuals)
    assert decision.reason_code == GateReason.ASSESSMENT_MALFORMED.value
    assert "ContractAssessment.assessment_id" in decision.explanation
    assert "ContractResidual" not in decision.explanation


def _policy_claiming(claimed: str) -> SearchGatePolicy:
    """A SearchGatePolicy whose version is ``claimed``, never validated (built as a forger
    would, slot by slot)."""
    forged = SearchGatePolicy.__new__(SearchGatePolicy)
    object.__setattr__(forged, "version", claimed)
    return forged


_UNREGISTERED = {
    "unregistered-version": (
        SearchGatePolicy(
            UNREGISTERED_GATE_VERSION,
            SEARCH_GATE_V1.reason_statuses,
            SEARCH_GATE_V1.eligible_reasons,
        ),
        UNREGISTERED_GATE_VERSION,
    ),
    "not-a-policy": (SimpleNamespace(version="search_gate.v9"), ""),  # nothing is read of it
    "class-equal-to-every-class": (Impostor(version="search_gate.v9"), ""),
    "policy-without-version": (SearchGatePolicy.__new__(SearchGatePolicy), ""),
    "policy-with-a-malformed-version": (_policy_claiming("search gate two"), ""),
}


@pytest.mark.parametrize("case", sorted(_UNREGISTERED))
@given(chain=chains(GateReason.ELIGIBLE_MISSING_ROLE))
def test_an_unregistered_policy_is_named_only_by_a_version_it_well_formedly_claims(
    case: str, chain: Chain
):
    """docs/adr/0002 "Policy as a value": an unregistered policy decides nothing, and the
    refusal names the version it claims only when it is a SearchGatePolicy whose version is
    well formed; of any other object nothing is read."""
    policy, named = _UNREGISTERED[case]
    decision = decide_search_gate(chain.assessment, chain.residuals, policy)
    assert decision.reason_code == GateReason.POLICY_UNSUPPORTED.value
    said = "not the registered gate policy" + (f" {named}" if named else "")
    assert decision.explanation.endswith(f"({said})")
