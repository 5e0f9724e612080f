"""Workbench's server: a read-only web display of the stored, verified traces (ADR-0226 §7G,
§8.11).

Shell code. ``practice-loop workbench`` serves, on the loopback interface by default, a list
of the store's cases and one page per trace. It observes the loop and never advances it:

- GET only; every other method is answered 405 and nothing is ever written;
- the store is opened read-only by SQLite itself (``ReadOnlyTraceStore``), per request;
- a list page reads only what it shows: the counts of what the case rows record, and the rows
  a filter selects, come from SQL, and only the page's own rows and their traces are read;
- every case and trace passes the same full check as ``verify`` before it is shown
  (``verification``: the case re-run from its question must give the stored row and bytes,
  prose included), cached by the SHA-256 of the bytes and rows checked; one that fails is
  shown as failed with its typed reasons, never with its content (``model``);
- a stage the trace does not hold is shown as missing, never filled in, and no stage is re-run;
- every response carries a Content-Security-Policy that allows no script at all, and every
  piece of case text is escaped (``pages``).
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..product.store import DEFAULT_STORE, ReadOnlyTraceStore, StoreError
from . import pages
from .model import (
    BadQuery,
    Refusal,
    StandingCache,
    TraceCache,
    list_view,
    parse_list_query,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# Rows on one list page: each is checked in full (1 to 3 ms) when first shown.
PAGE_SIZE = 50
# Issue 9: a trace id in a URL is exactly 64 lowercase hex digits, or the answer is 404.
_TRACE_PATH = re.compile(r"/trace/([0-9a-f]{64})")
ALLOWED_METHODS = "GET"
# No script from anywhere, styles only from this server, no frames, no plug-ins; the one form
# (the GET search box) may only submit here.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'none'; script-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class WorkbenchServer(ThreadingHTTPServer):
    """The HTTP server: the store's path, the page size and the caches of the full check
    shared by every request."""

    daemon_threads = True

    def __init__(
        self,
        store_path: Path,
        address: tuple[str, int],
        *,
        quiet: bool = False,
        page_size: int = PAGE_SIZE,
    ):
        if type(page_size) is not int or page_size < 1:
            raise ValueError("page_size must be a positive int")
        # Fail at start, not on the first request, when the path is not a readable store.
        ReadOnlyTraceStore(store_path).close()
        self.store_path = store_path
        self.page_size = page_size
        self.cache = StandingCache()
        self.traces = TraceCache()
        self.quiet = quiet
        super().__init__(address, WorkbenchHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


# A refused list query is a 400, except one too long to echo.
_QUERY_STATUS = {Refusal.QUERY_TOO_LONG: HTTPStatus.REQUEST_URI_TOO_LONG}


def _refused(status: HTTPStatus, refusal: Refusal, message: str) -> tuple[HTTPStatus, str, str]:
    return status, pages.error_page(status, refusal.value, message), pages.HTML


class WorkbenchHandler(BaseHTTPRequestHandler):
    server: WorkbenchServer
    server_version = "practice-loop-workbench"
    sys_version = ""

    def parse_request(self) -> bool:
        # http.server answers a method without a ``do_<METHOD>`` with 501 (in
        # ``handle_one_request``, right after this call). Workbench refuses every method but
        # GET, whatever its name, with 405 (issue 9), so a name no handler below is defined for
        # is refused here: this is the last hook before that dispatch (the other way is to copy
        # ``handle_one_request``), and on False its caller returns, the answer taken as sent.
        if not super().parse_request():
            return False
        if hasattr(self, f"do_{self.command}"):
            return True
        self._refuse_method()
        return False

    def _refuse_method(self) -> None:
        status, refusal = HTTPStatus.METHOD_NOT_ALLOWED, Refusal.METHOD_NOT_ALLOWED
        page = pages.error_page(status, refusal.value, "Workbench is read-only: GET only.")
        self._send(status, page, extra={"Allow": ALLOWED_METHODS})

    # Every standard method but GET is refused, HEAD included: 405 with the refusal's headers
    # and no body (``_send``).
    do_HEAD = _refuse_method
    do_POST = _refuse_method
    do_PUT = _refuse_method
    do_DELETE = _refuse_method
    do_PATCH = _refuse_method
    do_OPTIONS = _refuse_method
    do_TRACE = _refuse_method
    do_CONNECT = _refuse_method

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
                status = _QUERY_STATUS.get(error.refusal, HTTPStatus.BAD_REQUEST)
                return _refused(status, error.refusal, str(error))
            with ReadOnlyTraceStore(self.server.store_path) as store:
                view = list_view(store, self.server.cache, query, self.server.page_size)
            page = pages.list_page(store_name=self.server.store_path.name, view=view)
            return HTTPStatus.OK, page, pages.HTML
        if parts.path == pages.STYLESHEET_PATH:
            return HTTPStatus.OK, pages.STYLESHEET, pages.CSS
        match = _TRACE_PATH.fullmatch(parts.path)
        if match is None or parts.query:
            return _refused(HTTPStatus.NOT_FOUND, Refusal.NO_SUCH_PAGE, "No such page.")
        trace_id = match.group(1)
        with ReadOnlyTraceStore(self.server.store_path) as store:
            found = self.server.traces.read(store, trace_id)  # one indexed lookup, not every id
        if found is None:
            message = "No trace with this id in the store."
            return _refused(HTTPStatus.NOT_FOUND, Refusal.NO_SUCH_TRACE, message)
        read, rows = found
        return HTTPStatus.OK, pages.trace_page(trace_id, read, rows), pages.HTML

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
    """Serve until Ctrl-C. Start-up reads nothing but the store's schema: each case is
    checked when a page first shows it (issue 20), so a store of any size opens at once;
    ``practice-loop verify`` checks them all. ``quiet`` leaves out the log of requests."""
    try:
        server = WorkbenchServer(store_path, (host, port), quiet=quiet)
    except OSError as error:  # the port is taken, or the address is not this machine's
        print(f"practice-loop: cannot listen on {host}:{port}: {error}", file=sys.stderr)
        return 2
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
        "workbench",
        help="serve a read-only web display of the stored traces",
        description="Serve the stored cases and their sealed traces as web pages on this "
        "machine, each case and trace after the same full check as verify when a page shows "
        "it; nothing is ever written. Exit status: "
        "0 stopped with Ctrl-C; 2 a usage error (no such store, a store that cannot be "
        "read, or an address it cannot listen on).",
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
    workbench.add_argument("--quiet", action="store_true", help="no log line per request")
    workbench.set_defaults(handler=_workbench)
