"""Issue 9, ADR-0226 §7G and §8.11: Workbench over plain HTTP. GET only, ids checked, nothing
outside the store, every case text escaped, a strict Content-Security-Policy, the store never
written, failed and missing evidence shown as such. The browser tests are in
``tests/browser/``."""

from __future__ import annotations

import contextlib
import hashlib
import html
import http.client
import json
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.cli import main
from practice_loop.kernel import SealedPracticeTrace, SourceSpan
from practice_loop.product.runner import run_lines
from practice_loop.product.store import (
    CaseRow,
    ReadOnlyTraceStore,
    StoreError,
    StoreProblem,
    TraceStore,
)
from practice_loop.workbench import (
    CONTENT_SECURITY_POLICY,
    Outcome,
    TraceStanding,
    WorkbenchServer,
)
from practice_loop.workbench.pages import evidence_spans, highlighted, ident
from workbench_support import FORGED_CASE, build_stores, fetch, list_rows, running, trace_of

HOSTILE_ID = "<b>hostile</b>"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The stores of ``workbench_support.build_stores``, the hostile case's id holding markup."""
    return build_stores(tmp_path_factory.mktemp("workbench"), HOSTILE_ID)


@pytest.fixture(scope="module")
def server(built):
    with running(built["clean"]) as started:
        yield started


def _counts(page: str) -> tuple[dict[str, int], Counter[tuple[str, str]]]:
    outcomes = {
        outcome: int(count)
        for outcome, count in re.findall(
            r'class="filter[^"]*" href="[^"]*" '
            r'data-outcome="([a-z_]+)" data-count="(\d+)"',
            page,
        )
    }
    reasons = Counter(
        {
            (outcome, html.unescape(reason)): int(count)
            for outcome, reason, count in re.findall(
                r'data-outcome="([a-z_]+)" data-reason="([^"]*)" data-count="(\d+)"', page
            )
        }
    )
    return outcomes, reasons


def test_list_counts_match_the_run_summary(built, server):
    """Issue 9: the list's counts are those `practice-loop run --json` printed for the
    sample (plus the one hostile case), outcome by outcome and refusal reason by reason.
    Issue 20: they are what the case rows record, counted in SQL, and say so."""
    summary, extra = built["summary"], built["extra"]
    status, _, page = fetch(server, "/")
    assert status == 200
    outcomes, reasons = _counts(page)
    assert outcomes == {
        "all": summary["cases"] + extra["cases"],
        "answered_direct": summary["answered_direct"] + extra["answered_direct"],
        "answered_practice": summary["answered_through_practice"]
        + extra["answered_through_practice"],
        "refused": summary["refused"] + extra["refused"],
    }
    assert "What the case rows record" in page and "not verified" in page
    expected = Counter(summary["refused_by_reason"]) + Counter(extra["refused_by_reason"])
    assert reasons == Counter({("refused", reason): n for reason, n in expected.items()})


def _matching(page: str) -> int:
    return int(re.search(r'data-matching="(\d+)"', page).group(1))


def _listed_case_ids(page: str) -> list[str]:
    return [
        html.unescape(found)
        for found in re.findall(r'<span class="case-id"><bdi dir="ltr">(.*?)</bdi></span>', page)
    ]


def test_filters_and_search(built, server):
    """Issue 9: the list filters by outcome and by refusal reason, and searches case text."""
    summary = built["summary"]
    _, _, page = fetch(server, "/?outcome=answered_practice")
    assert _listed_case_ids(page) == summary["practice_ids"]
    reason, count = max(summary["refused_by_reason"].items(), key=lambda item: item[1])
    _, _, page = fetch(server, f"/?outcome=refused&reason={reason}")
    assert _matching(page) == count == len(_listed_case_ids(page))
    _, _, page = fetch(server, "/?q=STICKERS")
    sample = Path(__file__).resolve().parents[2] / "src" / "practice_loop" / "data" / "sample.jsonl"
    with_stickers = [
        record["id"]
        for record in map(json.loads, sample.read_text().splitlines())
        if "stickers" in record["question"].casefold()
    ]
    assert _listed_case_ids(page) == sorted([*with_stickers, HOSTILE_ID])


