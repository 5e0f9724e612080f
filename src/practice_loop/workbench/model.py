"""Workbench's view model: what the list and the trace pages show of the store (ADR-0226 §7G).

Pure of HTTP and of HTML: the outcomes and refusals the pages name, each case's verified
standing (``TraceStanding``), the list's query, counts and rows (``ListView``), and the caches
of the full check (``StandingCache``, ``TraceCache``).

Two kinds of fact are kept apart (issue 20). What the case rows *record* (``RecordedOutcome``,
their reasons) is counted and filtered in SQL, over the whole store, and is never called
verified. What is *verified* is each row a page shows: the same full check as ``verify``
(``verification.check_case``) runs on it before it is shown, and a row that fails is given its
first typed failure, never its answer. A list page therefore reads only its own rows and the
traces they name, whatever the size of the store.

Each check is cached by the trace id, the SHA-256 of the trace's stored bytes and the SHA-256
of the case row(s) it was checked with: the check is a pure function of those, so bytes or
rows rewritten on disk are checked anew. Each cache is a least-recently-used one of a fixed
number of entries, so memory does not grow with the store.
Imports point server -> pages -> model -> (store, verification, runner, kernel), never back.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import hashlib
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar
from urllib.parse import parse_qs

from ..kernel import (
    AnswerPath,
    CandidateOperatorResult,
    ProofGatedAnswer,
    ReplayResult,
    SealedPracticeTrace,
)
from ..product.runner import is_wrong
from ..product.store import CaseRow, CaseSelection, MalformedRow, ReadOnlyTraceStore, StoredBody
from ..product.verification import Finding, check_case_reading, check_stored_trace

_LIST_PARAMETERS = frozenset({"outcome", "reason", "q", "page"})
# A list URL's query string is echoed into every filter and page link of the page; longer
# than this (as sent, percent-encoded) it is refused, never cut (``Refusal.QUERY_TOO_LONG``).
# Room for a whole pasted question; the echoes of one page stay within a few tens of KB.
MAX_QUERY_BYTES = 2048
# How many checked case standings the list keeps (a few hundred bytes each: about 1-2 MB).
STANDING_CACHE_ENTRIES = 4096
# How many checked traces the trace page keeps (a decoded trace: some hundreds of KB).
TRACE_CACHE_ENTRIES = 64


class Outcome(enum.Enum):
    """What the list says of a shown case after its full check: its trace's verified outcome,
    or why it has none."""

    ANSWERED_DIRECT = "answered_direct"
    ANSWERED_PRACTICE = "answered_practice"
    REFUSED = "refused"
    # The stored bytes or the row do not verify: the trace's content is not shown (issue 9).
    FAILED_VERIFICATION = "failed_verification"
    # The case row names a trace the store does not hold.
    TRACE_MISSING = "trace_missing"


class RecordedOutcome(enum.Enum):
    """An outcome as a case row records it (``runner.classify``): what the list counts and
    filters on, in SQL, and never calls verified. Verification failures are not recorded in
    any row; only a full check finds them."""

    ANSWERED_DIRECT = "answered_direct"
    ANSWERED_PRACTICE = "answered_practice"
    REFUSED = "refused"


class Refusal(enum.Enum):
    """Why a request is not answered with a page; each is shown on the error page."""

    MALFORMED_QUERY = "malformed_query"  # 400
    UNKNOWN_PARAMETER = "unknown_parameter"  # 400
    REPEATED_PARAMETER = "repeated_parameter"  # 400
    UNKNOWN_OUTCOME = "unknown_outcome"  # 400
    # 400: an outcome the full check gives (failed_verification, trace_missing), which no case
    # row records, so no SQL filter can select it without checking the whole store.
    UNRECORDED_OUTCOME = "unrecorded_outcome"
    BAD_PAGE_NUMBER = "bad_page_number"  # 400
    QUERY_TOO_LONG = "query_too_long"  # 414: longer than MAX_QUERY_BYTES
    NO_SUCH_PAGE = "no_such_page"  # 404: no route, or a trace id not 64 lowercase hex
    NO_SUCH_TRACE = "no_such_trace"  # 404: a well-formed id the store does not hold
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405: Workbench is GET only (ADR-0226 §8.11)
    STORE_UNREADABLE = "store_unreadable"  # 503


_ANSWERED = frozenset({Outcome.ANSWERED_DIRECT, Outcome.ANSWERED_PRACTICE})


@dataclasses.dataclass(frozen=True, slots=True)
class TraceStanding:
    """A shown case after its full check: the verified outcome and, always, its reason (how
    it was answered, why it was refused, or what failed); the proof-gated answer exactly when
    it was answered."""

    outcome: Outcome
    reason: str
    answer: str | None = None

    def __post_init__(self) -> None:
        if type(self.outcome) is not Outcome:
            raise TypeError("outcome must be an Outcome")
        if type(self.reason) is not str or not self.reason:
            raise ValueError(f"{self.outcome.value} needs a reason")
        if self.answer is not None and type(self.answer) is not str:
            raise TypeError("answer must be text or None")
        if (self.answer is None) == (self.outcome in _ANSWERED):
            raise ValueError(
                f"{self.outcome.value} {'needs' if self.answer is None else 'has'} an answer"
            )


class GoldCheck(enum.Enum):
    """A verified answer beside the gold answer the case row holds (gold is the case's input,
    not verified: the check re-runs the question, never the gold)."""

    MATCHES = "matches"
    WRONG = "wrong"  # ``runner.is_wrong``: counted in ``run``'s wrong_ids
    UNJUDGED = "unjudged"  # no gold, or one that is not an integer as ``run`` stores it


@dataclasses.dataclass(frozen=True, slots=True)
class ListedCase:
    """One row of the list page: the case row's own fields, as recorded, and its standing
    after the full check. ``question`` and ``recorded`` are ``None`` for a row whose columns
    are not of their types (its standing says so)."""

    case_id: str
    question: str | None
    trace_id: str | None
    recorded: str | None
    gold: str | None
    standing: TraceStanding
    gold_check: GoldCheck | None


def standing_of(
    row: CaseRow | MalformedRow, findings: list[Finding], trace: SealedPracticeTrace | None
) -> TraceStanding:
    """The list's view of a case after the full check (``verification.check_case_reading``):
    its outcome as the case row records it, which the check has just required to be what its
    trace and question give, or its first failure. A refusal reason is written as ``run``
    writes it; an answer's reason and unit are read from the verified trace."""
    if findings:
        first = findings[0]
        if first.code == "trace_missing":
            return TraceStanding(Outcome.TRACE_MISSING, "its trace is not in the store")
        return TraceStanding(Outcome.FAILED_VERIFICATION, failure_text(first))
    assert type(row) is CaseRow
    if row.outcome == Outcome.REFUSED.value:
        return TraceStanding(Outcome.REFUSED, row.reason or Outcome.REFUSED.value)
    assert trace is not None and type(trace.outcome) is ProofGatedAnswer
    answer = trace.outcome
    shown = f"{answer.value} {answer.unit}"
    if answer.path is AnswerPath.DIRECT:
        how = "directly: the original assessment is runnable and its proof closed"
        return TraceStanding(Outcome.ANSWERED_DIRECT, how, shown)
    return TraceStanding(Outcome.ANSWERED_PRACTICE, _through_practice(trace, answer), shown)


