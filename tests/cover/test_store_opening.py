"""Opening a store (docs/adr/0012, issue 15): a store is opened, never conjured; every file
that is not a practice-loop store of a known schema is refused untouched with its own
``StoreProblem``; a store at rest is one file; a case id names one row."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import practice_case
from practice_loop.product.store import (
    CaseRow,
    ReadOnlyTraceStore,
    StoreError,
    StoreProblem,
    TraceStore,
)
from store_support import immutable

TRACE = practice_case(shipped_examples()[0].frame)


def _row(case_id: str = "c", **changes: object) -> CaseRow:
    fields = dict(
        case_id=case_id,
        source="test",
        question="question",
        gold=None,
        trace_id=TRACE.trace_id,
        outcome="refused",
        reason=None,
        value=None,
    )
    fields.update(changes)
    return CaseRow(**fields)  # type: ignore[arg-type]


def _listing(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` with the SHA-256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _store(path: Path) -> Path:
    with TraceStore(path) as store:
        store.put_case(_row(), TRACE)
    return path


def _foreign(path: Path) -> Path:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE cases (name TEXT, price REAL)")
        db.execute("INSERT INTO cases VALUES ('tea', 2.5)")
    return path


def _refused(opener, path: Path) -> StoreError:
    folder = path.parent
    before = _listing(folder)
    with pytest.raises(StoreError) as refused:
        opener(path).close()
    assert _listing(folder) == before, "a refused store must be left untouched"
    return refused.value


def _file_of(data: bytes):
    def make(path: Path) -> Path:
        path.write_bytes(data)
        return path

    return make


BAD_FILES = {
    "empty": (_file_of(b""), StoreProblem.NOT_SQLITE, "an empty file"),
    "text": (_file_of(b"id,question\n1,hi\n"), StoreProblem.NOT_SQLITE, ""),
    "foreign": (_foreign, StoreProblem.FOREIGN_SCHEMA, "tables: cases"),
    "header_only": (
        _file_of(b"SQLite format 3\x00" + b"\x00" * 20),
        StoreProblem.CORRUPT,
        "inside its header",
    ),
}


@pytest.mark.obligation("LOCAL-0012/inspected")
@pytest.mark.parametrize("opener", [TraceStore, ReadOnlyTraceStore], ids=["writer", "reader"])
@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_file_that_is_not_our_store_is_refused_untouched(tmp_path, opener, kind):
    """docs/adr/0012: every other file is refused untouched, with its own reason; the writer
    never adds its tables to another program's database."""
    make, problem, detail = BAD_FILES[kind]
    path = make(tmp_path / "store.sqlite")
    error = _refused(opener, path)
    assert error.problem is problem
    assert detail in str(error)


@pytest.mark.obligation("LOCAL-0012/inspected")
@pytest.mark.parametrize("opener", [TraceStore, ReadOnlyTraceStore], ids=["writer", "reader"])
def test_a_store_cut_short_is_corrupt(tmp_path, opener):
    """docs/adr/0012: a store shorter than its header's page count says is damaged."""
    path = _store(tmp_path / "store.sqlite")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    error = _refused(opener, path)
    assert error.problem is StoreProblem.CORRUPT and "cut short" in str(error)


@pytest.mark.obligation("LOCAL-0012/inspected")
@pytest.mark.parametrize("opener", [TraceStore, ReadOnlyTraceStore], ids=["writer", "reader"])
def test_another_schema_version_or_table_is_refused(tmp_path, opener):
    """docs/adr/0012: our tables, column by column, with a known schema version."""
    newer = _store(tmp_path / "newer.sqlite")
    with contextlib.closing(sqlite3.connect(newer)) as db, db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    error = _refused(opener, newer)
    assert error.problem is StoreProblem.SCHEMA_VERSION_UNSUPPORTED and "'2'" in str(error)
    altered = _store(tmp_path / "altered.sqlite")
    with contextlib.closing(sqlite3.connect(altered)) as db, db:
        db.execute("ALTER TABLE cases ADD COLUMN note TEXT")
    error = _refused(opener, altered)
    assert error.problem is StoreProblem.FOREIGN_SCHEMA and "table cases differs" in str(error)
    unversioned = _store(tmp_path / "unversioned.sqlite")
    with contextlib.closing(sqlite3.connect(unversioned)) as db, db:
        db.execute("DELETE FROM meta")
    assert _refused(opener, unversioned).problem is StoreProblem.FOREIGN_SCHEMA


