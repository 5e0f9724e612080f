"""The search run (ADR-0228 §9, §16; docs/adr/0004): open_search_run and record_attempts, and
the replay and answer rows of §16 downstream of one operator result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...kernel import (
    CANDIDATE_OPERATOR_SET,
    EMPTY_OPERATOR_SET,
    MAX_SAFE_INT,
    AnswerRefusal,
    AnswerRefusalReason,
    BudgetCharge,
    CandidateAttempt,
    CandidateReplayStatus,
    ComputeBudgetStatus,
    GateReason,
    OperatorSetManifest,
    ReplayRefusal,
    ReplayRefusalReason,
    SearchGateStatus,
    decide_answer,
    decide_compute_budget,
    decide_search_gate,
    open_search_run,
    replay_candidate,
    search_input_for,
)
from .entry import HASHABLE, Expected, Recipes, corruption, run, run_refused, s9, s16
from .forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
    ZERO_LIMITS,
    Attack,
    attempt,
    context,
    lineage,
    manifest,
    open_run,
    opened,
    other_digest,
    record,
    replay_closes,
    replayed,
    resealed,
    row,
    sealed,
    serial,
    sha256,
    tampered,
    with_budget,
    with_input,
    with_status,
)
from .shipped import DU, TWO

_OPEN = "search_run.open_search_run"
_RECORD = "search_run.record_attempts"


def _budget_status(status: ComputeBudgetStatus, reason_code: str) -> Callable[[Any], Attack]:
    return lambda c: with_budget(
        c, resealed(c.budget, status=status, reason_code=reason_code, **ZERO_LIMITS)
    )


def _unassessable_gate(chain: Any) -> Attack:
    """The gate's own answer to the assessment with its residuals withheld (an incomplete
    context is unassessable), the budget's own answer to that gate, and an input naming both."""
    gate = decide_search_gate(chain.assessment, ())
    assert gate.status is SearchGateStatus.UNASSESSABLE, gate
    budget = decide_compute_budget(gate)
    search_input = search_input_for(gate, budget, chain.operator_set)
    return open_run(chain, search_input=search_input, gate_decision=gate, budget_decision=budget)


def _beyond_candidates(chain: Any) -> Attack:
    of = row(attempts=chain.budget.max_candidates + 1)
    return record(chain, manifest(of), serial(of, chain.budget.max_candidates + 1))


def _beyond_steps(chain: Any) -> Attack:
    # Each charge fits on its own; together they pass max_steps before max_candidates.
    steps = chain.budget.max_steps // 2 + 1
    of = row(steps=steps, attempts=3)
    return record(chain, manifest(of), serial(of, 3))


def _beyond_depth(chain: Any) -> Attack:
    return record(chain, *lineage(chain.budget.max_depth + 1))


def _skip_past_a_stop(chain: Any) -> Attack:
    """A one-step attempt, then one charged all of max_steps (it cannot fit after the
    first), then a one-step attempt that would fit if the second were skipped: the run must
    stop at the second, never skip it and admit the third (ADR-0228 §9, §16 row 9)."""
    small = row("small_op", attempts=2)
    big = row("big_op", steps=chain.budget.max_steps)
    steps = chain.budget.max_steps
    attempts = (attempt(small, 0, 0), attempt(big, 1, 1), attempt(small, 2, 1 + steps))
    return record(chain, manifest(small, big), attempts)


def _first_does_not_fit(chain: Any) -> Attack:
    of = row(steps=chain.budget.max_steps + 1)
    return record(chain, manifest(of), serial(of, 1))


def _empty_set_v2(chain: Any) -> Attack:
    return record(chain, EMPTY_OPERATOR_SET, ())


def _replay_forged_digest(chain: Any) -> Attack:
    rebuilt = context(chain).result().reconstruction
    forged = tampered(rebuilt, candidate_digest=other_digest(rebuilt.candidate_digest))
    return Attack(
        replay_candidate,
        {"frame": chain.frame, "original_assessment": chain.assessment, "reconstruction": forged},
    )


