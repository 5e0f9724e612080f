"""The sealed practice trace: our ADR-0230 (docs/adr/0007), ADR-0226 §7F, §8.9, §9.

Identities are rebuilt here: every stage digest with ``practice_strategies.oracle``, the
``trace_id`` with ``json`` and ``hashlib``. Tampering is done the way an attacker would, with
``tampered`` (no validation) and ``resealed`` (own identity recomputed), and every failure is
checked with its exact code and stage.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    ANSWER_SCHEMA_VERSION,
    CANDIDATE_OPERATOR_SET,
    COMPUTE_BUDGET_IN_FORCE,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    SEARCH_GATE_IN_FORCE,
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReconstruction,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    Defect,
    GateReason,
    GeometricSearchRun,
    ProofGatedAnswer,
    ReplayDisposition,
    ReplayResult,
    RunDisposition,
    SealedPracticeTrace,
    SearchRunRefusal,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    decide_answer,
    decide_compute_budget,
    is_version,
    load_sealed_trace,
    open_search_run,
    practice_case,
    replay_candidate,
    replay_divergence,
    search_input_for,
    verify_sealed_trace,
)
from practice_loop.kernel.record import Record
from practice_loop.kernel.trace import (
    TRACE_VERSIONS,
    UNDECLARED_VERSION_FIELDS,
    VERSION_PAIR_FIELDS,
    VERSION_TIES,
    _cross_identity_failures,
    _version_failures,
    seal_practice_trace,
    sealed_trace_bytes,
    stage_digests_of,
)
from practice_strategies import (
    FRAME_RECIPES,
    Impostor,
    RaisingImpostor,
    fields_for_sealing,
    neighbouring_digest,
    oracle,
    other_digest,
    problem_frames,
    resealed,
    share,
    tampered,
)

# isort: split
# After the kernel: importing the catalogue first imports the kernel from inside it, and the
# record strategies' registration (hypothesis_hook), which needs the catalogue, then fails.
from practice_loop.harness.catalogue.forging import (
    UNREGISTERED_BUDGET_VERSION,
    UNREGISTERED_GATE_VERSION,
)

F = TraceFailureCode
V2 = GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}

any_frames = st.one_of(
    problem_frames(),
    problem_frames(**ELIGIBLE_ONE_CUE),
    problem_frames(**FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE]),
    problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_RELATION]),
)


def _case(frame) -> SealedPracticeTrace:
    trace = practice_case(frame)
    assert type(trace) is SealedPracticeTrace, trace
    return trace


def _example(name: str) -> SealedPracticeTrace:
    """The trace of a shipped example (in-place tampering below always undoes itself: the
    shipped constants a trace holds are shared with every later case)."""
    (example,) = [e for e in shipped_examples() if e.name == name]
    return _case(example.frame)


# direction_unbound reaches every stage; runnable_increase has the direct proof;
# two_residuals has a run refusal.
DU, RI, TWO = (
    _example("direction_unbound"),
    _example("runnable_increase"),
    _example("two_residuals"),
)


# ------------------------------------------------------------------------------------------
# Identities, rebuilt


def _stages_by_hand(trace: SealedPracticeTrace) -> list[tuple[str, str]]:
    """0007 stage order, each present stage's identity recomputed by the oracle (replays and
    the outcome by their own id fields, which the oracle does not cover)."""
    pairs = [
        ("frame", oracle.problem_frame_digest(trace.frame)),
        ("assessment", oracle.assessment_id(trace.original_assessment)),
    ]
    if trace.direct_proof is not None:
        pairs.append(("proof", oracle.proof_id(trace.direct_proof)))
    pairs += [("residual", oracle.residual_id(residual)) for residual in trace.residuals]
    if trace.gate_decision is not None:
        pairs.append(("gate", oracle.gate_decision_id(trace.gate_decision)))
    if trace.budget_decision is not None:
        pairs.append(("budget", oracle.budget_id(trace.budget_decision)))
    if trace.search_input is not None:
        pairs.append(("search_input", oracle.search_input_digest(trace.search_input)))
    if trace.opened_run is not None:
        pairs.append(("opened_run", oracle.opened_run_id(trace.opened_run)))
    for outcome in trace.operator_outcomes:
        if type(outcome) is CandidateOperatorResult:
            pairs.append(("operator", oracle.operator_result_id(outcome)))
        else:
            assert type(outcome) is CandidateOperatorRefusal
            pairs.append(("operator", oracle.operator_refusal_id(outcome)))
    run = trace.run_outcome
    if run is not None:
        run_identity = oracle.run_id(run) if type(run) is GeometricSearchRun else None
        pairs.append(("run", run_identity or oracle.outcome_id(run)))
    for replay in trace.replays:
        replay_identity = getattr(replay, "replay_id", None)
        pairs.append(("replay", replay_identity or replay.replay_refusal_id))
    outcome = trace.outcome
    outcome_identity = getattr(outcome, "answer_id", None)
    pairs.append(("outcome", outcome_identity or outcome.answer_refusal_id))
    return pairs


def _without_explanations(value: Any) -> Any:
    """``value`` (decoded JSON) with every ``explanation`` key removed, at every depth."""
    if type(value) is dict:
        return {k: _without_explanations(v) for k, v in value.items() if k != "explanation"}
    if type(value) is list:
        return [_without_explanations(item) for item in value]
    return value


def _trace_id_by_hand(trace: SealedPracticeTrace) -> str:
    payload = _without_explanations(json.loads(json.dumps(trace.to_json())))
    assert payload == trace.to_json(drop_explanations=True)
    payload["trace_id"] = ""
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


FORBIDDEN_KEYS = {"timestamp", "time", "created_at", "host", "hostname", "path", "uuid", "pid"}
ANSWER_PATHS = {path.value for path in AnswerPath}


def _forbidden_keys(value: Any, where: str = "$") -> list[str]:
    """Keys named like a time, host, path, uuid or process. The answer's ``path`` is the
    closed ``AnswerPath`` vocabulary (``direct`` or ``practice``), which licenses the answer
    and names no filesystem or environment value; any other value under that key counts."""
    found: list[str] = []
    if type(value) is dict:
        for key, item in value.items():
            allowed = key == "path" and item in ANSWER_PATHS
            if key.lower() in FORBIDDEN_KEYS and not allowed:
                found.append(f"{where}.{key}")
            found += _forbidden_keys(item, f"{where}.{key}")
    elif type(value) is list:
        for index, item in enumerate(value):
            found += _forbidden_keys(item, f"{where}[{index}]")
    return found


@pytest.mark.obligation(
    "LOCAL-0007/record_fields",
    "LOCAL-0007/absent_stages",
    "LOCAL-0007/stage_digests",
)
@given(any_frames)
def test_produced_traces_verify_and_index_every_present_stage(frame):
    """0007: a produced trace verifies with no failure, and ``stage_digests`` lists each
    present stage's identity in stage order, absent stages left out."""
    trace = _case(frame)
    verification = verify_sealed_trace(trace)
    assert verification == TraceVerification(trace.trace_id, ())
    assert verification.valid
    assert list(trace.stage_digests) == _stages_by_hand(trace)


