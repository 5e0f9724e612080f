"""The replay adapter (docs/adr/0006) over direction_unbound's operator result."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...kernel import (
    CandidateReconstruction,
    ContractAssessment,
    Direction,
    ProblemFrame,
    assess,
    problem_frame_digest,
    replay_candidate,
)
from ...kernel.operators import candidate_digest_of
from .entry import Recipes
from .forging import sealed, tampered
from .shipped import DU, RI

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("replay", "docs/adr/0006")

_REPLAY = "replay.replay_candidate"


def _reconstruction_with(c: Any, **changes: Any) -> CandidateReconstruction:
    """direction_unbound's reconstruction re-sealed with ``changes``, its content digest
    recomputed over them."""
    base = c[DU].reconstruction
    fields = {
        "problem_frame_digest": base.problem_frame_digest,
        "candidate_payload": base.candidate_payload,
        "evidence_spans": base.evidence_spans,
        **changes,
    }
    content = candidate_digest_of(
        fields["problem_frame_digest"],
        base.candidate_organ,
        fields["candidate_payload"],
        fields["evidence_spans"],
    )
    return sealed(base, **changes, candidate_digest=content)


def _rebound(c: Any, frame: ProblemFrame, assessment: ContractAssessment):
    return _reconstruction_with(
        c,
        problem_frame_digest=problem_frame_digest(frame),
        original_contract_assessment_id=assessment.assessment_id,
    )


def _replay(c: Any, frame=None, assessment=None, reconstruction=None) -> object:
    case = c[DU]
    return replay_candidate(
        case.frame if frame is None else frame,
        case.assessment if assessment is None else assessment,
        case.reconstruction if reconstruction is None else reconstruction,
    )


def _forged_assessment_replay(c: Any) -> object:
    forged = sealed(c[DU].assessment, blockers=c[DU].assessment.blockers * 2)
    reconstruction = sealed(
        c[DU].reconstruction, original_contract_assessment_id=forged.assessment_id
    )
    return _replay(c, assessment=forged, reconstruction=reconstruction)


def _moved_evidence(c: Any) -> object:
    first = c[DU].reconstruction.evidence_spans[0]
    moved = dataclasses.replace(first, start=first.start + 1, end=first.end + 1)
    return _replay(c, reconstruction=_reconstruction_with(c, evidence_spans=(moved,)))


def _without_cue_evidence(c: Any) -> object:
    rebuilt = c[DU].reconstruction
    cue = rebuilt.candidate_payload.cue_span
    kept = tuple(span for span in rebuilt.evidence_spans if span != cue)
    return _replay(c, reconstruction=_reconstruction_with(c, evidence_spans=kept))


def _not_applicable(c: Any) -> object:
    frame = dataclasses.replace(c[DU].frame, proposals=())
    assessment = assess(frame)
    return _replay(c, frame, assessment, _rebound(c, frame, assessment))


for _name, _comment, _flags, _build, _base in (
    ("replay-frame-source-not-text", "the frame's source text replaced by None after sealing",
        "Tampered", lambda c: _replay(c, frame=tampered(c[DU].frame, source_text=None)), (DU,)),
    ("replay-assessment-a-string", "the string 'refused' handed over as the assessment",
        "ForeignType", lambda c: _replay(c, assessment="refused"), (DU,)),
    ("replay-reconstruction-altered", "the reconstruction's attempt index changed after sealing",
        "Tampered",
        lambda c: _replay(c, reconstruction=tampered(c[DU].reconstruction, attempt_index=3)),
        (DU,)),
    ("replay-frame-of-another-case",
        "runnable_increase's frame with direction_unbound's assessment and reconstruction",
        "Genuine", lambda c: _replay(c, frame=c[RI].frame), (DU, RI)),
    ("replay-assessment-of-another-judgement", "the assessment re-sealed with its blockers twice",
        "Resealed",
        lambda c: _replay(
            c, assessment=sealed(c[DU].assessment, blockers=c[DU].assessment.blockers * 2)
        ), (DU,)),
    ("replay-assessment-runnable",
        "the reconstruction rebound to runnable_increase's genuine chain", "Resealed",
        lambda c: _replay(
            c, c[RI].frame, c[RI].assessment, _rebound(c, c[RI].frame, c[RI].assessment)
        ), (DU, RI)),
    ("replay-assessment-not-reproducible",
        "a forged assessment (blockers twice) and a reconstruction naming it", "Resealed",
        _forged_assessment_replay, (DU,)),
    ("replay-candidate-not-applicable",
        "the frame without its proposal, the reconstruction rebound to it", "Resealed",
        _not_applicable, (DU,)),
    ("replay-cue-not-in-frame", "a reconstruction whose payload reads the cue as increase",
        "Resealed",
        lambda c: _replay(
            c,
            reconstruction=_reconstruction_with(
                c,
                candidate_payload=dataclasses.replace(
                    c[DU].reconstruction.candidate_payload, direction=Direction.INCREASE
                ),
            ),
        ), (DU,)),
    ("replay-evidence-outside-frame",
        "a reconstruction whose one evidence span is moved by one character", "Resealed",
        _moved_evidence, (DU,)),
    ("replay-cue-not-in-evidence", "a reconstruction whose evidence leaves out the cue's span",
        "Resealed", _without_cue_evidence, (DU,)),
):
    RECIPES.add(_name, _comment, _flags, _REPLAY, _build, *_base)
# fmt: on
