"""Issue 20, "Navigation" and "Scale": Workbench's list over plain HTTP. Answer, gold and
reason columns for every row; pages read in SQL, only the rows shown read and checked; counts
and filters by what the rows record, kept apart from what is verified; checks cached by
content in bounded caches; over-long queries refused. Small stores and a small page size: the
100,000-trace store is only in ``benchmarks/bench_workbench.py``."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from practice_loop.kernel import (
    CandidateOperatorResult,
    ProofGatedAnswer,
    ReplayDisposition,
    ReplayResult,
)
from practice_loop.product.runner import run_lines
from practice_loop.product.store import CaseSelection, ReadOnlyTraceStore, TraceStore
from practice_loop.workbench import (
    CONTENT_SECURITY_POLICY,
    MAX_QUERY_BYTES,
    StandingCache,
    TraceCache,
)
from practice_loop.workbench import model as workbench_model
from workbench_support import FORGED_CASE, build_stores, fetch, list_rows, running, trace_of

HOSTILE_ID = "hostile"
SMALL_PAGE = 10


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_stores(tmp_path_factory.mktemp("workbench-list"), HOSTILE_ID)


@pytest.fixture
def copied(built, tmp_path):
    """A copy of the clean store this test may change."""
    path = tmp_path / "copy.sqlite"
    shutil.copyfile(built["clean"], path)
    return path


def _sql(path: Path, statement: str, *arguments: object) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(statement, arguments)


def _body(path: Path, trace_id: str) -> bytes:
    with contextlib.closing(sqlite3.connect(path)) as db:
        (body,) = db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
    return bytes(body)


def _case_ids(path: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [case_id for (case_id,) in db.execute("SELECT case_id FROM cases ORDER BY 1")]


def _showing(page: str) -> dict[str, int]:
    found = re.search(r'data-matching="(\d+)" data-shown="(\d+)" data-failed="(\d+)"', page)
    return dict(zip(("matching", "shown", "failed"), map(int, found.groups()), strict=True))


@pytest.fixture
def counted(monkeypatch):
    """Every full check Workbench runs, by the case id or trace id it checked."""
    calls: dict[str, list[str]] = {"cases": [], "traces": []}
    check_case, check_trace = workbench_model.check_case_reading, workbench_model.check_stored_trace

    def counting_case(row, stored):
        calls["cases"].append(getattr(row, "case_id", None) or row.key)
        return check_case(row, stored)

    def counting_trace(stored, rows):
        calls["traces"].append(stored.trace_id)
        return check_trace(stored, rows)

    monkeypatch.setattr(workbench_model, "check_case_reading", counting_case)
    monkeypatch.setattr(workbench_model, "check_stored_trace", counting_trace)
    return calls


def test_every_row_shows_its_answer_gold_and_reason(built):
    """Issue 20: the list has answer and gold columns, and every row a reason: how an answer
    was reached (directly, or through practice with its candidates), a refusal's reason as
    ``run`` writes it; the answer is the verified trace's, unit included."""
    with running(built["clean"]) as server:
        _, _, page = fetch(server, "/")
    rows = {row["case"]: row for row in list_rows(page)}
    with ReadOnlyTraceStore(built["clean"]) as store:
        cases = {row.case_id: row for row in store.cases()}
        assert set(rows) == set(cases)
        for case_id, shown in rows.items():
            row = cases[case_id]
            assert shown["reason"], case_id
            if row.outcome == "refused":
                assert (shown["standing"], shown["reason"]) == ("refused", row.reason)
                assert (shown["answer"], shown["gold"]) == ("none: refused", row.gold or "none")
                continue
            trace = store.read_trace(row.trace_id)
            answer = trace.outcome
            assert type(answer) is ProofGatedAnswer
            assert shown["standing"] == row.outcome
            assert shown["answer"] == f"{answer.value} {answer.unit}"
            assert shown["gold"] == f"{row.gold} matches the answer"
            if row.outcome == "answered_direct":
                assert shown["reason"] == (
                    "directly: the original assessment is runnable and its proof closed"
                )
            else:
                (closed,) = [
                    replay
                    for replay in trace.replays
                    if type(replay) is ReplayResult
                    and replay.disposition is ReplayDisposition.CONTRACT_AND_PROOF_CLOSED
                ]
                (candidate,) = [
                    result
                    for result in trace.operator_outcomes
                    if type(result) is CandidateOperatorResult
                    and result.attempt_id == closed.attempt_id
                ]
                payload = candidate.reconstruction.candidate_payload
                assert shown["reason"] == (
                    f"through practice: candidate {candidate.attempt_index} "
                    f"({payload.role.value} = {payload.direction.value}, from the cue "
                    f"\u201c{payload.cue_span.text}\u201d) closed contract and proof on replay"
                )
    assert rows["s11"]["answer"] == "7 apple"
    assert rows["s11"]["reason"] == (
        "through practice: candidate 0 (direction = decrease, from the cue \u201cwere eaten\u201d) "
        "closed contract and proof on replay"
    )