@pytest.mark.obligation("LOCAL-0012/never_conjured")
def test_a_reader_never_creates_a_store(tmp_path):
    """docs/adr/0012: ``verify``'s store must exist; a missing one is refused, nothing made."""
    assert _refused(ReadOnlyTraceStore, tmp_path / "typo.sqlite").problem is StoreProblem.MISSING
    missing_dir = tmp_path / "no" / "such" / "dir.sqlite"
    for opener in (TraceStore, ReadOnlyTraceStore):
        error = _refused(opener, missing_dir)
        assert error.problem is StoreProblem.DIRECTORY_MISSING
    assert not (tmp_path / "no").exists()
    assert _refused(ReadOnlyTraceStore, tmp_path).problem is StoreProblem.NOT_A_FILE
    assert _refused(TraceStore, tmp_path).problem is StoreProblem.NOT_A_FILE


@pytest.mark.obligation("LOCAL-0012/never_conjured", "LOCAL-0012/at_rest_one_file")
def test_reading_a_store_changes_no_file(tmp_path):
    """docs/adr/0012: a closed writer leaves one file; reading it creates or changes none."""
    path = _store(tmp_path / "store.sqlite")
    before = _listing(tmp_path)
    assert list(before) == ["store.sqlite"]
    with ReadOnlyTraceStore(path) as store:
        assert [row.case_id for row in store.cases()] == ["c"]
        assert store.read_trace(TRACE.trace_id) == TRACE
    assert _listing(tmp_path) == before


@pytest.mark.obligation("LOCAL-0012/never_conjured")
def test_the_writer_creates_a_store_whole_and_only_where_nothing_is(tmp_path):
    """docs/adr/0012: built aside and linked into place; no side file is left behind."""
    path = tmp_path / "new.sqlite"
    with TraceStore(path) as store:
        assert store.count("cases") == 0
    assert sorted(os.listdir(tmp_path)) == ["new.sqlite"]
    with ReadOnlyTraceStore(path) as store:
        assert store.count("traces") == 0


@pytest.mark.obligation("LOCAL-0012/never_conjured", "LOCAL-0012/at_rest_one_file")
def test_a_creation_killed_mid_transaction_leaves_nothing_after_the_next_writer(tmp_path):
    """docs/adr/0012 ("a kill leaves no half-made file"): a writer killed inside the creating
    transaction leaves its store built aside together with that file's ``-wal`` and ``-shm``
    (the store is born in WAL mode); the next writer removes all three, not the store alone."""
    import sys

    path = tmp_path / "new.sqlite"
    program = f"""
import os, signal
from pathlib import Path
from practice_loop.product import store

class KilledAfterTheFirstTable(dict):
    def values(self):
        for index, sql in enumerate(super().values()):
            if index == 1:
                os.kill(os.getpid(), signal.SIGKILL)
            yield sql

store._TABLES = KilledAfterTheFirstTable(store._TABLES)
store.TraceStore(Path({str(path)!r}))
"""
    killed = subprocess.run([sys.executable, "-c", program], check=False, capture_output=True)
    assert killed.returncode == -9, killed.stderr
    aside = f".new.sqlite.creating-{_the_only_pid(tmp_path)}"
    assert sorted(os.listdir(tmp_path)) == [aside, f"{aside}-shm", f"{aside}-wal"]
    with TraceStore(path) as store:
        assert store.count("cases") == 0
    assert sorted(os.listdir(tmp_path)) == ["new.sqlite"]


def _the_only_pid(directory: Path) -> str:
    (name,) = {entry.split("creating-")[1].split("-")[0] for entry in os.listdir(directory)}
    return name


@pytest.mark.obligation("LOCAL-0012/inspected")
def test_a_locked_store_says_so_with_its_wait(tmp_path):
    """docs/adr/0012: a store another process is writing is ``locked``, naming the wait."""
    path = _store(tmp_path / "store.sqlite")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError) as refused:
            with TraceStore(path, wait=0.1) as store:
                store.put_case(_row("other"), None)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert refused.value.problem is StoreProblem.LOCKED
    assert "waited 0.1 s" in str(refused.value)


@pytest.mark.obligation("LOCAL-0012/inspected")
def test_a_store_that_cannot_be_written_is_read_only_for_the_writer(tmp_path):
    """docs/adr/0012: a writer meeting a read-only store says ``read_only``; readers read."""
    path = _store(tmp_path / "store.sqlite")
    with immutable(path):
        with pytest.raises(StoreError) as refused:
            with TraceStore(path) as store:
                store.put_case(_row("other"), None)
        assert refused.value.problem is StoreProblem.READ_ONLY
        with ReadOnlyTraceStore(path) as store:
            assert store.count("cases") == 1


@pytest.mark.obligation("LOCAL-0012/no_overwrite")
def test_a_case_id_names_one_row(tmp_path):
    """docs/adr/0012: the same row again is a no-op; another row under the id writes nothing."""
    path = tmp_path / "store.sqlite"
    with TraceStore(path) as store:
        store.put_case(_row(), TRACE)
        store.put_case(_row(), TRACE)  # a re-run of the same case
        with pytest.raises(StoreError) as refused:
            store.put_case(_row(outcome="answered_direct", value=99, trace_id=None), None)
        assert refused.value.problem is StoreProblem.CASE_CONFLICT
        with store.batch():
            with pytest.raises(StoreError):
                store.put_case(_row(source="another/train.jsonl"), TRACE)
        assert list(store.cases()) == [_row()]


