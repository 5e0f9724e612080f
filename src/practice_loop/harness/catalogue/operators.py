"""The candidate operator (ADR-0231 §7.3, §17): propose_candidate over forged contexts."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ...kernel import (
    CANDIDATE_OPERATOR_SET,
    CANDIDATE_OPERATOR_SET_ID,
    EMPTY_OPERATOR_SET,
    MAX_SAFE_INT,
    MISSING_ROLE_CANDIDATE_POLICY,
    SEARCH_GATE_IN_FORCE,
    ComputeBudgetStatus,
    Direction,
    GateReason,
    OpenedSearchRun,
    OperatorSetManifest,
    ProblemFrame,
    Role,
    SearchGateStatus,
    SourceSpan,
    open_search_run,
    practice_case,
    search_input_for,
)
from ...kernel.operators import POLICY_VERSIONS, SCHEMA_VERSIONS
from .entry import HASHABLE, Entry, Recipes, corruption, operator_refused, s17, s73
from .forging import (
    UNREGISTERED_OPERATOR_SET_VERSION,
    V2,
    ZERO_LIMITS,
    Attack,
    OperatorContext,
    forged,
    forged_residual,
    manifest,
    opened,
    operator,
    other_digest,
    resealed,
    row,
    sealed,
    tampered,
)
from .shipped import AMBIGUOUS, DU, NO_PROPOSAL, RI

_PROPOSE = "operators.propose_candidate"


def _propose(ctx: OperatorContext, **replacing: object) -> Attack:
    return ctx.propose(**replacing)


def _op_input(**changes: Any) -> Callable[[Any], Attack]:
    """The operator input re-sealed with ``changes`` (its digest reproduces)."""
    return operator(lambda c: c.propose(operator_input=resealed(c.operator_input, **changes)))


def _op_input_tampered(**changes: Any) -> Callable[[Any], Attack]:
    """The operator input altered after sealing (its digest no longer reproduces)."""
    return operator(lambda c: c.propose(operator_input=tampered(c.operator_input, **changes)))


def _op_forged(**forging: Any) -> Callable[[Any], Attack]:
    return operator(lambda c: forged(c, **forging).propose())


def _op_forged_over(forging: Callable[[OperatorContext], dict]) -> Callable[[Any], Attack]:
    """As ``_op_forged``, the forging read from the context."""
    return operator(lambda c: forged(c, **forging(c)).propose())


def _op_attempt_index(index_of: Callable[[OperatorContext], int]) -> Callable[[Any], Attack]:
    return operator(lambda c: c.propose(operator_input=c.input_for(index_of(c))))


def _zero_budget(status: ComputeBudgetStatus, reason: str) -> dict[str, Any]:
    return {"status": status, "reason_code": reason, **ZERO_LIMITS}


def _gate_as(status: SearchGateStatus, reason: GateReason) -> dict[str, Any]:
    """A forged gate of ``status``: with ``reason`` while the gate in force still gives it
    that status, else with the last reason it does (so the forgery stays lawful whichever
    gate version an adoption puts in force)."""
    statuses = {row.reason: row.status for row in SEARCH_GATE_IN_FORCE.reason_statuses}
    if statuses[reason] is not status:
        reason = [found for found, given in statuses.items() if given is status][-1]
    return {"status": status, "reason_code": reason.value}


def _depth_zero_run(c: OperatorContext) -> Attack:
    """An allowed budget with ``max_depth = 0`` opens a v2 run lawfully (docs/adr/0004)."""
    budget = sealed(c.budget, max_depth=0)
    search_input = search_input_for(c.gate, budget, CANDIDATE_OPERATOR_SET, V2)
    run = open_search_run(search_input, c.gate, budget, CANDIDATE_OPERATOR_SET)
    assert type(run) is OpenedSearchRun, run
    rebuilt = dataclasses.replace(c, budget=budget, opened=run)
    operator_input = rebuilt.input_for()
    return rebuilt.propose(operator_input=operator_input, budget_decision=budget, opened_run=run)


def _malformed_span(c: OperatorContext) -> Attack:
    first = c.residual.evidence_spans[0]
    broken = tampered(first, text=first.text + "x")
    spans = (broken,) + c.residual.evidence_spans[1:]
    return c.propose(residual=tampered(c.residual, evidence_spans=spans))


def _cue_not_justified(c: OperatorContext) -> Attack:
    cue = c.frame.cues[0].span
    kept = tuple(span for span in c.residual.evidence_spans if span != cue)
    return forged_residual(c, evidence_spans=kept).propose()


def _outside_source(c: OperatorContext) -> Attack:
    first = c.residual.evidence_spans[0]
    shift = len(c.frame.source_text)
    outside = SourceSpan(first.text, first.start + shift, first.end + shift, first.sentence_index)
    return forged_residual(c, evidence_spans=c.residual.evidence_spans + (outside,)).propose()


def _flipped_frame(c: OperatorContext) -> Attack:
    """Another lawful frame: the same, its one cue pointing the other way."""
    cue = c.frame.cues[0]
    other = next(d for d in Direction if d is not cue.direction)
    flipped = (dataclasses.replace(cue, direction=other),)
    return c.propose(frame=dataclasses.replace(c.frame, cues=flipped))


def _frame_with_float(c: OperatorContext) -> Attack:
    fact = c.frame.facts[0]
    facts = (tampered(fact, value=float(fact.value)),) + c.frame.facts[1:]
    return c.propose(frame=tampered(c.frame, facts=facts))


def _consistently_opened(c: OperatorContext, operators: OperatorSetManifest) -> Attack:
    """A run lawfully opened with another manifest, and an input built from that run."""
    rebuilt = dataclasses.replace(c, opened=opened(c.chain, operators))
    return rebuilt.propose(
        operator_input=rebuilt.input_for(), opened_run=rebuilt.opened, operator_set=operators
    )


def _operator(
    id: str,
    clause: str,
    comment: str,
    reason: str,
    build: Callable[[Any], Attack],
    *also: str,
    chains: str = "operator",
) -> Entry:
    expected = operator_refused(reason)
    return corruption(
        f"ADR-0231/{id}", _PROPOSE, clause, comment, expected, build, *also, chains=chains
    )


# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
ENTRIES = (
    _operator("17.1-policy-widened", s17(1), "a policy allowing two attempts per run",
        "operator_policy_unsupported",
        operator(
            lambda c: _propose(
                c,
                policy=dataclasses.replace(MISSING_ROLE_CANDIDATE_POLICY, max_attempts_per_run=2),
            )
        ), s73(1)),
    _operator("17.1-policy-codes-widened", s17(1), "a policy that also accepts initial_unbound",
        "operator_policy_unsupported",
        operator(
            lambda c: _propose(
                c,
                policy=dataclasses.replace(
                    MISSING_ROLE_CANDIDATE_POLICY,
                    allowed_residual_codes=("direction_unbound", "initial_unbound"),
                ),
            )
        ), s73(1)),
    _operator("17.1-input-policy-version", s17(1), "the input asks for candidate_operator.v2",
        "operator_policy_unsupported",
        _op_input(operator_policy_version="candidate_operator.v2"), s73(1)),
    _operator("17.2-input-operator-name", s17(2), "the input names another operator",
        "operator_name_or_version_unsupported", _op_input(operator_name="other_candidate"),
        s73(2)),
    _operator("17.2-input-operator-version", s17(2), "the input names missing_role_candidate.v2",
        "operator_name_or_version_unsupported",
        _op_input(operator_version="missing_role_candidate.v2"), s73(3)),
    _operator("17.3-residual-of-another-kind", s17(3),
        "a lawful chain for another eligible residual kind", "residual_kind_unsupported",
        operator(_propose), s73(4), chains="operator, another residual kind"),
    _operator("17.3-input-claims-another-kind", s17(3),
        "the input re-sealed claiming missing_relation", "residual_kind_unsupported",
        _op_input(residual_kind="missing_relation"), s73(4)),
    _operator("17.4-residual-code-not-direction", s17(4),
        "a lawful missing_role chain whose code is initial_unbound or delta_unbound",
        "residual_code_unsupported", operator(_propose), s73(6),
        chains="operator, another residual code"),
    _operator("17.5-gate-names-another-organ", s17(5),
        "the gate forged naming another organ, everything after rebound",
        "candidate_organ_unsupported", _op_forged(gate={"candidate_organ": "other_organ"}),
        s73(5)),
    *(
        _operator(f"17.6-gate-{status.value.lower()}", s17(6),
            f"the gate forged {status.value}, everything after rebound",
            "gate_not_eligible", _op_forged(gate=_gate_as(status, reason)), s73(7))
        for status, reason in (
            (SearchGateStatus.INELIGIBLE, GateReason.MULTIPLE_RESIDUALS),
            (SearchGateStatus.BLOCKED, GateReason.RESIDUAL_WITHOUT_EVIDENCE),
            (SearchGateStatus.UNASSESSABLE, GateReason.NO_RESIDUAL),
        )
    ),
    _operator("17.6-gate-ineligible-budget-decided", s17(6),
        "an ineligible forged gate with the budget stage's own answer to it",
        "gate_not_eligible",
        _op_forged(
            gate=_gate_as(SearchGateStatus.INELIGIBLE, GateReason.MULTIPLE_RESIDUALS),
            decide_budget=True,
        ), s73(7)),
    _operator("17.6-gate-eligible-for-another-kind", s17(6),
        "an eligible gate whose reason is eligible_missing_relation", "gate_not_eligible",
        _op_forged(gate={"reason_code": GateReason.ELIGIBLE_MISSING_RELATION.value}), s73(8)),
    *(
        _operator(f"17.7-budget-{status.value.lower().removeprefix('budget_')}", s17(7),
            f"the budget forged {status.value} with zero limits, everything after rebound",
            "budget_not_allowed", _op_forged(budget=_zero_budget(status, reason)), s73(9))
        for status, reason in (
            (ComputeBudgetStatus.BUDGET_BLOCKED, "budget_blocked_gate_ineligible"),
            (ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test"),
            (ComputeBudgetStatus.BUDGET_UNASSESSABLE, "budget_unassessable_unknown_reason_code"),
        )
    ),
    _operator("17.7-budget-allowed-for-another-kind", s17(7),
        "an allowed budget whose reason is budget_allowed_missing_relation",
        "budget_not_allowed",
        _op_forged(budget={"reason_code": "budget_allowed_missing_relation"}), s73(10)),
    _operator("17.8-input-names-another-run", s17(8), "the input re-sealed naming another run",
        "identity_mismatch",
        operator(
            lambda c: _propose(
                c,
                operator_input=resealed(
                    c.operator_input, geometric_search_run_id=other_digest(c.opened.run_id)
                ),
            )
        )),
    _operator("17.8-run-resealed-not-rebound", s17(8),
        "the run re-sealed naming another budget, the input still naming the old run",
        "identity_mismatch",
        operator(
            lambda c: _propose(
                c, opened_run=resealed(c.opened, budget_id=other_digest(c.opened.budget_id))
            )
        )),
    _operator("17.8-run-names-another-frame", s17(8),
        "the run forged naming another problem frame", "identity_mismatch",
        _op_forged_over(
            lambda c: {"run": {"problem_frame_digest": other_digest(c.opened.problem_frame_digest)}}
        )),
    _operator("17.8-run-names-another-gate", s17(8), "the run forged naming another gate decision",
        "run_mismatch",
        _op_forged_over(lambda c: {"run": {"gate_decision_id": other_digest(c.gate.decision_id)}}),
        s73(12)),
    _operator("17.9-run-names-another-budget", s17(9), "the run forged naming another budget",
        "run_mismatch",
        _op_forged_over(lambda c: {"run": {"budget_id": other_digest(c.budget.budget_id)}}),
        s73(13)),
    _operator("17.10-budget-names-another-gate", s17(10),
        "the budget forged naming another gate decision", "gate_budget_mismatch",
        _op_forged_over(
            lambda c: {"budget": {"gate_decision_id": other_digest(c.gate.decision_id)}}
        ), s73(11)),
    _operator("17.11-residual-without-role", s17(11),
        "the residual (and its blocker) forged without a role", "residual_field_missing",
        operator(lambda c: _propose(forged_residual(c, role=None)))),
    _operator("17.11-residual-without-evidence", s17(11),
        "the residual (and its blocker) forged without evidence spans",
        "residual_field_missing",
        operator(lambda c: _propose(forged_residual(c, evidence_spans=())))),
    _operator("17.12-typed-cue-missing", s17(12),
        "a lawful chain whose frame holds no grounded cue", "typed_cue_missing",
        operator(_propose), chains="operator, no cue"),
    _operator("17.12-typed-cue-ambiguous", s17(12),
        "a lawful chain whose frame holds two or three grounded cues", "typed_cue_ambiguous",
        operator(_propose), chains="operator, two or three cues"),
    _operator("17.12-typed-cue-not-justified", s17(12),
        "the residual (and its blocker) forged without the cue's span",
        "typed_cue_not_justified", operator(_cue_not_justified), "ADR-0231 §13",
        chains="operator, cue span not all evidence"),
    _operator("17.13-residual-span-malformed", s17(13),
        "a residual span altered after sealing: its text one character too long",
        "record_malformed", operator(_malformed_span), s73(21)),
    _operator("17.13-residual-span-outside-source", s17(13),
        "a well-formed residual span past the end of the source text",
        "evidence_spans_invalid", operator(_outside_source), s73(21)),
    _operator("17.14-attempt-index-at-max-candidates", s17(14),
        "an input for attempt index max_candidates", "attempt_index_beyond_budget",
        _op_attempt_index(lambda c: c.budget.max_candidates), s73(17)),
    _operator("17.14-attempt-index-largest-safe-int", s17(14),
        "an input for attempt index 2**53 - 1", "attempt_index_beyond_budget",
        _op_attempt_index(lambda c: MAX_SAFE_INT), s73(17)),
    _operator("17.14-budget-max-candidates-zero", s17(14),
        "an allowed budget forged with max_candidates 0", "attempt_index_beyond_budget",
        _op_forged(budget={"max_candidates": 0}), s73(17)),
    _operator("7.3.16-attempt-index-negative", s73(16), "an input re-sealed for attempt index -1",
        "attempt_index_negative", _op_input(attempt_index=-1), s17(14)),
    _operator("17.15-attempt-index-beyond-policy", s17(15),
        "an input for attempt index 1: one attempt per run", "attempt_index_beyond_policy",
        _op_attempt_index(lambda c: 1), s73(18)),
    _operator("17.16-budget-max-steps-zero", s17(16), "an allowed budget forged with max_steps 0",
        "charge_exceeds_budget", _op_forged(budget={"max_steps": 0}), s73(19)),
    _operator("17.16-budget-max-depth-zero", s17(16),
        "an allowed budget with max_depth 0 and the run it lawfully opens",
        "charge_exceeds_budget", operator(_depth_zero_run), s73(19)),
    *(
        _operator(f"17.17-parallelism-{value}", s17(17),
            f"an allowed budget forged with max_parallelism {value}",
            "parallelism_not_one", _op_forged(budget={"max_parallelism": value}), s73(20))
        for value in (0, 2)
    ),
    _operator("17.18-operator-set-empty", s17(18), "the empty operator set handed to the operator",
        "operator_set_mismatch",
        operator(lambda c: _propose(c, operator_set=EMPTY_OPERATOR_SET)), s73(14)),
    _operator("17.18-operator-set-row-changed", s17(18),
        "the table with its row's input obligations reversed", "operator_set_mismatch",
        operator(
            lambda c: _propose(
                c,
                operator_set=OperatorSetManifest(
                    CANDIDATE_OPERATOR_SET.operator_set_version,
                    (
                        dataclasses.replace(
                            CANDIDATE_OPERATOR_SET.operators[0],
                            input_obligations=CANDIDATE_OPERATOR_SET.operators[0].input_obligations[
                                ::-1
                            ],
                        ),
                    ),
                ),
            )
        ), s73(14)),
    _operator("17.18-operator-set-opened-consistently", s17(18),
        "run, input and manifest agree, but the manifest is not the v1 table",
        "operator_set_mismatch",
        operator(lambda c: _consistently_opened(c, manifest(row(attempts=2)))), s73(14)),
    _operator("17.18-run-operator-set-id", s17(18),
        "the run forged naming another operator set id", "operator_set_mismatch",
        _op_forged(run={"operator_set_id": other_digest(CANDIDATE_OPERATOR_SET_ID)}), s73(14)),
    _operator("17.18-run-operator-set-version", s17(18),
        f"the run forged naming {UNREGISTERED_OPERATOR_SET_VERSION}", "operator_set_mismatch",
        _op_forged(run={"operator_set_version": UNREGISTERED_OPERATOR_SET_VERSION}), s73(15)),
    _operator("17.19-input-digest-forged", s17(19), "the input's own digest changed after sealing",
        "identity_mismatch", _op_input_tampered(input_digest="0" * 64)),
    _operator("17.19-input-field-changed-after-sealing", s17(19),
        "the input's residual kind changed after sealing: its digest no longer reproduces",
        "identity_mismatch", _op_input_tampered(residual_kind="missing_relation")),
    _operator("17.19-frame-is-another", s17(19),
        "a lawful frame whose cue points the other way: not the frame the digests name",
        "identity_mismatch", operator(_flipped_frame)),
    _operator("17.19-schema-versions-canonical-but-other", s17(19),
        "the input re-sealed binding one schema version fewer", "identity_mismatch",
        _op_input(schema_versions=SCHEMA_VERSIONS[1:])),
    _operator("17.19-frame-holds-a-float", s17(19),
        "a fact value turned into a float after construction: the frame cannot be hashed",
        "record_malformed", operator(_frame_with_float), HASHABLE),
    *(
        _operator(f"7.3.22-{label}", s73(22), f"the input's {label.replace('-', ' ')}",
            "versions_not_canonical", build)
        for label, build in (
            ("schema-versions-descending", _op_input(schema_versions=SCHEMA_VERSIONS[::-1])),
            (
                "policy-versions-duplicated",
                _op_input(policy_versions=POLICY_VERSIONS[:1] + POLICY_VERSIONS),
            ),
            (
                "policy-versions-descending-after-sealing",
                _op_input_tampered(policy_versions=POLICY_VERSIONS[::-1]),
            ),
        )
    ),
    _operator("7.2-input-attempt-index-bool", "ADR-0231 §7.2",
        "the input's attempt index replaced by False: a bool is not an int", "input_malformed",
        _op_input_tampered(attempt_index=False), HASHABLE),
    _operator("7.2-input-digest-malformed", "ADR-0231 §7.2",
        "the input's digest replaced by a string that is not a digest", "input_malformed",
        _op_input_tampered(input_digest="NOT-A-DIGEST")),
    _operator("7.2-policy-altered", "ADR-0231 §7.2",
        "the policy altered after construction to depth 0", "record_malformed",
        operator(lambda c: _propose(c, policy=tampered(MISSING_ROLE_CANDIDATE_POLICY, depth=0)))),
)


RECIPES = Recipes("candidate_operator", "ADR-0231 §7.3, §17", ENTRIES)

def _initial_unbound_frame(c: Any) -> ProblemFrame:
    """runnable_increase's frame with its initial binding dropped: one missing_role residual
    whose code is initial_unbound."""
    frame = c[RI].frame
    proposal = frame.proposals[0]
    kept = tuple(binding for binding in proposal.bindings if binding.role is not Role.INITIAL)
    return dataclasses.replace(frame, proposals=(dataclasses.replace(proposal, bindings=kept),))


def _genuine_operator_outcome(frame: ProblemFrame) -> object:
    """The operator outcome the loop itself records for ``frame``."""
    trace = practice_case(frame)
    return trace.operator_outcomes[0]  # type: ignore[union-attr]


for _name, _comment, _flags, _build, _base in (
    ("operator-input-digest-malformed",
        "the input's digest replaced by a string that is not a digest", "Tampered",
        "ADR-0231/7.2-input-digest-malformed", (DU,)),
    ("operator-policy-altered", "the policy altered after construction to depth 0", "Tampered",
        "ADR-0231/7.2-policy-altered", (DU,)),
    ("operator-policy-widened", "a well-formed policy allowing two attempts per run", "Forged",
        "ADR-0231/17.1-policy-widened", (DU,)),
    ("operator-name-unsupported", "the input re-sealed naming other_candidate", "Resealed",
        "ADR-0231/17.2-input-operator-name", (DU,)),
    ("operator-residual-kind-unsupported",
        "sample s36's genuine chain: its one residual is missing_proposal", "Genuine",
        "ADR-0231/17.3-residual-of-another-kind", (NO_PROPOSAL,)),
    ("operator-gate-names-another-organ",
        "the gate forged naming other_organ, everything after rebound", "Forged",
        "ADR-0231/17.5-gate-names-another-organ", (DU,)),
    ("operator-residual-code-unsupported",
        "runnable_increase without its initial binding: genuine, code initial_unbound",
        "Genuine", lambda c: _genuine_operator_outcome(_initial_unbound_frame(c)), (RI,)),
    ("operator-gate-ineligible", "the gate forged INELIGIBLE, everything after rebound", "Forged",
        "ADR-0231/17.6-gate-ineligible", (DU,)),
    ("operator-budget-blocked",
        "the budget forged BUDGET_BLOCKED with zero limits, everything after rebound",
        "Forged", "ADR-0231/17.7-budget-blocked", (DU,)),
    ("operator-budget-names-another-gate", "the budget forged naming another gate decision",
        "Forged", "ADR-0231/17.10-budget-names-another-gate", (DU,)),
    ("operator-run-names-another-gate", "the run forged naming another gate decision", "Forged",
        "ADR-0231/17.8-run-names-another-gate", (DU,)),
    ("operator-set-empty", "the empty operator set handed to the operator", "Forged",
        "ADR-0231/17.18-operator-set-empty", (DU,)),
    ("operator-attempt-index-negative", "the input re-sealed for attempt index -1", "Resealed",
        "ADR-0231/7.3.16-attempt-index-negative", (DU,)),
    ("operator-attempt-index-at-max-candidates", "an input for attempt index max_candidates (5)",
        "Genuine", "ADR-0231/17.14-attempt-index-at-max-candidates", (DU,)),
    ("operator-attempt-index-one", "an input for attempt index 1: one attempt per run", "Genuine",
        "ADR-0231/17.15-attempt-index-beyond-policy", (DU,)),
    ("operator-budget-depth-zero",
        "an allowed budget with max_depth 0 and the run it lawfully opens", "Resealed",
        "ADR-0231/17.16-budget-max-depth-zero", (DU,)),
    ("operator-budget-parallelism-two", "an allowed budget forged with max_parallelism 2",
        "Forged", "ADR-0231/17.17-parallelism-2", (DU,)),
    ("operator-residual-span-outside-source",
        "a well-formed residual span past the end of the source text", "Forged",
        "ADR-0231/17.13-residual-span-outside-source", (DU,)),
    ("operator-schema-versions-descending",
        "the input re-sealed with its schema versions in descending order", "Resealed",
        "ADR-0231/7.3.22-schema-versions-descending", (DU,)),
    ("operator-input-names-another-run", "the input re-sealed naming another run", "Resealed",
        "ADR-0231/17.8-input-names-another-run", (DU,)),
    ("operator-residual-without-role", "the residual (and its blocker) forged without a role",
        "Forged", "ADR-0231/17.11-residual-without-role", (DU,)),
    ("operator-typed-cue-missing", "direction_unbound's frame without its cue: genuine", "Genuine",
        lambda c: _genuine_operator_outcome(dataclasses.replace(c[DU].frame, cues=())), (DU,)),
    ("operator-typed-cue-ambiguous", "sample s20's genuine chain: two grounded cues", "Genuine",
        "ADR-0231/17.12-typed-cue-ambiguous", (AMBIGUOUS,)),
    ("operator-typed-cue-not-justified",
        "the residual (and its blocker) forged without the cue's span", "Forged",
        "ADR-0231/17.12-typed-cue-not-justified", (DU,)),
):
    RECIPES.add(_name, _comment, _flags, _PROPOSE, _build, *_base)
# fmt: on
