"""compute_budget.v1 (ADR-0227 §8)."""

from __future__ import annotations

from ...kernel import (
    COMPUTE_BUDGET_IN_FORCE,
    ComputeBudgetPolicy,
    decide_compute_budget,
    decide_search_gate,
)
from .entry import Recipes
from .forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
    other_digest,
    resealed,
    sealed,
    tampered,
)
from .shipped import DU, RI, TWO

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("compute_budget", "ADR-0227 §8")

RECIPES.add("budget-gate-ineligible",
    "decide_compute_budget: two_residuals' genuine ineligible gate", "Genuine",
    "budget.decide_compute_budget", lambda c: decide_compute_budget(c[TWO].gate), TWO)
RECIPES.add("budget-gate-blocked",
    "decide_compute_budget: the blocked gate of runnable_increase's assessment", "Genuine",
    "budget.decide_compute_budget",
    lambda c: decide_compute_budget(decide_search_gate(c[RI].assessment, ())), RI)
RECIPES.add("budget-gate-unassessable",
    "decide_compute_budget: the unassessable gate of a context with its residual withheld",
    "Genuine", "budget.decide_compute_budget",
    lambda c: decide_compute_budget(decide_search_gate(c[DU].assessment, ())), DU)
RECIPES.add("budget-unknown-eligible-reason",
    "decide_compute_budget: the gate re-sealed eligible with reason eligible_new_kind", "Resealed",
    "budget.decide_compute_budget",
    lambda c: decide_compute_budget(sealed(c[DU].gate, reason_code="eligible_new_kind")), DU)
RECIPES.add("budget-gate-malformed",
    "decide_compute_budget: the gate's status replaced by the string 'ELIGIBLE'", "Tampered",
    "budget.decide_compute_budget",
    lambda c: decide_compute_budget(tampered(c[DU].gate, status="ELIGIBLE")), DU)
RECIPES.add("budget-gate-policy-unsupported",
    f"decide_compute_budget: the gate re-sealed under {UNREGISTERED_GATE_VERSION}", "Resealed",
    "budget.decide_compute_budget",
    lambda c: decide_compute_budget(
        resealed(c[DU].gate, policy_version=UNREGISTERED_GATE_VERSION)
    ), DU)
RECIPES.add("budget-gate-identity-mismatch",
    "decide_compute_budget: the gate's decision id replaced after sealing", "Tampered",
    "budget.decide_compute_budget",
    lambda c: decide_compute_budget(
        tampered(c[DU].gate, decision_id=other_digest(c[DU].gate.decision_id))
    ), DU)
RECIPES.add("budget-policy-unregistered",
    "decide_compute_budget: the rows in force under the unregistered version"
    f" {UNREGISTERED_BUDGET_VERSION}",
    "Forged", "budget.decide_compute_budget",
    lambda c: decide_compute_budget(
        c[DU].gate, ComputeBudgetPolicy(UNREGISTERED_BUDGET_VERSION, COMPUTE_BUDGET_IN_FORCE.rows)
    ), DU)
# fmt: on
