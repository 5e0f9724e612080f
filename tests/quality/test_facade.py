"""The strategy library's public façade (issue 4): exactly these names, one module per family,
and nothing exported that the package does not define. A new export is a deliberate change
to this list."""

from __future__ import annotations

import types

import practice_strategies

EXPORTS = {
    # primitives
    "Impostor", "RaisingImpostor", "codes", "digests", "hostile_characters", "labels",
    "malformed_digests", "malformed_versions", "source_texts", "span_sequences", "span_texts",
    "spans", "spans_in", "texts_with_lone_surrogate", "versions",
    # frames and chains
    "ALL_ROLES", "problem_frames", "FRAME_RECIPES", "Chain", "build_chain", "chains",
    "eligible_chains", "run_outcome",
    # registration (st.from_type for every public record)
    "registration", "BLOCKER_RECIPES", "LARGE_VALUES", "RUN_CONFIGURATIONS",
    "configured_chains", "record_sources", "record_strategy", "traces",
    # the labelled corruption catalogue
    "corruptions", "CATALOGUE", "Corruption", "by_clause",
    # tampering, budgets, vocabulary, oracle
    "fields_for_sealing", "neighbouring_digest", "other_digest", "resealed", "tampered",
    "share", "vocabulary",
    "oracle",
}  # fmt: skip


def test_exports_are_exactly_the_documented_ones():
    assert set(practice_strategies.__all__) == EXPORTS
    assert len(practice_strategies.__all__) == len(EXPORTS)
    assert practice_strategies.__all__ == sorted(practice_strategies.__all__)


# The one home outside the package an export may have: the violation catalogue's forging
# helpers (standard library only, shared with the golden vectors), which ``tampering``
# re-exports so that the strategies and the vectors forge records alike.
SHARED_FORGING = "practice_loop.harness.catalogue.forging"
FORGING_EXPORTS = {
    "fields_for_sealing",
    "neighbouring_digest",
    "other_digest",
    "resealed",
    "tampered",
}


def test_every_export_is_defined_inside_the_package():
    for name in practice_strategies.__all__:
        value = getattr(practice_strategies, name)
        if not isinstance(value, types.FunctionType | types.ModuleType | type):
            continue  # tables and ready-made strategies are plain values
        home = value.__name__ if isinstance(value, types.ModuleType) else value.__module__
        if name in FORGING_EXPORTS:
            assert home == SHARED_FORGING, (name, home)
        else:
            assert home.startswith("practice_strategies."), (name, home)


def test_the_catalogue_is_reachable_from_the_facade():
    assert practice_strategies.CATALOGUE is practice_strategies.corruptions.CATALOGUE
    assert len({entry.id for entry in practice_strategies.CATALOGUE}) == len(
        practice_strategies.CATALOGUE
    )
