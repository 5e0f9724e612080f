"""``practice_case`` and ``replay_divergence``: the loop composed (ADR-0226 §6, §8, §9).

The loop decides nothing; these properties check that what it seals is what the stages entail.
Every expected value (the answer, the stage list, the codes) is computed here from the frame's
own facts, never read back from the kernel.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    AnswerPath,
    AnswerRefusal,
    AssessmentStatus,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CandidateReplayStatus,
    Direction,
    GateReason,
    GeometricSearchRun,
    ProofGatedAnswer,
    ProofStatus,
    ReplayDisposition,
    ReplayResult,
    Role,
    RunDisposition,
    RunExhaustionCode,
    SealedPracticeTrace,
    SearchRunRefusal,
    SourceSpan,
    Stage,
    StageRefusal,
    StateChangeProposal,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    load_sealed_trace,
    practice_case,
    replay_divergence,
    verify_sealed_trace,
)
from practice_loop.kernel.frame import MAX_EVIDENCE_CHARS, MAX_FRAME_SPANS, MAX_SOURCE_LENGTH
from practice_loop.kernel.record import inspect_record
from practice_loop.kernel.trace import sealed_trace_bytes
from practice_loop.product.reader import ReaderRefusal, read_question
from practice_strategies import FRAME_RECIPES, problem_frames, share, tampered

ELIGIBLE_ONE_CUE = {**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE], "cue_count": 1}
RUNNABLE = FRAME_RECIPES[GateReason.ASSESSMENT_RUNNABLE]

# Unconstrained frames rarely reach an answer; the two recipes make sure both answer paths
# are exercised in every run while ``problem_frames()`` still reaches everything else.
any_frames = st.one_of(
    problem_frames(),
    problem_frames(**ELIGIBLE_ONE_CUE),
    problem_frames(**RUNNABLE),
)


def _case(frame) -> SealedPracticeTrace:
    trace = practice_case(frame)
    assert type(trace) is SealedPracticeTrace, trace
    return trace


def _stages(trace: SealedPracticeTrace) -> list[str]:
    return [stage for stage, _ in trace.stage_digests]


def _expected_value(frame, direction: Direction) -> tuple[int, bool]:
    """``initial ± delta`` from the frame's facts, and whether the three units agree."""
    proposal = frame.proposals[0]
    initial = frame.fact(proposal.binding(Role.INITIAL).fact_id)
    delta = frame.fact(proposal.binding(Role.DELTA).fact_id)
    sign = 1 if direction is Direction.INCREASE else -1
    units_agree = initial.unit == delta.unit == frame.target.unit
    return initial.value + sign * delta.value, units_agree


# ------------------------------------------------------------------------------------------
# Wrong-zero


@pytest.mark.obligation("ADR-0226/8.6", "ADR-0226/8.7", "ADR-0226/8.8", "ADR-0226/13.8")
@given(any_frames)
def test_every_answer_is_the_value_its_evidence_entails(frame):
    """ADR-0226 §8.6-8, §10 wrong-zero: an answer is initial ± delta under the bound direction
    (direct) or the single grounded cue (practice), units agree, non-negative, and it names
    only a closed direct proof or closed replays of its own trace; otherwise a refusal."""
    trace = _case(frame)
    outcome = trace.outcome
    if type(outcome) is not ProofGatedAnswer:
        assert type(outcome) is AnswerRefusal
        return
    assert len(frame.proposals) == 1 and not frame.hazards and frame.target is not None
    direction_binding = frame.proposals[0].binding(Role.DIRECTION)
    if outcome.path is AnswerPath.DIRECT:
        assert direction_binding is not None
        direction = direction_binding.direction
        assert trace.original_assessment.status is AssessmentStatus.RUNNABLE
        assert trace.direct_proof.status is ProofStatus.CLOSED
        assert outcome.proof_id == trace.direct_proof.proof_id
        assert outcome.replay_ids == () and trace.replays == ()
    else:
        assert outcome.path is AnswerPath.PRACTICE
        assert direction_binding is None and len(frame.cues) == 1
        direction = frame.cues[0].direction
        assert trace.original_assessment.status is AssessmentStatus.REFUSED
        replays = {r.replay_id: r for r in trace.replays if type(r) is ReplayResult}
        assert outcome.replay_ids
        for replay_id in outcome.replay_ids:
            replay = replays[replay_id]
            assert replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
            assert replay.replay_proof.status is ProofStatus.CLOSED
            assert replay.replay_proof.derived_value == outcome.value
    value, units_agree = _expected_value(frame, direction)
    assert units_agree
    assert outcome.value == value >= 0
    assert outcome.unit == frame.target.unit


