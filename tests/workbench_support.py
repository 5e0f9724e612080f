"""What the Workbench tests over HTTP (cover/) and in the browser (browser/) share (issue 9):
the stores they serve and a server running on a free loopback port."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

from practice_loop.cli import main
from practice_loop.product.runner import run_lines
from practice_loop.product.store import TraceStore
from practice_loop.workbench import WorkbenchServer
from practice_loop.workbench.server import PAGE_SIZE

# A question that would run script twice over if it were ever interpreted as markup.
HOSTILE_QUESTION = (
    '<script>window.__pwned = 1; document.title = "pwned"</script>Mia has 7 stickers. '
    "She buys 4 more stickers. How many stickers does Mia have now? "
    '<img src=x onerror="window.__pwned=2">'
)
FORGED_CASE = "s11"  # answered through practice: its trace holds "value":7
MISSING_CASE = "s01"


def fetch(server: WorkbenchServer, path: str, method: str = "GET", body: bytes | None = None):
    """One request to ``server``: its status, headers and body as text."""
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=20)
    try:
        connection.request(method, path, body=body)
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode("utf-8")
    finally:
        connection.close()


def trace_of(store: Path, case_id: str) -> str:
    with contextlib.closing(sqlite3.connect(store)) as db:
        (trace_id,) = db.execute(
            "SELECT trace_id FROM cases WHERE case_id = ?", (case_id,)
        ).fetchone()
    return trace_id


def build_stores(folder: Path, hostile_id: str) -> dict[str, object]:
    """The store the main-job command writes plus one hostile case (with the summary the
    command printed), a copy with one trace's bytes forged, and a copy with one trace
    deleted."""
    clean = folder / "practice-loop.sqlite"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", "--store", str(clean), "--json", "--quiet"]) == 0
    summary = json.loads(printed.getvalue())
    hostile = json.dumps({"id": hostile_id, "question": HOSTILE_QUESTION}).encode()
    with TraceStore(clean) as store:
        extra = run_lines([hostile], source="hostile.jsonl", store=store)
    forged = folder / "forged.sqlite"
    shutil.copyfile(clean, forged)
    forged_id = trace_of(clean, FORGED_CASE)
    with contextlib.closing(sqlite3.connect(forged)) as db, db:
        (body,) = db.execute("SELECT body FROM traces WHERE trace_id = ?", (forged_id,)).fetchone()
        changed = bytes(body).replace(b'"value":7', b'"value":8', 1)
        assert changed != bytes(body)
        db.execute("UPDATE traces SET body = ? WHERE trace_id = ?", (changed, forged_id))
    missing = folder / "missing.sqlite"
    shutil.copyfile(clean, missing)
    with contextlib.closing(sqlite3.connect(missing)) as db, db:
        db.execute("DELETE FROM traces WHERE trace_id = ?", (trace_of(clean, MISSING_CASE),))
    return {
        "clean": clean,
        "forged": forged,
        "forged_id": forged_id,
        "missing": missing,
        "summary": summary,
        "extra": extra.to_json(),
    }


@contextlib.contextmanager
def running(store: Path, *, page_size: int = PAGE_SIZE) -> Iterator[WorkbenchServer]:
    server = WorkbenchServer(store, ("127.0.0.1", 0), quiet=True, page_size=page_size)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert not thread.is_alive()


class _Rows(HTMLParser):
    """Each row of the list's table: its ``data-standing`` and the text of each cell."""

    CELLS = ("case", "question", "outcome", "answer", "gold", "reason", "trace")

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[tuple[str, list[str]]] = []
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append((dict(attrs)["data-standing"] or "", []))
        elif tag == "td" and self._in_body:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1][1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def list_rows(page: str) -> list[dict[str, str]]:
    """The list page's rows: each cell's text, by column, and the row's verified standing."""
    parser = _Rows()
    parser.feed(page[page.index('<table class="cases">') :])
    rows = []
    for standing, cells in parser.rows:
        rows.append({"standing": standing, **dict(zip(_Rows.CELLS, cells, strict=True))})
    return rows
