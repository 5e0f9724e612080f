"""Hypothesis strategies for the practice-loop kernel, and the independent identity oracle.

Families, one module each: ``primitives`` (digests, versions, hostile text, spans),
``frames`` (problem frames with knobs), ``chains`` (whole valid chains, a recipe per gate
reason), ``tampering`` (records construction would refuse), ``budgets`` (example counts for
parametrized properties), ``vocabulary`` (closed name sets the ADRs fix) and ``oracle``
(every identity recomputed from the ADR field lists without the kernel's hashing helpers).
"""

from . import oracle, vocabulary
from .budgets import share
from .chains import FRAME_RECIPES, Chain, build_chain, chains, eligible_chains, run_outcome
from .frames import ALL_ROLES, problem_frames
from .primitives import (
    codes,
    digests,
    hostile_characters,
    labels,
    malformed_digests,
    malformed_versions,
    source_texts,
    span_sequences,
    span_texts,
    spans,
    spans_in,
    texts_with_lone_surrogate,
    versions,
)
from .tampering import fields_for_sealing, other_digest, resealed, tampered

__all__ = [
    "ALL_ROLES",
    "FRAME_RECIPES",
    "Chain",
    "build_chain",
    "chains",
    "codes",
    "digests",
    "eligible_chains",
    "fields_for_sealing",
    "hostile_characters",
    "labels",
    "malformed_digests",
    "malformed_versions",
    "oracle",
    "other_digest",
    "problem_frames",
    "resealed",
    "share",
    "run_outcome",
    "source_texts",
    "span_sequences",
    "span_texts",
    "spans",
    "spans_in",
    "tampered",
    "texts_with_lone_surrogate",
    "versions",
    "vocabulary",
]