def _answer(chain: Any, replays: tuple[object, ...]) -> Attack:
    return Attack(
        decide_answer, {"frame": chain.frame, "assessment": chain.assessment, "replays": replays}
    )


def _answer_after_replay(chain: Any) -> Attack:
    assert not replay_closes(chain)
    return _answer(chain, (replayed(chain),))


def _record_result(chain: Any, status: CandidateReplayStatus | None = None) -> Attack:
    ctx = context(chain)
    made = ctx.result().candidate_attempt
    if status is not None:
        made = with_status(made, status)
    return record(chain, CANDIDATE_OPERATOR_SET, (made,), run=ctx.opened)


# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
ENTRIES = (
    # §16 row 1 / §9 check 9: a denied gate never starts a run.
    *(
        corruption(f"ADR-0228/16.1-gate-{label}", _OPEN, s16(1),
            f"the gate's own {label.replace('-', ' ')} decision is handed to the run",
            run_refused("blocked_by_gate", "gate_not_eligible"), open_run, s9(9),
            chains=f"denied {reason.value}")
        for label, reason in (
            ("ineligible-multiple-residuals", GateReason.MULTIPLE_RESIDUALS),
            ("ineligible-unclassified-residual", GateReason.UNCLASSIFIED_RESIDUAL),
            ("blocked-assessment-runnable", GateReason.ASSESSMENT_RUNNABLE),
            ("blocked-residual-without-evidence", GateReason.RESIDUAL_WITHOUT_EVIDENCE),
        )
    ),
    corruption("ADR-0228/16.1-gate-unassessable", _OPEN, s16(1),
        "residuals withheld from the gate: its unassessable answer, and the budget's, go in",
        run_refused("blocked_by_gate", "gate_not_eligible"), _unassessable_gate, s9(9)),
    # §16 row 2 / §9 checks 1-2: a blocked, zero or unassessable budget.
    *(
        corruption(f"ADR-0228/16.2-budget-{status.value.lower().removeprefix('budget_')}", _OPEN,
            s16(2),
            f"the budget re-sealed as {status.value} with every limit zero, the input rebound",
            run_refused("blocked_by_budget", "budget_not_allowed"),
            _budget_status(status, reason), s9(1))
        for status, reason in (
            (ComputeBudgetStatus.BUDGET_BLOCKED, "budget_blocked_gate_ineligible"),
            (ComputeBudgetStatus.BUDGET_ZERO, "budget_zero_test"),
            (ComputeBudgetStatus.BUDGET_UNASSESSABLE, "budget_unassessable_unknown_reason_code"),
        )
    ),
    *(
        corruption(f"ADR-0228/16.2-allowed-budget-{field.replace('_', '-')}-zero", _OPEN, s9(2),
            f"an allowed budget whose {field} is zero",
            run_refused("blocked_by_budget", "budget_ceiling_zero"),
            lambda c, field=field: with_budget(c, resealed(c.budget, **{field: 0})),
            s16(2))
        for field in ("max_candidates", "max_steps")
    ),
    # §16 row 3 / §9 checks 5-7: gate and budget must reproduce and name each other.
    corruption("ADR-0228/16.3-budget-names-another-gate", _OPEN, s16(3),
        "the budget re-sealed naming another gate decision",
        run_refused("invalid_input", "budget_gate_decision_mismatch"),
        lambda c: with_budget(
        c, resealed(c.budget, gate_decision_id=other_digest(c.gate.decision_id))
        ), s9(6)),
    corruption("ADR-0228/16.3-budget-names-another-gate-policy", _OPEN, s16(3),
        "the budget re-sealed naming another gate policy version",
        run_refused("invalid_input", "budget_gate_policy_mismatch"),
        lambda c: with_budget(c, resealed(c.budget, gate_policy_version=UNREGISTERED_GATE_VERSION)),
        s9(7)),
    corruption("ADR-0228/16.3-budget-names-another-gate-input", _OPEN, s16(3),
        "the budget re-sealed naming another gate input digest",
        run_refused("invalid_input", "budget_gate_input_mismatch"),
        lambda c: with_budget(
        c, resealed(c.budget, gate_input_digest=other_digest(c.gate.input_digest))
        ), s9(7)),
    corruption("ADR-0228/16.3-budget-id-does-not-reproduce", _OPEN, s16(3),
        "a budget limit changed after sealing: budget_id no longer reproduces",
        run_refused("invalid_input", "budget_id_mismatch"),
        lambda c: open_run(c, budget_decision=tampered(c.budget, max_steps=c.budget.max_steps + 1)),
        s9(5)),
    corruption("ADR-0228/16.3-gate-id-does-not-reproduce", _OPEN, s16(3),
        "the gate's input digest changed after sealing",
        run_refused("invalid_input", "gate_identity_mismatch"),
        lambda c: open_run(
        c, gate_decision=tampered(c.gate, input_digest=other_digest(c.gate.input_digest))
        )),
    corruption("ADR-0228/16.3-input-names-another-gate", _OPEN, s16(3),
        "the run input names another gate decision",
        run_refused("invalid_input", "input_gate_mismatch"),
        lambda c: with_input(c, gate_decision_id=other_digest(c.gate.decision_id))),
    corruption("ADR-0228/16.3-input-names-another-gate-input", _OPEN, s16(3),
        "the run input names another gate input digest",
        run_refused("invalid_input", "input_gate_mismatch"),
        lambda c: with_input(c, gate_input_digest=other_digest(c.gate.input_digest))),
    corruption("ADR-0228/16.3-input-names-another-budget", _OPEN, s16(3),
        "the run input names another budget",
        run_refused("invalid_input", "input_budget_mismatch"),
        lambda c: with_input(c, budget_id=other_digest(c.budget.budget_id))),
    # §16 row 4 / §9 check 8: frame, assessment and residual identities.
    corruption("ADR-0228/16.4-input-names-another-frame", _OPEN, s16(4),
        "the run input names another problem frame",
        run_refused("invalid_input", "problem_frame_mismatch"),
        lambda c: with_input(
        c, problem_frame_digest=other_digest(c.search_input.problem_frame_digest)
        )),
    corruption("ADR-0228/16.4-input-names-another-assessment", _OPEN, s16(4),
        "the run input names another contract assessment",
        run_refused("invalid_input", "assessment_mismatch"),
        lambda c: with_input(
        c, contract_assessment_id=other_digest(c.search_input.contract_assessment_id)
        )),
    *(
        corruption(f"ADR-0228/16.4-residual-ids-{label}", _OPEN, s16(4),
            f"the run input's residual sequence {label} (ADR-0228 §6: never by the run)",
            run_refused("invalid_input", "residual_ids_mismatch"),
            lambda c, change=change: with_input(
            c, residual_ids=change(c.search_input.residual_ids)
            ), s9(8))
        for label, change in (
            ("extended", lambda ids: ids + (other_digest(ids[0]),)),
            ("duplicated", lambda ids: ids + ids),
            ("dropped", lambda ids: ids[1:]),
            ("replaced", lambda ids: (other_digest(ids[0]),) + ids[1:]),
        )
    ),
    # §16 row 5 / §9 check 10: unsupported versions.
    corruption("ADR-0228/16.5-schema-version-unsupported", _OPEN, s16(5),
        "the run input asks for another run schema",
        run_refused("invalid_input", "schema_version_unsupported"),
        lambda c: with_input(c, schema_version="geometric_search_run_schema.v2")),
    corruption("ADR-0228/16.5-gate-policy-version-unsupported", _OPEN, s16(5),
        "the gate re-sealed under a policy version the run does not support",
        run_refused("invalid_input", "gate_policy_version_unsupported"),
        lambda c: open_run(
            c, gate_decision=resealed(c.gate, policy_version=UNREGISTERED_GATE_VERSION))),
    corruption("ADR-0228/16.5-budget-policy-version-unsupported", _OPEN, s16(5),
        "the budget re-sealed under a policy version the run does not support",
        run_refused("invalid_input", "budget_policy_version_unsupported"),
        lambda c: open_run(
        c, budget_decision=resealed(c.budget, policy_version=UNREGISTERED_BUDGET_VERSION)
        ), s9(10)),
    corruption("ADR-0228/16.5-operator-set-version-unsupported", _OPEN, s16(5),
        "an empty operator set under a version the run does not support",
        run_refused("invalid_input", "operator_set_version_unsupported"),
        lambda c: open_run(c, operator_set=OperatorSetManifest("operator_set.other.v1", ()))),
    corruption("ADR-0228/16.5-run-policy-version-unsupported", _OPEN, s16(5),
        "the run input asks for a run policy version that does not exist",
        run_refused("invalid_input", "run_policy_version_unsupported"),
        lambda c: with_input(c, run_policy_version="geometric_search_run.v9"), s9(10)),
    corruption("ADR-0228/16.5-run-policy-version-not-text", _OPEN, s16(5),
        "the run input's policy version is an int, never compared as a version",
        run_refused("invalid_input", "run_policy_version_unsupported"),
        lambda c: with_input(c, run_policy_version=1), s9(10), HASHABLE),
    # §16 row 6 / §9 check 3: negative limits.
    *(
        corruption(f"ADR-0228/16.6-negative-{field.replace('_', '-')}", _OPEN, s16(6),
            f"the budget re-sealed with a negative {field}",
            run_refused("invalid_input", "budget_limit_negative"),
            lambda c, field=field: with_budget(c, resealed(c.budget, **{field: -1})),
            s9(3))
        for field in ("max_candidates", "max_depth", "max_steps", "max_parallelism")
    ),
    corruption("ADR-0228/16.6-most-negative-limit", _OPEN, s16(6),
        "a limit of -(2**53 - 1), the most negative safe int",
        run_refused("invalid_input", "budget_limit_negative"),
        lambda c: with_budget(c, resealed(c.budget, max_steps=-MAX_SAFE_INT)), s9(3)),
    # §16 row 7 / §9 check 4 / §11: v1 is serial.
    *(
        corruption(f"ADR-0228/16.7-parallelism-{value}", _OPEN, s16(7),
            f"an allowed budget re-sealed with max_parallelism {value}",
            run_refused("invalid_input", "budget_parallelism_not_one"),
            lambda c, value=value: with_budget(c, resealed(c.budget, max_parallelism=value)),
            s9(4))
        for value in (0, 2, 64)
    ),
    # §9 check 11: any required identity malformed or absent.
    *(
        corruption(f"ADR-0228/9.11-{argument.replace('_', '-')}-absent", _OPEN, s9(11),
            f"no {argument} at all", run_refused("not_started", "required_record_absent"),
            lambda c, argument=argument: open_run(c, **{argument: None}))
        for argument in ("search_input", "gate_decision", "budget_decision", "operator_set")
    ),
    corruption("ADR-0228/9.11-input-digest-malformed", _OPEN, s9(11),
        "the run input's budget id is not a digest",
        run_refused("invalid_input", "input_malformed"),
        lambda c: with_input(c, budget_id=c.budget.budget_id.upper())),
    corruption("ADR-0228/9.11-input-residual-ids-list", _OPEN, s9(11),
        "the run input's residual ids as a list, not a tuple",
        run_refused("invalid_input", "input_malformed"),
        lambda c: with_input(c, residual_ids=list(c.search_input.residual_ids))),
    corruption("ADR-0228/9.11-input-of-another-type", _OPEN, s9(11),
        "the gate decision handed over as the run input",
        run_refused("invalid_input", "input_malformed"),
        lambda c: open_run(c, search_input=c.gate)),
    corruption("ADR-0228/9.11-gate-status-a-bare-string", _OPEN, s9(11),
        "the gate's status replaced by the string 'ELIGIBLE'",
        run_refused("invalid_input", "gate_malformed"),
        lambda c: open_run(c, gate_decision=tampered(c.gate, status="ELIGIBLE"))),
    corruption("ADR-0228/9.11-budget-of-another-type", _OPEN, s9(11),
        "the gate decision handed over as the budget",
        run_refused("invalid_input", "budget_malformed"),
        lambda c: open_run(c, budget_decision=c.gate)),
    # ADR-0228 §4, §6, §18: the operator set is closed, versioned and empty under v1.
    corruption("ADR-0228/4-operator-set-not-authorized-under-v1", _OPEN, "ADR-0228 §4",
        "a one-row operator set bound by a v1 run input: v1 is the inert shell only",
        run_refused("invalid_input", "operator_set_not_authorized"),
        lambda c: open_run(
        c,
        search_input=search_input_for(c.gate, c.budget, manifest()),
        operator_set=manifest(),
        ), "ADR-0228 §18"),
    corruption("ADR-0228/6-operator-set-operators-a-list", _OPEN, "ADR-0228 §6",
        "the operator set's rows as a list: not a closed, ordered allowlist",
        run_refused("invalid_input", "operator_set_malformed"),
        lambda c: open_run(c, operator_set=tampered(manifest(), operators=[]))),
    corruption("ADR-0228/6-empty-version-over-a-full-set", _OPEN, "ADR-0228 §6",
        "a one-row set that claims the empty set's version",
        run_refused("invalid_input", "operator_set_malformed"),
        lambda c: open_run(
        c, operator_set=tampered(manifest(), operator_set_version="operator_set.empty.v1")
        )),
    corruption("ADR-0228/6-input-names-another-operator-set", _OPEN, "ADR-0228 §6",
        "the run input names another operator set id",
        run_refused("invalid_input", "operator_set_mismatch"),
        lambda c: with_input(c, operator_set_id=other_digest(c.search_input.operator_set_id))),
)