def test_the_gold_column_judges_an_answer_as_run_does(tmp_path):
    """Issue 20: beside a verified answer, the gold the row holds and how they stand: equal,
    wrong (what ``run`` counts in wrong_ids), or not judged (no integer gold). A refused row
    shows its gold and no judgement."""
    question = "Mia has 7 stickers. She buys 4 more stickers. How many stickers does Mia have now?"
    lines = [
        {"id": "equal", "question": question, "answer": "#### 11"},
        {"id": "wrong", "question": question, "answer": "#### 12"},
        {"id": "no-gold", "question": question},
        {"id": "edited", "question": question, "answer": "#### 11"},
        {
            "id": "refused",
            "question": "Gia has 6 boxes. Each box holds 8 crayons. How many "
            "crayons does Gia have?",
            "answer": "#### 48",
        },
    ]
    path = tmp_path / "gold.sqlite"
    with TraceStore(path) as store:
        summary = run_lines(
            [json.dumps(line).encode() for line in lines], source="gold.jsonl", store=store
        )
    assert summary.wrong_ids == ["wrong"]
    # Gold is the case's input, never verified: edited by hand, it is shown, and judged only
    # where it is an integer as run stores it.
    _sql(path, "UPDATE cases SET gold = '11 stickers' WHERE case_id = 'edited'")
    with running(path) as server:
        _, _, page = fetch(server, "/")
    gold = {row["case"]: row["gold"] for row in list_rows(page)}
    assert gold == {
        "equal": "11 matches the answer",
        "wrong": "12 wrong: the answer differs",
        "no-gold": "none not judged: no integer gold",
        "edited": "11 stickers not judged: no integer gold",
        "refused": "48",
    }


