"""Trace verification (docs/adr/0007): verify_sealed_trace, then replay_divergence."""

from __future__ import annotations

from typing import Any

from ...kernel import (
    CANDIDATE_OPERATOR_SET,
    SEARCH_GATE_IN_FORCE,
    GateReason,
    SealedPracticeTrace,
    decide_compute_budget,
    open_search_run,
    replay_divergence,
    seal_practice_trace,
    search_input_for,
    verify_sealed_trace,
)
from ...kernel.trace import TRACE_VERSIONS, stage_digests_of
from .entry import Recipes
from .forging import V2, other_digest, resealed, sealed, tampered
from .shipped import DU, TWO

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("trace_verification", "docs/adr/0007")

_VERIFY = "trace.verify_sealed_trace, loop.replay_divergence"


def checked_trace(trace: object) -> object:
    """The store's read path after decoding: verify, and replay what verifies."""
    verification = verify_sealed_trace(trace)  # type: ignore[arg-type]
    if not verification.valid:
        return verification
    return replay_divergence(trace)  # type: ignore[arg-type]


def _resealed_trace(trace: SealedPracticeTrace, **changes: Any) -> SealedPracticeTrace:
    """The trace with ``changes``, its stage index and trace_id recomputed."""
    changed = tampered(trace, **changes)
    return resealed(changed, stage_digests=stage_digests_of(changed))


def cross_identity_forgery(c: Any) -> SealedPracticeTrace:
    """two_residuals' trace whose run refusal names another search input."""
    trace = c[TWO].trace
    run = sealed(trace.run_outcome, input_digest=other_digest(trace.run_outcome.input_digest))
    return _resealed_trace(trace, run_outcome=run)


def consistent_forgery(c: Any) -> SealedPracticeTrace:
    """two_residuals' case with its gate re-sealed as residual_without_evidence (BLOCKED
    under search_gate.v1; the status the gate in force gives it) and every later stage the
    genuine answer to that gate: every cross identity holds, only re-running the case shows
    the gate is not the one the organ's residuals get."""
    case = c[TWO]
    reason = GateReason.RESIDUAL_WITHOUT_EVIDENCE
    gate = sealed(
        case.gate, status=SEARCH_GATE_IN_FORCE.status_for(reason), reason_code=reason.value
    )
    budget = decide_compute_budget(gate)
    search_input = search_input_for(gate, budget, CANDIDATE_OPERATOR_SET, V2)
    run = open_search_run(search_input, gate, budget, CANDIDATE_OPERATOR_SET)
    return seal_practice_trace(
        frame=case.frame,
        original_assessment=case.assessment,
        residuals=case.trace.residuals,
        gate_decision=gate,
        budget_decision=budget,
        search_input=search_input,
        run_outcome=run,
        outcome=case.trace.outcome,
    )


for _name, _comment, _flags, _build, _base in (
    ("verify-not-a-trace", "a problem frame handed over as the trace", "ForeignType",
        lambda c: checked_trace(c[DU].frame), (DU,)),
    ("verify-nested-budget-altered", "a budget limit inside the trace changed after sealing",
        "Tampered",
        lambda c: checked_trace(
            tampered(c[DU].trace, budget_decision=tampered(c[DU].budget, max_steps=99))
        ), (DU,)),
    ("verify-trace-id-replaced", "the trace_id replaced by another digest", "Tampered",
        lambda c: checked_trace(tampered(c[DU].trace, trace_id=other_digest(c[DU].trace.trace_id))),
        (DU,)),
    ("verify-stage-index-reversed", "the stage index reversed, the trace re-sealed", "Resealed",
        lambda c: checked_trace(
            resealed(c[DU].trace, stage_digests=c[DU].trace.stage_digests[::-1])
        ), (DU,)),
    ("verify-schema-version-v2", "the trace re-sealed under sealed_practice_trace.v2", "Resealed",
        lambda c: checked_trace(resealed(c[DU].trace, schema_version="sealed_practice_trace.v2")),
        (DU,)),
    ("verify-newer-answer-version", "the trace re-sealed naming proof_gated_answer.v2", "Resealed",
        lambda c: checked_trace(
            resealed(
                c[DU].trace, versions=(("answer", "proof_gated_answer.v2"), *TRACE_VERSIONS[1:])
            )
        ), (DU,)),
    ("verify-run-refusal-of-another-input",
        "two_residuals' run refusal re-sealed naming another search input, trace re-sealed",
        "Resealed", lambda c: checked_trace(cross_identity_forgery(c)), (TWO,)),
    ("verify-consistent-forgery",
        "two_residuals with a forged blocked gate and genuine answers to it downstream",
        "Forged", lambda c: checked_trace(consistent_forgery(c)), (TWO,)),
):
    RECIPES.add(_name, _comment, _flags, _VERIFY, _build, *_base)
# fmt: on