@pytest.mark.obligation("LOCAL-0008/loop_composition", "ADR-0228/17.smoke_lane", "ADR-0231/18.25")
@pytest.mark.parametrize(
    "name, expected",
    [
        ("direction_unbound", ("practice", 7)),
        ("runnable_increase", ("direct", 11)),
        ("proof_refused", ("direct_proof_refused", "result_non_negative")),
        (
            "two_residuals",
            ("original_refusal_stands", "hazard_multiple_changes", "direction_unbound")
            + ("target_unbound",),
        ),
    ],
)
def test_shipped_examples_reach_their_written_outcomes(name, expected):
    """ADR-0226 §4: each shipped case ends in the answer or refusal written out here."""
    (example,) = [e for e in shipped_examples() if e.name == name]
    outcome = _case(example.frame).outcome
    if type(outcome) is ProofGatedAnswer:
        assert (outcome.path.value, outcome.value) == expected
    else:
        assert outcome.reason_codes == expected


# ------------------------------------------------------------------------------------------
# The path a frame takes


@pytest.mark.obligation("ADR-0226/8.4", "LOCAL-0008/loop_composition")
@given(problem_frames(**RUNNABLE))
def test_runnable_frames_never_search(frame):
    """ADR-0226 §6, §8.4: a runnable assessment takes the existing path: no residual, gate,
    budget, run, operator or replay; the direct proof is present."""
    trace = _case(frame)
    assert trace.original_assessment.status is AssessmentStatus.RUNNABLE
    assert trace.direct_proof is not None
    assert trace.residuals == () and trace.operator_outcomes == () and trace.replays == ()
    absent = (trace.gate_decision, trace.budget_decision, trace.search_input, trace.opened_run)
    assert absent == (None, None, None, None) and trace.run_outcome is None
    assert _stages(trace) == ["frame", "assessment", "proof", "outcome"]


@pytest.mark.obligation(
    "ADR-0226/8.5",
    "ADR-0226/13.6",
    "ADR-0228/16.11",
    "ADR-0228/16.12",
    "ADR-0228/16.13",
    "ADR-0231/18.24",
    "LOCAL-0008/loop_composition",
    "LOCAL-0008/loop_no_decision",
)
@given(problem_frames(**ELIGIBLE_ONE_CUE))
def test_direction_unbound_one_cue_frame_searches_once(frame):
    """ADR-0231 §1, docs/adr/0004, ADR-0226 §7E: one operator result, a v2 run with one pending
    attempt naming the opened run, one replay of that candidate: closed when units agree and
    the result is non-negative, else contract_refused(unit_mismatch) or
    contract_closed_but_proof_refused(result_non_negative), and then the refusal stands."""
    trace = _case(frame)
    (result,) = trace.operator_outcomes
    assert type(result) is CandidateOperatorResult
    run = trace.run_outcome
    assert type(run) is GeometricSearchRun
    assert run.run_policy_version == GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION
    assert run.opened_run_id == trace.opened_run.run_id
    assert run.candidate_attempts == (result.candidate_attempt,)
    assert run.candidate_attempts[0].replay_status is CandidateReplayStatus.REPLAY_PENDING
    assert run.run_disposition is RunDisposition.CANDIDATE_REPLAY_PENDING
    (replay,) = trace.replays
    assert type(replay) is ReplayResult
    assert replay.candidate_reconstruction_digest == result.candidate_reconstruction_digest
    assert _stages(trace) == [
        "frame",
        "assessment",
        "residual",
        "gate",
        "budget",
        "search_input",
        "opened_run",
        "operator",
        "run",
        "replay",
        "outcome",
    ]
    value, units_agree = _expected_value(frame, frame.cues[0].direction)
    if not units_agree:
        expected = (ReplayDisposition.CONTRACT_REFUSED, ("unit_mismatch",))
    elif value < 0:
        expected = (ReplayDisposition.CONTRACT_CLOSED_BUT_PROOF_REFUSED, ("result_non_negative",))
    else:
        expected = (ReplayDisposition.CONTRACT_AND_PROOF_CLOSED, ())
    assert (replay.disposition, replay.replay_blockers) == expected
    if expected[0] is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED:
        assert type(trace.outcome) is ProofGatedAnswer and trace.outcome.value == value
    else:
        assert trace.outcome.reason_codes == ("original_refusal_stands", "direction_unbound")


