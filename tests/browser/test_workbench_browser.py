"""Issue 9 and ADR-0226 §7G: Workbench in a real browser. Debian's Chromium, headless, driven
by Playwright against the server on a free loopback port, over a store built from the shipped
sample. Each test saves a screenshot of every page it visits in ``test-output/workbench/``."""

from __future__ import annotations

import json

from browser_support import HOSTILE_ID, SCREENSHOTS, screenshot

from practice_loop.kernel import SealedPracticeTrace
from practice_loop.product.runner import run_lines
from practice_loop.product.store import ReadOnlyTraceStore, TraceStore
from workbench_support import FORGED_CASE, running, trace_of


def _filter_counts(page) -> dict[str, int]:
    return {
        link.get_attribute("data-outcome"): int(link.get_attribute("data-count"))
        for link in page.locator("a.filter").all()
    }


def _row(page, case_id: str):
    return page.locator("table.cases tbody tr").filter(
        has=page.locator("span.case-id", has_text=case_id)
    )


def test_the_list_shows_the_run_counts_and_filters(page, workbench, stores):
    """Issue 9: the list's counts are `practice-loop run --json`'s for the sample (plus the
    hostile case); the refused filter and the search box narrow the table to match. Issue 20:
    the counts are what the rows record, under a heading that says so."""
    summary, extra = stores["summary"], stores["extra"]
    page.goto(workbench.url)
    screenshot(page, "list")
    counts = _filter_counts(page)
    assert counts == {
        "all": summary["cases"] + extra["cases"],
        "answered_direct": summary["answered_direct"],
        "answered_practice": summary["answered_through_practice"],
        "refused": summary["refused"] + extra["refused"],
    }
    assert "not verified" in page.locator("#recorded h2").inner_text()
    assert page.locator("table.cases tbody tr").count() == counts["all"]
    for reason, count in summary["refused_by_reason"].items():
        link = page.locator(f'a.reason[data-outcome="refused"][data-reason="{reason}"]')
        assert int(link.get_attribute("data-count")) >= count
    page.locator('a.filter[data-outcome="refused"]').click()
    page.wait_for_url("**/?outcome=refused")
    screenshot(page, "list-refused")
    assert page.locator("table.cases tbody tr").count() == counts["refused"]
    page.locator('input[name="q"]').fill("stickers")
    page.locator('input[name="q"]').press("Enter")
    page.wait_for_url("**q=stickers**")
    screenshot(page, "list-search")
    ids = page.locator("table.cases tbody span.case-id").all_inner_texts()
    assert HOSTILE_ID in ids and all(page.locator("table.cases .o-refused").all())
    assert len(ids) == page.locator("table.cases tbody tr").count() > 0


def test_a_trace_page_shows_its_spans_and_stages(page, workbench, stores):
    """Issue 9: the question with every evidence span marked at its exact offsets, every
    stage the trace holds, the missing direct proof marked missing, the budget grant beside
    its consumption, the answer, and each identity whole in its text but abbreviated."""
    trace_id = trace_of(stores["clean"], "s11")
    with ReadOnlyTraceStore(stores["clean"]) as store:
        trace = store.read_trace(trace_id)
    assert type(trace) is SealedPracticeTrace
    page.goto(workbench.url)
    _row(page, "s11").locator("a").click()
    page.wait_for_url(f"**/trace/{trace_id}")
    screenshot(page, "trace-practice")
    assert page.locator("#seal-status").get_attribute("data-status") == "verified"
    assert page.locator("#question").text_content() == trace.frame.source_text
    marks = page.locator("#question mark").evaluate_all(
        "marks => marks.map(m => [+m.dataset.start, +m.dataset.end, m.textContent])"
    )
    text = trace.frame.source_text
    assert all(text[start:end] == piece for start, end, piece in marks)
    marked = {i for start, end, _ in marks for i in range(start, end)}
    for span in trace.frame.all_spans():
        assert set(range(span.start, span.end)) <= marked
    for stage in ("frame", "assessment", "residuals", "gate", "budget", "run", "candidates"):
        assert page.locator(f"#stage-{stage}").is_visible()
        assert page.locator(f"#stage-{stage}").get_attribute("class") == "stage"
    assert "off-path" in page.locator("#stage-direct-proof").get_attribute("class")
    assert page.locator("#stage-direct-proof .not-on-path").is_visible()
    consumed = trace.run_outcome.budget_consumed
    meters = page.locator("#stage-budget meter").evaluate_all(
        "meters => meters.map(m => [m.value, m.max])"
    )
    budget = trace.budget_decision
    assert meters == [
        [consumed.candidates_considered, budget.max_candidates],
        [consumed.depth_reached, budget.max_depth],
        [consumed.steps_used, budget.max_steps],
        [consumed.parallelism_used, budget.max_parallelism],
    ]
    assert "contract_and_proof_closed" in page.locator("#stage-candidates").inner_text()
    assert page.locator("#final").inner_text().startswith(f"Answer: {trace.outcome.value} ")
    identity = page.locator("h1 code.id")
    assert identity.text_content() == identity.get_attribute("title") == trace_id
    assert identity.evaluate("e => e.scrollWidth > e.clientWidth")  # abbreviated on screen


