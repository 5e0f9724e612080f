"""Fixtures for the Workbench browser tests (issue 9): Debian's Chromium, driven headless by
Playwright for Python, against Workbench on a free loopback port.

No browser is ever downloaded: Playwright launches the system's ``chromium`` (installed by
``.ci/run`` with apt). Where Playwright or Chromium is missing the tests are skipped with a
message naming what is missing, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import (
    CHROMIUM_ARGS,
    FORGED_CASE,
    HOSTILE_ID,
    HOSTILE_QUESTION,
    trace_of,
)

from practice_loop.cli import main
from practice_loop.runner import run_lines
from practice_loop.store import TraceStore
from practice_loop.workbench import WorkbenchServer


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing() -> list[str]:
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (pip install -e '.[test]')")
    if _chromium() is None:
        missing.append("Debian's chromium on PATH (apt-get install chromium)")
    return missing


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        message = "Workbench browser tests need " + " and ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, object]:
    """The store the main-job command writes, plus one hostile case, with the summary it
    printed; and a copy with one trace's bytes forged."""
    folder = tmp_path_factory.mktemp("workbench-browser")
    clean = folder / "practice-loop.sqlite"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", "--store", str(clean), "--json", "--quiet"]) == 0
    summary = json.loads(printed.getvalue())
    hostile = json.dumps({"id": HOSTILE_ID, "question": HOSTILE_QUESTION}).encode()
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
    return {"clean": clean, "forged": forged, "summary": summary, "extra": extra.to_json()}


@contextlib.contextmanager
def _running(store: Path) -> Iterator[WorkbenchServer]:
    server = WorkbenchServer(store, ("127.0.0.1", 0), quiet=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert not thread.is_alive()


@pytest.fixture(scope="module")
def workbench(stores):
    with _running(stores["clean"]) as server:
        yield server


@pytest.fixture(scope="module")
def forged_workbench(stores):
    with _running(stores["forged"]) as server:
        yield server