RECORD_ENTRIES = (
    # §16 row 8 / §13: an empty operator set is deterministic exhaustion, nothing consumed.
    corruption("ADR-0228/16.8-empty-operator-set-v1", _OPEN, s16(8),
        "the valid v1 chain itself: its operator set is empty",
        run("exhausted_no_candidate", "operator_set_empty"), open_run, "ADR-0228 §13"),
    corruption("ADR-0228/16.8-empty-operator-set-v2", _RECORD, s16(8),
        "a v2 run opened over the empty set, recorded with no attempt",
        run("exhausted_no_candidate", "operator_set_empty"), _empty_set_v2, "ADR-0228 §13"),
    # §16 row 9 / §9: stop before the attempt whose charge would not fit; keep the others.
    corruption("ADR-0228/16.9-max-candidates", _RECORD, s16(9),
        "one attempt more than max_candidates, each charged one step",
        run("candidate_replay_pending", "max_candidates_reached"), _beyond_candidates,
        "ADR-0228 §13"),
    corruption("ADR-0228/16.9-max-steps", _RECORD, s16(9),
        "three attempts each charged just over half of max_steps",
        run("candidate_replay_pending", "max_steps_reached"), _beyond_steps, "ADR-0228 §13"),
    corruption("ADR-0228/16.9-max-depth", _RECORD, s16(9),
        "a lineage one level deeper than max_depth",
        run("candidate_replay_pending", "max_depth_reached"), _beyond_depth, "ADR-0228 §13"),
    corruption("ADR-0228/16.9-no-skipping-past-a-stop", _RECORD, s16(9),
        "after an attempt that does not fit comes one that would: the run still stops",
        run("candidate_replay_pending", "max_steps_reached"), _skip_past_a_stop,
        "ADR-0228 §13"),
    corruption("ADR-0228/16.9-first-attempt-does-not-fit", _RECORD, s16(9),
        "a single attempt charged one step more than max_steps",
        run("exhausted_no_candidate", "max_steps_reached"), _first_does_not_fit,
        "ADR-0228 §13"),
    # §16 row 10: an operator declaration or candidate that cannot be reproduced.
    corruption("ADR-0228/16.10-operator-undeclared", _RECORD, s16(10),
        "an attempt by an operator the manifest does not declare",
        run_refused("invalid_input", "attempt_operator_undeclared"),
        lambda c: record(c, manifest(), (attempt(row("other_op"), 0, 0),))),
    corruption("ADR-0228/16.10-charge-undeclared", _RECORD, s16(10),
        "an attempt charged two steps by an operator declared at one",
        run_refused("invalid_input", "attempt_charge_undeclared"),
        lambda c: record(c, manifest(), (attempt(row(steps=2), 0, 0),))),
    corruption("ADR-0228/16.10-attempts-beyond-declaration", _RECORD, s16(10),
        "two attempts by an operator declared at one per run",
        run_refused("invalid_input", "attempt_limit_exceeded"),
        lambda c: record(c, manifest(), serial(row(), 2))),
    corruption("ADR-0228/16.10-attempt-order-invalid", _RECORD, s16(10),
        "a first attempt that claims index 1",
        run_refused("invalid_input", "attempt_order_invalid"),
        lambda c: record(c, manifest(), (attempt(row(), 1, 0),)), "ADR-0228 §10"),
    corruption("ADR-0228/16.10-attempt-lineage-invalid", _RECORD, s16(10),
        "a depth-2 attempt whose parent was never recorded",
        run_refused("invalid_input", "attempt_lineage_invalid"),
        lambda c: record(
        c,
        manifest(row("root_op"), row("child_op", depth=2)),
        (attempt(row("child_op", depth=2), 0, 0, parent=attempt(row("root_op"), 0, 0)),),
        ), "ADR-0228 §10"),
    corruption("ADR-0228/16.10-attempts-a-list", _RECORD, s16(10),
        "the attempts handed over as a list",
        run_refused("invalid_input", "attempts_malformed"),
        lambda c: record(c, manifest(), [attempt(row(), 0, 0)])),
    corruption("ADR-0228/16.10-opened-run-forged", _RECORD, s16(10),
        "the opened run's ceiling widened after sealing",
        run_refused("invalid_input", "opened_run_malformed"),
        lambda c: record(
        c,
        manifest(),
        (),
        run=tampered(opened(c, manifest()), max_candidates=c.budget.max_candidates + 1),
        ), "ADR-0228 §10"),
    corruption("ADR-0228/16.10-recorded-with-another-manifest", _RECORD, s16(10),
        "attempts recorded under another manifest than the run opened with",
        run_refused("invalid_input", "operator_set_mismatch"),
        lambda c: record(c, manifest(), (), recorded_with=manifest(row(attempts=2)))),
    corruption("ADR-0228/16.10-candidate-digest-does-not-reproduce", "replay.replay_candidate",
        s16(10), "the operator's reconstruction with its candidate digest forged",
        Expected(ReplayRefusal, (ReplayRefusalReason.RECONSTRUCTION_MALFORMED,)),
        _replay_forged_digest, chains="operator"),
    # §16 row 11: replay missing -> pending; the original refusal stands.
    corruption("ADR-0228/16.11-run-without-replay-stays-pending", _RECORD, s16(11),
        "the operator's attempt recorded, no replay run",
        run("candidate_replay_pending", None), _record_result, chains="operator"),
    corruption("ADR-0228/16.11-answer-without-replay", "answer.decide_answer", s16(11),
        "an answer asked for with a candidate proposed but never replayed",
        Expected(AnswerRefusal, (AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS,)),
        lambda c: _answer(c, ()), chains="operator"),
    # §16 row 12: replay refuses every candidate -> the original refusal stands.
    corruption("ADR-0228/16.12-answer-after-replay-refuses", "answer.decide_answer", s16(12),
        "an answer asked for over the one replay, which did not close",
        Expected(AnswerRefusal, (AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS,)),
        _answer_after_replay, chains="operator, replay does not close"),
    corruption("ADR-0228/16.12-refused-attempt-not-recordable", _RECORD, s16(12),
        "the operator's attempt re-sealed as replay_refused and offered to the run",
        run_refused("invalid_input", "attempt_not_pending"),
        lambda c: _record_result(c, CandidateReplayStatus.REPLAY_REFUSED), "ADR-0228 §12",
        chains="operator"),
    # §16 row 13: replay closure is recorded externally; the run emits no answer.
    corruption("ADR-0228/16.13-closed-attempt-not-recordable", _RECORD, s16(13),
        "a candidate whose replay closes: its attempt re-sealed as replay_closed",
        run_refused("invalid_input", "attempt_not_pending"),
        lambda c: _record_result(c, CandidateReplayStatus.REPLAY_CLOSED), "ADR-0228 §12",
        chains="operator, replay closes"),
    corruption("ADR-0228/16.13-run-stays-pending-after-closure", _RECORD, s16(13),
        "a candidate whose replay closes: the run records it pending, and no answer",
        run("candidate_replay_pending", None), _record_result, "ADR-0228 §12",
        chains="operator, replay closes"),
)