@pytest.mark.obligation("LOCAL-0012/every_byte")
@pytest.mark.parametrize(
    "body, refused",
    [
        ("CAST(body AS TEXT)", "SQLite type TEXT"),
        ("4611686018427387904", "SQLite type INTEGER"),  # 2**62: never bytes(n)
        ("1.5", "SQLite type REAL"),
        ("zeroblob(9000000)", "over the size cap"),
    ],
)
def test_a_body_that_is_not_a_blob_is_named_never_converted(tmp_path, body, refused):
    """Issue 15 (3, 14): a wrong-typed or oversized body is a typed failure of that trace."""
    path = _store(tmp_path / "store.sqlite")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute(f"UPDATE traces SET body = {body}")
    with ReadOnlyTraceStore(path) as store:
        (stored,) = store.stored_bodies()
        assert stored.body is None and refused in (stored.refused or "")
        read = store.read_trace(TRACE.trace_id)
    assert not read.valid  # type: ignore[union-attr]


@pytest.mark.obligation("LOCAL-0012/every_byte")
def test_a_row_of_the_wrong_type_is_malformed_not_a_crash(tmp_path):
    """Issue 15: a hand-edited column of another type is reported for that row only."""
    path = _store(tmp_path / "store.sqlite")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE cases SET value = x'00', reason = 7")
    with ReadOnlyTraceStore(path) as store:
        (row,) = store.case_rows()
    assert type(row).__name__ == "MalformedRow" and row.key == "c"
    with pytest.raises(TypeError):
        CaseRow("c", "s", "q", None, None, "refused", None, True)  # type: ignore[arg-type]


@pytest.mark.obligation("LOCAL-0012/inspected")
@pytest.mark.parametrize("opener", [TraceStore, ReadOnlyTraceStore], ids=["writer", "reader"])
def test_a_schema_whose_error_is_not_utf8_is_a_corrupt_store(tmp_path, opener):
    """Found by `practice-loop fuzz-bytes --target store` (issue 19): a damaged schema entry
    whose name is not UTF-8 makes SQLite's own error message undecodable, and opening the
    store raised UnicodeDecodeError instead of a StoreError."""
    path = _store(tmp_path / "store.sqlite")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("PRAGMA writable_schema=ON")
        db.execute("UPDATE sqlite_master SET name = CAST(x'9d' AS TEXT), sql = 'garbage'")
    refused = _refused(opener, path)
    assert refused.problem is StoreProblem.CORRUPT
    assert "not UTF-8" in str(refused)


@pytest.mark.obligation("LOCAL-0012/every_byte")
def test_a_text_value_that_is_not_utf8_is_a_store_error_not_a_crash(tmp_path):
    """A row's TEXT that is not UTF-8 is refused as a StoreError where it is read."""
    path = _store(tmp_path / "store.sqlite")
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE cases SET question = CAST(x'9d' || question AS TEXT)")
    with ReadOnlyTraceStore(path) as store, pytest.raises(StoreError):
        list(store.case_rows())


@pytest.mark.obligation("LOCAL-0012/inspected", "LOCAL-0012/at_rest_one_file")
def test_a_hot_journal_needs_a_writer_and_a_writer_recovers_it(tmp_path):
    """docs/adr/0012: a store an older writer left mid-write in rollback-journal mode cannot be
    read read-only (SQLite must roll the journal back); readers say ``needs_recovery``, and a
    writer opening it recovers it, after which it is in WAL mode and one file at rest."""
    import sys

    path = _store(tmp_path / "store.sqlite")
    program = f"""
import os, signal, sqlite3
db = sqlite3.connect({str(path)!r}, isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
db.execute("PRAGMA cache_size=1")
db.execute("BEGIN IMMEDIATE")
for index in range(2000):
    db.execute("INSERT INTO meta VALUES (?, 'x')", (f"k{{index}}",))
os.kill(os.getpid(), signal.SIGKILL)
"""
    subprocess.run([sys.executable, "-c", program], check=False)
    assert Path(f"{path}-journal").exists()
    error = _refused(ReadOnlyTraceStore, path)
    assert error.problem is StoreProblem.NEEDS_RECOVERY and "run FILE --store PATH" in str(error)
    with TraceStore(path) as store:
        assert store.count("cases") == 1 and list(store.cases()) == [_row()]
    assert sorted(os.listdir(tmp_path)) == ["store.sqlite"]
    with ReadOnlyTraceStore(path) as store:
        assert store.count("meta") == 1
