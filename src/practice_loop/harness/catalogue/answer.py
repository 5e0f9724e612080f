"""The proof-gated answer (ADR-0226 §6, §7E, §8.6-8)."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...kernel import (
    Direction,
    GroundedUnaryDeltaCue,
    ReplayRefusal,
    SourceSpan,
    assess,
    check_proof,
    decide_answer,
    problem_frame_digest,
    replay_candidate,
)
from .entry import Recipes
from .forging import sealed
from .replay import _reconstruction_with, _replay
from .shipped import DU, PR, RI, TWO

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("answer", "ADR-0226 §6, §7E, §8.6-8")

_ANSWER = "answer.decide_answer"


def _forged_replay(c: Any) -> object:
    """direction_unbound's replay over a candidate frame whose initial fact also changed
    (12 to 20), re-sealed with the organ's own verdict of that frame (it closes at 15)."""
    genuine = c[DU].replay
    candidate = genuine.candidate_frame
    facts = (dataclasses.replace(candidate.facts[0], value=20), *candidate.facts[1:])
    frame = dataclasses.replace(candidate, facts=facts)
    verdict = assess(frame)
    forged = sealed(
        genuine,
        candidate_frame=frame,
        replay_assessment=verdict,
        replay_proof=check_proof(frame, verdict),  # type: ignore[arg-type]
    )
    return decide_answer(c[DU].frame, c[DU].assessment, replays=(forged,))


def _disagreeing_candidates(c: Any) -> object:
    """direction_unbound's frame with a second cue, "Then" read as increase: each cue's
    candidate replays to closure (7 and 17), so the candidates disagree."""
    frame = c[DU].frame
    then = frame.source_text.index("Then")
    span = SourceSpan("Then", then, then + 4, frame.cues[0].span.sentence_index - 1)
    frame = dataclasses.replace(
        frame, cues=(*frame.cues, GroundedUnaryDeltaCue(Direction.INCREASE, span))
    )
    assessment = assess(frame)
    replays = []
    for cue in frame.cues:
        payload = dataclasses.replace(
            c[DU].reconstruction.candidate_payload, direction=cue.direction, cue_span=cue.span
        )
        reconstruction = _reconstruction_with(
            c,
            problem_frame_digest=problem_frame_digest(frame),
            original_contract_assessment_id=assessment.assessment_id,  # type: ignore[union-attr]
            candidate_payload=payload,
            evidence_spans=(cue.span,),
        )
        replays.append(replay_candidate(frame, assessment, reconstruction))  # type: ignore[arg-type]
    return decide_answer(frame, assessment, replays=tuple(replays))  # type: ignore[arg-type]


def _adapter_refusal(c: Any) -> ReplayRefusal:
    refusal = _replay(c, assessment="refused")
    assert type(refusal) is ReplayRefusal
    return refusal


for _name, _comment, _flags, _build, _base in (
    ("answer-frame-a-string", "a string handed over as the frame", "ForeignType",
        lambda c: decide_answer("frame", c[DU].assessment), (DU,)),
    ("answer-assessment-of-another-frame",
        "direction_unbound's frame with runnable_increase's assessment", "Genuine",
        lambda c: decide_answer(c[DU].frame, c[RI].assessment), (DU, RI)),
    ("answer-replays-on-runnable",
        "runnable_increase with its proof and an adapter refusal as a replay", "Genuine",
        lambda c: decide_answer(
            c[RI].frame,
            c[RI].assessment,
            direct_proof=c[RI].trace.direct_proof,
            replays=(_adapter_refusal(c),),
        ), (RI, DU)),
    ("answer-runnable-without-proof", "runnable_increase's assessment and no proof", "Genuine",
        lambda c: decide_answer(c[RI].frame, c[RI].assessment), (RI,)),
    ("answer-proof-refused", "proof_refused's genuine chain: 3 - 8 would go negative", "Genuine",
        lambda c: c[PR].trace.outcome, (PR,)),
    ("answer-replay-not-reproducible", "a closed replay whose candidate frame also changed a fact",
        "Resealed", _forged_replay, (DU,)),
    ("answer-candidates-disagree",
        "two grounded cues, each candidate replayed to closure at a different value",
        "Genuine", _disagreeing_candidates, (DU,)),
    ("answer-original-refusal-stands", "two_residuals' genuine chain: no candidate", "Genuine",
        lambda c: c[TWO].trace.outcome, (TWO,)),
):
    RECIPES.add(_name, _comment, _flags, _ANSWER, _build, *_base)
# fmt: on