@pytest.mark.obligation("LOCAL-0007/trace_id")
@given(any_frames)
def test_trace_id_seals_every_field_but_prose_and_nothing_environmental(frame):
    """0007, ADR-0226 §7F: trace_id is the SHA-256 of every field but explanations (at every
    depth) with itself blanked; no key names a time, host, path, uuid or process."""
    trace = _case(frame)
    assert trace.trace_id == _trace_id_by_hand(trace)
    assert _forbidden_keys(trace.to_json()) == []


@pytest.mark.obligation("LOCAL-0007/trace_id")
def test_the_answer_path_key_is_the_only_allowed_near_miss():
    """0007: the key check would flag a ``path`` holding anything but an AnswerPath value."""
    payload = DU.to_json()
    assert _forbidden_keys(payload) == []
    payload["outcome"]["path"] = "/tmp/trace.json"
    payload["frame"]["created_at"] = 0
    assert _forbidden_keys(payload) == ["$.frame.created_at", "$.outcome.path"]


@pytest.mark.obligation("LOCAL-0007/trace_id")
@pytest.mark.parametrize("trace", [DU, RI, TWO], ids=["searched", "direct", "run_refused"])
def test_explanations_inside_nested_records_change_no_identity(trace):
    """0003, 0007: prose is excluded at every depth; rewriting every explanation in the
    trace, nested ones included, leaves it valid with the same trace_id."""
    changes: dict[str, Any] = {
        "explanation": "rewritten",
        "outcome": tampered(trace.outcome, explanation="rewritten outcome"),
    }
    changes["original_assessment"] = tampered(trace.original_assessment, explanation="")
    changes["residuals"] = tuple(tampered(r, explanation="x") for r in trace.residuals)
    changes["replays"] = tuple(tampered(r, explanation="y") for r in trace.replays)
    if trace.gate_decision is not None:
        changes["gate_decision"] = tampered(trace.gate_decision, explanation="z")
    if trace.run_outcome is not None:
        changes["run_outcome"] = tampered(trace.run_outcome, explanation="w")
    rewritten = tampered(trace, **changes)
    assert verify_sealed_trace(rewritten) == TraceVerification(trace.trace_id, ())
    assert rewritten.compute_id() == trace.trace_id


# ------------------------------------------------------------------------------------------
# Tampering, with the exact failure


def _only(verification: TraceVerification) -> TraceFailure:
    (failure,) = verification.failures
    return failure


def _verified_as(trace: object, code: TraceFailureCode, stage: str) -> TraceVerification:
    verification = verify_sealed_trace(trace)
    failure = _only(verification)
    assert (failure.code, failure.stage) == (code, stage), failure
    assert not verification.valid
    return verification


def _resealed_trace(trace: SealedPracticeTrace, **changes: Any) -> SealedPracticeTrace:
    """The trace with ``changes``, its stage index and trace_id recomputed: only a semantic
    check can catch it."""
    changed = tampered(trace, **changes)
    return resealed(changed, stage_digests=stage_digests_of(changed))


@pytest.mark.parametrize("entry", [Impostor(), RaisingImpostor()], ids=["impostor", "raising"])
def test_a_stage_digest_entry_whose_class_claims_every_class_is_the_wrong_type(entry):
    """A stage digest entry is an exact (stage, digest) tuple: an entry whose class claims to
    be tuple is WRONG_TYPE, never measured or compared."""
    found = tampered(DU, stage_digests=(entry, *DU.stage_digests[1:])).find_defect()
    assert found is not None
    assert (found.field, found.defect) == ("stage_digests", Defect.WRONG_TYPE)


@pytest.mark.obligation("LOCAL-0007/verify_structure", "ADR-0226/9.11", "ADR-0226/9.16")
@pytest.mark.parametrize("trace", [DU, RI, TWO], ids=["searched", "direct", "run_refused"])
def test_a_changed_trace_id_is_trace_id_mismatch(trace):
    """0007 step 1: the self-seal is recomputed; another well-formed id is a mismatch."""
    verification = _verified_as(
        tampered(trace, trace_id=other_digest(trace.trace_id)), F.TRACE_ID_MISMATCH, "trace"
    )
    assert verification.trace_id is None
    _verified_as(tampered(trace, trace_id="not-a-digest"), F.RECORD_MALFORMED, "trace_id")


def _first(records: tuple, **changes: Any) -> tuple:
    return (tampered(records[0], **changes), *records[1:])


# One change per trace field that holds records, none resealed: each nested record's own
# validation (schema, cross checks, own identity) fails.
NESTED = {
    "frame": lambda t: tampered(t.frame, source_text=""),
    "original_assessment": lambda t: tampered(
        t.original_assessment, status=AssessmentStatus.RUNNABLE
    ),
    "residuals": lambda t: _first(t.residuals, residual_code="unit_mismatch"),
    "gate_decision": lambda t: tampered(t.gate_decision, reason_code="eligible_target_unbound"),
    "budget_decision": lambda t: tampered(t.budget_decision, max_steps=99),
    "search_input": lambda t: tampered(
        t.search_input, residual_ids=list(t.search_input.residual_ids)
    ),
    "opened_run": lambda t: tampered(t.opened_run, max_candidates=2),
    "operator_outcomes": lambda t: _first(t.operator_outcomes, attempt_index=1),
    "run_outcome": lambda t: tampered(
        t.run_outcome, run_disposition=RunDisposition.BLOCKED_BY_GATE
    ),
    "replays": lambda t: _first(t.replays, disposition=ReplayDisposition.CONTRACT_REFUSED),
    "outcome": lambda t: tampered(t.outcome, value=8),
}


@pytest.mark.obligation("LOCAL-0007/verify_structure")
@pytest.mark.parametrize("field", list(NESTED))
def test_a_broken_nested_record_is_record_malformed_naming_its_field(field):
    """0007 step 1: a nested record that no longer validates is record_malformed, with the
    trace field that holds it as the stage."""
    trace = tampered(DU, **{field: NESTED[field](DU)})
    _verified_as(trace, F.RECORD_MALFORMED, field)