def test_a_page_reads_and_checks_only_its_own_rows(built, counted, monkeypatch):
    """Issue 20: a list page reads only what it shows: the rows of the page, in case id
    order, and the traces they name, each checked once; the pages together hold every case
    once; a page past the last is empty, whatever its number, and not an error."""
    read: list[str] = []
    stored_body = ReadOnlyTraceStore.stored_body

    def reading(store, trace_id):
        read.append(trace_id)
        return stored_body(store, trace_id)

    monkeypatch.setattr(ReadOnlyTraceStore, "stored_body", reading)
    every = _case_ids(built["clean"])
    pages = -(-len(every) // SMALL_PAGE)
    seen: list[str] = []
    with running(built["clean"], page_size=SMALL_PAGE) as server:
        for number in range(1, pages + 1):
            counted["cases"].clear()
            read.clear()
            status, _, page = fetch(server, f"/?page={number}")
            assert status == 200
            rows = list_rows(page)
            ids = [row["case"] for row in rows]
            assert len(ids) == min(SMALL_PAGE, len(every) - len(seen))
            assert sorted(counted["cases"]) == sorted(ids)
            with ReadOnlyTraceStore(built["clean"]) as store:
                named = [store.case(case_id).trace_id for case_id in ids]
            assert sorted(read) == sorted(t for t in named if t is not None)
            assert f'data-page="{number}" data-pages="{pages}"' in page
            assert _showing(page)["matching"] == len(every)
            seen += ids
        assert seen == every
        for past in (pages + 1, 10**30):
            counted["cases"].clear()
            status, _, page = fetch(server, f"/?page={past}")
            assert (status, list_rows(page), counted["cases"]) == (200, [], [])
            assert 'rel="prev"' in page and 'rel="next"' not in page


def test_filters_select_by_what_rows_record_and_shown_rows_are_still_checked(built):
    """Issue 20: filtering by outcome is done in SQL on what each row records; the rows it
    selects are still checked, and the forged one among them is shown failed, beside what it
    records, with no answer."""
    practice = built["summary"]["answered_through_practice"]
    with running(built["forged"], page_size=SMALL_PAGE) as server:
        _, _, page = fetch(server, "/?outcome=answered_practice")
    assert _showing(page) == {"matching": practice, "shown": practice, "failed": 1}
    rows = {row["case"]: row for row in list_rows(page)}
    assert sorted(rows) == sorted(built["summary"]["practice_ids"])
    forged = rows[FORGED_CASE]
    assert forged["standing"] == "failed_verification"
    assert forged["outcome"] == "failed verification (the row records: answered through practice)"
    assert forged["reason"] == "record_malformed at ProofGatedAnswer"
    assert forged["answer"] == "not shown: not verified"
    others = [row for case, row in rows.items() if case != FORGED_CASE]
    assert {row["standing"] for row in others} == {"answered_practice"}


def _recorded(page: str) -> dict[str, int]:
    section = page[page.index('<section class="recorded"') : page.index("</section>")]
    return {
        outcome: int(count)
        for outcome, count in re.findall(
            r'class="filter[^"]*"(?: href="[^"]*")? data-outcome="([a-z_]+)" data-count="(\d+)"',
            section,
        )
    }


def test_rows_the_counts_cannot_name_are_counted_and_shown_failed(built, copied):
    """Issue 20: the counts cover every row the store holds: a row whose outcome is none
    that ``run`` records is counted as not an outcome, and a row whose columns are not of
    their types is counted by what it records and listed, failed, never dropped."""
    summary = built["summary"]
    _sql(copied, "UPDATE cases SET outcome = 'bogus' WHERE case_id = 's02'")
    _sql(copied, "UPDATE cases SET question = x'37' WHERE case_id = 's03'")
    with running(copied) as server:
        _, _, page = fetch(server, "/")
    assert _recorded(page) == {
        "all": summary["cases"] + 1,
        "answered_direct": summary["answered_direct"] - 1,
        "answered_practice": summary["answered_through_practice"],
        "refused": summary["refused"] + 1,
        "unrecognized": 1,
    }
    rows = {row["case"]: row for row in list_rows(page)}
    assert len(rows) == summary["cases"] + 1
    assert rows["s02"]["outcome"] == "failed verification (the row records: bogus)"
    assert rows["s02"]["reason"] == "row_diverged at case"
    assert rows["s03"]["standing"] == "failed_verification"
    assert (rows["s03"]["question"], rows["s03"]["reason"]) == (
        "not readable",
        "row_malformed at case",
    )
    assert _showing(page)["failed"] == 2


def test_a_check_is_cached_by_content_and_redone_when_bytes_or_row_change(copied, counted):
    """Issue 20: each row is checked once per content: a page shown again runs no check;
    bytes rewritten on disk are checked anew and shown failed, never trusted from the cache;
    the very same bytes back are the content already checked; a row changed is checked
    anew."""
    forged_id = trace_of(copied, FORGED_CASE)
    genuine = _body(copied, forged_id)
    every = _case_ids(copied)

    def standing_of_forged_case(expected_checks: list[str]) -> str:
        counted["cases"].clear()
        _, _, page = fetch(server, "/")
        assert counted["cases"] == expected_checks
        return {row["case"]: row["standing"] for row in list_rows(page)}[FORGED_CASE]

    with running(copied) as server:
        assert standing_of_forged_case(every) == "answered_practice"
        assert standing_of_forged_case([]) == "answered_practice"
        forged = genuine.replace(b'"value":7', b'"value":8', 1)
        assert forged != genuine
        _sql(copied, "UPDATE traces SET body = ? WHERE trace_id = ?", forged, forged_id)
        assert standing_of_forged_case([FORGED_CASE]) == "failed_verification"
        _sql(copied, "UPDATE traces SET body = ? WHERE trace_id = ?", genuine, forged_id)
        assert standing_of_forged_case([]) == "answered_practice"
        _sql(copied, "UPDATE cases SET value = 8 WHERE case_id = ?", FORGED_CASE)
        assert standing_of_forged_case([FORGED_CASE]) == "failed_verification"


def test_a_trace_page_is_checked_once_per_content(copied, counted):
    """Issue 20: a trace is checked once per content for its page too (keyed by its id, the
    SHA-256 of its bytes and of its case rows): shown again, no check; its bytes rewritten,
    checked anew and shown failed."""
    trace_id = trace_of(copied, FORGED_CASE)
    genuine = _body(copied, trace_id)
    with running(copied) as server:
        for _ in range(2):
            status, _, page = fetch(server, f"/trace/{trace_id}")
            assert status == 200 and 'data-status="verified"' in page
        assert counted["traces"] == [trace_id]
        forged = genuine.replace(b'"value":7', b'"value":8', 1)
        _sql(copied, "UPDATE traces SET body = ? WHERE trace_id = ?", forged, trace_id)
        status, _, page = fetch(server, f"/trace/{trace_id}")
        assert status == 200 and 'data-status="failed"' in page
        assert counted["traces"] == [trace_id, trace_id]


def test_the_check_caches_are_bounded(built, counted):
    """Issue 20: the caches hold at most their bound, least recently used out first, so a
    store of any size cannot grow them; a row pushed out is checked again when shown."""
    with ReadOnlyTraceStore(built["clean"]) as store:
        rows = list(store.cases())
        cache = StandingCache(bound=5)
        for row in rows:
            cache.standing(store, row)
        assert len(cache) == 5 and len(counted["cases"]) == len(rows)
        counted["cases"].clear()
        for row in rows[-5:]:
            cache.standing(store, row)
        assert counted["cases"] == []
        cache.standing(store, rows[0])
        assert counted["cases"] == [rows[0].case_id] and len(cache) == 5
        traces = TraceCache(bound=2)
        for trace_id in store.trace_ids()[:4]:
            assert traces.read(store, trace_id) is not None
        assert len(traces) == 2


def test_an_overlong_query_is_refused_never_cut(built):
    """Issue 20: a list URL's query string is echoed into every filter and page link; one
    longer than MAX_QUERY_BYTES is refused with 414 and its typed reason, and nothing of it
    is echoed; one of exactly MAX_QUERY_BYTES is answered, its search kept whole."""
    longest = "q=" + "a" * (MAX_QUERY_BYTES - 2)
    with running(built["clean"]) as server:
        status, _, page = fetch(server, "/?" + longest)
        assert status == 200
        assert f'name="q" value="{longest[2:]}"' in page
        status, headers, page = fetch(server, "/?" + longest + "a")
    assert status == 414
    found = re.search(r'id="refusal" data-reason="([a-z_]+)"', page).group(1)
    assert found == "query_too_long"
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "a" * 64 not in page


def test_search_folds_case_as_python_does(tmp_path):
    """Issue 20: the search runs in SQL but folds case as ``str.casefold`` does, as it did in
    Python, beyond ASCII: "STRASSE" finds "Straße", "été" finds the case id "ÉTÉ-1"."""
    lines = [
        {"id": "street", "question": "Mia has 7 stickers on the Straße. How many?"},
        {"id": "ÉTÉ-1", "question": "Sam has 15 marbles. He loses 6 marbles. How many?"},
        {"id": "other", "question": "Ben has 18 cards. How many cards does Ben have?"},
    ]
    path = tmp_path / "fold.sqlite"
    with TraceStore(path) as store:
        run_lines([json.dumps(line).encode() for line in lines], source="f.jsonl", store=store)
    with running(path) as server:
        found = {
            needle: [row["case"] for row in list_rows(fetch(server, f"/?q={needle}")[2])]
            for needle in ("STRASSE", "%C3%A9t%C3%A9", "CARDS")
        }
    assert found == {"STRASSE": ["street"], "%C3%A9t%C3%A9": ["ÉTÉ-1"], "CARDS": ["other"]}


def test_a_search_is_paged_in_case_id_order(built):
    """Issue 20: a search is one pass over the table, its matches put in case id order and
    paged; the pages together hold every match once, in order ("hostile", stored last, comes
    first)."""
    with ReadOnlyTraceStore(built["clean"]) as store:
        expected = sorted(row.case_id for row in store.cases() if "e" in row.question.casefold())
    seen: list[str] = []
    with running(built["clean"], page_size=SMALL_PAGE) as server:
        for number in range(1, -(-len(expected) // SMALL_PAGE) + 1):
            _, _, page = fetch(server, f"/?q=E&page={number}")
            assert _showing(page)["matching"] == len(expected)
            seen += [row["case"] for row in list_rows(page)]
    assert seen == expected and seen[0] == HOSTILE_ID


def test_one_pass_search_pages_as_sql_orders_them(built, copied):
    """Issue 20: the search's own ordering is SQLite's ORDER BY case_id, whatever the ids
    hold (a BLOB id sorts after every text), page by page."""
    _sql(copied, "UPDATE cases SET case_id = x'00ff' WHERE case_id = 's05'")
    _sql(copied, "UPDATE cases SET case_id = 'Z' WHERE case_id = 's06'")
    with ReadOnlyTraceStore(copied) as store:
        for needle in ("h", "e", "stamps", "cookies", "no such text"):
            selection = CaseSelection(text=needle)
            total = store.count_selected(selection)
            for offset in sorted({0, 3, 7, max(total - 1, 0)}):
                for limit in (1, 4, 50):
                    searched = store.searched_rows(selection, limit, offset)
                    ordered = store.selected_rows(selection, limit, offset)
                    assert searched == (total, ordered), (needle, offset, limit)
        found = store.searched_rows(CaseSelection(text="o"), 50, 0)[1]
        keys = [getattr(row, "case_id", None) or row.key for row in found]
        assert keys[0] == "Z" and keys[-1].startswith("rowid ")


def test_a_page_is_read_from_one_snapshot(built, copied):
    """Issue 20: the counts and rows of one page come from one committed state of the store:
    a writer committing in between changes nothing the page has read until it is done."""
    with contextlib.closing(sqlite3.connect(copied, isolation_level=None)) as writer:
        writer.execute("SELECT 1 FROM cases").fetchone()  # a connection open: WAL, not immutable
        with ReadOnlyTraceStore(copied) as store:
            with store.snapshot():
                before = store.count_selected(CaseSelection())
                writer.execute(
                    "INSERT INTO cases VALUES ('zz', 'x', 'q', NULL, NULL, 'refused', 'r', NULL)"
                )
                assert store.count_selected(CaseSelection()) == before
            assert store.count_selected(CaseSelection()) == before + 1
