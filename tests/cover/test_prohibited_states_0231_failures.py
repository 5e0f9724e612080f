"""ADR-0231 §17 failure rows that the table of ``test_operators.py`` does not reach.

Each test here kills a prohibited-state mutant of ``docs/mutants/adr-0231-failures.toml``
that survived the obligation's other tests: a precondition of ADR-0231 §7.3 that must hold
on its own, even where a later check would still refuse (with another reason) or nothing
else would notice. Contexts are lawful v2 chains over the candidate operator set
(``practice_strategies.corruptions.operator_chains``), forged and rebound with the corruption
catalogue's helpers so that only the operator's own semantic check can tell.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given

from practice_loop.harness.catalogue.forging import ZERO_LIMITS, context, forged, other_digest
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_POLICY_VERSION,
    CandidateOperatorRefusal,
    ComputeBudgetStatus,
    OperatorRefusalReason,
    propose_candidate,
)
from practice_strategies import oracle, share
from practice_strategies.corruptions import operator_chains

R = OperatorRefusalReason
ALLOWED_FOR_MISSING_ROLE = "budget_allowed_missing_role"


def _refused(outcome: object, reason: OperatorRefusalReason) -> CandidateOperatorRefusal:
    assert type(outcome) is CandidateOperatorRefusal, outcome
    assert outcome.reason_codes == (reason.value,)
    assert outcome.operator_policy_version == CANDIDATE_OPERATOR_POLICY_VERSION
    assert outcome.operator_refusal_id == oracle.operator_refusal_id(outcome)
    return outcome


def _propose(ctx) -> object:
    return propose_candidate(**ctx.arguments())


@pytest.mark.obligation("ADR-0231/17.7")
@pytest.mark.parametrize(
    "status",
    [
        ComputeBudgetStatus.BUDGET_ZERO,
        ComputeBudgetStatus.BUDGET_BLOCKED,
        ComputeBudgetStatus.BUDGET_UNASSESSABLE,
    ],
    ids=lambda s: s.value,
)
@share(30)
@given(chain=operator_chains())
def test_budget_status_is_checked_apart_from_its_reason_code(status, chain):
    """ADR-0231 §7.3.9, §17 'non-allowed ComputeBudgetDecision': the budget's status must be
    BUDGET_ALLOWED on its own. A zero, blocked or unassessable budget (all limits zero, as a
    denied budget must be) that carries the reason code budget_allowed_missing_role is still
    not allowed: the refusal is budget_not_allowed, not a later attempt-index refusal."""
    budget = {"status": status, "reason_code": ALLOWED_FOR_MISSING_ROLE, **ZERO_LIMITS}
    ctx = forged(context(chain), budget=budget)
    assert ctx.budget.status is status
    refusal = _refused(_propose(ctx), R.BUDGET_NOT_ALLOWED)
    assert refusal.geometric_search_run_id == ctx.opened.run_id


@pytest.mark.obligation("ADR-0231/17.8")
@share(30)
@given(chain=operator_chains())
def test_run_bound_to_another_assessment_refuses(chain):
    """ADR-0231 §7.2, §17 'run identity mismatch': a run (forged, rebound to gate and
    budget, self-sealing) that names another contract assessment than the one the input,
    residual and gate name is refused as an identity mismatch."""
    base = context(chain)
    other = other_digest(base.assessment.assessment_id)
    ctx = forged(base, run={"contract_assessment_id": other})
    assert ctx.opened.contract_assessment_id == other
    _refused(_propose(ctx), R.IDENTITY_MISMATCH)


@pytest.mark.obligation("ADR-0231/17.12")
@share(30)
@given(chain=operator_chains(cue_count=2))
def test_two_cues_of_the_same_direction_are_ambiguous(chain):
    """ADR-0231 §6, §17 'ambiguous typed cue': two grounded cues are ambiguous even when they
    agree on the direction; the operator counts cues, it does not merge them."""
    first, second = chain.frame.cues
    assume(first.direction is second.direction)
    _refused(_propose(context(chain)), R.CUE_AMBIGUOUS)