@pytest.mark.obligation("LOCAL-0007/verify_structure")
def test_a_broken_direct_proof_is_record_malformed():
    """0007 step 1: the direct proof is validated in full, like every nested record."""
    trace = tampered(RI, direct_proof=tampered(RI.direct_proof, derived_value=12))
    _verified_as(trace, F.RECORD_MALFORMED, "direct_proof")


@pytest.mark.obligation("LOCAL-0013/trust_scoped", "LOCAL-0007/verify_structure")
def test_a_record_altered_in_place_at_depth_is_caught_after_verification():
    """docs/adr/0013 trust scoped to one call: verifying once and then altering a record deep
    inside (a replay's proof obligation) in place is still caught by the next call."""
    trace = _example("direction_unbound")
    assert verify_sealed_trace(trace).valid
    obligation = trace.replays[0].replay_proof.obligations[0]
    object.__setattr__(obligation, "holds", False)
    _verified_as(trace, F.RECORD_MALFORMED, "replays")
    object.__setattr__(obligation, "holds", True)
    assert verify_sealed_trace(trace).valid


STAGE_INDEX_CHANGES = {
    "reversed": lambda pairs: pairs[::-1],
    "digest_changed": lambda pairs: ((pairs[0][0], other_digest(pairs[0][1])), *pairs[1:]),
    "stage_dropped": lambda pairs: pairs[:-2] + pairs[-1:],
    "stage_renamed": lambda pairs: (("problem", pairs[0][1]), *pairs[1:]),
    "stage_repeated": lambda pairs: (pairs[0], *pairs),
}


@pytest.mark.obligation("LOCAL-0007/stage_digests", "LOCAL-0007/verify_structure", "ADR-0226/9.16")
@pytest.mark.parametrize("change", sorted(STAGE_INDEX_CHANGES))
@pytest.mark.parametrize("seal", [False, True], ids=["as_is", "resealed"])
def test_an_altered_stage_index_is_stage_digest_mismatch(change, seal):
    """0007: stage_digests must equal the stages the records show, resealed or not."""
    pairs = STAGE_INDEX_CHANGES[change](DU.stage_digests)
    forged = (resealed if seal else tampered)(DU, stage_digests=pairs)
    _verified_as(forged, F.STAGE_DIGEST_MISMATCH, "trace")


@pytest.mark.obligation("LOCAL-0007/stage_digests", "ADR-0226/8.9")
def test_a_resealed_nested_record_is_caught_by_the_stage_index():
    """0007: a nested record altered and re-sealed has a valid id of its own, but the trace's
    stage index (and so its seal) no longer matches it."""
    gate = resealed(DU.gate_decision, reason_code="eligible_target_unbound")
    _verified_as(tampered(DU, gate_decision=gate), F.STAGE_DIGEST_MISMATCH, "trace")


@pytest.mark.obligation(
    "LOCAL-0007/cross_identity_table",
    "LOCAL-0007/replay_divergence",
    "ADR-0226/9.8",
)
@share(2)
@given(problem_frames(**ELIGIBLE_ONE_CUE))
def test_another_cases_gate_is_a_cross_identity_mismatch(frame):
    """0007 step 3: with the gate of another case (trace resealed around it), the gate no
    longer names the frame, assessment and residuals, and the budget, the search input and
    the operator's input no longer name the gate: exactly those four rows fail.
    replay_divergence names the gate, the first stage that differs."""
    other = _case(frame)
    assume(other.gate_decision.decision_id != DU.gate_decision.decision_id)
    forged = _resealed_trace(DU, gate_decision=other.gate_decision)
    verification = verify_sealed_trace(forged)
    assert verification.trace_id == forged.trace_id
    assert verification.failures == tuple(
        TraceFailure(F.CROSS_IDENTITY_MISMATCH, stage, "")
        for stage in ("gate", "budget", "search_input", "operator")
    )
    assert replay_divergence(forged) == TraceFailure(
        F.REPLAY_DIVERGED, "gate", "replayed trace differs"
    )


def _missing_relation_trace() -> SealedPracticeTrace:
    """runnable_increase with the question asked in pears: unit_mismatch, eligible as
    missing_relation, so the one operator refuses it (residual_kind_unsupported)."""
    (example,) = [e for e in shipped_examples() if e.name == "runnable_increase"]
    target = example.frame.target
    frame = dataclasses.replace(example.frame, target=dataclasses.replace(target, unit="pear"))
    trace = _case(frame)
    assert type(trace.operator_outcomes[0]) is CandidateOperatorRefusal
    return trace


MR = _missing_relation_trace()


def _opened_run_and_run_of_another_input(trace: SealedPracticeTrace) -> dict[str, Any]:
    opened = resealed(trace.opened_run, input_digest=other_digest(trace.opened_run.input_digest))
    run = resealed(trace.run_outcome, input_digest=opened.input_digest, opened_run_id=opened.run_id)
    return {"opened_run": opened, "run_outcome": run}


