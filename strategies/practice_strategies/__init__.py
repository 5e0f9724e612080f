"""Hypothesis strategies for the practice-loop kernel, and the independent identity oracle.

Families, one module each: ``primitives`` (digests, versions, hostile text and values, spans),
``frames`` (problem frames with knobs), ``chains`` (whole valid chains, a recipe per gate
reason), ``registration`` (a strategy for every public kernel record, registered with
``st.register_type_strategy`` through Hypothesis's entry point), ``corruptions`` (valid chains
drawn for the entries of the violation catalogue ``practice_loop.harness.catalogue``: each
entry's clause and exact typed refusal), ``tampering`` (records construction would refuse, the
catalogue's forging helpers), ``budgets`` (example counts for parametrized properties),
``vocabulary`` (closed name sets the ADRs fix) and ``oracle`` (every identity recomputed from
the ADR field lists without the kernel's hashing helpers). docs/strategies.md shows how to
use them.
"""

from . import corruptions, oracle, registration, vocabulary
from .budgets import share
from .chains import FRAME_RECIPES, Chain, build_chain, chains, eligible_chains, run_outcome
from .corruptions import CATALOGUE, Corruption, by_clause
from .frames import ALL_ROLES, problem_frames
from .primitives import (
    Impostor,
    RaisingImpostor,
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
from .registration import (
    BLOCKER_RECIPES,
    LARGE_VALUES,
    RUN_CONFIGURATIONS,
    configured_chains,
    record_sources,
    record_strategy,
    traces,
)
from .tampering import fields_for_sealing, neighbouring_digest, other_digest, resealed, tampered

__all__ = [
    "ALL_ROLES",
    "BLOCKER_RECIPES",
    "CATALOGUE",
    "Chain",
    "Corruption",
    "FRAME_RECIPES",
    "Impostor",
    "LARGE_VALUES",
    "RUN_CONFIGURATIONS",
    "RaisingImpostor",
    "build_chain",
    "by_clause",
    "chains",
    "codes",
    "configured_chains",
    "corruptions",
    "digests",
    "eligible_chains",
    "fields_for_sealing",
    "hostile_characters",
    "labels",
    "malformed_digests",
    "malformed_versions",
    "neighbouring_digest",
    "oracle",
    "other_digest",
    "problem_frames",
    "record_sources",
    "record_strategy",
    "registration",
    "resealed",
    "run_outcome",
    "share",
    "source_texts",
    "span_sequences",
    "span_texts",
    "spans",
    "spans_in",
    "tampered",
    "texts_with_lone_surrogate",
    "traces",
    "versions",
    "vocabulary",
]
