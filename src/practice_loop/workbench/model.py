"""Workbench's view model: what the list and the trace pages show of the store (ADR-0226 §7G).

Pure of HTTP and of HTML: the outcomes and refusals the pages name, each case's verified
standing (``TraceStanding``), the list's rows and its query, and ``StandingCache``. Every case
passes the same full check as ``verify`` (``verification.check_case``) before its standing is
known; one that fails is given its first typed failure, never its content.

The list's standing of each case is cached by the SHA-256 of its row and its trace's stored
bytes: the check is a pure function of those, so anything rewritten on disk is checked anew.
Imports point server -> pages -> model -> (store, verification, progress, kernel), never back.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import threading
from urllib.parse import parse_qs

from ..product.progress import Progress
from ..product.store import CaseRow, ReadOnlyTraceStore
from ..product.verification import Finding, check_case

_LIST_PARAMETERS = frozenset({"outcome", "reason", "q", "page"})


class Outcome(enum.Enum):
    """What the list says of a case: its trace's verified outcome, or why it has none."""

    ANSWERED_DIRECT = "answered_direct"
    ANSWERED_PRACTICE = "answered_practice"
    REFUSED = "refused"
    # The stored bytes do not verify: the trace's content is not shown (issue 9).
    FAILED_VERIFICATION = "failed_verification"
    # The case row names a trace the store does not hold, or claims an answer without one.
    TRACE_MISSING = "trace_missing"


class Refusal(enum.Enum):
    """Why a request is not answered with a page; each is shown on the error page."""

    MALFORMED_QUERY = "malformed_query"  # 400
    UNKNOWN_PARAMETER = "unknown_parameter"  # 400
    REPEATED_PARAMETER = "repeated_parameter"  # 400
    UNKNOWN_OUTCOME = "unknown_outcome"  # 400
    BAD_PAGE_NUMBER = "bad_page_number"  # 400
    NO_SUCH_PAGE = "no_such_page"  # 404: no route, or a trace id not 64 lowercase hex
    NO_SUCH_TRACE = "no_such_trace"  # 404: a well-formed id the store does not hold
    METHOD_NOT_ALLOWED = "method_not_allowed"  # 405: Workbench is GET only (ADR-0226 §8.11)
    STORE_UNREADABLE = "store_unreadable"  # 503


@dataclasses.dataclass(frozen=True, slots=True)
class TraceStanding:
    """A stored trace's verified outcome, or its first typed failure."""

    outcome: Outcome
    reason: str | None

    def __post_init__(self) -> None:
        if type(self.outcome) is not Outcome:
            raise TypeError("outcome must be an Outcome")
        if (self.reason is None) != (self.outcome in _WITHOUT_REASON):
            raise ValueError(
                f"{self.outcome.value} {'needs' if self.reason is None else 'has'} a reason"
            )


_WITHOUT_REASON = frozenset({Outcome.ANSWERED_DIRECT, Outcome.ANSWERED_PRACTICE})


@dataclasses.dataclass(frozen=True, slots=True)
class ListedCase:
    """One row of the list page: the case row's own fields and its trace's standing."""

    case_id: str
    question: str
    trace_id: str | None
    standing: TraceStanding


def standing_of(row: CaseRow, findings: list[Finding]) -> TraceStanding:
    """The list's view of a case after the full check (``verification.check_case``): its
    outcome as the case row records it, which the check has just required to be what its
    trace and question give, or its first failure. The refusal reason is written as ``run``
    writes it, so the counts match ``practice-loop run``'s summary."""
    if findings:
        first = findings[0]
        if first.code == "trace_missing":
            return TraceStanding(Outcome.TRACE_MISSING, "its trace is not in the store")
        return TraceStanding(Outcome.FAILED_VERIFICATION, failure_text(first))
    if row.outcome == Outcome.REFUSED.value:
        return TraceStanding(Outcome.REFUSED, row.reason or Outcome.REFUSED.value)
    return TraceStanding(Outcome(row.outcome), None)


def failure_text(finding: Finding) -> str:
    return f"{finding.code} at {finding.stage}"


class StandingCache:
    """Each case's standing, keyed by the SHA-256 of its row and of its trace's stored bytes:
    the full check is a pure function of those, so a row or bytes rewritten on disk are
    checked anew."""

    def __init__(self) -> None:
        self._known: dict[bytes, TraceStanding] = {}
        self._lock = threading.Lock()

    def standing(self, store: ReadOnlyTraceStore, row: CaseRow) -> TraceStanding:
        stored = store.stored_body(row.trace_id) if row.trace_id is not None else None
        key = hashlib.sha256(repr(row.as_tuple()).encode("utf-8", "backslashreplace"))
        if stored is not None:
            key.update(b"\x00" + (stored.body or (stored.refused or "").encode()))
        digest = key.digest()
        with self._lock:
            known = self._known.get(digest)
        if known is None:
            known = standing_of(row, check_case(row, stored))
            with self._lock:
                self._known[digest] = known
        return known


def list_cases(
    store: ReadOnlyTraceStore, cache: StandingCache, progress: Progress | None = None
) -> list[ListedCase]:
    total = store.count("cases") if progress is not None else None
    listed = []
    for row in store.cases():
        standing = cache.standing(store, row)
        listed.append(ListedCase(row.case_id, row.question, row.trace_id, standing))
        if progress is not None:
            progress.update(len(listed), total)
    return listed


@dataclasses.dataclass(frozen=True, slots=True)
class ListQuery:
    """The list page's filters, from the URL's query string; anything else is refused."""

    outcome: Outcome | None = None
    reason: str | None = None
    text: str = ""
    page: int = 1

    def __post_init__(self) -> None:
        if self.outcome is not None and type(self.outcome) is not Outcome:
            raise TypeError("outcome must be an Outcome or None")
        if type(self.text) is not str or (self.reason is not None and type(self.reason) is not str):
            raise TypeError("reason and text must be text")
        if type(self.page) is not int or self.page < 1:
            raise ValueError("page must be a positive int")

    def matches(self, case: ListedCase) -> bool:
        standing = case.standing
        if self.outcome is not None and standing.outcome is not self.outcome:
            return False
        if self.reason is not None and standing.reason != self.reason:
            return False
        needle = self.text.casefold()
        return needle in case.question.casefold() or needle in case.case_id.casefold()


class BadQuery(ValueError):
    """A list URL with an unknown parameter or value (answered 400 with its refusal)."""

    def __init__(self, refusal: Refusal, detail: str) -> None:
        super().__init__(detail)
        self.refusal = refusal


def parse_list_query(query: str) -> ListQuery:
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
        try:
            outcome = Outcome(given["outcome"])
        except ValueError:
            detail = f"unknown outcome {given['outcome']!r}"
            raise BadQuery(Refusal.UNKNOWN_OUTCOME, detail) from None
    page_text = given.get("page") or "1"
    if not page_text.isascii() or not page_text.isdigit() or int(page_text) < 1:
        raise BadQuery(Refusal.BAD_PAGE_NUMBER, "page must be a positive number")
    return ListQuery(outcome, given.get("reason") or None, given.get("q", ""), int(page_text))