def test_a_direct_trace_shows_the_search_stages_as_not_on_its_path(page, workbench, stores):
    """ADR-0226 §7G, issue 20: a runnable case never searches. Its search stages say they are
    not on this path, greyed, and nothing is called missing or filled in."""
    trace_id = trace_of(stores["clean"], "s01")
    page.goto(f"{workbench.url}trace/{trace_id}")
    screenshot(page, "trace-direct")
    for stage in ("residuals", "gate", "budget", "run", "candidates", "replays"):
        section = page.locator(f"#stage-{stage}")
        assert "off-path" in section.get_attribute("class")
        assert section.locator(".not-on-path").inner_text().startswith("Not on this path:")
        box = page.locator(f'#flow li[data-stage="{stage}"]')
        assert box.get_attribute("data-state") == "not_on_path"
        assert box.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"
    assert page.locator(".missing, .missing-stage").count() == 0
    assert page.locator("#stage-direct-proof").get_attribute("class") == "stage"
    assert page.locator("#final").inner_text().endswith("(direct)")


def test_the_verdict_and_its_decisive_cause_are_on_the_first_screen(page, workbench, stores):
    """Issue 20: a refused case's page opens, without scrolling, on its verdict: refused,
    decided at the replay (result_non_negative), not at the answer's own refusal words; the
    flow colours the decisive stage apart from those that passed and those after it."""
    trace_id = trace_of(stores["clean"], "s18")
    page.goto(f"{workbench.url}trace/{trace_id}")
    screenshot(page, "trace-refused")
    page.screenshot(path=str(SCREENSHOTS / "trace-refused-first-screen.png"))
    verdict = page.locator("#verdict")
    box = verdict.bounding_box()
    assert box is not None and box["y"] + box["height"] <= page.viewport_size["height"]
    assert verdict.locator(".verdict-head").inner_text().startswith("Refused")
    assert "result_non_negative" in page.locator("#decisive").inner_text()
    assert page.locator("#decisive").get_attribute("data-stage") == "replays"

    def colour(stage: str) -> str:
        box = page.locator(f'#flow li[data-stage="{stage}"]')
        return box.evaluate("e => getComputedStyle(e).backgroundColor")

    assert len({colour("gate"), colour("replays"), colour("outcome")}) == 3
    assert colour("gate") == colour("run")  # both passed
    page.locator('#flow li[data-stage="replays"] a').click()
    page.wait_for_url("**#stage-replays")
    uses = page.locator("#verdict meter").evaluate_all("ms => ms.map(m => [m.value, m.max])")
    with ReadOnlyTraceStore(stores["clean"]) as store:
        used = store.read_trace(trace_id).run_outcome.budget_consumed
    assert uses == [
        [used.candidates_considered, used.max_candidates],
        [used.depth_reached, used.max_depth],
        [used.steps_used, used.max_steps],
        [used.parallelism_used, used.max_parallelism],
    ]