@pytest.mark.obligation("ADR-0226/8.8", "ADR-0228/16.1", "LOCAL-0008/loop_composition")
@given(problem_frames(**FRAME_RECIPES[GateReason.MULTIPLE_RESIDUALS]))
def test_ineligible_frame_is_blocked_by_gate_without_an_operator(frame):
    """ADR-0226 §6, §8.8: a denied gate refuses the run (blocked_by_gate); no operator is
    called, nothing is replayed, and the original refusal stands with its blockers."""
    trace = _case(frame)
    run = trace.run_outcome
    assert type(run) is SearchRunRefusal
    assert run.run_disposition is RunDisposition.BLOCKED_BY_GATE
    assert run.reason_codes == ("gate_not_eligible",)
    assert trace.opened_run is None and trace.operator_outcomes == () and trace.replays == ()
    blockers = tuple(b.code.value for b in trace.original_assessment.blockers)
    assert len(blockers) > 1
    assert trace.outcome.reason_codes == ("original_refusal_stands", *blockers)


@pytest.mark.obligation(
    "ADR-0226/8.8",
    "ADR-0226/9.12",
    "LOCAL-0008/loop_composition",
    "LOCAL-0008/loop_no_decision",
)
@given(problem_frames(**FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_RELATION]))
def test_eligible_non_direction_residual_exhausts_the_operator_space(frame):
    """ADR-0231 §7.3.4, ADR-0228 §13: the one operator refuses a missing_relation residual;
    the run records no attempt (operator_space_depleted) and the original refusal stands."""
    trace = _case(frame)
    (refusal,) = trace.operator_outcomes
    assert type(refusal) is CandidateOperatorRefusal
    assert refusal.reason_codes == ("residual_kind_unsupported",)
    run = trace.run_outcome
    assert type(run) is GeometricSearchRun
    assert run.candidate_attempts == ()
    assert run.run_disposition is RunDisposition.EXHAUSTED_NO_CANDIDATE
    assert run.exhaustion_code is RunExhaustionCode.OPERATOR_SPACE_DEPLETED
    assert trace.replays == ()
    assert trace.outcome.reason_codes == ("original_refusal_stands", "unit_mismatch")


# ------------------------------------------------------------------------------------------
# Determinism, inputs untouched, replay


@pytest.mark.obligation(
    "ADR-0226/9.4",
    "ADR-0226/9.6",
    "ADR-0226/9.7",
    "ADR-0226/9.17",
    "ADR-0226/13.10",
    "LOCAL-0007/replay_divergence",
)
@given(any_frames)
def test_practice_case_is_deterministic_and_replays_without_divergence(frame):
    """ADR-0226 §9: the same frame gives the same trace bytes, replay_divergence finds no
    divergence, and the input frame is never mutated."""
    before = canonical_json(frame.to_json())
    copy = dataclasses.replace(frame)
    first, second = _case(frame), _case(frame)
    assert canonical_json(first.to_json()) == canonical_json(second.to_json())
    assert replay_divergence(first) is None
    assert canonical_json(frame.to_json()) == before and frame == copy
    assert first.frame == frame


@pytest.mark.obligation("LOCAL-0013/trust_scoped")
def test_a_result_altered_in_place_does_not_change_the_next_case():
    """ADR-0226 §9 (same input, same trace), 0013 trust ("it never changes a result"):
    a caller altering the assessment of a trace it was given, in place, breaks that trace
    only; practice_case on the same, untouched frame still seals the genuine trace."""
    (example,) = [e for e in shipped_examples() if e.name == "direction_unbound"]
    frame = example.frame
    trace = _case(frame)
    assessment = trace.original_assessment
    genuine = assessment.organ_version
    object.__setattr__(assessment, "organ_version", "unary_delta_transition.v2")
    try:
        again = practice_case(frame)
        assert type(again) is SealedPracticeTrace, again
        assert again.trace_id == trace.trace_id
        assert verify_sealed_trace(again).valid
    finally:
        object.__setattr__(assessment, "organ_version", genuine)