def _refusal(page: str) -> str:
    return re.search(r'id="refusal" data-reason="([a-z_]+)"', page).group(1)


@pytest.mark.parametrize(
    "query, reason",
    [
        ("?nope=1", "unknown_parameter"),
        ("?outcome=guessed", "unknown_outcome"),
        ("?outcome=failed_verification", "unrecorded_outcome"),
        ("?outcome=trace_missing", "unrecorded_outcome"),
        ("?page=0", "bad_page_number"),
        ("?page=x", "bad_page_number"),
        ("?page=%EF%BC%91", "bad_page_number"),  # a full-width digit one
        ("?q=a&q=b", "repeated_parameter"),
        ("?=&&", "malformed_query"),
    ],
)
def test_bad_list_queries_are_refused(server, query, reason):
    """Closed filters: an unknown parameter or value is a 400 with its reason, never a guess.
    Issue 20: the list filters on what the rows record, and no row records a failed
    verification or a missing trace, so those are refused, never answered from a partial
    check."""
    status, headers, page = fetch(server, "/" + query)
    assert (status, _refusal(page)) == (400, reason)
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


@pytest.mark.obligation("ADR-0226/8.11")
@pytest.mark.parametrize(
    "shape",
    [
        lambda tid: tid.upper(),
        lambda tid: tid[:63],
        lambda tid: tid + "0",
        lambda tid: "g" + tid[1:],
        lambda tid: tid + "/",
        lambda tid: tid + "?x=1",
        lambda tid: tid + "/..",
        lambda tid: f"%{ord(tid[0]):02x}{tid[1:]}",  # percent-encoded: never decoded
    ],
)
def test_a_trace_id_must_be_64_lowercase_hex_of_a_stored_trace(built, server, shape):
    """Issue 9: anything but 64 lowercase hex naming a stored trace is 404."""
    trace_id = trace_of(built["clean"], "s01")
    assert fetch(server, f"/trace/{trace_id}")[0] == 200
    status, _, page = fetch(server, f"/trace/{shape(trace_id)}")
    assert (status, _refusal(page)) == (404, "no_such_page")
    assert "seal-status" not in page
    status, _, page = fetch(server, "/trace/" + "0" * 64)  # well formed, but not stored
    assert (status, _refusal(page)) == (404, "no_such_trace")


@pytest.mark.obligation("ADR-0226/8.11")
@pytest.mark.parametrize(
    "path",
    [
        "/../../../../etc/passwd",
        "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "//etc/passwd",
        "/workbench.css/../../../etc/passwd",
        "/trace/../practice-loop.sqlite",
        "/practice-loop.sqlite",
        "/static/../practice-loop.sqlite",
        "/STORE",
    ],
)
def test_nothing_outside_the_store_is_readable(built, server, path):
    """Issue 9: the server opens no file but its store; no path reaches the file system."""
    path = path.replace("STORE", str(built["clean"]).lstrip("/"))
    status, _, page = fetch(server, path)
    assert (status, _refusal(page)) == (404, "no_such_page")
    assert "root:" not in page and "SQLite format" not in page


def _fingerprint(store: Path) -> tuple[str, int]:
    return hashlib.sha256(store.read_bytes()).hexdigest(), store.stat().st_mtime_ns


@pytest.mark.obligation("ADR-0226/8.11")
@pytest.mark.parametrize(
    "method",
    ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "HEAD", "BREW", "M-SEARCH"],
)
def test_every_method_but_get_is_refused(built, server, method):
    """Issue 9: GET only; any other method is answered 405 and changes nothing."""
    before = _fingerprint(built["clean"])
    trace_id = trace_of(built["clean"], "s11")
    for path in ("/", f"/trace/{trace_id}", "/workbench.css"):
        status, headers, page = fetch(server, path, method, body=b"outcome=answered_direct")
        assert (status, headers["Allow"]) == (405, "GET")
        if method != "HEAD":  # a HEAD answer has no body
            assert _refusal(page) == "method_not_allowed"
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert _fingerprint(built["clean"]) == before