def test_a_right_to_left_override_cannot_reorder_a_number(page, tmp_path):
    """Issue 20: "Mia has U+202E 71 U+202C stickers" once showed "17". The override is shown
    as a marker, and the fact's digits are laid out in their own order on screen."""
    store_path = tmp_path / "spoof.sqlite"
    question = "Mia has \u202e71\u202c stickers. She buys 4 more stickers. How many stickers?"
    line = json.dumps({"id": "spoof", "question": question}).encode()
    with TraceStore(store_path) as store:
        run_lines([line], source="spoof.jsonl", store=store)
    with running(store_path) as server:
        page.goto(f"{server.url}trace/{trace_of(store_path, 'spoof')}")
        screenshot(page, "trace-bidi-spoof")
        markers = page.locator("#question .cp").all_inner_texts()
        assert markers == ["U+202E", "U+202C"]
        lefts = page.locator('#question mark[data-start="9"]').evaluate(
            """m => { const t = m.querySelector('bdi').firstChild; const r = document.createRange();
                 return [0, 1].map(i => { r.setStart(t, i); r.setEnd(t, i + 1);
                                          return r.getBoundingClientRect().left; }); }"""
        )
        assert page.locator('#question mark[data-start="9"]').inner_text() == "71"
        assert lefts[0] < lefts[1]  # "7" left of "1": read as written


def test_a_forged_trace_is_shown_as_failed(page, forged_workbench, stores):
    """Issue 9: a trace that fails verification is listed and shown as failed, with its
    typed reason, and nothing of its content. Issue 20: the page says how many of its rows
    failed; the recorded counts still count the row by what it records."""
    page.goto(forged_workbench.url)
    screenshot(page, "list-forged")
    assert page.locator("p.showing").get_attribute("data-failed") == "1"
    row = _row(page, FORGED_CASE)
    assert row.locator(".outcome").inner_text() == "failed verification"
    assert row.get_attribute("data-standing") == "failed_verification"
    row.locator("a").click()
    page.wait_for_url("**/trace/*")
    screenshot(page, "trace-forged")
    assert page.locator("#seal-status").get_attribute("data-status") == "failed"
    assert "record_malformed" in page.locator("table.failures").inner_text()
    assert page.locator("#question").count() == 0 and page.locator("#final").count() == 0


def test_a_script_in_a_question_does_not_run(page, workbench, stores):
    """Issue 9: a question holding <script> and an onerror handler is displayed literally;
    neither runs, on the list or on the trace page."""
    page.goto(f"{workbench.url}?q=pwned")
    screenshot(page, "list-hostile")
    trace_id = trace_of(stores["clean"], HOSTILE_ID)
    page.goto(f"{workbench.url}trace/{trace_id}")
    screenshot(page, "trace-hostile")
    for url in (f"{workbench.url}?q=pwned", f"{workbench.url}trace/{trace_id}"):
        page.goto(url)
        assert page.evaluate("window.__pwned") is None
        assert page.title() != "pwned"
        assert page.evaluate("document.querySelectorAll('script, img').length") == 0
    assert page.locator("#question").text_content().startswith("<script>window.__pwned = 1;")


def test_only_get_is_answered(page, workbench, stores):
    """Issue 9: a POST (or any other method) is refused with 405; the one form is a GET
    search; a malformed trace id is 404."""
    trace_id = trace_of(stores["clean"], "s11")
    for url in (workbench.url, f"{workbench.url}trace/{trace_id}"):
        refused = page.request.post(url, data="outcome=answered_direct")
        assert (refused.status, refused.headers["allow"]) == (405, "GET")
        assert page.request.delete(url).status == 405
    page.goto(workbench.url)
    assert page.locator("form").evaluate_all("forms => forms.map(f => f.method)") == ["get"]
    response = page.goto(f"{workbench.url}trace/{trace_id.upper()}")
    screenshot(page, "not-found")
    assert response.status == 404