MALFORMED = {
    "source_text_none": {"source_text": None},
    "facts_list": {"facts": []},
    "organ_unknown": {"organ": "some_other_organ"},
    "schema_version_unsupported": {"schema_version": "problem_frame.v2"},
    "cues_not_records": {"cues": ("increase",)},
    "proposals_none": {"proposals": None},
}


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/loop_composition")
@pytest.mark.parametrize("name", sorted(MALFORMED))
@share(5)
@given(frame=any_frames)
def test_malformed_frame_is_a_stage_refusal(name, frame):
    """ARCHITECTURE §2: a frame the organ cannot judge is the assessment's typed refusal;
    the loop never raises and seals nothing."""
    refusal = practice_case(tampered(frame, **MALFORMED[name]))
    assert type(refusal) is StageRefusal
    assert refusal.stage is Stage.ASSESSMENT
    assert refusal.reason_codes[0] == "frame_malformed"


@pytest.mark.obligation("ADR-0226/9.9")
@pytest.mark.parametrize("value", [None, 0, "frame", {"source_text": ""}, b"{}"])
def test_a_value_that_is_not_a_frame_is_a_stage_refusal(value):
    """ARCHITECTURE §2: foreign input is refused with frame_malformed, never an exception."""
    refusal = practice_case(value)
    assert type(refusal) is StageRefusal
    assert refusal.reason_codes == ("frame_malformed", "wrong_record_type")


def _frame_at_the_size_caps(spans: int = MAX_FRAME_SPANS - 1):
    """The direction_unbound example grown to the frame caps (0005): source text of
    ``MAX_SOURCE_LENGTH`` characters (padded with 4-byte emoji), ``spans`` spans in all and
    close to ``MAX_EVIDENCE_CHARS`` of evidence, the padding cited by the initial binding."""
    (example,) = [e for e in shipped_examples() if e.name == "direction_unbound"]
    frame = example.frame
    base = len(frame.source_text)
    source = frame.source_text + "\U0001f600" * (MAX_SOURCE_LENGTH - base)
    present = frame.all_spans()
    extra = spans - len(present)
    width = (MAX_EVIDENCE_CHARS - sum(len(span.text) for span in present)) // extra
    padding = tuple(
        SourceSpan(source[base + i : base + i + width], base + i, base + i + width, 3)
        for i in range(extra)
    )
    (proposal,) = frame.proposals
    initial, *rest = proposal.bindings
    initial = dataclasses.replace(initial, evidence_spans=initial.evidence_spans + padding)
    return dataclasses.replace(
        frame,
        source_text=source,
        proposals=(StateChangeProposal(proposal.relation_type, (initial, *rest)),),
    )


@pytest.mark.obligation("LOCAL-0005/frame_caps")
def test_a_frame_at_the_size_caps_is_sealed_answered_and_stored():
    """ARCHITECTURE §2 ("a stage never raises"), 0005 frame caps, 0007 loading: a frame one
    span under the cap (its candidate reaches the cap) runs the whole loop to the answer 7
    and seals a trace that verifies, replays, and loads back from its stored bytes."""
    frame = _frame_at_the_size_caps()
    assert len(frame.all_spans()) == MAX_FRAME_SPANS - 1
    trace = _case(frame)
    assert type(trace.outcome) is ProofGatedAnswer and trace.outcome.value == 7
    assert verify_sealed_trace(trace).valid
    assert replay_divergence(trace) is None
    assert load_sealed_trace(canonical_json(trace.to_json())) == trace


@pytest.mark.obligation("ADR-0226/8.8", "LOCAL-0005/frame_caps")
def test_a_candidate_beyond_the_span_cap_leaves_the_refusal_standing():
    """ADR-0226 §8.8, 0005, docs/adr/0006 row 10: at exactly MAX_FRAME_SPANS the candidate
    frame (one more span, the cue's) is not a valid frame, so the adapter refuses it
    (candidate_not_applicable) and the original refusal stands: fail closed, no exception."""
    trace = _case(_frame_at_the_size_caps(MAX_FRAME_SPANS))
    (replay,) = trace.replays
    assert replay.reason_codes == ("candidate_not_applicable",)
    assert trace.outcome.reason_codes == ("original_refusal_stands", "direction_unbound")


# ------------------------------------------------------------------------------------------
# Full-byte replay: prose included (issue 15)


