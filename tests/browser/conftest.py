"""Fixtures for the Workbench browser tests (issue 9): Debian's Chromium, driven headless by
Playwright for Python, against Workbench on a free loopback port.

No browser is ever downloaded: Playwright launches the system's ``chromium`` (installed by
``.ci/run`` with apt). Where Playwright or Chromium is missing the tests are skipped with a
message naming what is missing, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import shutil

import pytest
from browser_support import CHROMIUM_ARGS, HOSTILE_ID

from ci_support import absent
from workbench_support import build_stores, running


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _missing() -> list[str]:
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the Python package playwright (pip install 'practice-loop[test]')")
    if _chromium() is None:
        missing.append("Debian's chromium on PATH (apt-get install chromium)")
    return missing


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        absent("Workbench browser tests need " + " and ".join(missing))
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
    """The stores of ``workbench_support.build_stores``."""
    return build_stores(tmp_path_factory.mktemp("workbench-browser"), HOSTILE_ID)


@pytest.fixture(scope="module")
def workbench(stores):
    with running(stores["clean"]) as server:
        yield server


@pytest.fixture(scope="module")
def forged_workbench(stores):
    with running(stores["forged"]) as server:
        yield server