def _through_practice(trace: SealedPracticeTrace, answer: ProofGatedAnswer) -> str:
    """Which candidates the answer rests on (its replays that closed contract and proof),
    each with the role it bound and the cue it read."""
    closing = [
        replay
        for replay in trace.replays
        if type(replay) is ReplayResult and replay.replay_id in answer.replay_ids
    ]
    candidates = []
    for replay in closing:
        for result in trace.operator_outcomes:
            if type(result) is CandidateOperatorResult and (
                result.attempt_id,
                result.candidate_digest,
            ) == (replay.attempt_id, replay.candidate_digest):
                payload = result.reconstruction.candidate_payload
                candidates.append(
                    f"candidate {result.attempt_index} ({payload.role.value} = "
                    f"{payload.direction.value}, from the cue \u201c{payload.cue_span.text}\u201d)"
                )
    return f"through practice: {' and '.join(candidates)} closed contract and proof on replay"


def failure_text(finding: Finding) -> str:
    return f"{finding.code} at {finding.stage}"


def gold_check(row: CaseRow, standing: TraceStanding) -> GoldCheck | None:
    """How a verified answer stands against the row's gold; ``None`` when nothing was
    answered (or nothing verified)."""
    if standing.outcome not in _ANSWERED:
        return None
    if is_wrong(row):
        return GoldCheck.WRONG
    if row.gold is not None and row.gold == str(row.value):
        return GoldCheck.MATCHES
    return GoldCheck.UNJUDGED