def _sample_traces() -> list[tuple[str, SealedPracticeTrace]]:
    """The trace of every line of the shipped sample the reader reads (src/practice_loop/
    data/sample.jsonl, through read_question and practice_case)."""
    sample = resources.files("practice_loop") / "data" / "sample.jsonl"
    traces = []
    for line in sample.read_text("utf-8").splitlines():
        row = json.loads(line)
        frame = read_question(row["question"])
        if type(frame) is not ReaderRefusal:
            traces.append((row["id"], _case(frame)))
    return traces


# The sample, and the one loop trace among the shipped cases whose replay stage holds the
# adapter's refusal (its candidate frame is one span over the cap, docs/adr/0006 row 10).
SAMPLE_TRACES = [*_sample_traces(), ("span_cap", _case(_frame_at_the_size_caps(MAX_FRAME_SPANS)))]


def _prose_sites(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], type]]:
    """The path (field names and tuple indexes) of every ``explanation`` under ``value``, in
    canonical key order, with the kind of record that holds it."""
    if type(value) is tuple:
        return [site for i, item in enumerate(value) for site in _prose_sites(item, (*path, i))]
    if not (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return []
    sites = []
    for name in sorted(field.name for field in dataclasses.fields(value)):
        if name == "explanation":
            sites.append(((*path, name), type(value)))
        else:
            sites += _prose_sites(getattr(value, name), (*path, name))
    return sites


def _reworded(value: Any, path: tuple[Any, ...]) -> Any:
    """``value`` with the explanation at ``path`` reworded, every record on the way rebuilt
    through its constructor (``dataclasses.replace``), which validates it and recomputes
    and compares its identity: prose being in no identity, every one still holds."""
    head, *rest = path
    if type(value) is tuple:
        return tuple(
            _reworded(item, tuple(rest)) if i == head else item for i, item in enumerate(value)
        )
    if not rest:
        return dataclasses.replace(value, explanation=f"reworded: {value.explanation}")
    return dataclasses.replace(value, **{head: _reworded(getattr(value, head), tuple(rest))})


def _shown(kind: type, path: tuple[Any, ...]) -> str:
    """A path as ``replay_divergence`` names it: the record kind, then the JSON keys."""
    return kind.__name__ + "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path)


def _first_traces_for_each_site() -> list[tuple[str, str, tuple[Any, ...], str]]:
    """(sample id, stage, path in the trace, shown path): one sample trace for each stage and
    place of prose in it, so every kind of stage record and every record nested in one is
    reworded once."""
    chosen, seen = [], set()
    for sample_id, trace in SAMPLE_TRACES:
        fields = {name: getattr(trace, name) for name in TRACE_STAGE_FIELDS.values()}
        for stage, field in TRACE_STAGE_FIELDS.items():
            value = fields[field]
            records = list(enumerate(value)) if type(value) is tuple else [(None, value)]
            for index, record in records:
                if record is None:
                    continue
                for inner, _ in _prose_sites(record):
                    key = (stage, type(record), inner)
                    if key in seen:
                        continue
                    seen.add(key)
                    path = (field, *(() if index is None else (index,)), *inner)
                    chosen.append((sample_id, stage, path, _shown(type(record), inner)))
    return chosen


TRACE_STAGE_FIELDS = {
    "frame": "frame",
    "assessment": "original_assessment",
    "proof": "direct_proof",
    "residual": "residuals",
    "gate": "gate_decision",
    "budget": "budget_decision",
    "search_input": "search_input",
    "opened_run": "opened_run",
    "operator": "operator_outcomes",
    "run": "run_outcome",
    "replay": "replays",
    "outcome": "outcome",
}
PROSE_SITES = _first_traces_for_each_site()


@pytest.mark.obligation("LOCAL-0007/replay_divergence")
def test_the_sample_rewords_prose_in_every_kind_of_stage():
    """docs/adr/0007 (issue 15): the chosen sites cover every stage that carries prose and
    every record kind that can stand at it; the frame and the search input carry none."""
    stages = {stage for _, stage, _, _ in PROSE_SITES}
    assert stages == set(TRACE_STAGE_FIELDS) - {"frame", "search_input"}
    kinds = {(stage, shown.split(".")[0]) for _, stage, _, shown in PROSE_SITES}
    assert {kind for stage, kind in kinds if stage == "operator"} == {
        "CandidateOperatorResult",
        "CandidateOperatorRefusal",
    }
    assert {kind for stage, kind in kinds if stage == "run"} == {
        "GeometricSearchRun",
        "SearchRunRefusal",
    }
    assert {kind for stage, kind in kinds if stage == "outcome"} == {
        "ProofGatedAnswer",
        "AnswerRefusal",
    }
    assert {kind for stage, kind in kinds if stage == "replay"} == {"ReplayResult", "ReplayRefusal"}
    nested = {shown for _, _, _, shown in PROSE_SITES if shown.count(".") > 1}
    assert "ReplayResult.replay_proof.explanation" in nested
    assert "GeometricSearchRun.candidate_attempts[0].explanation" in nested


@pytest.mark.obligation("LOCAL-0007/replay_divergence", "ADR-0226/9.7", "ADR-0226/9.8")
@pytest.mark.parametrize(
    "sample_id, stage, path, shown",
    PROSE_SITES,
    ids=[f"{stage}:{shown}" for _, stage, _, shown in PROSE_SITES],
)
def test_reworded_prose_is_explanation_diverged_at_its_stage(sample_id, stage, path, shown):
    """ADR-0226 §9 (the same canonical trace), docs/adr/0007 (issue 15): a sample trace with
    one explanation reworded, every record rebuilt by its constructor, keeps every identity:
    it verifies and loads under the same trace_id. Replaying it reproduces every identity but
    not the bytes, and replay_divergence names exactly that stage as explanation_diverged."""
    (trace,) = [trace for name, trace in SAMPLE_TRACES if name == sample_id]
    reworded = _reworded(trace, path)
    assert reworded.trace_id == trace.trace_id
    assert sealed_trace_bytes(reworded) != sealed_trace_bytes(trace)
    assert verify_sealed_trace(reworded) == TraceVerification(trace.trace_id, ())
    loaded = load_sealed_trace(sealed_trace_bytes(reworded))
    assert type(loaded) is SealedPracticeTrace and loaded.trace_id == trace.trace_id
    expected = TraceFailure(
        TraceFailureCode.EXPLANATION_DIVERGED, stage, f"{shown} differs from the replayed trace's"
    )
    assert replay_divergence(reworded) == expected
    assert replay_divergence(loaded) == expected
    assert replay_divergence(trace) is None


def _records_with_several_prose_sites() -> list[tuple[str, str, tuple[Any, ...], list]]:
    """(sample id, stage, path of the record in the trace, its prose sites in key order): the
    first trace for each stage and kind of record that holds more than one explanation."""
    chosen, seen = [], set()
    for sample_id, trace in SAMPLE_TRACES:
        for stage, field in TRACE_STAGE_FIELDS.items():
            value = getattr(trace, field)
            records = list(enumerate(value)) if type(value) is tuple else [(None, value)]
            for index, record in records:
                sites = [] if record is None else [inner for inner, _ in _prose_sites(record)]
                if len(sites) > 1 and (stage, type(record)) not in seen:
                    seen.add((stage, type(record)))
                    where = (field,) if index is None else (field, index)
                    chosen.append((sample_id, stage, where, type(record), sites))
    return chosen


@pytest.mark.obligation("LOCAL-0007/replay_divergence")
def test_prose_reworded_at_every_place_of_a_record_is_named_at_its_first_in_key_order():
    """docs/adr/0007: with every explanation of one stage record reworded, the divergence
    names the first in canonical key order, depth first (a nested attempt's explanation
    before the run's own: "candidate_attempts" sorts before "explanation")."""
    chosen = _records_with_several_prose_sites()
    assert {stage for _, stage, _, _, _ in chosen} >= {"run", "replay"}
    for sample_id, stage, where, kind, sites in chosen:
        (trace,) = [trace for name, trace in SAMPLE_TRACES if name == sample_id]
        reworded = trace
        for inner in sites:
            reworded = _reworded(reworded, (*where, *inner))
        assert replay_divergence(reworded) == TraceFailure(
            TraceFailureCode.EXPLANATION_DIVERGED,
            stage,
            f"{_shown(kind, sites[0])} differs from the replayed trace's",
        ), (sample_id, stage)


@pytest.mark.obligation("LOCAL-0007/replay_divergence")
def test_a_trace_whose_replay_is_refused_diverges_at_its_first_stage(monkeypatch):
    """docs/adr/0007: should the replay of a trace's frame be refused (here its records will
    not seal), the replay has no stage at all, so the trace diverges at its first, the frame;
    never an exception."""
    import practice_loop.kernel.loop as loop_module
    from practice_loop.kernel import Defect, RecordDefect, RecordError

    (trace,) = [trace for name, trace in SAMPLE_TRACES if name == "s01"]

    def unsealable(**records):
        raise RecordError(RecordDefect("SealedPracticeTrace", "$", Defect.IDENTITY_MISMATCH))

    monkeypatch.setattr(loop_module, "seal_practice_trace", unsealable)
    assert type(practice_case(trace.frame)) is StageRefusal
    assert replay_divergence(trace) == TraceFailure(
        TraceFailureCode.REPLAY_DIVERGED, "frame", "replayed trace differs"
    )


@pytest.mark.obligation("LOCAL-0007/replay_divergence", "ADR-0226/9.8")
@pytest.mark.parametrize("sample_id", ["s01", "s20", "s36"])
# Reworded text that sorts before the original and text that sorts after: only "differs" is
# the test, never an order.
@pytest.mark.parametrize("rewording", ["!", "~ reworded"])
def test_the_traces_own_explanation_reworded_is_explanation_diverged_at_trace(sample_id, rewording):
    """docs/adr/0007 (issue 15): the trace's own explanation (the outcome's, copied) is prose
    too; reworded alone, replay_divergence names the trace."""
    (trace,) = [trace for name, trace in SAMPLE_TRACES if name == sample_id]
    assert "!" < trace.explanation < "~"
    reworded = dataclasses.replace(trace, explanation=rewording)
    assert verify_sealed_trace(reworded) == TraceVerification(trace.trace_id, ())
    assert replay_divergence(reworded) == TraceFailure(
        TraceFailureCode.EXPLANATION_DIVERGED,
        "trace",
        "SealedPracticeTrace.explanation differs from the replayed trace's",
    )


@pytest.mark.obligation("LOCAL-0007/replay_divergence")
@pytest.mark.parametrize(
    "change",
    [
        lambda t: {"outcome": tampered(t.outcome, value=t.outcome.value + 1)},
        lambda t: {"explanation": None},
        lambda t: {"outcome": tampered(t.outcome, explanation=7)},
    ],
    ids=["answer_value_not_resealed", "explanation_none", "nested_explanation_int"],
)
def test_an_altered_trace_keeping_its_id_never_replays_clean(change):
    """docs/adr/0007 (issue 15): a trace altered in place without resealing keeps the
    trace_id its replay has, but is not the replay's bytes: replay_diverged at the trace,
    naming the defect (before, comparing ids alone, it replayed clean)."""
    (example,) = [e for e in shipped_examples() if e.name == "runnable_increase"]
    trace = _case(example.frame)
    altered = tampered(trace, **change(trace))
    divergence = replay_divergence(altered)
    assert (divergence.code, divergence.stage) == (TraceFailureCode.REPLAY_DIVERGED, "trace")
    found = inspect_record(altered, SealedPracticeTrace)
    assert divergence.detail == f"the trace does not inspect clean ({found.describe()})"


@pytest.mark.obligation("ADR-0226/9.9", "LOCAL-0008/loop_composition")
def test_records_that_will_not_seal_refuse_the_case_never_answer_it(monkeypatch):
    """A case whose records fail to seal is refused as ``trace_unsealable``, with the frame
    it concerns and the defect that stopped it: never an answer without its trace, never an
    exception (the path no frame reaches while every stage seals what it makes)."""
    import practice_loop.kernel.loop as loop_module
    from practice_loop.kernel import Defect, RecordDefect, RecordError, problem_frame_digest

    frame = shipped_examples()[0].frame
    defect = RecordDefect("SealedPracticeTrace", "stage_digests", Defect.IDENTITY_MISMATCH)

    def unsealable(**records):
        raise RecordError(defect)

    monkeypatch.setattr(loop_module, "seal_practice_trace", unsealable)
    refused = practice_case(frame)
    assert type(refused) is StageRefusal
    assert refused.stage is Stage.LOOP
    assert refused.reason_codes == ("trace_unsealable", "identity_mismatch")
    assert refused.subject_digest == problem_frame_digest(frame)
