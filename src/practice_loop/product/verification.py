"""The full check of a store: every stored byte verified, not just every identity.

Shell code (docs/adr/0012). An identity leaves prose out (ADR-0227 §7, ADR-0231 §14), so the
seal alone cannot tell a trace whose explanation was edited from the real one; and a case row
sits beside its trace, outside any seal. Every explanation and every case row is derived
deterministically from the question, so the check is a re-run: each case row's question is
read and practised again, and what that gives (the row's outcome, reason, value and trace id,
and the trace's canonical bytes, prose included) must equal what is stored, byte for byte.

Only where they differ is the stored trace decoded and verified on its own, to name the
cause: a typed ``TraceFailureCode`` at its stage (undecodable, a broken identity, a replay
whose identities or prose diverge), or else a ``CaseProblem`` of the row beside it. ``verify``,
``show`` and Workbench all call this module, so "verified" means one thing everywhere.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterator

from ..kernel import (
    SealedPracticeTrace,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    load_sealed_trace,
    replay_divergence,
    sealed_trace_bytes,
    trust_scope,
    verify_sealed_trace,
)
from .runner import run_case
from .store import CaseRow, MalformedRow, StoredBody, TraceStore, verify_stored_trace


class CaseProblem(enum.Enum):
    """What can be wrong with a case row, or with a trace no row names."""

    ROW_MALFORMED = "row_malformed"  # a column holds another type (or NULL where none is)
    TRACE_MISSING = "trace_missing"  # the row names a trace the store does not hold
    BODY_UNREADABLE = "body_unreadable"  # the trace's body is not a BLOB within the size cap
    QUESTION_DIVERGED = "question_diverged"  # the question reads to another trace
    ROW_DIVERGED = "row_diverged"  # outcome, reason or value differ from the trace's
    TRACE_ORPHANED = "trace_orphaned"  # a stored trace that no case names


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """One failure: its subject (``case ID`` or ``trace ID``), code, stage and detail."""

    subject: str
    code: str
    stage: str
    detail: str

    def line(self) -> str:
        """One line of text: control and other invisible characters in a case id or detail
        are escaped, so no id can start a line of its own or drive the terminal."""
        text = f"{self.subject}: {self.code} at {self.stage}"
        return printable(f"{text} {self.detail}" if self.detail else text)

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


def printable(text: str) -> str:
    """``text`` with every character that is not printable (controls, line and paragraph
    separators, bidirectional and zero-width marks) written as its escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _trace_finding(subject: str, failure: TraceFailure) -> Finding:
    return Finding(subject, failure.code.value, failure.stage, failure.detail)


def trace_on_its_own(trace_id: str, body: bytes) -> SealedPracticeTrace | TraceVerification:
    """The stored trace verified without its case rows: strict decoding, every identity and
    cross-identity, the id it is stored under, and a replay from its own frame that must give
    its bytes exactly, prose included."""
    read = verify_stored_trace(trace_id, body)
    if type(read) is not SealedPracticeTrace:
        return read
    divergence = replay_divergence(read)
    if divergence is not None:
        return TraceVerification(trace_id, (divergence,))
    return read


def _differing_fields(stored: CaseRow, expected: CaseRow) -> str:
    names = [f.name for f in dataclasses.fields(CaseRow)]
    return ", ".join(n for n in names if getattr(stored, n) != getattr(expected, n))


@trust_scope()  # one call: each record is validated and encoded once
def check_case(row: CaseRow | MalformedRow, stored: StoredBody | None) -> list[Finding]:
    """Every failure of one case row and the trace it names (``stored``, or ``None`` when the
    store does not hold it); an empty list means the case verified in full."""
    return check_case_reading(row, stored)[0]


@trust_scope()
def check_case_reading(
    row: CaseRow | MalformedRow, stored: StoredBody | None
) -> tuple[list[Finding], SealedPracticeTrace | None]:
    """``check_case``, and, when the case verified in full and names a trace, that trace: the
    re-run's, whose canonical bytes the check has just found equal to the stored bytes (what
    Workbench's list shows of an answer: its unit and how it was reached)."""
    if type(row) is MalformedRow:
        finding = Finding(f"case {row.key}", CaseProblem.ROW_MALFORMED.value, "case", row.detail)
        return [finding], None
    assert type(row) is CaseRow
    subject = f"case {row.case_id}"
    expected, trace = run_case(row.case_id, row.source, row.question, row.gold)
    if row.trace_id is None:
        if expected == row:
            return [], None
        detail = _differing_fields(row, expected)
        return [Finding(subject, CaseProblem.ROW_DIVERGED.value, "case", detail)], None
    if stored is None:
        return [Finding(subject, CaseProblem.TRACE_MISSING.value, "case", row.trace_id)], None
    if stored.body is None:
        detail = stored.refused or ""
        finding = Finding(
            f"trace {row.trace_id}", CaseProblem.BODY_UNREADABLE.value, "store", detail
        )
        return [finding], None
    if (
        expected == row
        and trace is not None
        and sealed_trace_bytes(trace) == stored.body
        and verify_sealed_trace(trace).valid
    ):
        return [], trace
    return _cause(row, subject, expected, stored.body), None