def test_every_response_carries_the_security_headers(built, server):
    """Issue 9: no script may run on any page: the CSP allows none, on every answer."""
    trace_id = trace_of(built["clean"], "s11")
    for path, status, kind in [
        ("/", 200, "text/html"),
        (f"/trace/{trace_id}", 200, "text/html"),
        ("/workbench.css", 200, "text/css"),
        ("/nowhere", 404, "text/html"),
        ("/?outcome=guessed", 400, "text/html"),
    ]:
        got, headers, _ = fetch(server, path)
        assert got == status
        assert headers["Content-Type"] == f"{kind}; charset=utf-8"
        assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert "script-src 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_case_text_is_escaped_everywhere(built, server):
    """Issue 9: a question holding markup is displayed as text, never as markup."""
    hostile_trace = trace_of(built["clean"], HOSTILE_ID)
    for path in ("/", f"/trace/{hostile_trace}", "/?q=%3Cscript%3E"):
        status, _, page = fetch(server, path)
        assert status == 200
        assert "<script" not in page.lower() and "<img" not in page.lower()
        assert "<b>" not in page
        assert "&lt;script&gt;window.__pwned = 1;" in page
        assert html.escape(HOSTILE_ID) in page


@pytest.mark.obligation("ADR-0226/8.11")
def test_the_store_is_opened_read_only(built, tmp_path):
    """ADR-0226 §8.11: SQLite itself refuses any write through Workbench's connection."""
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(built["clean"], copy)
    before = _fingerprint(copy)
    row = CaseRow("new", "test", "question", None, None, "refused", "reader_x", None)
    with ReadOnlyTraceStore(copy) as store:
        assert len(list(store.cases())) == built["summary"]["cases"] + 1
        with pytest.raises(StoreError, match="cannot be written") as refused:
            store.put_case(row, None)
    assert refused.value.problem is StoreProblem.READ_ONLY
    assert _fingerprint(copy) == before


def test_a_missing_or_foreign_store_is_refused_and_nothing_is_created(tmp_path):
    """Workbench opens an existing store of ours, or nothing: it never creates one."""
    absent = tmp_path / "absent.sqlite"
    with pytest.raises(StoreError, match="no such store"):
        WorkbenchServer(absent, ("127.0.0.1", 0))
    assert not absent.exists()
    foreign = tmp_path / "foreign.sqlite"
    foreign.write_bytes(b"not sqlite at all" * 64)
    with pytest.raises(StoreError, match="not a practice-loop store"):
        WorkbenchServer(foreign, ("127.0.0.1", 0))
    empty = tmp_path / "empty.sqlite"
    with contextlib.closing(sqlite3.connect(empty)) as db:
        db.execute("CREATE TABLE other (x)")
    with pytest.raises(StoreError, match="not a practice-loop store"):
        WorkbenchServer(empty, ("127.0.0.1", 0))


@pytest.mark.obligation("ADR-0226/8.11", "ADR-0226/9.16")
def test_a_forged_trace_is_shown_as_failed_with_its_reason(built):
    """Issue 9: a trace whose stored bytes fail verification is listed and shown as failed,
    with its typed reason, and none of its content is shown. Issue 20: the counts, being what
    the rows record, still count its row as answered; the row itself, checked for the page,
    is shown failed beside what it records, with no answer."""
    before = _fingerprint(built["forged"])
    summary = built["summary"]
    with running(built["forged"]) as forged:
        _, _, listing = fetch(forged, "/")
        status, _, page = fetch(forged, f"/trace/{built['forged_id']}")
    outcomes, _ = _counts(listing)
    assert outcomes["answered_practice"] == summary["answered_through_practice"]
    assert re.search(r'data-shown="44" data-failed="1">', listing)
    (row,) = [r for r in list_rows(listing) if r["case"] == FORGED_CASE]
    assert row["standing"] == "failed_verification"
    assert row["outcome"] == "failed verification (the row records: answered through practice)"
    assert row["reason"] == "record_malformed at ProofGatedAnswer"
    assert row["answer"] == "not shown: not verified"
    assert status == 200
    assert 'data-status="failed"' in page
    assert "ProofGatedAnswer.answer_id: identity_mismatch" in page
    assert 'data-status="verified"' not in page
    assert re.findall(r'<section class="stage[^"]*" id="stage-([a-z-]+)"', page) == ["cases"]
    with ReadOnlyTraceStore(built["clean"]) as store:
        genuine = store.read_trace(built["forged_id"])
    shown = [identity for _, identity in genuine.stage_digests if identity in page]
    assert shown == [] and "Answer:" not in page and 'id="question"' not in page
    assert _fingerprint(built["forged"]) == before