_Value = TypeVar("_Value")


class _Recent(Generic[_Value]):
    """A least-recently-used map of at most ``bound`` entries, safe across threads."""

    def __init__(self, bound: int) -> None:
        if type(bound) is not int or bound < 1:
            raise ValueError("a cache holds at least one entry")
        self.bound = bound
        self._entries: collections.OrderedDict[Hashable, _Value] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, key: Hashable, compute: Callable[[], _Value]) -> _Value:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = compute()  # outside the lock: other requests go on meanwhile
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.bound:
                self._entries.popitem(last=False)
        return value


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _row_digest(rows: object) -> bytes:
    # ``repr`` of rows of exact str, int and None fields, which tells every two apart.
    return _digest(repr(rows).encode("utf-8", "backslashreplace"))


def _body_key(stored: StoredBody | None) -> tuple[object, ...]:
    """What of the stored trace the check reads: absent, a body it refused unread (the reason
    names its type and size), or the SHA-256 of the bytes."""
    if stored is None:
        return ("absent",)
    if stored.body is None:
        return ("unreadable", stored.refused)
    return ("bytes", _digest(stored.body))


@dataclasses.dataclass(frozen=True, slots=True)
class _Checked:
    standing: TraceStanding
    gold_check: GoldCheck | None


class StandingCache:
    """Each listed case's standing after the full check, at most ``bound`` of them, least
    recently used out first. Keyed by the case row's SHA-256, the trace id and the SHA-256 of
    the trace's stored bytes: the check is a pure function of those, so a row or bytes
    rewritten on disk are checked anew."""

    def __init__(self, bound: int = STANDING_CACHE_ENTRIES) -> None:
        self._recent: _Recent[_Checked] = _Recent(bound)

    def __len__(self) -> int:
        return len(self._recent)

    @property
    def bound(self) -> int:
        return self._recent.bound

    def standing(self, store: ReadOnlyTraceStore, row: CaseRow) -> TraceStanding:
        return self._checked(store, row).standing

    def _checked(self, store: ReadOnlyTraceStore, row: CaseRow | MalformedRow) -> _Checked:
        if type(row) is MalformedRow:  # nothing to run: the row itself is refused
            findings, _ = check_case_reading(row, None)
            return _Checked(standing_of(row, findings, None), None)
        stored = store.stored_body(row.trace_id) if row.trace_id is not None else None
        key = (_row_digest(row.as_tuple()), row.trace_id, _body_key(stored))

        def check() -> _Checked:
            findings, trace = check_case_reading(row, stored)
            standing = standing_of(row, findings, trace)
            return _Checked(standing, gold_check(row, standing))

        return self._recent.get(key, check)

    def listed(self, store: ReadOnlyTraceStore, row: CaseRow | MalformedRow) -> ListedCase:
        checked = self._checked(store, row)
        if type(row) is MalformedRow:
            return ListedCase(row.key, None, None, None, None, checked.standing, None)
        return ListedCase(
            row.case_id,
            row.question,
            row.trace_id,
            row.outcome,
            row.gold,
            checked.standing,
            checked.gold_check,
        )


