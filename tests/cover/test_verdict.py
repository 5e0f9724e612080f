"""Issue 20: the verdict that heads ``show`` and every Workbench trace page
(``product.verdict``): the outcome, the decisive cause of a refusal, the path's stages, each
either on the path or said not to be, and missing only where the path needs what the trace
lacks (ADR-0226 §6, §7G)."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given

from practice_loop.kernel import (
    AssessmentStatus,
    CandidateOperatorResult,
    ProofGatedAnswer,
    SealedPracticeTrace,
    practice_case,
    seal_practice_trace,
)
from practice_loop.product.reader import ReaderRefusal, read_question
from practice_loop.product.verdict import (
    StageState,
    VerdictOutcome,
    verdict_lines,
    verdict_of,
)
from practice_strategies import problem_frames

_FLOW = (
    "frame assessment direct-proof residuals gate budget run candidates replays outcome seal"
).split()
_FIELDS = (
    "frame original_assessment direct_proof residuals gate_decision budget_decision "
    "search_input opened_run operator_outcomes run_outcome replays outcome"
).split()


def _traces() -> dict[str, SealedPracticeTrace]:
    """The shipped sample's cases that read into a frame, each through the loop."""
    traced = {}
    sample = resources.files("practice_loop") / "data" / "sample.jsonl"
    for line in sample.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        frame = read_question(case["question"])
        if type(frame) is ReaderRefusal:
            continue
        trace = practice_case(frame)
        if type(trace) is SealedPracticeTrace:
            traced[case["id"]] = trace
    return traced


TRACES = _traces()

# Labelled cases of the shipped sample: (case, outcome, decisive stage, words its summary holds).
VERDICTS = [
    ("s01", VerdictOutcome.ANSWERED_DIRECT, None, "11 sticker"),
    ("s11", VerdictOutcome.ANSWERED_PRACTICE, None, "7 apple"),
    # The example: the answer refusal says original_refusal_stands, direction_unbound;
    # what settled it is the replay's proof, which fails result_non_negative.
    ("s18", VerdictOutcome.REFUSED, "replays", "contract_closed_but_proof_refused: result_non"),
    ("s22", VerdictOutcome.REFUSED, "direct-proof", "refused: result_non_negative"),
    ("s24", VerdictOutcome.REFUSED, "gate", "ineligible: gate_ineligible_unclassified_residual"),
    ("s36", VerdictOutcome.REFUSED, "candidates", "refused: residual_kind_unsupported"),
]


@pytest.mark.parametrize(
    ("case", "outcome", "decisive", "words"), VERDICTS, ids=[v[0] for v in VERDICTS]
)
def test_each_labelled_case_gets_its_verdict_and_decisive_cause(case, outcome, decisive, words):
    verdict = verdict_of(TRACES[case])
    assert verdict.outcome is outcome
    if decisive is None:
        assert verdict.decisive is None and words == verdict.answer
    else:
        assert verdict.decisive is not None and verdict.decisive.key == decisive
        assert words in verdict.decisive.summary
        assert verdict.answer is None


def test_a_run_left_pending_says_that_it_is_pending_by_design():
    """docs/adr/0008: the run is recorded before replay and stays candidate_replay_pending;
    the verdict says so instead of letting it read as an unfinished replay."""
    run = next(v for v in verdict_of(TRACES["s11"]).stages if v.key == "run")
    assert run.state is StageState.PASSED
    assert "candidate_replay_pending" in run.summary and "by design" in run.summary


def _expected_off_path(trace: SealedPracticeTrace) -> set[str]:
    if trace.original_assessment.status is AssessmentStatus.RUNNABLE:
        return {"residuals", "gate", "budget", "run", "candidates", "replays"}
    if trace.opened_run is None:
        return {"direct-proof", "candidates", "replays"}
    if not any(type(o) is CandidateOperatorResult for o in trace.operator_outcomes):
        return {"direct-proof", "replays"}
    return {"direct-proof"}


@given(problem_frames())
def test_every_stage_is_on_the_path_or_said_not_to_be_and_one_stop_settles_a_refusal(frame):
    trace = practice_case(frame)
    if type(trace) is not SealedPracticeTrace:
        return
    verdict = verdict_of(trace)
    assert [v.key for v in verdict.stages] == _FLOW
    states = {v.key: v.state for v in verdict.stages}
    off = {key for key, state in states.items() if state is StageState.NOT_ON_PATH}
    assert off == _expected_off_path(trace)
    assert StageState.MISSING not in states.values()  # practice_case leaves nothing out
    decisive = [v for v in verdict.stages if v.state is StageState.DECISIVE]
    answered = type(trace.outcome) is ProofGatedAnswer
    assert len(decisive) == (0 if answered else 1)
    assert (verdict.outcome is VerdictOutcome.REFUSED) is not answered
    if not answered:
        # Nothing before the decisive stage stopped the case.
        before = verdict.stages[: verdict.stages.index(decisive[0])]
        going_on = (StageState.PASSED, StageState.NOT_ON_PATH)
        assert all(v.state in going_on or v.key == "assessment" for v in before)


def _resealed_without(trace: SealedPracticeTrace, **absent: object) -> SealedPracticeTrace:
    records = {name: getattr(trace, name) for name in _FIELDS} | absent
    return seal_practice_trace(**records)


@pytest.mark.parametrize(
    ("case", "absent", "stage"),
    [
        ("s11", {"replays": ()}, "replays"),
        ("s36", {"operator_outcomes": ()}, "candidates"),
        ("s01", {"direct_proof": None}, "direct-proof"),
    ],
)
def test_a_stage_the_path_needs_and_the_trace_lacks_is_missing_never_filled_in(case, absent, stage):
    """ADR-0226 §7G. Such a trace seals but fails verification (its stages are not what its
    decisions require), so no page shows it; the verdict still says missing, not passed."""
    verdict = verdict_of(_resealed_without(TRACES[case], **absent))
    view = next(v for v in verdict.stages if v.key == stage)
    assert view.state is StageState.MISSING
    if stage == "replays":
        assert verdict.replay.startswith("missing: ")


def test_show_opens_with_the_verdict_lines():
    lines = verdict_lines(verdict_of(TRACES["s18"]))
    assert lines[0] == "verdict: refused"
    assert lines[1] == (
        "decided at: replay: contract_closed_but_proof_refused: result_non_negative"
    )
    assert lines[2] == "answer refusal: original_refusal_stands, direction_unbound"
    assert "replay STOPPED > answer refused" in lines[-2]
    assert lines[-1] == "not on this path: direct proof"
    direct = verdict_lines(verdict_of(TRACES["s01"]))
    assert direct[0] == "verdict: answered directly: 11 sticker"
    assert "budget: not on this path" in direct