# Each re-sealed change and exactly the cross-identity rows it breaks (0007 step 3 table).
CROSS = {
    "refused_case_with_a_direct_proof": (
        DU,
        lambda t: {"direct_proof": RI.direct_proof},
        ("stages", "proof", "outcome"),
    ),
    "runnable_case_with_a_gate": (
        RI,
        lambda t: {"gate_decision": DU.gate_decision},
        ("stages", "gate"),
    ),
    "refused_case_without_its_run": (TWO, lambda t: {"run_outcome": None}, ("stages",)),
    "operator_refusal_of_another_input": (
        MR,
        lambda t: {
            "operator_outcomes": (
                resealed(
                    t.operator_outcomes[0],
                    input_digest=other_digest(t.operator_outcomes[0].input_digest),
                ),
            )
        },
        ("operator",),
    ),
    "outcome_of_another_frame": (
        DU,
        lambda t: {
            "outcome": resealed(
                t.outcome, problem_frame_digest=other_digest(t.outcome.problem_frame_digest)
            )
        },
        ("outcome",),
    ),
    "proof_of_another_assessment": (
        RI,
        lambda t: {
            "direct_proof": resealed(
                t.direct_proof,
                contract_assessment_id=other_digest(t.direct_proof.contract_assessment_id),
            )
        },
        ("proof", "outcome"),
    ),
    "residual_out_of_place": (
        TWO,
        lambda t: {"residuals": (resealed(t.residuals[0], blocker_index=1), *t.residuals[1:])},
        ("residual", "gate", "search_input"),
    ),
    "budget_of_another_gate": (
        DU,
        lambda t: {
            "budget_decision": resealed(
                t.budget_decision, gate_decision_id=other_digest(t.budget_decision.gate_decision_id)
            )
        },
        ("budget", "search_input", "operator"),
    ),
    "search_input_changed": (
        DU,
        lambda t: {
            "search_input": tampered(t.search_input, operator_set_version="operator_set.empty.v1")
        },
        ("search_input", "run"),
    ),
    "run_refusal_of_another_input": (
        TWO,
        lambda t: {
            "run_outcome": resealed(
                t.run_outcome, input_digest=other_digest(t.run_outcome.input_digest)
            )
        },
        ("run",),
    ),
    "run_of_another_opened_run": (
        DU,
        lambda t: {
            "run_outcome": resealed(
                t.run_outcome, opened_run_id=other_digest(t.run_outcome.opened_run_id)
            )
        },
        ("run",),
    ),
    "opened_run_of_another_input": (
        DU,
        lambda t: {
            "opened_run": resealed(
                t.opened_run, input_digest=other_digest(t.opened_run.input_digest)
            )
        },
        ("operator", "run"),
    ),
    "opened_run_and_run_of_another_input": (
        # The run rebound to the opened run: only the opened run's input is out of place, so
        # the run row must compare it with the search input, not order it.
        DU,
        _opened_run_and_run_of_another_input,
        ("operator", "run"),
    ),
    "replay_of_another_reconstruction": (
        DU,
        lambda t: {
            "replays": (
                resealed(
                    t.replays[0],
                    candidate_reconstruction_digest=other_digest(
                        t.replays[0].candidate_reconstruction_digest
                    ),
                ),
            )
        },
        ("replay", "outcome"),
    ),
    # A stage's record dropped from a searched trace: each row that reads it fails, and none
    # of them may read a record that is not there.
    "gate_dropped": (
        DU,
        lambda t: {"gate_decision": None},
        ("stages", "budget", "search_input", "operator"),
    ),
    "budget_dropped": (
        DU,
        lambda t: {"budget_decision": None},
        ("stages", "search_input", "operator"),
    ),
    "search_input_dropped": (DU, lambda t: {"search_input": None}, ("stages", "run")),
}


@pytest.mark.obligation(
    "LOCAL-0007/cross_identity_table",
    "LOCAL-0007/replay_divergence",
    "ADR-0226/8.9",
    "ADR-0226/9.8",
)
@pytest.mark.parametrize("side", ["before", "after"])
@pytest.mark.parametrize("name", sorted(CROSS))
def test_each_cross_identity_row(name, side, monkeypatch):
    """0007 step 3: a resealed trace whose records no longer bind each other fails exactly
    the rows of the table that compare them (cascades written out); replay_divergence names
    the first stage whose digest differs from the genuine trace's. Each forged id is the one
    just before the true id, then the one just after, so no row may order ids it compares."""
    after = side == "after"
    monkeypatch.setitem(globals(), "other_digest", lambda d: neighbouring_digest(d, after=after))
    trace, change, stages = CROSS[name]
    forged = _resealed_trace(trace, **change(trace))
    verification = verify_sealed_trace(forged)
    assert verification.trace_id == forged.trace_id
    assert [(f.code, f.stage) for f in verification.failures] == [
        (F.CROSS_IDENTITY_MISMATCH, stage) for stage in stages
    ]
    pairs = zip(forged.stage_digests, trace.stage_digests, strict=False)
    changed = [new for new, old in pairs if new != old]
    changed += forged.stage_digests[len(trace.stage_digests) :]
    changed += trace.stage_digests[len(forged.stage_digests) :]
    first = changed[0][0] if changed else "trace"
    assert replay_divergence(forged) == TraceFailure(
        F.REPLAY_DIVERGED, first, "replayed trace differs"
    )


@pytest.mark.obligation("LOCAL-0007/replay_divergence", "ADR-0226/9.8")
@pytest.mark.parametrize(
    ("cut", "missing"),
    [
        ({"outcome": None}, "outcome"),
        ({"replays": (), "outcome": None}, "replay"),
        ({"run_outcome": None, "replays": (), "outcome": None}, "run"),
    ],
)
def test_a_trace_cut_short_diverges_at_the_first_stage_it_lacks(cut, missing):
    """A trace whose stages are a strict prefix of its replay's (resealed, so every stage it
    has matches) diverges at the first stage the replay has and it lacks, never at ``trace``
    (the kernel mutation score's first survivor, docs/adr/0015)."""
    forged = _resealed_trace(DU, **cut)
    assert forged.stage_digests == DU.stage_digests[: len(forged.stage_digests)]
    assert replay_divergence(forged) == TraceFailure(
        F.REPLAY_DIVERGED, missing, "replayed trace differs"
    )


@pytest.mark.obligation("LOCAL-0007/cross_identity_table", "ADR-0226/8.9")
@pytest.mark.parametrize(
    ("trace", "stages"),
    [
        (DU, ("assessment", "operator", "outcome")),
        (RI, ("assessment", "outcome")),
        (TWO, ("assessment", "outcome")),
    ],
    ids=["searched", "runnable", "run_refused"],
)
@pytest.mark.parametrize("digest", ["0" * 64, "f" * 64], ids=["sorting_before", "sorting_after"])
def test_an_assessment_of_another_frame_is_a_cross_identity_mismatch(trace, stages, digest):
    """0007 step 3: the assessment binds the trace's frame by its exact digest. Another
    digest fails the assessment row (and the rows that read the assessment) whether it sorts
    before or after the frame's: the kernel mutation score's survivor `==` made `>=`
    (docs/adr/0015)."""
    assessment = tampered(trace.original_assessment, problem_frame_digest=digest)
    forged = tampered(trace, original_assessment=assessment)
    assert [f.stage for f in _cross_identity_failures(trace)] == []
    assert [(f.code, f.stage) for f in _cross_identity_failures(forged)] == [
        (F.CROSS_IDENTITY_MISMATCH, stage) for stage in stages
    ]


VERSION_CHANGES = {
    "newer_answer_version": (
        lambda: {"versions": (("answer", "proof_gated_answer.v2"), *TRACE_VERSIONS[1:])},
        "versions",
        True,
    ),
    "one_version_missing": (lambda: {"versions": TRACE_VERSIONS[1:]}, "versions", True),
    "versions_unsorted": (lambda: {"versions": TRACE_VERSIONS[::-1]}, "versions", False),
    "schema_version": (
        lambda: {"schema_version": "sealed_practice_trace.v2"},
        "schema_version",
        False,
    ),
}