class TraceCache:
    """Each shown trace after the full check (``verification.check_stored_trace``): the trace,
    or its findings, with the case rows that name it; at most ``bound``, least recently used
    out first. Keyed by the trace id, the SHA-256 of its stored bytes and of its case rows."""

    def __init__(self, bound: int = TRACE_CACHE_ENTRIES) -> None:
        self._recent: _Recent[tuple[SealedPracticeTrace | list[Finding], list[CaseRow]]]
        self._recent = _Recent(bound)

    def __len__(self) -> int:
        return len(self._recent)

    def read(
        self, store: ReadOnlyTraceStore, trace_id: str
    ) -> tuple[SealedPracticeTrace | list[Finding], list[CaseRow]] | None:
        """The checked trace and its well-typed case rows, or ``None`` when the store does
        not hold the id."""
        stored = store.stored_body(trace_id)
        if stored is None:
            return None
        rows = store.case_rows_of_trace(trace_id)
        key = (trace_id, _body_key(stored), _row_digest(rows))

        def check() -> tuple[SealedPracticeTrace | list[Finding], list[CaseRow]]:
            typed = [row for row in rows if type(row) is CaseRow]
            return check_stored_trace(stored, rows), typed

        return self._recent.get(key, check)


@dataclasses.dataclass(frozen=True, slots=True)
class ListQuery:
    """The list page's filters, from the URL's query string; anything else is refused. The
    outcome and reason select by what the case rows record."""

    outcome: RecordedOutcome | None = None
    reason: str | None = None
    text: str = ""
    page: int = 1

    def __post_init__(self) -> None:
        if self.outcome is not None and type(self.outcome) is not RecordedOutcome:
            raise TypeError("outcome must be a RecordedOutcome or None")
        if type(self.text) is not str or (self.reason is not None and type(self.reason) is not str):
            raise TypeError("reason and text must be text")
        if type(self.page) is not int or self.page < 1:
            raise ValueError("page must be a positive int")

    def selection(self) -> CaseSelection:
        outcome = self.outcome.value if self.outcome is not None else None
        return CaseSelection(outcome, self.reason, self.text)


class BadQuery(ValueError):
    """A list URL with an unknown parameter or value (answered 400 with its refusal), or one
    too long to echo (414)."""

    def __init__(self, refusal: Refusal, detail: str) -> None:
        super().__init__(detail)
        self.refusal = refusal


_UNRECORDED = {Outcome.FAILED_VERIFICATION.value, Outcome.TRACE_MISSING.value}


def parse_list_query(query: str) -> ListQuery:
    size = len(query.encode("utf-8", "surrogateescape"))
    if size > MAX_QUERY_BYTES:
        detail = f"the query string is {size} bytes; at most {MAX_QUERY_BYTES} are taken"
        raise BadQuery(Refusal.QUERY_TOO_LONG, detail)
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise BadQuery(Refusal.MALFORMED_QUERY, "malformed query string") from None
    unknown = sorted(set(fields) - _LIST_PARAMETERS)
    if unknown:
        raise BadQuery(Refusal.UNKNOWN_PARAMETER, f"unknown parameter {unknown[0]!r}")
    if any(len(values) != 1 for values in fields.values()):
        raise BadQuery(Refusal.REPEATED_PARAMETER, "a parameter is given more than once")
    given = {name: values[0] for name, values in fields.items()}
    outcome = None
    if given.get("outcome"):
        if given["outcome"] in _UNRECORDED:
            detail = (
                f"no case row records {given['outcome']!r}: only the full check finds it "
                "(each listed row is checked; practice-loop verify checks the whole store)"
            )
            raise BadQuery(Refusal.UNRECORDED_OUTCOME, detail)
        try:
            outcome = RecordedOutcome(given["outcome"])
        except ValueError:
            detail = f"unknown outcome {given['outcome']!r}"
            raise BadQuery(Refusal.UNKNOWN_OUTCOME, detail) from None
    page_text = given.get("page") or "1"
    if not page_text.isascii() or not page_text.isdigit() or int(page_text) < 1:
        raise BadQuery(Refusal.BAD_PAGE_NUMBER, "page must be a positive number")
    return ListQuery(outcome, given.get("reason") or None, given.get("q", ""), int(page_text))