def test_a_case_whose_trace_is_gone_is_shown_as_missing(built):
    """ADR-0226 §7G: missing evidence is shown as missing, never filled in."""
    with running(built["missing"]) as missing:
        _, _, listing = fetch(missing, "/")
        status, _, page = fetch(missing, f"/trace/{trace_of(built['missing'], 's01')}")
    (row,) = [r for r in list_rows(listing) if r["case"] == "s01"]
    assert row["standing"] == "trace_missing"
    assert row["reason"] == "its trace is not in the store"
    assert row["outcome"] == "trace missing (the row records: answered directly)"
    assert (status, _refusal(page)) == (404, "no_such_trace")


def _off_path(trace: SealedPracticeTrace) -> set[str]:
    """The stages ADR-0226 §6 keeps off this case's path, worked out from the trace's own
    decisions: a runnable case never searches; a refused one has no direct proof, no operator
    unless its run opened, and no replay unless a candidate was proposed."""
    if trace.original_assessment.status.value == "runnable":
        return {"residuals", "gate", "budget", "run", "candidates", "replays"}
    off = {"direct-proof"}
    if trace.opened_run is None:
        off |= {"candidates", "replays"}
    elif not any(type(o).__name__ == "CandidateOperatorResult" for o in trace.operator_outcomes):
        off.add("replays")
    return off


_SECTION = re.compile(r'<section class="stage( missing-stage| off-path)?" id="stage-([a-z-]+)"')


@pytest.mark.obligation("ADR-0226/8.11")
def test_each_trace_page_shows_every_stage_or_says_it_is_not_on_the_path(built, server):
    """ADR-0226 §7G: every stage the trace holds is shown; a stage the case's path never has
    says so and is not called missing (a verified trace lacks nothing its path needs); every
    identity is whole in the page, abbreviated only by style."""
    with ReadOnlyTraceStore(built["clean"]) as store:
        traces = [store.read_trace(trace_id) for trace_id in store.trace_ids()]
    assert traces and all(type(trace) is SealedPracticeTrace for trace in traces)
    paths = Counter()
    for trace in traces:
        status, _, page = fetch(server, f"/trace/{trace.trace_id}")
        assert status == 200 and 'data-status="verified"' in page
        found = _SECTION.findall(page)
        sections = {key: flag for flag, key in found}
        assert len(sections) == len(found) == 13
        off = _off_path(trace)
        assert {key for key, flag in sections.items() if flag == " off-path"} == off
        assert "missing-stage" not in page and "Missing:" not in page
        for key in off:
            assert f'data-stage="{key}" data-state="not_on_path"' in page
        paths[frozenset(off)] += 1
        for _, identity in trace.stage_digests:
            assert ident(identity) in page
        assert ident(trace.trace_id) in page
    assert len(paths) == 4  # runnable, not opened, nothing proposed, and replayed paths


# Labelled trace pages of the sample: (case, outcome, the decisive stage, words the verdict
# holds). s18 is the example: its answer refusal reads original_refusal_stands, but
# the replay's proof (result_non_negative) settled it.
VERDICT_PAGES = [
    ("s01", "answered_direct", None, "Answered directly: "),
    ("s11", "answered_practice", None, "Answered through practice: "),
    ("s18", "refused", "replays", "contract_closed_but_proof_refused: result_non_negative"),
    ("s24", "refused", "gate", "ineligible: gate_ineligible_unclassified_residual"),
]


