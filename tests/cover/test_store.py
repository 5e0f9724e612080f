"""The SQLite trace store: content addressing, verification on read, atomicity, and several
writing processes (issue 3, shell)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    SealedPracticeTrace,
    TraceFailureCode,
    TraceVerification,
    canonical_json,
    practice_case,
)
from practice_loop.product.store import CaseRow, StoreError, TraceStore

TRACES = [practice_case(example.frame) for example in shipped_examples()]


def _row(case_id: str, trace: SealedPracticeTrace | None) -> CaseRow:
    return CaseRow(
        case_id, "test", "question", None, trace and trace.trace_id, "refused", None, None
    )


@pytest.mark.obligation("LOCAL-0007/loading")
def test_round_trip_verifies_on_read(tmp_path):
    with TraceStore(tmp_path / "s.sqlite") as store:
        for index, trace in enumerate(TRACES):
            store.put_case(_row(f"c{index}", trace), trace)
        for trace in TRACES:
            assert store.read_trace(trace.trace_id) == trace
        assert sorted(store.trace_ids()) == sorted(trace.trace_id for trace in TRACES)


def _rewrite(path, trace_id: str, body: bytes) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE traces SET body = ? WHERE trace_id = ?", (body, trace_id))


@pytest.mark.obligation("ADR-0226/9.16", "LOCAL-0007/loading")
@pytest.mark.parametrize(
    "forge, code",
    [
        # Canonical bytes whose content changed: the seal no longer reproduces.
        (
            lambda body: body.replace(b'"value":7', b'"value":8', 1),
            TraceFailureCode.RECORD_MALFORMED,
        ),
        (lambda body: body.replace(b'"trace_id":"', b'"trace_id":"0', 1)[:-1], None),
        (lambda body: body + b" ", TraceFailureCode.UNDECODABLE),
        (lambda body: body[: len(body) // 2], TraceFailureCode.UNDECODABLE),
    ],
)
def test_tampered_bytes_are_never_served(tmp_path, forge, code):
    """Issue 3: a tampered stored trace fails with a typed reason, never served as valid."""
    path = tmp_path / "s.sqlite"
    trace = TRACES[0]  # answered through practice: holds "value":7
    with TraceStore(path) as store:
        store.put_case(_row("c", trace), trace)
    body = canonical_json(trace.to_json())
    _rewrite(path, trace.trace_id, forge(body))
    with TraceStore(path) as store:
        read = store.read_trace(trace.trace_id)
    assert type(read) is TraceVerification and read.failures
    if code is not None:
        assert read.failures[0].code is code


def test_content_addressing_refuses_other_bytes_and_writes_nothing(tmp_path):
    """A trace id names exactly one body; a conflicting write changes nothing (atomic)."""
    path = tmp_path / "s.sqlite"
    trace = TRACES[1]
    with TraceStore(path) as store:
        store.put_case(_row("first", trace), trace)
    _rewrite(path, trace.trace_id, b"{}")
    with TraceStore(path) as store:
        with pytest.raises(StoreError):
            store.put_case(_row("second", trace), trace)
        assert [row.case_id for row in store.cases()] == ["first"]


def test_missing_trace_is_a_typed_failure(tmp_path):
    with TraceStore(tmp_path / "s.sqlite") as store:
        read = store.read_trace("0" * 64)
    assert type(read) is TraceVerification
    assert read.failures[0].code is TraceFailureCode.NOT_A_TRACE


def test_several_processes_write_one_store(tmp_path):
    """WAL, busy timeout and immediate transactions: concurrent runs all land, none corrupts."""
    path = tmp_path / "shared.sqlite"
    TraceStore(path).close()
    command = [sys.executable, "-m", "practice_loop", "run", "--store", str(path), "--quiet"]
    workers = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)
    ]
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()
        assert b"wrong_ids: []" in out
    result = subprocess.run(
        [sys.executable, "-m", "practice_loop", "verify", "--store", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
    assert "verified 43 cases and 43 traces: 0 cases failed, 0 traces orphaned" in result.stdout


def test_batch_keeps_the_cases_before_a_failed_one_and_nothing_of_it(tmp_path):
    """Inside ``batch()`` each case has its own savepoint: a conflicting case writes nothing,
    the cases before and after it are committed when the batch ends."""
    path = tmp_path / "s.sqlite"
    trace = TRACES[1]
    with TraceStore(path) as store:
        store.put_case(_row("stored", trace), trace)
    _rewrite(path, trace.trace_id, b"{}")
    with TraceStore(path) as store, store.batch():
        store.put_case(_row("before", TRACES[0]), TRACES[0])
        with pytest.raises(StoreError):
            store.put_case(_row("conflict", trace), trace)
        store.put_case(_row("after", None), None)
    with TraceStore(path) as store:
        assert sorted(row.case_id for row in store.cases()) == ["after", "before", "stored"]
        assert store.read_trace(TRACES[0].trace_id) == TRACES[0]


def test_batch_commits_completed_cases_when_interrupted(tmp_path):
    """Ctrl-C (or any exception) inside a batch: every completed case is kept."""
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt), TraceStore(path) as store, store.batch():
        store.put_case(_row("done", TRACES[0]), TRACES[0])
        raise KeyboardInterrupt
    with TraceStore(path) as store:
        assert [row.case_id for row in store.cases()] == ["done"]


def test_batch_commits_every_batch_cases_and_is_not_reentrant(tmp_path, monkeypatch):
    """Another connection sees a full batch once it is committed, before the batch ends."""
    import practice_loop.product.store as store_module

    monkeypatch.setattr(store_module, "BATCH_CASES", 2)
    path = tmp_path / "s.sqlite"
    with TraceStore(path) as store, store.batch():
        with pytest.raises(StoreError), store.batch():
            pass
        for index in range(3):
            store.put_case(_row(f"c{index}", None), None)
        with sqlite3.connect(path) as other:
            (seen,) = other.execute("SELECT count(*) FROM cases").fetchone()
        assert seen == 2