RECIPES = Recipes("search_run", "ADR-0228 §9, §16", (*ENTRIES, *RECORD_ENTRIES))


def _recorded(c: Any, attempts: object, *, run: object = None, operator_set=None) -> object:
    """record_attempts over the shipped chain's own opened run and operator set."""
    run = c.opened if run is None else run
    return record(c, c.operator_set, attempts, run=run, recorded_with=operator_set)


def _attempt_of(c: Any, **changes: object) -> CandidateAttempt:
    return sealed(c[DU].result.candidate_attempt, **changes)


for _name, _comment, _flags, _function, _build in (
    ("run-input-absent", "no run input at all", "Absent", _OPEN,
        "ADR-0228/9.11-search-input-absent"),
    ("run-policy-version-unsupported", "the run input asks for geometric_search_run.v9",
        "Tampered", _OPEN, "ADR-0228/16.5-run-policy-version-unsupported"),
    ("run-schema-version-unsupported", "the run input asks for geometric_search_run_schema.v2",
        "Tampered", _OPEN, "ADR-0228/16.5-schema-version-unsupported"),
    ("run-input-of-another-type", "the gate decision handed over as the run input", "ForeignType",
        _OPEN, "ADR-0228/9.11-input-of-another-type"),
    ("run-gate-status-a-string", "the gate's status replaced by the string 'ELIGIBLE'", "Tampered",
        _OPEN, "ADR-0228/9.11-gate-status-a-bare-string"),
    ("run-gate-policy-unsupported", f"the gate re-sealed under {UNREGISTERED_GATE_VERSION}",
        "Resealed", _OPEN,
        "ADR-0228/16.5-gate-policy-version-unsupported"),
    ("run-gate-identity-mismatch", "the gate's input digest replaced after sealing", "Tampered",
        _OPEN, "ADR-0228/16.3-gate-id-does-not-reproduce"),
    ("run-budget-limit-negative", "the budget re-sealed with max_steps -1, the input rebound",
        "Resealed", _OPEN, "ADR-0228/16.6-negative-max-steps"),
    ("run-budget-of-another-type", "the gate decision handed over as the budget", "ForeignType",
        _OPEN, "ADR-0228/9.11-budget-of-another-type"),
    ("run-budget-policy-unsupported",
        f"the budget re-sealed under {UNREGISTERED_BUDGET_VERSION}", "Resealed",
        _OPEN, "ADR-0228/16.5-budget-policy-version-unsupported"),
    ("run-budget-id-mismatch", "a budget limit changed after sealing", "Tampered", _OPEN,
        "ADR-0228/16.3-budget-id-does-not-reproduce"),
    ("run-budget-names-another-gate",
        "the budget re-sealed naming another gate decision, the input rebound", "Resealed",
        _OPEN, "ADR-0228/16.3-budget-names-another-gate"),
    ("run-budget-names-another-gate-policy",
        f"the budget re-sealed naming {UNREGISTERED_GATE_VERSION}, the input rebound",
        "Resealed", _OPEN,
        "ADR-0228/16.3-budget-names-another-gate-policy"),
    ("run-budget-names-another-gate-input",
        "the budget re-sealed naming another gate input digest, the input rebound", "Resealed",
        _OPEN, "ADR-0228/16.3-budget-names-another-gate-input"),
    ("run-input-names-another-gate", "the run input names another gate decision", "Tampered",
        _OPEN, "ADR-0228/16.3-input-names-another-gate"),
    ("run-input-names-another-budget", "the run input names another budget", "Tampered", _OPEN,
        "ADR-0228/16.3-input-names-another-budget"),
    ("run-input-residual-ids-duplicated", "the run input's residual ids given twice", "Tampered",
        _OPEN, "ADR-0228/16.4-residual-ids-duplicated"),
    ("run-input-names-another-frame", "the run input names another problem frame", "Tampered",
        _OPEN, "ADR-0228/16.4-input-names-another-frame"),
    ("run-input-names-another-assessment", "the run input names another contract assessment",
        "Tampered", _OPEN, "ADR-0228/16.4-input-names-another-assessment"),
    ("run-operator-set-operators-a-list", "the operator set's rows replaced by a list", "Tampered",
        _OPEN, "ADR-0228/6-operator-set-operators-a-list"),
    ("run-operator-set-version-unsupported", "an empty operator set under operator_set.other.v1",
        "Forged", _OPEN, "ADR-0228/16.5-operator-set-version-unsupported"),
    ("run-input-names-another-operator-set", "the run input names another operator set id",
        "Tampered", _OPEN, "ADR-0228/6-input-names-another-operator-set"),
    ("run-v1-over-a-full-set", "a v1 run input bound to the candidate operator set", "Genuine",
        _OPEN, "ADR-0228/4-operator-set-not-authorized-under-v1"),
    ("run-gate-not-eligible", "two_residuals' genuine chain: its gate is ineligible", "Genuine",
        _OPEN,
        lambda c: open_search_run(
            c[TWO].trace.search_input, c[TWO].gate, c[TWO].budget, CANDIDATE_OPERATOR_SET
        )),
    ("run-budget-blocked",
        "the budget re-sealed BUDGET_BLOCKED with zero limits, the input rebound", "Resealed",
        _OPEN, "ADR-0228/16.2-budget-blocked"),
    ("run-budget-ceiling-zero",
        "an allowed budget re-sealed with max_candidates 0, the input rebound", "Resealed",
        _OPEN, "ADR-0228/16.2-allowed-budget-max-candidates-zero"),
    ("run-budget-parallelism-two",
        "an allowed budget re-sealed with max_parallelism 2, the input rebound", "Resealed",
        _OPEN, "ADR-0228/16.7-parallelism-2"),
    ("record-opened-run-widened", "the opened run's max_candidates raised after sealing",
        "Tampered", _RECORD, "ADR-0228/16.10-opened-run-forged"),
    ("record-attempts-a-list", "the operator's genuine attempt handed over in a list",
        "ForeignType", _RECORD, lambda c: _recorded(c, [c[DU].result.candidate_attempt])),
    ("record-attempt-index-one", "the genuine attempt re-sealed as attempt index 1", "Resealed",
        _RECORD, lambda c: _recorded(c, (_attempt_of(c, attempt_index=1),))),
    ("record-attempt-parent-unknown",
        "the genuine attempt re-sealed naming a parent never recorded", "Resealed", _RECORD,
        lambda c: _recorded(c, (_attempt_of(c, parent_attempt_id=sha256(b"no such attempt")),))),
    ("record-attempt-replay-closed", "the genuine attempt re-sealed replay_closed", "Resealed",
        _RECORD,
        lambda c: _recorded(
            c, (_attempt_of(c, replay_status=CandidateReplayStatus.REPLAY_CLOSED),)
        )),
    ("record-attempt-operator-undeclared", "the genuine attempt re-sealed as made by other_op",
        "Resealed", _RECORD, lambda c: _recorded(c, (_attempt_of(c, operator_id="other_op"),))),
    ("record-attempt-charge-undeclared", "the genuine attempt re-sealed charged two steps",
        "Resealed", _RECORD,
        lambda c: _recorded(c, (_attempt_of(c, budget_charge=BudgetCharge(1, 2)),))),
    ("record-attempts-beyond-declaration", "two attempts by an operator declared at one per run",
        "Resealed", _RECORD,
        lambda c: _recorded(
            c,
            (
                c[DU].result.candidate_attempt,
                _attempt_of(c, attempt_index=1, step_index=1),
            ),
        )),
    ("record-with-another-manifest",
        "attempts recorded under another manifest than the run opened with", "Forged", _RECORD,
        lambda c: _recorded(c, (), operator_set=manifest(row("other_op")))),
):
    RECIPES.add(_name, _comment, _flags, _function, _build, DU)
# fmt: on