def _cause(row: CaseRow, subject: str, expected: CaseRow, body: bytes) -> list[Finding]:
    """Why a case whose row or stored bytes differ from the re-run's fails."""
    assert row.trace_id is not None
    # Something differs: name the cause, the stored trace's own first.
    read = trace_on_its_own(row.trace_id, body)
    if type(read) is TraceVerification:
        return [_trace_finding(f"trace {row.trace_id}", failure) for failure in read.failures]
    if expected.trace_id != row.trace_id:
        detail = f"it reads to {expected.trace_id or 'no trace'}"
        return [Finding(subject, CaseProblem.QUESTION_DIVERGED.value, "case", detail)]
    if expected != row:
        detail = _differing_fields(row, expected)
        return [Finding(subject, CaseProblem.ROW_DIVERGED.value, "case", detail)]
    # The trace holds on its own and the row agrees, yet the bytes are not the re-run's.
    code = TraceFailureCode.REPLAY_DIVERGED.value
    return [
        Finding(f"trace {row.trace_id}", code, "trace", "stored bytes differ from the re-run's")
    ]


def check_orphan(stored: StoredBody) -> list[Finding]:
    """A stored trace that no case names: its own failures, then the orphaning itself."""
    subject = f"trace {stored.trace_id}"
    if stored.body is None:
        return [Finding(subject, CaseProblem.BODY_UNREADABLE.value, "store", stored.refused or "")]
    read = trace_on_its_own(stored.trace_id, stored.body)
    found = (
        []
        if type(read) is SealedPracticeTrace
        else [_trace_finding(subject, failure) for failure in read.failures]
    )
    return [*found, Finding(subject, CaseProblem.TRACE_ORPHANED.value, "store", "no case names it")]


@dataclasses.dataclass
class StoreVerification:
    """What ``verify`` found: counts and every finding, in the order found."""

    cases: int = 0
    traces: int = 0
    failed_cases: int = 0
    orphaned: int = 0
    findings: list[Finding] = dataclasses.field(default_factory=list)
    interrupted: bool = False

    @property
    def valid(self) -> bool:
        return not self.findings and not self.interrupted

    def to_json(self) -> dict[str, object]:
        return {
            "valid": self.valid,
            "cases": self.cases,
            "traces": self.traces,
            "failed_cases": self.failed_cases,
            "orphaned_traces": self.orphaned,
            "failures": [finding.to_json() for finding in self.findings],
            "interrupted": self.interrupted,
        }


def _orphans(store: TraceStore) -> Iterator[StoredBody]:
    named = store.named_trace_ids()
    for stored in store.stored_bodies():
        if stored.trace_id not in named:
            yield stored


def verify_store(
    store: TraceStore, progress: Callable[[int, int], None] | None = None
) -> StoreVerification:
    """Check every case row with its trace, then every trace no row names. Ctrl-C stops it
    with ``interrupted`` set and what was checked so far."""
    result = StoreVerification(traces=store.count("traces"))
    total = store.count("cases")
    try:
        for row in store.case_rows():
            trace_id = row.trace_id if type(row) is CaseRow else None
            stored = store.stored_body(trace_id) if trace_id is not None else None
            found = check_case(row, stored)
            result.cases += 1
            if found:
                result.failed_cases += 1
                result.findings.extend(found)
            if progress is not None:
                progress(result.cases, total)
        for stored in _orphans(store):
            result.orphaned += 1
            result.findings.extend(check_orphan(stored))
    except KeyboardInterrupt:
        result.interrupted = True
    return result


def check_trace(store: TraceStore, trace_id: str) -> SealedPracticeTrace | list[Finding]:
    """One stored trace under the same full check as ``verify``: the trace, or its findings
    (``show`` and Workbench's trace page)."""
    stored = store.stored_body(trace_id)
    if stored is None:
        return [Finding(f"trace {trace_id}", "not_a_trace", "$", "no such trace")]
    return check_stored_trace(stored, store.case_rows_of_trace(trace_id))


def check_stored_trace(
    stored: StoredBody, rows: list[CaseRow | MalformedRow]
) -> SealedPracticeTrace | list[Finding]:
    """``check_trace`` on a trace and its case rows already read (Workbench keys its cache by
    the very bytes and rows it checks)."""
    trace_id = stored.trace_id
    if not rows:
        return check_orphan(stored)
    found = [finding for row in rows for finding in check_case(row, stored)]
    if found:
        return found
    # Its bytes are the re-run's, which were verified above: decoding them is all that is left.
    read = load_sealed_trace(stored.body)  # type: ignore[arg-type]
    if type(read) is TraceVerification:  # bytes equal to the re-run's, yet not loadable
        return [_trace_finding(f"trace {trace_id}", failure) for failure in read.failures]
    return read
