"""search_gate.v1 denials (docs/adr/0002)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...kernel import (
    PROBLEM_FRAME_SCHEMA_VERSION,
    SEARCH_GATE_V1,
    UNARY_DELTA_ORGAN,
    ContractAssessment,
    ProblemFrame,
    Role,
    SearchGateDecision,
    assess,
    decide_search_gate,
    project_residuals,
)
from .entry import Recipes
from .forging import UNREGISTERED_GATE_VERSION, other_digest, sealed, tampered
from .shipped import DU, RI, TWO

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("search_gate", "docs/adr/0002")

RECIPES.add("gate-assessment-malformed",
    "decide_search_gate: an assessment whose id was replaced after sealing", "Tampered",
    "gate.decide_search_gate",
    lambda c: decide_search_gate(
        tampered(c[DU].assessment, assessment_id=other_digest(c[DU].assessment.assessment_id)),
        c[DU].trace.residuals,
    ), DU)
RECIPES.add("gate-residuals-a-list",
    "decide_search_gate: the genuine residuals handed over as a list", "ForeignType",
    "gate.decide_search_gate",
    lambda c: decide_search_gate(c[DU].assessment, list(c[DU].trace.residuals)), DU)
RECIPES.add("gate-residuals-of-another-case",
    "decide_search_gate: direction_unbound's assessment with two_residuals' residuals", "Genuine",
    "gate.decide_search_gate",
    lambda c: decide_search_gate(c[DU].assessment, c[TWO].trace.residuals), DU, TWO)
RECIPES.add("gate-residuals-withheld",
    "decide_search_gate: direction_unbound's assessment with no residual", "Genuine",
    "gate.decide_search_gate", lambda c: decide_search_gate(c[DU].assessment, ()), DU)
RECIPES.add("gate-assessment-runnable",
    "decide_search_gate: runnable_increase's assessment and no residual", "Genuine",
    "gate.decide_search_gate", lambda c: decide_search_gate(c[RI].assessment, ()), RI)


def _refused_without_blockers(c: Any) -> ContractAssessment:
    return sealed(c[DU].assessment, blockers=())


RECIPES.add("gate-no-residual",
    "decide_search_gate: a refused assessment re-sealed without blockers, and no residual",
    "Resealed", "gate.decide_search_gate",
    lambda c: decide_search_gate(_refused_without_blockers(c), ()), DU)
RECIPES.add("gate-unclassified-residual",
    "decide_search_gate: two_residuals' genuine context (a hazard is unclassified)", "Genuine",
    "gate.decide_search_gate",
    lambda c: decide_search_gate(c[TWO].assessment, c[TWO].trace.residuals), TWO)


def _two_unbound_frame(c: Any) -> ProblemFrame:
    """direction_unbound's frame with its target binding dropped: direction_unbound and
    target_unbound, both missing roles, no hazard."""
    frame = c[DU].frame
    proposal = frame.proposals[0]
    kept = tuple(binding for binding in proposal.bindings if binding.role is not Role.TARGET)
    return dataclasses.replace(frame, proposals=(dataclasses.replace(proposal, bindings=kept),))


def _gate_of(frame: ProblemFrame) -> SearchGateDecision:
    assessment = assess(frame)
    return decide_search_gate(assessment, project_residuals(assessment))  # type: ignore[arg-type]


RECIPES.add("gate-multiple-residuals",
    "decide_search_gate: direction_unbound's frame with its target binding dropped", "Genuine",
    "gate.decide_search_gate", lambda c: _gate_of(_two_unbound_frame(c)), DU)


def _empty_frame() -> ProblemFrame:
    """A frame with no fact, cue, proposal, target or hazard: proposal_missing, whose
    evidence (the fact spans) is empty."""
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION, UNARY_DELTA_ORGAN, "Nothing to read.", (), (), (), None, ()
    )


RECIPES.add("gate-residual-without-evidence",
    "decide_search_gate: a frame with no fact at all (proposal_missing without evidence)",
    "Genuine", "gate.decide_search_gate", lambda c: _gate_of(_empty_frame()))
RECIPES.add("gate-policy-unsupported",
    "decide_search_gate: direction_unbound's genuine context under v1's tables renamed"
    f" {UNREGISTERED_GATE_VERSION}, a version the kernel has not registered", "Genuine",
    "gate.decide_search_gate",
    lambda c: decide_search_gate(
        c[DU].assessment,
        c[DU].trace.residuals,
        dataclasses.replace(SEARCH_GATE_V1, version=UNREGISTERED_GATE_VERSION),
    ), DU)
# fmt: on
