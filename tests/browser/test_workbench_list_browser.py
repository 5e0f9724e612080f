"""Issue 20 in a real browser: the list's answer, gold and reason columns, its pages, a forged
row marked failed among the rows a filter selects by what they record, and an over-long search
refused. Debian's Chromium, headless, through Playwright, against servers with a page size of
10 over the sample's store; every page visited is saved in ``test-output/workbench/``."""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
from browser_support import screenshot

from practice_loop.workbench import MAX_QUERY_BYTES
from workbench_support import FORGED_CASE, running

PAGE_SIZE = 10
HEADERS = ["case", "question", "outcome (verified)", "answer", "gold", "reason", "trace"]


@pytest.fixture(scope="module")
def paged(stores):
    with running(stores["clean"], page_size=PAGE_SIZE) as server:
        yield server


@pytest.fixture(scope="module")
def forged_paged(stores):
    with running(stores["forged"], page_size=PAGE_SIZE) as server:
        yield server


def _case_ids(store) -> list[str]:
    with contextlib.closing(sqlite3.connect(store)) as db:
        return [case_id for (case_id,) in db.execute("SELECT case_id FROM cases ORDER BY 1")]


def _cells(page, column: str) -> list[str]:
    index = HEADERS.index(column) + 1
    return page.locator(f"table.cases tbody tr td:nth-child({index})").all_inner_texts()


def _row(page, case_id: str):
    return page.locator("table.cases tbody tr").filter(
        has=page.locator("span.case-id", has_text=case_id)
    )


def test_the_list_pages_through_the_store_with_answer_gold_and_reason(page, paged, stores):
    """Issue 20: the table has answer and gold columns and a reason in every row; the pages,
    followed by their links, hold every case once, in case id order."""
    every = _case_ids(stores["clean"])
    pages = -(-len(every) // PAGE_SIZE)
    page.goto(paged.url)
    screenshot(page, "list-columns-page-1")
    assert page.locator("table.cases thead th").all_inner_texts() == HEADERS
    s01 = _row(page, "s01")
    assert s01.locator("td:nth-child(4)").inner_text() == "11 sticker"
    assert s01.locator("td:nth-child(5)").inner_text() == "11 matches the answer"
    assert s01.locator("td:nth-child(6)").inner_text().startswith("directly: ")
    seen: list[str] = []
    for number in range(1, pages + 1):
        if number > 1:
            page.locator('nav.pages a[rel="next"]').click()
            page.wait_for_url(f"**/?page={number}")
        if number == 2:
            screenshot(page, "list-columns-page-2")
            shown = page.locator("p.showing").inner_text()
            assert (
                shown
                == f"{len(every)} of {len(every)} case rows match; showing 11–20; each verified"
            )
        ids = _cells(page, "case")
        assert len(ids) == min(PAGE_SIZE, len(every) - len(seen))
        assert all(reason.strip() for reason in _cells(page, "reason"))
        assert page.locator("nav.pages").inner_text().endswith(f"page {number} of {pages}")
        seen += ids
    assert seen == every
    assert page.locator('nav.pages a[rel="next"]').count() == 0
    page.locator('nav.pages a[rel="first"]').click()
    page.wait_for_url(paged.url)
    assert _cells(page, "case") == every[:PAGE_SIZE]


def test_a_forged_row_is_marked_failed_among_what_a_filter_selects(page, forged_paged, stores):
    """Issue 20: the filter selects by what the rows record (the forged row still records an
    answer through practice, and the count says so, labelled not verified); the row itself,
    checked for the page, is marked failed, set apart in colour, and shows no answer."""
    summary = stores["summary"]
    page.goto(forged_paged.url)
    page.locator('a.filter[data-outcome="answered_practice"]').click()
    page.wait_for_url("**/?outcome=answered_practice")
    screenshot(page, "list-forged-practice")
    link = page.locator('a.filter[data-outcome="answered_practice"]')
    assert int(link.get_attribute("data-count")) == summary["answered_through_practice"]
    assert "not verified" in page.locator("#recorded h2").inner_text()
    assert page.locator("p.showing").get_attribute("data-failed") == "1"
    assert "1 of them failed verification" in page.locator("p.showing").inner_text()
    forged = _row(page, FORGED_CASE)
    assert forged.get_attribute("data-standing") == "failed_verification"
    assert forged.locator("td:nth-child(3)").inner_text() == (
        "failed verification (the row records: answered through practice)"
    )
    assert forged.locator("td:nth-child(4)").inner_text() == "not shown: not verified"
    assert forged.locator("td:nth-child(6)").inner_text() == "record_malformed at ProofGatedAnswer"
    verified = page.locator('table.cases tbody tr[data-standing="answered_practice"]').first
    background = "e => getComputedStyle(e).backgroundColor"
    assert forged.evaluate(background) != verified.evaluate(background)


def test_an_overlong_search_is_refused_not_cut(page, paged):
    """Issue 20: a search whose query string is longer than MAX_QUERY_BYTES is answered 414
    with its typed reason, and the page echoes none of it."""
    page.goto(paged.url)
    page.locator('input[name="q"]').fill("x" * MAX_QUERY_BYTES)
    with page.expect_navigation() as navigation:
        page.locator('input[name="q"]').press("Enter")
    screenshot(page, "list-query-too-long")
    assert navigation.value.status == 414
    assert page.locator("#refusal").get_attribute("data-reason") == "query_too_long"
    assert "x" * 64 not in page.content()