@pytest.mark.parametrize(("case", "outcome", "decisive", "words"), VERDICT_PAGES)
def test_a_trace_page_opens_with_its_verdict(built, server, case, outcome, decisive, words):
    """Issue 20: the verdict block comes before every stage section, says the outcome, and
    for a refusal names the stage that settled it and links to that stage's section."""
    status, _, page = fetch(server, f"/trace/{trace_of(built['clean'], case)}")
    assert status == 200
    verdict = page.index('<section class="verdict')
    assert verdict < page.index('<section class="stage') and verdict < page.index(
        'id="seal-status"'
    )
    assert f'data-outcome="{outcome}"' in page
    block = page[verdict : page.index("</section>", verdict)]
    assert words in html.unescape(re.sub(r"<[^>]+>", "", block))
    if decisive is None:
        assert 'id="decisive"' not in block and 'data-state="decisive"' not in block
    else:
        assert f'<a href="#stage-{decisive}">' in block
        assert f'id="decisive" data-stage="{decisive}"' in block
        assert block.count('data-state="decisive"') == 1
        assert f'data-stage="{decisive}" data-state="decisive"' in block


def test_the_run_is_said_to_stay_pending_by_design(built, server):
    """docs/adr/0008: a replayed case's run stays candidate_replay_pending; the flow says
    that this is by design, beside the run."""
    status, _, page = fetch(server, f"/trace/{trace_of(built['clean'], 's11')}")
    flow = page[page.index('<ol class="flow"') : page.index("</ol>")]
    run = re.search(r'<li class="st-passed" data-stage="run"[^>]*title="([^"]*)"', flow)
    assert run is not None and "pending by design" in html.unescape(run.group(1))


SPOOFING_QUESTION = (
    "Mia has \u202e71\u202c stickers. She buys 4 more\u200b stickers. "
    "How many stickers does Mia have now?"
)


def test_a_question_cannot_reorder_or_hide_its_own_text(tmp_path):
    """Issue 20: a right-to-left override made "71" read "17" on the page while the span
    table said "71". Every control and invisible character is shown as a marker naming its
    code point, never as itself, in the question, the spans and the case rows."""
    store_path = tmp_path / "spoof.sqlite"
    line = json.dumps({"id": "spoof", "question": SPOOFING_QUESTION}).encode()
    with TraceStore(store_path) as store:
        run_lines([line], source="spoof.jsonl", store=store)
    with running(store_path) as spoof_server:
        status, _, page = fetch(spoof_server, f"/trace/{trace_of(store_path, 'spoof')}")
    assert status == 200
    assert not any(ch in page for ch in "\u202e\u202c\u200b")
    for code in ("U+202E", "U+202C", "U+200B"):
        assert f'<span class="cp" data-cp="{code}"' in page
    assert "RIGHT-TO-LEFT OVERRIDE" in page  # the code point's name, on hover
    question = re.search(r'<p class="question" id="question">.*?</p>', page, re.DOTALL)
    assert _parse_question(question.group(0)).text == SPOOFING_QUESTION
    assert '<q class="span-text"><bdi dir="ltr">71</bdi></q>' in page  # the fact, as read