@pytest.mark.obligation(
    "LOCAL-0007/trace_versions",
    "LOCAL-0007/verify_versions",
    "ADR-0226/9.10",
    "ADR-0226/9.18",
)
@pytest.mark.parametrize("name", sorted(VERSION_CHANGES))
def test_other_versions_are_version_unsupported(name):
    """0007 steps 1-2, ADR-0226 §9: a trace sealed under other versions is not judged by this
    code, even when resealed; the trace_id is reported only when the record itself is well
    formed. replay_divergence sees every stage match and names the trace."""
    changes, stage, well_formed = VERSION_CHANGES[name]
    forged = resealed(DU, **changes())
    verification = _verified_as(forged, F.VERSION_UNSUPPORTED, stage)
    assert verification.trace_id == (forged.trace_id if well_formed else None)
    assert replay_divergence(forged) == TraceFailure(
        F.REPLAY_DIVERGED, "trace", "replayed trace differs"
    )


# ------------------------------------------------------------------------------------------
# Versions the records carry, tied to the versions the trace declares (issue 15)


def _decided_under_a_candidate_budget(trace: SealedPracticeTrace) -> SealedPracticeTrace:
    """The trace's case re-run by the kernel's own stages with the budget decided under a
    candidate version (the next unregistered one, with the rows in force), passed explicitly
    as ``practice-loop prove-policy`` passes it; the run refuses that budget, and
    ``seal_practice_trace`` seals it all with the versions in force, so every identity in it
    is the kernel's own."""
    candidate = ComputeBudgetPolicy(UNREGISTERED_BUDGET_VERSION, COMPUTE_BUDGET_IN_FORCE.rows)
    gate = trace.gate_decision
    budget = decide_compute_budget(gate, candidate, registered={candidate.version: candidate})
    assert budget.policy_version == UNREGISTERED_BUDGET_VERSION
    assert budget.status is trace.budget_decision.status
    search_input = search_input_for(gate, budget, CANDIDATE_OPERATOR_SET, V2)
    run = open_search_run(search_input, gate, budget, CANDIDATE_OPERATOR_SET)
    assert run.reason_codes == ("budget_policy_version_unsupported",)
    return seal_practice_trace(
        frame=trace.frame,
        original_assessment=trace.original_assessment,
        residuals=trace.residuals,
        gate_decision=gate,
        budget_decision=budget,
        search_input=search_input,
        run_outcome=run,
        outcome=decide_answer(trace.frame, trace.original_assessment),
    )


CANDIDATE_BUDGET_FAILURES = (
    TraceFailure(
        F.VERSION_MISMATCH,
        "budget",
        f"ComputeBudgetDecision.policy_version is '{UNREGISTERED_BUDGET_VERSION}', "
        f"declared '{COMPUTE_BUDGET_IN_FORCE.version}'",
    ),
    TraceFailure(
        F.VERSION_MISMATCH,
        "search_input",
        f"GeometricSearchInput.budget_policy_version is '{UNREGISTERED_BUDGET_VERSION}', "
        f"declared '{COMPUTE_BUDGET_IN_FORCE.version}'",
    ),
)


@pytest.mark.obligation("LOCAL-0007/verify_versions", "ADR-0226/9.10", "ADR-0226/9.18")
@pytest.mark.parametrize("trace", [DU, TWO], ids=["searched", "run_refused"])
def test_a_trace_decided_under_another_budget_version_is_version_mismatch(trace):
    """0007 step 2, ADR-0226 §9 (issue 15): a trace whose versions name the budget version
    in force while its budget was decided under a candidate version is not judged by this
    code. Its every identity is consistent (the kernel sealed it, and every cross-identity
    row holds), so before the tie it verified; now loading it gives the trace, and
    verifying that is version_mismatch at exactly the budget and the search input, the two
    stages that carry the budget version."""
    stale = _decided_under_a_candidate_budget(trace)
    assert stale.versions == TRACE_VERSIONS
    assert _cross_identity_failures(stale) == []  # only the version tie can fail
    loaded = load_sealed_trace(sealed_trace_bytes(stale))
    assert type(loaded) is SealedPracticeTrace and loaded == stale
    for checked in (stale, loaded):
        assert verify_sealed_trace(checked) == TraceVerification(
            stale.trace_id, CANDIDATE_BUDGET_FAILURES
        )
    assert replay_divergence(loaded) == TraceFailure(
        F.REPLAY_DIVERGED, "budget", "replayed trace differs"
    )


def _sealed_trace(trace: SealedPracticeTrace, **changes: Any) -> SealedPracticeTrace:
    """The trace with ``changes``, sealed again through the kernel's constructor (which
    validates every field, the stage index included, and recomputes ``trace_id``)."""
    changed = tampered(trace, **changes)
    fields = fields_for_sealing(changed, stage_digests=stage_digests_of(changed))
    return SealedPracticeTrace.sealed(**fields)


def _reconstruction_naming(trace: SealedPracticeTrace, name: str, pinned: str) -> dict:
    """The operator result with its reconstruction's policy version ``name`` set to
    ``pinned``, both sealed again by their constructors."""
    result = trace.operator_outcomes[0]
    rebuilt = result.reconstruction
    pairs = tuple((key, pinned if key == name else value) for key, value in rebuilt.policy_versions)
    rebuilt = CandidateReconstruction.sealed(**fields_for_sealing(rebuilt, policy_versions=pairs))
    result = CandidateOperatorResult.sealed(
        **fields_for_sealing(
            result,
            reconstruction=rebuilt,
            candidate_reconstruction_digest=rebuilt.candidate_reconstruction_digest,
        )
    )
    return {"operator_outcomes": (result,)}


# Each: a well-formed record carrying another version than the trace declares, sealed into
# the trace; the failures, exactly (and what verification said before the tie).
VERSION_TIE_CASES = {
    # Before: valid. A run refusal's identity is checked only against the search input digest.
    "run_refusal_under_run_v1": (
        TWO,
        lambda t: {
            "run_outcome": SearchRunRefusal.sealed(
                **fields_for_sealing(t.run_outcome, run_policy_version="geometric_search_run.v1")
            )
        },
        (
            (
                "run",
                "SearchRunRefusal.run_policy_version is 'geometric_search_run.v1', "
                "declared 'geometric_search_run.v2'",
            ),
        ),
    ),
    # Before: cross_identity_mismatch at run (the opened run names another input digest).
    "search_input_under_run_v1": (
        DU,
        lambda t: {
            "search_input": dataclasses.replace(
                t.search_input, run_policy_version="geometric_search_run.v1"
            )
        },
        (
            (
                "search_input",
                "GeometricSearchInput.run_policy_version is 'geometric_search_run.v1', "
                "declared 'geometric_search_run.v2'",
            ),
        ),
    ),
    # Before: cross_identity_mismatch at budget, search_input and operator.
    "budget_naming_an_unregistered_gate": (
        DU,
        lambda t: {
            "budget_decision": ComputeBudgetDecision.sealed(
                **fields_for_sealing(
                    t.budget_decision, gate_policy_version=UNREGISTERED_GATE_VERSION
                )
            )
        },
        (
            (
                "budget",
                f"ComputeBudgetDecision.gate_policy_version is '{UNREGISTERED_GATE_VERSION}', "
                f"declared '{SEARCH_GATE_IN_FORCE.version}'",
            ),
        ),
    ),
    # Before: cross_identity_mismatch at replay (no replay names the new reconstruction).
    "reconstruction_naming_an_unregistered_budget": (
        DU,
        lambda t: _reconstruction_naming(t, "compute_budget", UNREGISTERED_BUDGET_VERSION),
        (
            (
                "operator",
                "CandidateOperatorResult.reconstruction.policy_versions[compute_budget] is "
                f"'{UNREGISTERED_BUDGET_VERSION}', declared '{COMPUTE_BUDGET_IN_FORCE.version}'",
            ),
        ),
    ),
}


