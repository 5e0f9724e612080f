"""The shape of a catalogue entry, its typed outcome, and how an outcome is read."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

from ...kernel import (
    AnswerRefusal,
    AnswerRefusalReason,
    CandidateOperatorRefusal,
    CanonicalizationError,
    CanonicalReason,
    GeometricSearchRun,
    OperatorRefusalReason,
    RecordDefect,
    RecordError,
    ReplayRefusal,
    ReplayRefusalReason,
    RunDisposition,
    RunExhaustionCode,
    RunRefusalReason,
    SearchRunRefusal,
    TraceVerification,
)
from .forging import Attack

HASHABLE = "ARCHITECTURE §2 hashable values"
LOADING = "ARCHITECTURE §2 loading a persisted record"


def s16(row: int) -> str:
    return f"ADR-0228 §16 row {row}"


def s9(check: int) -> str:
    return f"ADR-0228 §9 check {check}"


def s17(row: int) -> str:
    return f"ADR-0231 §17 row {row}"


def s73(item: int) -> str:
    return f"ADR-0231 §7.3 item {item}"


@dataclasses.dataclass(frozen=True)
class Expected:
    """A typed outcome: its type, and its closed codes in order.

    For a run refusal ``(disposition, reason)``; for a run ``(disposition, exhaustion_code)``;
    for an operator, replay or answer refusal its reason (an answer refusal's trailing
    original blocker codes are not part of the label); for a canonicalization refusal its
    ``CanonicalReason``; for a record defect its ``Defect``; for a trace load every
    ``TraceFailureCode``.
    """

    kind: type
    codes: tuple[enum.Enum | None, ...]

    def __str__(self) -> str:
        shown = ", ".join(
            "None" if c is None else f"{type(c).__name__}.{c.name}" for c in self.codes
        )
        return f"{self.kind.__name__}({shown})"


# The outcomes entries state, by the codes' values (each checked against its closed set).


def run_refused(disposition: str, reason: str) -> Expected:
    return Expected(SearchRunRefusal, (RunDisposition(disposition), RunRefusalReason(reason)))


def run(disposition: str, code: str | None) -> Expected:
    exhaustion = None if code is None else RunExhaustionCode(code)
    return Expected(GeometricSearchRun, (RunDisposition(disposition), exhaustion))


def operator_refused(reason: str) -> Expected:
    return Expected(CandidateOperatorRefusal, (OperatorRefusalReason(reason),))


def canonical(reason: str) -> Expected:
    return Expected(CanonicalizationError, (CanonicalReason(reason),))


def observe(outcome: object) -> Expected:
    """The typed label of ``outcome``, in the form of ``Expected``. A code outside the closed
    vocabulary raises ``ValueError``."""
    kind = type(outcome)
    if kind is SearchRunRefusal:
        codes = (RunRefusalReason(c) for c in outcome.reason_codes)
        return Expected(kind, (outcome.run_disposition, *codes))
    if kind is GeometricSearchRun:
        return Expected(kind, (outcome.run_disposition, outcome.exhaustion_code))
    if kind is CandidateOperatorRefusal:
        return Expected(kind, tuple(OperatorRefusalReason(c) for c in outcome.reason_codes))
    if kind is ReplayRefusal:
        return Expected(kind, tuple(ReplayRefusalReason(c) for c in outcome.reason_codes))
    if kind is AnswerRefusal:
        return Expected(kind, (AnswerRefusalReason(outcome.reason_codes[0]),))
    if kind is CanonicalizationError:
        return Expected(kind, (outcome.reason,))
    if kind is RecordError:
        return Expected(kind, (outcome.found.defect,))
    if kind is RecordDefect:
        return Expected(kind, (outcome.defect,))
    if kind is TraceVerification:
        return Expected(kind, tuple(failure.code for failure in outcome.failures))
    return Expected(kind, ())


def stage_of(function: Callable[..., object]) -> str:
    """``module.name`` of a kernel function, as entries name their ``stage``."""
    return f"{function.__module__.rsplit('.', 1)[-1]}.{function.__qualname__}"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One labelled violation.

    ``build(chain)`` forges the violation over a chain and gives the ``Attack`` (the kernel
    function ``stage`` names and its exact arguments) or, for a recipe over several shipped
    chains, the kernel's outcome itself. ``expected`` is the exact typed outcome; ``chains``
    names the valid chains the strategies draw for it (``None``: the entry needs the shipped
    chains, so only the golden vectors apply it, and its frozen result in ``refusals.json``
    is its expected outcome). ``group``, ``recipe`` and ``base`` place it in ``refusals.json``:
    the group, its name there, and the shipped chains it starts from (the first is the one
    ``build`` gets). An entry may be both: drawn by the strategies and frozen as a vector.
    """

    id: str
    stage: str
    clause: str
    comment: str
    expected: Expected | None
    build: Callable[[Any], object]
    chains: str | None = None
    also: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    group: str | None = None
    base: tuple[str, ...] = ()
    recipe: str | None = None

    @property
    def clauses(self) -> tuple[str, ...]:
        return (self.clause, *self.also)

    def label(self) -> str:
        return f"{self.id} [{'; '.join(self.clauses)}]"

    def apply(self, chain: Any) -> object:
        """Forge over ``chain`` and call the kernel; its typed exceptions are outcomes."""
        try:
            made = self.build(chain)
            return made() if type(made) is Attack else made
        except (CanonicalizationError, RecordError) as error:
            return error


def corruption(
    id: str,
    stage: str,
    clause: str,
    comment: str,
    expected: Expected,
    build: Callable[[Any], object],
    *also: str,
    chains: str = "eligible",
    flags: str = "",
) -> Entry:
    """An entry the strategies apply to drawn chains (``chains``: which)."""
    return Entry(id, stage, clause, comment, expected, build, chains, also, tuple(flags.split()))


class Recipes(list):
    """The entries of one ``refusals.json`` group, in file order. ``add`` names a new entry
    over the shipped chains, or (``build`` an entry id) freezes a drawn entry of ``drawn`` as
    this vector too: its forge applied to the shipped chain, the vector's comment its own."""

    def __init__(self, group: str, clause: str, drawn: tuple[Entry, ...] = ()) -> None:
        super().__init__()
        self.group, self.clause = group, clause
        self.drawn = {entry.id: entry for entry in drawn}

    def add(self, name: str, comment: str, flags: str, stage: str, build, *base: str) -> None:
        labels = {"flags": tuple(flags.split()), "group": self.group, "recipe": name, "base": base}
        if type(build) is str:
            entry = self.drawn[build]
            assert entry.stage == stage, (name, entry.stage, stage)
            self.append(dataclasses.replace(entry, comment=comment, **labels))
        else:
            self.append(Entry(name, stage, self.clause, comment, None, build, **labels))
