"""The labelled corruption catalogue, drawn: valid chains for each catalogue entry.

The entries themselves (one named violation each, its clause, its forge function and its
exact typed outcome) live in ``practice_loop.harness.catalogue``, split by stage and
standard library only, so that the golden vectors apply the same entries to the shipped
chains. This module only draws: ``Corruption.valid_chains()`` is the Hypothesis strategy of
the chains an entry starts from (``CHAINS``, by the entry's ``chains`` key), and
``Corruption.build(chain)`` is the entry's forge, giving an ``Attack``.

Clauses are named ``"ADR-0228 §16 row 3"``, ``"ADR-0228 §9 check 4"``, ``"ADR-0231 §17 row
5"``, ``"ADR-0231 §7.3 item 12"``, ``"ARCHITECTURE §2 hashable values"`` or ``"ARCHITECTURE §2
loading a persisted record"`` (and a few others for our own decisions); ``clause`` is the one
an entry is filed under, ``also`` the others it equally violates. ``by_clause(prefix)``
selects on either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from practice_loop.harness import catalogue
from practice_loop.harness.catalogue import Attack, Expected, observe, perform, stage_of
from practice_loop.harness.catalogue.forging import (
    V2,
    OperatorContext,
    cue_span_is_not_all_evidence,
    replay_closes,
)
from practice_loop.kernel import CANDIDATE_OPERATOR_SET, GateReason, OperatorSetManifest, Role

from .chains import FRAME_RECIPES, Chain, build_chain, chains, eligible_chains
from .frames import ALL_ROLES, problem_frames


def _v2(frames: st.SearchStrategy, operator_set: OperatorSetManifest = CANDIDATE_OPERATOR_SET):
    return frames.map(
        lambda frame: build_chain(frame, operator_set=operator_set, run_policy_version=V2)
    )


_MISSING_ROLE = FRAME_RECIPES[GateReason.ELIGIBLE_MISSING_ROLE]
_ELIGIBLE = sorted((r for r in FRAME_RECIPES if r.value.startswith("eligible_")), key=str)


def operator_chains(cue_count: int = 1, **knobs: Any) -> st.SearchStrategy[Chain]:
    """v2 chains over the candidate operator set whose one residual is ``direction_unbound``
    (the recipe binds every other role) and whose frame holds ``cue_count`` cues."""
    return _v2(problem_frames(**{**_MISSING_ROLE, "cue_count": cue_count, **knobs}))


def _other_kind_chains() -> st.SearchStrategy[Chain]:
    others = [r for r in _ELIGIBLE if r is not GateReason.ELIGIBLE_MISSING_ROLE]
    return st.sampled_from(others).flatmap(
        lambda reason: _v2(problem_frames(**{**FRAME_RECIPES[reason], "cue_count": 1}))
    )


def _other_code_chains() -> st.SearchStrategy[Chain]:
    """missing_role residuals the gate makes eligible, with a code v1 does not accept."""
    return st.sampled_from([Role.INITIAL, Role.DELTA]).flatmap(
        lambda role: _v2(
            problem_frames(
                hazard_count=0,
                proposal_count=1,
                with_target=True,
                bound_roles=ALL_ROLES - {role},
                cue_count=1,
            )
        )
    )


# The valid chains an entry starts from, by the catalogue's ``chains`` key.
CHAINS: dict[str, Callable[[], st.SearchStrategy[Chain]]] = {
    "eligible": eligible_chains,
    "operator": operator_chains,
    "operator, replay closes": lambda: operator_chains().filter(replay_closes),
    "operator, replay does not close": lambda: operator_chains().filter(
        lambda c: not replay_closes(c)
    ),
    "operator, another residual kind": _other_kind_chains,
    "operator, another residual code": _other_code_chains,
    "operator, no cue": lambda: operator_chains(cue_count=0),
    "operator, two or three cues": lambda: st.integers(2, 3).flatmap(
        lambda n: operator_chains(cue_count=n)
    ),
    "operator, cue span not all evidence": lambda: operator_chains().filter(
        cue_span_is_not_all_evidence
    ),
    **{f"denied {reason.value}": lambda reason=reason: chains(reason) for reason in GateReason},
}


@dataclasses.dataclass(frozen=True)
class Corruption(catalogue.Entry):
    """A catalogue entry with the strategy of the valid chains it starts from."""

    valid_chains: Callable[[], st.SearchStrategy[Chain]] = eligible_chains


def _drawn(entry: catalogue.Entry) -> Corruption:
    assert entry.chains is not None and entry.expected is not None, entry.id
    fields = {field.name: getattr(entry, field.name) for field in dataclasses.fields(entry)}
    return Corruption(**fields, valid_chains=CHAINS[entry.chains])


CATALOGUE: tuple[Corruption, ...] = tuple(_drawn(entry) for entry in catalogue.drawable())


def by_clause(prefix: str) -> tuple[Corruption, ...]:
    """Entries filed under, or also violating, a clause that is ``prefix`` or starts with
    ``prefix`` followed by a space (so ``"ADR-0228 §16 row 1"`` is not ``row 10``)."""
    return tuple(
        entry
        for entry in CATALOGUE
        if any(clause == prefix or clause.startswith(prefix + " ") for clause in entry.clauses)
    )


def by_stage(stage: str) -> tuple[Corruption, ...]:
    return tuple(entry for entry in CATALOGUE if entry.stage == stage)


def by_id(identifier: str) -> Corruption:
    return _BY_ID[identifier]


_BY_ID = {entry.id: entry for entry in CATALOGUE}


__all__ = [
    "CATALOGUE",
    "CHAINS",
    "Attack",
    "Corruption",
    "Expected",
    "OperatorContext",
    "by_clause",
    "by_id",
    "by_stage",
    "observe",
    "operator_chains",
    "perform",
    "stage_of",
]