@pytest.mark.obligation("LOCAL-0007/verify_versions", "ADR-0226/9.10")
@pytest.mark.parametrize("name", sorted(VERSION_TIE_CASES))
def test_a_record_carrying_an_undeclared_version_is_version_mismatch(name):
    """0007 step 2 (issue 15): each version a record carries is tied to the one the trace
    declares under that name, wherever the record sits; a well-formed record carrying another
    one, sealed into a well-formed trace, is version_mismatch naming its stage, before any
    cross-identity row is judged."""
    trace, change, expected = VERSION_TIE_CASES[name]
    forged = _sealed_trace(trace, **change(trace))
    failures = tuple(TraceFailure(F.VERSION_MISMATCH, stage, detail) for stage, detail in expected)
    assert verify_sealed_trace(forged) == TraceVerification(forged.trace_id, failures)
    loaded = load_sealed_trace(sealed_trace_bytes(forged))
    assert type(loaded) is SealedPracticeTrace
    assert verify_sealed_trace(loaded) == TraceVerification(forged.trace_id, failures)


# Between them these hold every record kind a trace can hold; the last one (not a trace the
# loop makes: its replay stage holds the adapter's refusal of a missing reconstruction) is
# the only one with a ReplayRefusal, and is used unvalidated.
TRACES_WITH_EVERY_KIND = (
    DU,
    RI,
    TWO,
    MR,
    tampered(DU, replays=(replay_candidate(DU.frame, DU.original_assessment, None),)),
)


def _record_kinds(root: type) -> list[type]:
    """Every record kind a ``root`` can hold, at any depth (from the type annotations)."""
    found: list[type] = []
    pending = [root]
    while pending:
        kind = pending.pop()
        if kind in found:
            continue
        found.append(kind)
        for hint in typing.get_type_hints(kind).values():
            stack = [hint]
            while stack:
                part = stack.pop()
                if isinstance(part, type) and issubclass(part, Record):
                    pending.append(part)
                stack.extend(typing.get_args(part))
    return found


@pytest.mark.obligation("LOCAL-0007/verify_versions", "LOCAL-0007/trace_versions")
def test_every_version_field_a_trace_can_hold_is_tied_or_undeclared():
    """0007 step 2 (issue 15): every field named like a version, in every record kind a
    trace can hold, is tied to a declared version, holds (name, version) pairs tied by name,
    or is listed as naming nothing the trace declares; every declared name is carried by
    some tied field; and in real traces no listed field holds a version of a declared name."""
    declared = dict(TRACE_VERSIONS)
    ties = {(kind, field): name for kind, rows in VERSION_TIES.items() for field, name in rows}
    pairs = {(kind, field) for kind, fields in VERSION_PAIR_FIELDS.items() for field in fields}
    assert not set(ties) & pairs and not (set(ties) | pairs) & UNDECLARED_VERSION_FIELDS
    kinds = [kind for kind in _record_kinds(SealedPracticeTrace) if kind is not SealedPracticeTrace]
    # A version field by its name, or by what it holds in a real trace: a version, or pairs.
    version_fields = {
        (kind, field.name)
        for kind in kinds
        for field in dataclasses.fields(kind)
        if "version" in field.name
    }
    for trace in TRACES_WITH_EVERY_KIND:
        for record in _records_in(trace):
            for field in dataclasses.fields(record):
                value = getattr(record, field.name)
                holds_versions = is_version(value) or (
                    type(value) is tuple
                    and value
                    and all(type(pair) is tuple and is_version(pair[-1]) for pair in value)
                )
                if holds_versions and type(record) is not SealedPracticeTrace:
                    version_fields.add((type(record), field.name))
    assert version_fields == set(ties) | pairs | UNDECLARED_VERSION_FIELDS
    assert set(ties.values()) == set(declared)
    for trace in TRACES_WITH_EVERY_KIND:
        for record in _records_in(trace):
            for kind, field in UNDECLARED_VERSION_FIELDS:
                if type(record) is kind:
                    assert getattr(record, field).rsplit(".v", 1)[0] not in declared, (kind, field)


def _records_in(value: object) -> list[object]:
    found: list[object] = []
    pending = [value]
    while pending:
        item = pending.pop()
        if type(item) is tuple:
            pending.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            found.append(item)
            pending.extend(getattr(item, field.name) for field in dataclasses.fields(item))
    return found


def _places_of(value: Any, kind: type, path: tuple = ()) -> list[tuple]:
    """The path (field names and tuple indexes) of every record of ``kind`` in ``value``."""
    if type(value) is tuple:
        return [p for i, item in enumerate(value) for p in _places_of(item, kind, (*path, i))]
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return []
    if type(value) is kind:
        return [path]
    return [
        place
        for field in dataclasses.fields(value)
        for place in _places_of(getattr(value, field.name), kind, (*path, field.name))
    ]


def _tampered_at(value: Any, path: tuple, field: str, new: str) -> Any:
    """``value`` with the record at ``path`` holding ``new`` in ``field``, nothing validated
    or resealed on the way."""
    if not path:
        return tampered(value, **{field: new})
    head, *rest = path
    if type(value) is tuple:
        return tuple(
            _tampered_at(item, tuple(rest), field, new) if i == head else item
            for i, item in enumerate(value)
        )
    return tampered(value, **{head: _tampered_at(getattr(value, head), tuple(rest), field, new)})


STAGE_OF_FIELD = {
    "original_assessment": "assessment",
    "direct_proof": "proof",
    "residuals": "residual",
    "gate_decision": "gate",
    "budget_decision": "budget",
    "search_input": "search_input",
    "opened_run": "opened_run",
    "operator_outcomes": "operator",
    "run_outcome": "run",
    "replays": "replay",
    "outcome": "outcome",
}
TIED_FIELDS = sorted(
    (kind.__name__, field, name) for kind, rows in VERSION_TIES.items() for field, name in rows
)


