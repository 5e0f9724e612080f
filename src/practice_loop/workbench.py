"""Workbench: a read-only web display of the stored, verified traces (ADR-0226 §7G, §8.11).

Shell code. ``practice-loop workbench`` serves, on the loopback interface by default, a list
of the store's cases and one page per trace. It observes the loop and never advances it:

- GET only; every other method is answered 405 and nothing is ever written;
- the store is opened read-only by SQLite itself (``ReadOnlyTraceStore``), per request;
- every case and trace passes the same full check as ``verify`` before it is shown
  (``verification``: the case re-run from its question must give the stored row and bytes,
  prose included); one that fails is shown as failed with its typed reasons, never with its
  content;
- a stage the trace does not hold is shown as missing, never filled in, and no stage is re-run;
- every response carries a Content-Security-Policy that allows no script at all, and every
  piece of case text is escaped (``workbench_pages``).

The list's standing of each case is cached by the SHA-256 of its row and its trace's stored
bytes: the check is a pure function of those, so anything rewritten on disk is checked anew.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import hashlib
import re
import sqlite3
import sys
import threading
from collections import Counter
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import workbench_pages as pages
from .progress import Progress
from .store import DEFAULT_STORE, CaseRow, ReadOnlyTraceStore, StoreError
from .verification import Finding, check_case, check_trace

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
PAGE_SIZE = 100
# Issue 9: a trace id in a URL is exactly 64 lowercase hex digits, or the answer is 404.
_TRACE_PATH = re.compile(r"/trace/([0-9a-f]{64})")
_LIST_PARAMETERS = frozenset({"outcome", "reason", "q", "page"})
ALLOWED_METHODS = "GET"
# No script from anywhere, styles only from this server, no frames, no plug-ins; the one form
# (the GET search box) may only submit here.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'none'; script-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


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


class WorkbenchServer(ThreadingHTTPServer):
    """The HTTP server: the store's path and the standing cache shared by every request."""

    daemon_threads = True

    def __init__(self, store_path: Path, address: tuple[str, int], *, quiet: bool = False):
        # Fail at start, not on the first request, when the path is not a readable store.
        ReadOnlyTraceStore(store_path).close()
        self.store_path = store_path
        self.cache = StandingCache()
        self.quiet = quiet
        super().__init__(address, WorkbenchHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


def _refused(status: HTTPStatus, refusal: Refusal, message: str) -> tuple[HTTPStatus, str, str]:
    return status, pages.error_page(status, refusal.value, message), pages.HTML


class WorkbenchHandler(BaseHTTPRequestHandler):
    server: WorkbenchServer
    server_version = "practice-loop-workbench"
    sys_version = ""

    def __getattr__(self, name: str) -> Any:
        # http.server looks up ``do_<METHOD>``: every method but GET, whatever its name, is
        # refused here rather than with the default 501 (issue 9).
        if name.startswith("do_"):
            return self._refuse_method
        raise AttributeError(name)

    def _refuse_method(self) -> None:
        status, refusal = HTTPStatus.METHOD_NOT_ALLOWED, Refusal.METHOD_NOT_ALLOWED
        page = pages.error_page(status, refusal.value, "Workbench is read-only: GET only.")
        self._send(status, page, extra={"Allow": ALLOWED_METHODS})

    def do_GET(self) -> None:  # noqa: N802 (the name http.server looks up)
        try:
            status, body, content_type = self._route()
        except (StoreError, sqlite3.DatabaseError) as error:
            status = HTTPStatus.SERVICE_UNAVAILABLE
            refusal = Refusal.STORE_UNREADABLE.value
            body = pages.error_page(status, refusal, f"The store cannot be read: {error}")
            content_type = pages.HTML
        self._send(status, body, content_type=content_type)

    def _route(self) -> tuple[HTTPStatus, str, str]:
        parts = urlsplit(self.path)
        if parts.path == "/":
            try:
                query = parse_list_query(parts.query)
            except BadQuery as error:
                return _refused(HTTPStatus.BAD_REQUEST, error.refusal, str(error))
            with ReadOnlyTraceStore(self.server.store_path) as store:
                listed = list_cases(store, self.server.cache)
            return HTTPStatus.OK, self._list_page(listed, query), pages.HTML
        if parts.path == pages.STYLESHEET_PATH:
            return HTTPStatus.OK, pages.STYLESHEET, pages.CSS
        match = _TRACE_PATH.fullmatch(parts.path)
        if match is None or parts.query:
            return _refused(HTTPStatus.NOT_FOUND, Refusal.NO_SUCH_PAGE, "No such page.")
        trace_id = match.group(1)
        with ReadOnlyTraceStore(self.server.store_path) as store:
            if trace_id not in store.trace_ids():
                message = "No trace with this id in the store."
                return _refused(HTTPStatus.NOT_FOUND, Refusal.NO_SUCH_TRACE, message)
            read = check_trace(store, trace_id)
            rows = store.cases_of_trace(trace_id)
        return HTTPStatus.OK, pages.trace_page(trace_id, read, rows), pages.HTML

    def _list_page(self, listed: list[ListedCase], query: ListQuery) -> str:
        # Every outcome, in the enum's order, zero counts included.
        counts = dict.fromkeys(Outcome, 0)
        counts.update(Counter(case.standing.outcome for case in listed))
        reasons = Counter(
            (case.standing.outcome, case.standing.reason)
            for case in listed
            if case.standing.reason is not None
        )
        shown = [case for case in listed if query.matches(case)]
        return pages.list_page(
            store_name=self.server.store_path.name,
            total=len(listed),
            counts=counts,
            reasons=reasons,
            query=query,
            shown=shown,
            page_size=PAGE_SIZE,
        )

    def _send(
        self,
        status: HTTPStatus,
        body: str,
        *,
        content_type: str = pages.HTML,
        extra: dict[str, str] | None = None,
    ) -> None:
        encoded = body.encode("utf-8")
        self.send_response(status)
        headers = {
            "Content-Type": content_type,
            "Content-Length": str(len(encoded)),
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
            **(extra or {}),
        }
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(encoded)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        if not self.server.quiet:
            super().log_message(format, *args)


def serve(store_path: Path, host: str, port: int, *, quiet: bool = False) -> int:
    try:
        server = WorkbenchServer(store_path, (host, port))
    except OSError as error:  # the port is taken, or the address is not this machine's
        print(f"practice-loop: cannot listen on {host}:{port}: {error}", file=sys.stderr)
        return 2
    progress = Progress("checking the stored cases", quiet=quiet)
    with ReadOnlyTraceStore(store_path) as store:
        list_cases(store, server.cache, progress)
    progress.finish()
    print(
        f"Workbench on {server.url} (store {store_path}, read-only); Ctrl-C stops it",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _workbench(args: argparse.Namespace) -> int:
    return serve(args.store, args.host, args.port, quiet=args.quiet)


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0 to 65535): {text!r}")
    return int(text)


def add_subcommand(commands: Any) -> None:
    workbench = commands.add_parser(
        "workbench", help="serve a read-only web display of the stored traces"
    )
    workbench.add_argument(
        "--store",
        type=Path,
        default=DEFAULT_STORE,
        help=f"the SQLite trace store, opened read-only (default {DEFAULT_STORE})",
    )
    workbench.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address to listen on (default {DEFAULT_HOST})"
    )
    workbench.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port, 0 to 65535 (default {DEFAULT_PORT}; 0: any free)",
    )
    workbench.add_argument("--quiet", action="store_true", help="no progress line at start-up")
    workbench.set_defaults(handler=_workbench)