class _Marks(HTMLParser):
    """The question paragraph's text, and each mark's offsets and text. A code-point marker
    is read back as the character it names; any other character that would not show as
    itself fails the parse (issue 20: such characters are shown only as markers)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text = ""
        self.marks: list[tuple[int, int, str]] = []
        self._mark: tuple[int, int] | None = None
        self._piece = ""
        self._code_point: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "bdi":  # every run of text is isolated, left to right
            assert found == {"dir": "ltr"}, found
            return
        if tag == "span":
            assert found["class"] == "cp", found
            self._code_point = chr(int(found["data-cp"].removeprefix("U+"), 16))
            return
        assert tag == "mark", tag
        self._mark = (int(found["data-start"]), int(found["data-end"]))
        self._piece = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "span":
            self._code_point = None
        if tag == "mark":
            assert self._mark is not None
            self.marks.append((*self._mark, self._piece))
            self._mark = None

    def handle_data(self, data: str) -> None:
        if self._code_point is not None:
            assert data == f"U+{ord(self._code_point):04X}" and not self._code_point.isprintable()
            data = self._code_point
        else:
            assert data.isprintable(), ascii(data)
        if self._mark is not None:
            self._piece += data
        self.text += data


def _parse_question(rendered: str) -> _Marks:
    inner = re.fullmatch(r'<p class="question" id="question">(.*)</p>', rendered, re.DOTALL)
    parser = _Marks()
    parser.feed(inner.group(1))
    parser.close()
    return parser


@st.composite
def _text_and_spans(draw):
    text = draw(st.text(st.characters(codec="utf-8"), min_size=1, max_size=60))
    spans = []
    for _ in range(draw(st.integers(0, 8))):
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, len(text)))
        faithful = draw(st.booleans())
        span_text = text[start:end] if faithful else "x" * (end - start)
        spans.append(("fact", f"fact {start}", SourceSpan(span_text, start, end, 0)))
    return text, spans


@given(_text_and_spans())
def test_marks_cover_exactly_the_spans_at_their_offsets(case):
    """Issue 9: the question is shown whole, and exactly the offsets of every span that is
    the question's text there are marked, each mark holding the text at its own offsets; a
    span that is not the text at its offsets is not marked."""
    text, spans = case
    parsed = _parse_question(highlighted(text, spans))
    assert parsed.text == text
    marked = {i for start, end, piece in parsed.marks for i in range(start, end)}
    for start, end, piece in parsed.marks:
        assert text[start:end] == piece
    faithful = [span for *_, span in spans if text[span.start : span.end] == span.text]
    assert marked == {i for span in faithful for i in range(span.start, span.end)}


def test_every_evidence_span_of_every_trace_is_marked(built):
    """Issue 9: on each stored trace, every span any record cites is marked at its offsets."""
    with ReadOnlyTraceStore(built["clean"]) as store:
        traces = [store.read_trace(trace_id) for trace_id in store.trace_ids()]
    for trace in traces:
        spans = evidence_spans(trace)
        assert {span for *_, span in spans} >= set(trace.frame.all_spans())
        parsed = _parse_question(highlighted(trace.frame.source_text, spans))
        marked = {i for start, end, _ in parsed.marks for i in range(start, end)}
        for *_, span in spans:
            assert set(range(span.start, span.end)) <= marked


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_workbench_command_serves_until_interrupted(built):
    """Issue 9: `practice-loop workbench --store PATH --port N` serves the store on the
    loopback interface and stops cleanly on Ctrl-C."""
    port = _free_port()
    command = [
        sys.executable,
        "-u",
        "-m",
        "practice_loop",
        "workbench",
        "--store",
        str(built["clean"]),
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith(f"Workbench on http://127.0.0.1:{port}/"), line
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/")
        assert connection.getresponse().status == 200
        connection.close()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def test_a_port_in_use_is_a_usage_error(built, capsys):
    """Issue 9: a port that cannot be listened on is a usage error (exit 2), not a trace."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["workbench", "--store", str(built["clean"]), "--port", str(port)]) == 2
    assert "cannot listen on" in capsys.readouterr().err


def test_a_store_that_becomes_unreadable_is_a_503(built, tmp_path):
    """A store replaced by something else while Workbench runs is refused, not guessed at."""
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(built["clean"], copy)
    with running(copy) as changing:
        copy.write_bytes(b"no longer a database" * 256)
        status, headers, page = fetch(changing, "/")
    assert (status, _refusal(page)) == (503, "store_unreadable")
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


@pytest.mark.parametrize(
    "outcome, reason, answer",
    [
        (Outcome.ANSWERED_DIRECT, "directly", None),
        (Outcome.ANSWERED_PRACTICE, "through practice", None),
        (Outcome.ANSWERED_DIRECT, "", "7 apple"),
        (Outcome.ANSWERED_PRACTICE, None, "7 apple"),
        (Outcome.REFUSED, None, None),
        (Outcome.REFUSED, "target_unbound", "7 apple"),
        (Outcome.FAILED_VERIFICATION, "", None),
        (Outcome.FAILED_VERIFICATION, "record_malformed at x", "7 apple"),
        (Outcome.TRACE_MISSING, None, None),
    ],
)
def test_every_standing_has_a_reason_and_only_an_answer_has_an_answer(outcome, reason, answer):
    """Issue 9 and issue 20: every row says why (how it was answered, why refused, what
    failed), and only a verified answer carries one; a standing built otherwise is refused
    on construction."""
    with pytest.raises(ValueError):
        TraceStanding(outcome, reason, answer)