@pytest.mark.obligation("LOCAL-0007/verify_versions")
@pytest.mark.parametrize("kind_name, field, name", TIED_FIELDS)
def test_each_tied_field_is_compared_wherever_it_sits(kind_name, field, name):
    """0007 step 2 (issue 15): every row of the tie table is read, at every place a record
    of that kind sits in a trace (a stage record, or nested: a replay's assessment and proof,
    an operator result's reconstruction). Set to another version of the same name there
    (unvalidated: a record check pins most of these fields already), it is the one mismatch
    the tie reports, at the stage that holds it."""
    kind = next(k for k in VERSION_TIES if k.__name__ == kind_name)
    wrong, declared = f"{name}.v9", dict(TRACE_VERSIONS)[name]
    checked = 0
    for trace in TRACES_WITH_EVERY_KIND:
        assert _version_failures(trace) == []
        for place in _places_of(trace, kind):
            failures = _version_failures(_tampered_at(trace, place, field, wrong))
            assert [(f.code, f.stage) for f in failures] == [
                (F.VERSION_MISMATCH, STAGE_OF_FIELD[place[0]])
            ], place
            assert f".{field} is '{wrong}', declared '{declared}'" in failures[0].detail
            checked += 1
    assert checked, kind_name


@pytest.mark.obligation("LOCAL-0007/verify_structure", "ADR-0226/9.9")
@pytest.mark.parametrize(
    "value",
    [None, "trace", 0, DU.to_json(), DU.outcome, DU.frame, canonical_json(DU.to_json())],
    ids=["none", "str", "int", "json", "answer", "frame", "bytes"],
)
def test_a_value_that_is_not_a_trace_is_not_a_trace(value):
    """0007 step 1: any other type is not_a_trace, never an exception."""
    verification = _verified_as(value, F.NOT_A_TRACE, "$")
    assert verification.trace_id is None


def _forged_answer(trace: SealedPracticeTrace, value: int) -> ProofGatedAnswer:
    replay_ids = tuple(r.replay_id for r in trace.replays if type(r) is ReplayResult)
    return ProofGatedAnswer.sealed(
        schema_version=ANSWER_SCHEMA_VERSION,
        problem_frame_digest=trace.outcome.problem_frame_digest,
        original_contract_assessment_id=trace.outcome.original_contract_assessment_id,
        path=AnswerPath.PRACTICE,
        value=value,
        unit="apple",
        proof_id=other_digest(trace.original_assessment.assessment_id),
        replay_ids=replay_ids or (other_digest(trace.trace_id),),
        explanation="forged",
    )


@pytest.mark.obligation(
    "LOCAL-0007/cross_identity_table",
    "ADR-0226/8.6",
    "ADR-0226/8.9",
    "ADR-0226/9.8",
)
@pytest.mark.parametrize(
    "trace, forged",
    [
        (DU, lambda t: _forged_answer(t, 8)),
        (TWO, lambda t: _forged_answer(t, 99)),
        (
            DU,
            lambda t: AnswerRefusal.sealed(
                schema_version=ANSWER_SCHEMA_VERSION,
                problem_frame_digest=t.outcome.problem_frame_digest,
                original_contract_assessment_id=t.outcome.original_contract_assessment_id,
                reason_codes=("original_refusal_stands", "direction_unbound"),
                explanation="forged refusal",
            ),
        ),
    ],
    ids=["searched_answer_changed", "refusal_turned_answer", "answer_turned_refusal"],
)
def test_a_forged_outcome_is_caught_by_verification_and_replay(trace, forged):
    """ADR-0226 §8.6, §9, 0007 step 3: a resealed trace whose outcome is a forged answer or
    refusal bound to the right frame and assessment fails the outcome row (the answer stage's
    own decision over the trace's records differs), and replay_divergence names the outcome."""
    forgery = _resealed_trace(trace, outcome=forged(trace))
    assert verify_sealed_trace(forgery).failures == (
        TraceFailure(F.CROSS_IDENTITY_MISMATCH, "outcome", ""),
    )
    assert replay_divergence(forgery) == TraceFailure(
        F.REPLAY_DIVERGED, "outcome", "replayed trace differs"
    )


# ------------------------------------------------------------------------------------------
# Loading stored bytes


@pytest.mark.obligation("LOCAL-0007/loading", "LOCAL-0007/record_fields")
@given(any_frames)
def test_stored_bytes_load_back_to_the_same_trace(frame):
    """0003, 0007 loading: canonical bytes of a produced trace load back equal and re-encode
    to the same bytes."""
    trace = _case(frame)
    data = canonical_json(trace.to_json())
    loaded = load_sealed_trace(data)
    assert type(loaded) is SealedPracticeTrace
    assert loaded == trace
    assert canonical_json(loaded.to_json()) == data


DATA = canonical_json(DU.to_json())


def _encoded(change) -> bytes:
    payload = DU.to_json()
    change(payload)
    return canonical_json(payload)


def _set(path: str, value: Any):
    def change(payload: dict) -> None:
        *parents, last = path.split(".")
        for name in parents:
            payload = payload[name]
        payload[last] = value

    return change


def _deep(depth: int) -> bytes:
    return DATA[:-1] + b',"zz":' + b"[" * depth + b"]" * depth + b"}"


BAD_BYTES = {
    "invalid_utf8": lambda: DATA.replace(b"apples", b"apples\xff", 1),
    "lone_continuation_byte": lambda: b"\x80" + DATA,
    "whitespace": lambda: DATA.replace(b'":', b'": ', 1),
    "pretty_printed": lambda: json.dumps(DU.to_json(), indent=1).encode("utf-8"),
    "keys_unsorted": lambda: json.dumps(DU.to_json(), separators=(",", ":")).encode("utf-8"),
    "float": lambda: DATA.replace(b'"sentence_index":0', b'"sentence_index":0.0', 1),
    "exponent": lambda: DATA.replace(b'"sentence_index":0', b'"sentence_index":0e0', 1),
    "nan": lambda: DATA.replace(b'"sentence_index":0', b'"sentence_index":NaN', 1),
    "huge_int": lambda: DATA.replace(b'"sentence_index":0', b'"sentence_index":' + b"9" * 30, 1),
    "duplicate_key": lambda: b'{"budget_decision":null,' + DATA[1:],
    "missing_field": lambda: _encoded(lambda p: p.pop("explanation")),
    "missing_nested_field": lambda: _encoded(lambda p: p["outcome"].pop("unit")),
    "extra_field": lambda: _encoded(_set("created_at", 0)),
    "extra_nested_field": lambda: _encoded(_set("frame.host", "localhost")),
    "unknown_enum_value": lambda: _encoded(_set("outcome.path", "sideways")),
    "unknown_nested_enum": lambda: _encoded(_set("original_assessment.status", "maybe")),
    "wrong_nested_type": lambda: _encoded(_set("frame", [])),
    "record_where_tuple": lambda: _encoded(_set("residuals", {})),
    "string_where_record": lambda: _encoded(_set("outcome", "answered")),
    "bool_where_int": lambda: _encoded(_set("outcome.value", True)),
    "int_where_str": lambda: _encoded(_set("outcome.unit", 7)),
    "union_without_identity": lambda: _encoded(lambda p: p["outcome"].pop("answer_id")),
    "not_an_object": lambda: b"[]",
    "empty": lambda: b"",
    "too_deep": lambda: _deep(40),
    "truncated": lambda: DATA[:-1],
}


