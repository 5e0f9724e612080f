"""The gate's tables as a versioned, immutable value: ``SearchGatePolicy`` (issue 8).

Proves docs/adr/0002 "Policy as a value": construction refuses every table that breaks a rule
of the gate (ADR-0226 §7B, ADR-0227 §4-§5, §8, docs/adr/0001) with its exact field and defect;
``policy_id`` is the table's canonical identity; a registered candidate version changes the
decisions and every identity downstream; an unregistered or malformed policy decides nothing
and fails closed; and the version in force (``search_gate.v1`` until a proven successor is
adopted) is what the gate uses when no policy is named.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import types
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.catalogue.forging import UNREGISTERED_GATE_VERSION
from practice_loop.kernel import (
    COMPUTE_BUDGET_V1,
    ComputeBudgetStatus,
    Defect,
    GateReason,
    RecordError,
    ResidualKind,
    SearchGateDecision,
    SearchGateStatus,
    decide_compute_budget,
    decide_search_gate,
)
from practice_loop.kernel import gate as gate_module
from practice_loop.kernel.gate import (
    GATE_POLICIES,
    SEARCH_GATE_IN_FORCE,
    SEARCH_GATE_V1,
    EligibleReasonRow,
    GateReasonStatus,
    SearchGatePolicy,
    gate_reason_under,
    search_gate_reason,
)
from practice_strategies import (
    Chain,
    Impostor,
    chains,
    fields_for_sealing,
    oracle,
    share,
    tampered,
)

# search_gate.v1's canonical identity, written out: it moves only with a new version.
V1_POLICY_ID = "8a87867cc471ebe3a2273dab28462daf95a8443d74ddb7f4c295031b25988b5f"

ELIGIBLE, INELIGIBLE, BLOCKED, UNASSESSABLE = (
    SearchGateStatus.ELIGIBLE,
    SearchGateStatus.INELIGIBLE,
    SearchGateStatus.BLOCKED,
    SearchGateStatus.UNASSESSABLE,
)
# ADR-0227 §4-§5, docs/adr/0002 rules 0-3 and 5: what the gate could not assess.
FAIL_CLOSED = [
    GateReason.POLICY_UNSUPPORTED,
    GateReason.ASSESSMENT_MALFORMED,
    GateReason.RESIDUALS_MALFORMED,
    GateReason.RESIDUAL_CONTEXT_MISMATCH,
    GateReason.NO_RESIDUAL,
]
ELIGIBLE_REASONS = [r for r in GateReason if r.value.startswith("eligible_")]
# The reasons a policy may give any denying status.
DENIALS = [r for r in GateReason if r not in FAIL_CLOSED and r not in ELIGIBLE_REASONS]
SEARCHABLE = [k for k in ResidualKind if k is not ResidualKind.UNCLASSIFIED]
V1_STATUSES = {
    GateReason.POLICY_UNSUPPORTED: UNASSESSABLE,
    GateReason.ASSESSMENT_MALFORMED: UNASSESSABLE,
    GateReason.RESIDUALS_MALFORMED: UNASSESSABLE,
    GateReason.RESIDUAL_CONTEXT_MISMATCH: UNASSESSABLE,
    GateReason.ASSESSMENT_RUNNABLE: BLOCKED,
    GateReason.NO_RESIDUAL: UNASSESSABLE,
    GateReason.UNCLASSIFIED_RESIDUAL: INELIGIBLE,
    GateReason.MULTIPLE_RESIDUALS: INELIGIBLE,
    GateReason.RESIDUAL_WITHOUT_EVIDENCE: BLOCKED,
    **{reason: ELIGIBLE for reason in ELIGIBLE_REASONS},
}


def _policy(version: str = "search_gate.v1", **statuses: SearchGateStatus) -> SearchGatePolicy:
    """A policy from v1's statuses with ``statuses`` (by reason name) changed."""
    table = {**V1_STATUSES, **{GateReason[name]: status for name, status in statuses.items()}}
    return SearchGatePolicy(
        version,
        tuple(GateReasonStatus(reason, table[reason]) for reason in GateReason),
        tuple(EligibleReasonRow(kind, GateReason[f"ELIGIBLE_{kind.name}"]) for kind in SEARCHABLE),
    )