@dataclasses.dataclass(frozen=True, slots=True)
class RecordedCounts:
    """The whole store's case rows by what they record, counted in SQL, unverified: every
    recorded outcome (zeros included), the rows whose outcome column is none of them, and the
    rows of each (outcome, reason) that has a reason."""

    total: int
    outcomes: tuple[tuple[RecordedOutcome, int], ...]
    unrecognized: int
    reasons: tuple[tuple[RecordedOutcome, str, int], ...]

    def selecting(self, outcome: RecordedOutcome | None, reason: str | None) -> int | None:
        """How many rows record this outcome (and reason), read off the counts; ``None`` for
        a reason without an outcome, which the counts do not break down."""
        if outcome is None:
            return self.total if reason is None else None
        if reason is None:
            return dict(self.outcomes)[outcome]
        found = [n for o, r, n in self.reasons if (o, r) == (outcome, reason)]
        return found[0] if found else 0


def recorded_counts(store: ReadOnlyTraceStore) -> RecordedCounts:
    outcomes = dict.fromkeys(RecordedOutcome, 0)
    reasons: collections.Counter[tuple[RecordedOutcome, str]] = collections.Counter()
    total = unrecognized = 0
    known = {outcome.value: outcome for outcome in RecordedOutcome}
    for outcome, reason, count in store.recorded_counts():
        total += count
        recorded = known.get(outcome) if type(outcome) is str else None
        if recorded is None:
            unrecognized += count
            continue
        outcomes[recorded] += count
        if type(reason) is str:
            reasons[(recorded, reason)] += count
    ordered = sorted(reasons.items(), key=lambda item: (item[0][0].value, -item[1], item[0][1]))
    return RecordedCounts(
        total,
        tuple(outcomes.items()),
        unrecognized,
        tuple((outcome, reason, count) for (outcome, reason), count in ordered),
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ListView:
    """One list page: the store's recorded counts, how many rows the query selects, and the
    rows of this page, each checked in full."""

    counts: RecordedCounts
    query: ListQuery
    matching: int
    page_size: int
    shown: tuple[ListedCase, ...]

    @property
    def pages(self) -> int:
        return max(1, -(-self.matching // self.page_size))

    @property
    def first(self) -> int:
        """The offset of this page's first row among the rows the query selects."""
        return (self.query.page - 1) * self.page_size

    @property
    def failed(self) -> int:
        """How many rows of this page did not verify."""
        return sum(case.standing.outcome not in _VERIFIED for case in self.shown)


_VERIFIED = frozenset({Outcome.ANSWERED_DIRECT, Outcome.ANSWERED_PRACTICE, Outcome.REFUSED})


def list_view(
    store: ReadOnlyTraceStore, cache: StandingCache, query: ListQuery, page_size: int
) -> ListView:
    """The list page's content, reading only what it shows, from one snapshot of the store:
    the counts in SQL (which also give how many rows an outcome or reason selects), this
    page's rows, and the traces they name, each row checked."""
    selection = query.selection()
    first = (query.page - 1) * page_size
    with store.snapshot():
        counts = recorded_counts(store)
        if query.text:
            matching, rows = store.searched_rows(selection, page_size, first)
        else:
            matching = counts.selecting(query.outcome, query.reason)
            if matching is None:
                matching = store.count_selected(selection)
            # A page past the last selects nothing; SQL is not asked (its offsets are 64-bit).
            rows = store.selected_rows(selection, page_size, first) if first < matching else []
        shown = tuple(cache.listed(store, row) for row in rows)
    return ListView(counts, query, matching, page_size, shown)
