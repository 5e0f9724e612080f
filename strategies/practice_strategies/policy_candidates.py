"""Candidate decision functions to compare with the kernel's (docs/contracts.md, issue 6).

``compute_budget_candidate`` is a would-be successor of ``compute_budget.v1``: the same table
except that a missing proposal is granted as much as the other kinds (5 candidates, depth 2,
10 steps instead of 3, 1, 5). It is an example for ``practice-loop policy-diff``, which shows
the one gate reason on which the two answer differently:

    practice-loop policy-diff practice_loop.kernel.budget.compute_budget_v1 \
        practice_strategies.policy_candidates.compute_budget_candidate
"""

from __future__ import annotations

import dataclasses

from practice_loop.kernel import (
    BudgetLimits,
    ComputeBudgetPolicy,
    SearchGateStatus,
)
from practice_loop.kernel.budget import COMPUTE_BUDGET_V1, BudgetVerdict, budget_verdict

CANDIDATE_TABLE = ComputeBudgetPolicy(
    "compute_budget.v2",
    tuple(
        dataclasses.replace(row, limits=BudgetLimits(5, 2, 10, 1))
        if row.gate_reason_code == "eligible_missing_proposal"
        else row
        for row in COMPUTE_BUDGET_V1.rows
    ),
)


def compute_budget_candidate(gate_status: SearchGateStatus, gate_reason_code: str) -> BudgetVerdict:
    """``budget_verdict`` under the candidate table; same signature as ``compute_budget_v1``."""
    return budget_verdict(gate_status, gate_reason_code, CANDIDATE_TABLE)
