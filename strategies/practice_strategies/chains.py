"""Whole valid chains: frame -> assessment -> residuals -> gate -> budget -> run input -> run.

``chains(reason)`` draws a chain whose gate decision carries ``reason``; every gate reason
that a frame can produce has a recipe in ``FRAME_RECIPES``. The unassessable reasons need a
context no frame produces (a refused assessment without blockers, a forged residual set);
``tests/cover/test_gate.py`` builds them from a valid chain with the tampering helpers.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from practice_loop.kernel import (
    COMPUTE_BUDGET_IN_FORCE,
    EMPTY_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
    AssessmentStatus,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ContractAssessment,
    ContractResidual,
    GateReason,
    GeometricSearchInput,
    OperatorSetManifest,
    ProblemFrame,
    Role,
    SearchGateDecision,
    assess,
    decide_compute_budget,
    decide_search_gate,
    open_search_run,
    project_residuals,
    search_input_for,
)

from .frames import ALL_ROLES, problem_frames

_NO_HAZARD = {"hazard_count": 0}

# Knobs of ``problem_frames`` that make the gate give each reason.
FRAME_RECIPES: dict[GateReason, dict[str, Any]] = {
    GateReason.ELIGIBLE_MISSING_ROLE: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "with_target": True,
        "bound_roles": ALL_ROLES - {Role.DIRECTION},
    },
    GateReason.ELIGIBLE_MISSING_RELATION: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "with_target": True,
        "bound_roles": ALL_ROLES,
        "units_agree": False,
    },
    GateReason.ELIGIBLE_MISSING_PROPOSAL: {**_NO_HAZARD, "proposal_count": 0},
    GateReason.ELIGIBLE_TARGET_UNBOUND: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "with_target": False,
        "bound_roles": ALL_ROLES - {Role.TARGET},
    },
    GateReason.ASSESSMENT_RUNNABLE: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "with_target": True,
        "bound_roles": ALL_ROLES,
        "units_agree": True,
    },
    GateReason.UNCLASSIFIED_RESIDUAL: {"hazard_count": 1},
    GateReason.MULTIPLE_RESIDUALS: {
        **_NO_HAZARD,
        "proposal_count": 1,
        "bound_roles": {Role.INITIAL},
    },
    GateReason.RESIDUAL_WITHOUT_EVIDENCE: {**_NO_HAZARD, "proposal_count": 0, "fact_count": 0},
}


@dataclasses.dataclass(frozen=True)
class Chain:
    """Every record of one pass through the stages, each produced by its own stage."""

    frame: ProblemFrame
    assessment: ContractAssessment
    residuals: tuple[ContractResidual, ...]
    gate: SearchGateDecision
    budget: ComputeBudgetDecision
    search_input: GeometricSearchInput | None
    operator_set: OperatorSetManifest


def build_chain(
    frame: ProblemFrame,
    *,
    policy: ComputeBudgetPolicy = COMPUTE_BUDGET_IN_FORCE,
    operator_set: OperatorSetManifest = EMPTY_OPERATOR_SET,
    run_policy_version: str = GEOMETRIC_SEARCH_RUN_POLICY_VERSION,
) -> Chain:
    assessment = assess(frame)
    assert type(assessment) is ContractAssessment, assessment
    if assessment.status is AssessmentStatus.RUNNABLE:
        residuals: tuple[ContractResidual, ...] = ()
    else:
        projected = project_residuals(assessment)
        assert type(projected) is tuple, projected
        residuals = projected
    gate = decide_search_gate(assessment, residuals)
    budget = decide_compute_budget(gate, policy)
    search_input = search_input_for(gate, budget, operator_set, run_policy_version)
    return Chain(frame, assessment, residuals, gate, budget, search_input, operator_set)


def chains(reason: GateReason | None = None, **knobs: Any) -> st.SearchStrategy[Chain]:
    """Chains whose gate gives ``reason`` (any frame-reachable reason when ``None``)."""
    if reason is None:
        return st.sampled_from(sorted(FRAME_RECIPES, key=lambda r: r.value)).flatmap(
            lambda chosen: chains(chosen, **knobs)
        )
    recipe = {**FRAME_RECIPES[reason], **knobs}
    return problem_frames(**recipe).map(build_chain)


def eligible_chains(**knobs: Any) -> st.SearchStrategy[Chain]:
    eligible = [r for r in FRAME_RECIPES if r.value.startswith("eligible_")]
    return st.sampled_from(sorted(eligible, key=lambda r: r.value)).flatmap(
        lambda chosen: chains(chosen, **knobs)
    )


def run_outcome(chain: Chain) -> Any:
    assert chain.search_input is not None
    return open_search_run(chain.search_input, chain.gate, chain.budget, chain.operator_set)