# The candidate: v1 with two denials changing class, nothing else, under a version no kernel
# registers (an adopted search_gate.v2 may already be).
V2 = _policy(
    UNREGISTERED_GATE_VERSION, MULTIPLE_RESIDUALS=BLOCKED, RESIDUAL_WITHOUT_EVIDENCE=INELIGIBLE
)


@contextlib.contextmanager
def registered(policy: SearchGatePolicy) -> Iterator[None]:
    """``policy`` registered for the block only: the kernel's registry is a read-only
    mapping, so the test puts a larger one in its place and puts the original back."""
    original = gate_module.GATE_POLICIES
    gate_module.GATE_POLICIES = types.MappingProxyType({**original, policy.version: policy})
    try:
        yield
    finally:
        gate_module.GATE_POLICIES = original


def _refusal(build: Any) -> tuple[str, str, Defect]:
    with pytest.raises(RecordError) as raised:
        build()
    found = raised.value.found
    return found.record, found.field, found.defect


def _content_digest(policy: SearchGatePolicy) -> str:
    """SHA-256 of the policy's JSON form in canonical bytes, computed here, not by the kernel."""
    text = json.dumps(policy.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# Construction: every rule of the tables, refused with its field and defect


def test_v1_is_the_adr_table_and_registered_with_it():
    """docs/adr/0002: search_gate.v1's value is the rule table, row for row, and this kernel
    registers v1 with exactly that value, and the gate in force under its own version."""
    assert SEARCH_GATE_V1.version == "search_gate.v1"
    assert {row.reason: row.status for row in SEARCH_GATE_V1.reason_statuses} == V1_STATUSES
    assert [row.reason for row in SEARCH_GATE_V1.reason_statuses] == list(GateReason)
    assert [(row.kind.value, row.reason.value) for row in SEARCH_GATE_V1.eligible_reasons] == [
        ("missing_role", "eligible_missing_role"),
        ("missing_relation", "eligible_missing_relation"),
        ("missing_proposal", "eligible_missing_proposal"),
        ("target_unbound", "eligible_target_unbound"),
    ]
    assert GATE_POLICIES["search_gate.v1"] == SEARCH_GATE_V1 == _policy()
    assert GATE_POLICIES[SEARCH_GATE_IN_FORCE.version] is SEARCH_GATE_IN_FORCE


@pytest.mark.parametrize("reason", ELIGIBLE_REASONS, ids=lambda r: r.value)
@pytest.mark.parametrize("status", [INELIGIBLE, BLOCKED, UNASSESSABLE], ids=lambda s: s.value)
def test_an_eligible_reason_is_only_eligible(reason, status):
    """ADR-0226 §7B, docs/adr/0002 rule 9: an ``eligible_`` reason carries ELIGIBLE only."""
    assert _refusal(lambda: GateReasonStatus(reason, status)) == (
        "GateReasonStatus",
        "status",
        Defect.INCONSISTENT_FIELDS,
    )


@pytest.mark.parametrize("reason", DENIALS + FAIL_CLOSED, ids=lambda r: r.value)
def test_no_other_reason_is_eligible(reason):
    """ADR-0226 §7B: only an ``eligible_`` reason may be ELIGIBLE (ADR-0227 §8 keys the budget
    on the code alone)."""
    assert _refusal(lambda: GateReasonStatus(reason, ELIGIBLE)) == (
        "GateReasonStatus",
        "status",
        Defect.INCONSISTENT_FIELDS,
    )


@pytest.mark.parametrize("reason", FAIL_CLOSED, ids=lambda r: r.value)
@pytest.mark.parametrize("status", [INELIGIBLE, BLOCKED], ids=lambda s: s.value)
def test_fail_closed_reasons_are_unassessable(reason, status):
    """ADR-0227 §4-§5: malformed input, a context mismatch, no residual and an unsupported
    policy are UNASSESSABLE under every policy."""
    assert _refusal(lambda: GateReasonStatus(reason, status)) == (
        "GateReasonStatus",
        "status",
        Defect.INCONSISTENT_FIELDS,
    )


@pytest.mark.parametrize("reason", DENIALS, ids=lambda r: r.value)
@pytest.mark.parametrize("status", [INELIGIBLE, BLOCKED, UNASSESSABLE], ids=lambda s: s.value)
def test_a_denial_may_carry_any_denying_status(reason, status):
    """docs/adr/0002 "Policy as a value": how a denial is classed is the policy's to choose."""
    assert GateReasonStatus(reason, status).status is status


def test_row_fields_are_enum_members():
    """docs/adr/0003: a bare code is not a member of the closed vocabulary."""
    assert _refusal(lambda: GateReasonStatus("eligible_missing_role", ELIGIBLE)) == (
        "GateReasonStatus",
        "reason",
        Defect.UNKNOWN_ENUM_VALUE,
    )
    assert _refusal(lambda: EligibleReasonRow(ResidualKind.MISSING_ROLE, None)) == (
        "EligibleReasonRow",
        "reason",
        Defect.WRONG_TYPE,
    )


def test_unclassified_never_maps():
    """docs/adr/0001: an unclassified residual is never searchable."""
    assert _refusal(
        lambda: EligibleReasonRow(ResidualKind.UNCLASSIFIED, GateReason.ELIGIBLE_MISSING_ROLE)
    ) == ("EligibleReasonRow", "kind", Defect.INCONSISTENT_FIELDS)


@pytest.mark.parametrize("kind", SEARCHABLE, ids=lambda k: k.value)
@pytest.mark.parametrize("reason", list(GateReason), ids=lambda r: r.value)
def test_a_kind_maps_to_its_own_eligible_reason(kind, reason):
    """ADR-0227 §4, §8 and ADR-0231 §7.3.7: a searchable kind's reason is ``eligible_<kind>``;
    a denial or another kind's reason is refused."""
    if reason.value == f"eligible_{kind.value}":
        assert EligibleReasonRow(kind, reason).reason is reason
    else:
        assert _refusal(lambda: EligibleReasonRow(kind, reason)) == (
            "EligibleReasonRow",
            "reason",
            Defect.INCONSISTENT_FIELDS,
        )


def _rows() -> tuple[list[GateReasonStatus], list[EligibleReasonRow]]:
    return list(SEARCH_GATE_V1.reason_statuses), list(SEARCH_GATE_V1.eligible_reasons)


def _with_statuses(rows: list[GateReasonStatus]) -> Any:
    return lambda: SearchGatePolicy("search_gate.v1", tuple(rows), SEARCH_GATE_V1.eligible_reasons)


def _with_kinds(rows: list[EligibleReasonRow]) -> Any:
    return lambda: SearchGatePolicy("search_gate.v1", SEARCH_GATE_V1.reason_statuses, tuple(rows))


def test_every_reason_exactly_once_in_rule_order():
    """docs/adr/0002: every GateReason has one status; the table follows rule order, so that
    equal tables have one canonical form and one id."""
    statuses, _ = _rows()
    policy = ("SearchGatePolicy", "reason_statuses")
    assert _refusal(_with_statuses([*statuses, statuses[4]])) == (*policy, Defect.DUPLICATE_ENTRY)
    assert _refusal(_with_statuses(statuses[:-1])) == (*policy, Defect.INCONSISTENT_FIELDS)
    assert _refusal(_with_statuses(statuses[1:])) == (*policy, Defect.INCONSISTENT_FIELDS)
    swapped = [statuses[1], statuses[0], *statuses[2:]]
    assert _refusal(_with_statuses(swapped)) == (*policy, Defect.INCONSISTENT_FIELDS)
    assert _refusal(_with_statuses([])) == (*policy, Defect.INCONSISTENT_FIELDS)


def test_every_searchable_kind_exactly_once_in_order():
    """docs/adr/0002 rule 9: every searchable kind has its eligible reason, once, in order."""
    _, kinds = _rows()
    policy = ("SearchGatePolicy", "eligible_reasons")
    assert _refusal(_with_kinds([*kinds, kinds[0]])) == (*policy, Defect.DUPLICATE_ENTRY)
    assert _refusal(_with_kinds(kinds[:-1])) == (*policy, Defect.INCONSISTENT_FIELDS)
    assert _refusal(_with_kinds(kinds[::-1])) == (*policy, Defect.INCONSISTENT_FIELDS)


def test_policy_fields_are_checked():
    """docs/adr/0003: a version is well formed, tables are exact tuples of well-formed rows;
    a row altered after construction is caught inside the policy."""
    statuses, kinds = _rows()
    assert _refusal(lambda: SearchGatePolicy("search gate v1", tuple(statuses), tuple(kinds))) == (
        "SearchGatePolicy",
        "version",
        Defect.VERSION_MALFORMED,
    )
    assert _refusal(lambda: SearchGatePolicy("search_gate.v1", statuses, tuple(kinds))) == (
        "SearchGatePolicy",
        "reason_statuses",
        Defect.SEQUENCE_NOT_TUPLE,
    )
    forged = tampered(statuses[5], status=ELIGIBLE)
    assert _refusal(_with_statuses([*statuses[:5], forged, *statuses[6:]])) == (
        "SearchGatePolicy",
        "reason_statuses",
        Defect.INCONSISTENT_FIELDS,
    )
    misnamed = tampered(kinds[0], reason=GateReason.ELIGIBLE_TARGET_UNBOUND)
    assert _refusal(_with_kinds([misnamed, *kinds[1:]])) == (
        "SearchGatePolicy",
        "eligible_reasons",
        Defect.INCONSISTENT_FIELDS,
    )


def test_a_policy_is_immutable():
    """Issue 8: a policy is a frozen value; an assignment is refused."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        SEARCH_GATE_V1.version = "search_gate.v2"  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# Identity


def test_policy_id_is_the_canonical_digest_and_stable():
    """Issue 8: ``policy_id`` is SHA-256 of the policy's canonical bytes, and v1's is pinned."""
    assert SEARCH_GATE_V1.policy_id == _content_digest(SEARCH_GATE_V1) == V1_POLICY_ID
    assert _policy().policy_id == V1_POLICY_ID


def _variants() -> list[SearchGatePolicy]:
    """v1, each denial given each other denying status, and each under another version."""
    found = [SEARCH_GATE_V1]
    for reason in DENIALS:
        for status in (INELIGIBLE, BLOCKED, UNASSESSABLE):
            if status is not V1_STATUSES[reason]:
                found.append(_policy(**{reason.name: status}))
    found += [_policy(version) for version in ("search_gate.v2", "search_gate.v10", "gate.v1")]
    return found


def test_any_table_or_version_change_changes_the_policy_id():
    """Issue 8: changing a table or the version changes the identity; every variant here has
    its own id, each the digest of its own bytes."""
    variants = _variants()
    ids = [policy.policy_id for policy in variants]
    assert len(set(ids)) == len(variants) == 1 + 2 * len(DENIALS) + 3
    assert ids == [_content_digest(policy) for policy in variants]


# --------------------------------------------------------------------------------------------
# A registered candidate changes decisions and every identity downstream


@pytest.mark.parametrize(
    ("reason", "v1_budget", "v2_status", "v2_budget"),
    [
        (
            GateReason.MULTIPLE_RESIDUALS,
            "budget_blocked_gate_ineligible",
            BLOCKED,
            "budget_blocked_gate_blocked",
        ),
        (
            GateReason.RESIDUAL_WITHOUT_EVIDENCE,
            "budget_blocked_gate_blocked",
            INELIGIBLE,
            "budget_blocked_gate_ineligible",
        ),
    ],
    ids=lambda value: value.value if isinstance(value, GateReason) else None,
)
@share(10)
@given(data=st.data())
def test_a_registered_candidate_changes_the_decision_downstream(
    reason, v1_budget, v2_status, v2_budget, data
):
    """Issue 8: under a registered candidate that classes a denial differently from v1, the
    gate's status, its ``decision_id`` and the budget's reason and ``budget_id`` all change;
    the reason and the residual context do not."""
    chain: Chain = data.draw(chains(reason))
    v1 = decide_search_gate(chain.assessment, chain.residuals, SEARCH_GATE_V1)
    v1_budget_decision = decide_compute_budget(v1)
    with registered(V2):
        v2 = decide_search_gate(chain.assessment, chain.residuals, V2)
        v2_budget_decision = decide_compute_budget(v2)
        assert v2.find_defect() is None
    assert (v1.status, v1_budget_decision.reason_code) == (V1_STATUSES[reason], v1_budget)
    assert (v1.policy_version, v2.policy_version) == ("search_gate.v1", V2.version)
    assert v2.status is v2_status
    assert v2.reason_code == reason.value
    assert v2.input_digest == v1.input_digest and v2.residual_ids == v1.residual_ids
    assert v2.decision_id == oracle.gate_decision_id(v2) != v1.decision_id
    assert v2_budget_decision.reason_code == v2_budget
    assert v2_budget_decision.gate_policy_version == V2.version
    assert v2_budget_decision.budget_id != v1_budget_decision.budget_id


@share(6)
@given(data=st.data())
def test_a_registered_candidate_moves_eligible_identities(data):
    """Issue 8: the version is part of every gate identity, so even where v2 grants what v1
    grants, the gate's ``decision_id`` and the budget's ``budget_id`` move with it."""
    reason = data.draw(st.sampled_from(ELIGIBLE_REASONS))
    chain: Chain = data.draw(chains(reason))
    with registered(V2):
        v2 = decide_search_gate(chain.assessment, chain.residuals, V2)
        budget = decide_compute_budget(v2)
    assert (v2.status, v2.reason_code) == (chain.gate.status, chain.gate.reason_code)
    assert v2.decision_id == oracle.gate_decision_id(v2) != chain.gate.decision_id
    assert budget.status is ComputeBudgetStatus.BUDGET_ALLOWED
    assert (budget.max_candidates, budget.max_steps) == (
        chain.budget.max_candidates,
        chain.budget.max_steps,
    )
    assert budget.budget_id != chain.budget.budget_id


@share(10)
@given(chain=chains(GateReason.MULTIPLE_RESIDUALS))
def test_a_decision_naming_its_policy_by_a_non_string_is_the_wrong_type(chain):
    """A decision's policy version is a registered version's string: a value whose class
    claims to equal every class (str among them) is WRONG_TYPE, not a malformed version."""
    gate = decide_search_gate(chain.assessment, chain.residuals)
    fields = fields_for_sealing(gate, policy_version=Impostor())
    assert _refusal(lambda: SearchGateDecision.sealed(**fields)) == (
        "SearchGateDecision",
        "policy_version",
        Defect.WRONG_TYPE,
    )


@share(10)
@given(chain=chains(GateReason.MULTIPLE_RESIDUALS))
def test_a_decision_validates_under_its_own_registered_policy(chain):
    """docs/adr/0002 "Record invariants": a known reason's status is the one the registered
    policy of the decision's version gives it; an unregistered version is unsupported."""
    v1_gate = decide_search_gate(chain.assessment, chain.residuals, SEARCH_GATE_V1)
    v1_fields = fields_for_sealing(v1_gate, policy_version=V2.version)
    assert _refusal(lambda: SearchGateDecision.sealed(**v1_fields)) == (
        "SearchGateDecision",
        "policy_version",
        Defect.VERSION_UNSUPPORTED,
    )
    with registered(V2):
        # v1's status for this reason is not v2's.
        assert _refusal(lambda: SearchGateDecision.sealed(**v1_fields)) == (
            "SearchGateDecision",
            "status",
            Defect.INCONSISTENT_FIELDS,
        )
        assert SearchGateDecision.sealed(**{**v1_fields, "status": BLOCKED}).status is BLOCKED


# --------------------------------------------------------------------------------------------
# An unregistered or malformed policy fails closed


def _unregistered() -> list[tuple[str, Any]]:
    return [
        ("candidate-not-registered", V2),
        ("v1-version-other-table", _policy(MULTIPLE_RESIDUALS=BLOCKED)),
        ("tampered-version", tampered(SEARCH_GATE_V1, version=1)),
        ("tampered-rows", tampered(SEARCH_GATE_V1, eligible_reasons=())),
        ("budget-policy", COMPUTE_BUDGET_V1),
        ("version-string", "search_gate.v1"),
        ("look-alike", SimpleNamespace(version="search_gate.v1", **{
            name: getattr(SEARCH_GATE_V1, name) for name in ("reason_statuses", "eligible_reasons")
        })),
        ("none", None),
    ]  # fmt: skip


@pytest.mark.parametrize(("label", "policy"), _unregistered(), ids=[n for n, _ in _unregistered()])
@share(10)
@given(data=st.data())
def test_an_unregistered_policy_fails_closed(label, policy, data):
    """Issue 8, docs/adr/0002 rule 0: a policy that is not the registered value for its
    version decides nothing: UNASSESSABLE with ``gate_unassessable_policy_unsupported`` under
    the current version, the context still bound; the budget then grants nothing."""
    chain: Chain = data.draw(chains())
    decision = decide_search_gate(chain.assessment, chain.residuals, policy)
    assert decision.find_defect() is None
    assert (decision.policy_version, decision.status, decision.reason_code) == (
        SEARCH_GATE_IN_FORCE.version,
        UNASSESSABLE,
        "gate_unassessable_policy_unsupported",
    )
    assert not decision.allowed
    assert decision.decision_id == oracle.gate_decision_id(decision)
    assert decision.input_digest == chain.gate.input_digest
    assert decision.residual_ids == chain.gate.residual_ids
    budget = decide_compute_budget(decision)
    assert budget.status is ComputeBudgetStatus.BUDGET_BLOCKED
    assert budget.reason_code == "budget_blocked_gate_unassessable"


# --------------------------------------------------------------------------------------------
# The version in force is the default


def _built_anew(policy: SearchGatePolicy) -> SearchGatePolicy:
    """An equal policy value, every row built again."""
    return SearchGatePolicy(
        policy.version,
        tuple(GateReasonStatus(row.reason, row.status) for row in policy.reason_statuses),
        tuple(EligibleReasonRow(row.kind, row.reason) for row in policy.eligible_reasons),
    )


@share(4)
@given(chain=chains(), withhold=st.booleans())
def test_the_default_policy_is_the_one_in_force_byte_for_byte(chain, withhold):
    """Issue 8: naming no policy, naming ``SEARCH_GATE_IN_FORCE`` and naming an equal value
    built anew give the same decision, canonical bytes and prose included; so do naming
    ``SEARCH_GATE_V1`` and v1's table written out here."""
    residuals = () if withhold else chain.residuals
    default = decide_search_gate(chain.assessment, residuals)
    for policy in (SEARCH_GATE_IN_FORCE, _built_anew(SEARCH_GATE_IN_FORCE)):
        named = decide_search_gate(chain.assessment, residuals, policy)
        assert named.canonical_bytes() == default.canonical_bytes()
        assert named.decision_id == default.decision_id
    v1 = decide_search_gate(chain.assessment, residuals, SEARCH_GATE_V1)
    assert v1.policy_version == "search_gate.v1"
    assert decide_search_gate(chain.assessment, residuals, _policy()).canonical_bytes() == (
        v1.canonical_bytes()
    )
    if not withhold:
        assert default.canonical_bytes() == chain.gate.canonical_bytes()


@st.composite
def valid_policies(draw: st.DrawFn) -> SearchGatePolicy:
    """Every valid policy: each denial drawn from the denying statuses, any version."""
    statuses = {r.name: draw(st.sampled_from([INELIGIBLE, BLOCKED, UNASSESSABLE])) for r in DENIALS}
    return _policy(f"search_gate.v{draw(st.integers(1, 999))}", **statuses)


residual_facts = st.lists(st.tuples(st.sampled_from(ResidualKind), st.booleans()), max_size=4).map(
    tuple
)


@given(
    valid_policies(),
    st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), residual_facts),
)
def test_any_valid_policy_keeps_the_gate_contract(policy, facts):
    """docs/contracts.md, ADR-0226 §7B: CrossHair checks ``search_gate_reason`` on v1 only;
    under every valid policy the rules give the same reason, and it is eligible exactly where
    v1's contract admits the context."""
    reason = gate_reason_under(policy, *facts)
    assert reason is search_gate_reason(*facts)
    assert (policy.status_for(reason) is ELIGIBLE) == gate_module._admit(*facts)