@pytest.mark.obligation("LOCAL-0007/loading", "ADR-0226/9.9")
@pytest.mark.parametrize("name", sorted(BAD_BYTES))
def test_bad_bytes_are_undecodable(name):
    """0003, 0007 loading: anything but the canonical bytes of a valid trace is one typed
    failure, undecodable, never an exception and never a trace."""
    result = load_sealed_trace(BAD_BYTES[name]())
    assert type(result) is TraceVerification
    assert result.trace_id is None
    (failure,) = result.failures
    assert (failure.code, failure.stage) == (F.UNDECODABLE, "$")


@pytest.mark.obligation("LOCAL-0007/loading")
@pytest.mark.parametrize(
    "change, code, stage, detail",
    [
        (
            _set("trace_id", other_digest(DU.trace_id)),
            F.TRACE_ID_MISMATCH,
            "trace",
            "SealedPracticeTrace.trace_id: identity_mismatch",
        ),
        (
            _set("outcome.value", 8),
            F.RECORD_MALFORMED,
            "ProofGatedAnswer",
            "ProofGatedAnswer.answer_id: identity_mismatch",
        ),
        (
            _set("outcome.proof_id", "f" * 63),
            F.RECORD_MALFORMED,
            "ProofGatedAnswer",
            "ProofGatedAnswer.proof_id: digest_malformed",
        ),
        # Loading classifies a defect of the trace record as verification does. An empty
        # index is refused by its field check (a trace has stages), not only because it
        # differs from the stages the records show.
        (
            _set("stage_digests", []),
            F.STAGE_DIGEST_MISMATCH,
            "trace",
            "SealedPracticeTrace.stage_digests: sequence_empty",
        ),
    ],
    ids=["trace_id", "nested_value", "nested_digest", "stage_index"],
)
def test_well_formed_bytes_of_a_broken_record_name_the_defect(change, code, stage, detail):
    """docs/adr/0003 (records validate on construction), trace.py loading: canonical bytes
    whose records do not validate are one typed failure naming the record type, the field
    and its exact defect; a changed trace_id is trace_id_mismatch. (0007 still says these
    load as undecodable.)"""
    result = load_sealed_trace(_encoded(change))
    assert type(result) is TraceVerification and result.trace_id is None
    (failure,) = result.failures
    assert (failure.code, failure.stage, failure.detail) == (code, stage, detail)


@pytest.mark.obligation("LOCAL-0007/loading")
@pytest.mark.parametrize("value", ["{}", bytearray(DATA), memoryview(DATA), None, DU])
def test_non_bytes_are_undecodable(value):
    """0003: only ``bytes`` are decoded; text, buffers and objects are refused."""
    result = load_sealed_trace(value)
    assert type(result) is TraceVerification and result.trace_id is None
    (failure,) = result.failures
    assert failure.code in (F.UNDECODABLE, F.RECORD_MALFORMED, F.TRACE_ID_MISMATCH)


damaged = st.integers(0, len(DATA) - 1).map(lambda cut: DATA[:cut] + DATA[cut + 1 :])


@pytest.mark.obligation("LOCAL-0007/loading")
@share(3)
@given(st.binary(max_size=64) | damaged)
def test_arbitrary_or_damaged_bytes_never_raise(data):
    """0007 loading: random bytes, or a stored trace with one byte deleted, never raise. They
    load as one typed failure (undecodable, or record_malformed / trace_id_mismatch /
    stage_digest_mismatch / version_unsupported when the bytes still parse), unless the deleted
    byte was prose (an explanation is not sealed), in which case the trace loads with the same
    trace_id."""
    result = load_sealed_trace(data)
    if type(result) is SealedPracticeTrace:
        assert result.trace_id == DU.trace_id
        assert result.to_json(drop_explanations=True) == DU.to_json(drop_explanations=True)
        return
    assert type(result) is TraceVerification and result.trace_id is None
    (failure,) = result.failures
    assert failure.code in (
        F.UNDECODABLE,
        F.RECORD_MALFORMED,
        F.TRACE_ID_MISMATCH,
        F.STAGE_DIGEST_MISMATCH,
        F.VERSION_UNSUPPORTED,
    )


@pytest.mark.obligation("LOCAL-0007/loading")
def test_a_stored_trace_whose_versions_lost_a_byte_is_an_unsupported_version():
    """0007: a defect of the trace's ``versions`` is classified as ``version_unsupported``
    whether it is found verifying or loading. Deleting the first letter of the first pair's
    stage, "answer", still parses, as pairs out of order; the ``ci`` profile never drew this
    cut, and a ten-minute fuzz campaign found it (issue 19)."""
    cut = DATA.index(b'"versions":[["answer"') + len(b'"versions":[["')
    result = load_sealed_trace(DATA[:cut] + DATA[cut + 1 :])
    assert type(result) is TraceVerification and result.trace_id is None
    (failure,) = result.failures
    assert (failure.code, failure.stage) == (F.VERSION_UNSUPPORTED, "versions")


@pytest.mark.obligation("LOCAL-0007/loading")
def test_a_deleted_byte_that_leaves_a_valid_frame_is_a_stage_digest_mismatch():
    """0007 loading: deleting a byte inside a frame label ("state_change..." becomes
    "tate_change...") leaves every record well formed, so what fails is the trace's index of
    stage digests, which no longer names the frame it holds."""
    cut = DATA.index(b'"relation_type":"s') + len(b'"relation_type":"')
    result = load_sealed_trace(DATA[:cut] + DATA[cut + 1 :])
    assert type(result) is TraceVerification and result.trace_id is None
    (failure,) = result.failures
    assert failure.code is F.STAGE_DIGEST_MISMATCH
    assert failure.detail == "SealedPracticeTrace.stage_digests: identity_mismatch"
