"""The trace store: sealed traces in SQLite, content-addressed by ``trace_id``.

Shell code (ARCHITECTURE §4). Each trace is stored as its canonical bytes under its own id;
the bytes are verified on every read (decoded strictly, rebuilt, re-sealed, cross-checked), so
a trace altered on disk is reported as failed, never served as valid. Writes happen in
``BEGIN IMMEDIATE`` transactions with a busy timeout and write-ahead logging, so several
processes can write one store; a case row and its trace land together or not at all.

A long run writes inside ``batch()``: one transaction commits many cases (a commit per case
would cost more than the case), each case within it under its own savepoint, so a case that
fails leaves nothing behind and the cases before it stay. Leaving the batch, normally or by an
exception such as Ctrl-C, commits every case that completed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .kernel import (
    SealedPracticeTrace,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    load_sealed_trace,
    sealed_trace_bytes,
    verify_sealed_trace,
)

DEFAULT_STORE = Path("practice-loop.sqlite")
# Cases committed together inside ``batch()``: at most this many are lost to a power cut.
BATCH_CASES = 256
STORE_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY CHECK (length(trace_id) = 64),
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS cases (
    case_id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    question TEXT NOT NULL,
    gold TEXT,
    trace_id TEXT REFERENCES traces (trace_id),
    outcome TEXT NOT NULL,
    reason TEXT,
    value INTEGER
);
"""


class StoreError(Exception):
    """The store cannot be opened or written: not a store of ours, or a newer schema."""


@dataclasses.dataclass(frozen=True, slots=True)
class CaseRow:
    """What the store keeps about one case besides its trace."""

    case_id: str
    source: str
    question: str
    gold: str | None
    trace_id: str | None
    outcome: str
    reason: str | None
    value: int | None

    def as_tuple(self) -> tuple[object, ...]:
        # Every field is a scalar: ``dataclasses.astuple`` would deep-copy each one.
        return tuple([getattr(self, field.name) for field in dataclasses.fields(self)])


class TraceStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._batched: int | None = None
        try:
            self._db = sqlite3.connect(path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # Under WAL, NORMAL keeps every transaction atomic and the file consistent; a power
            # cut may lose the last commits, never corrupt or half-write one.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
            self._check_schema_version()
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{path}: not a practice-loop store ({error})") from None

    def _check_schema_version(self) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(STORE_SCHEMA_VERSION),),
            )
        (stored,) = self._db.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone()
        if stored != str(STORE_SCHEMA_VERSION):
            raise StoreError(f"{self.path}: store schema {stored}, expected {STORE_SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    class _Transaction:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, kind: object, *rest: object) -> None:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")

    def _transaction(self) -> TraceStore._Transaction:
        return TraceStore._Transaction(self._db)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Write the cases put inside in shared transactions of up to ``BATCH_CASES``."""
        if self._batched is not None:
            raise StoreError("batch() is already open on this store")
        self._db.execute("BEGIN IMMEDIATE")
        self._batched = 0
        try:
            yield
        finally:
            self._batched = None
            self._db.execute("COMMIT")

    def put_case(self, row: CaseRow, trace: SealedPracticeTrace | None) -> None:
        """Store a case and its trace atomically; a trace id already stored must hold the
        same bytes (content addressing), else nothing is written."""
        body = sealed_trace_bytes(trace) if trace is not None else None
        if self._batched is None:
            with self._transaction() as db:
                self._write_case(db, row, trace, body)
            return
        self._db.execute("SAVEPOINT put_case")
        try:
            self._write_case(self._db, row, trace, body)
        except BaseException:
            self._db.execute("ROLLBACK TO put_case")
            self._db.execute("RELEASE put_case")
            raise
        self._db.execute("RELEASE put_case")
        self._batched += 1
        if self._batched >= BATCH_CASES:
            self._db.execute("COMMIT")
            self._db.execute("BEGIN IMMEDIATE")
            self._batched = 0

    @staticmethod
    def _write_case(
        db: sqlite3.Connection, row: CaseRow, trace: SealedPracticeTrace | None, body: bytes | None
    ) -> None:
        if trace is not None:
            inserted = db.execute(
                "INSERT OR IGNORE INTO traces (trace_id, body) VALUES (?, ?)",
                (trace.trace_id, body),
            ).rowcount
            if not inserted:  # already stored: content addressing wants the very same bytes
                (existing,) = db.execute(
                    "SELECT body FROM traces WHERE trace_id = ?", (trace.trace_id,)
                ).fetchone()
                if bytes(existing) != body:
                    raise StoreError(f"trace {trace.trace_id} is stored with other bytes")
        db.execute(
            "INSERT OR REPLACE INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            row.as_tuple(),
        )

    def trace_ids(self) -> list[str]:
        return [row[0] for row in self._db.execute("SELECT trace_id FROM traces ORDER BY trace_id")]

    def cases(self) -> Iterator[CaseRow]:
        for row in self._db.execute("SELECT * FROM cases ORDER BY case_id"):
            yield CaseRow(*row)

    def read_trace(self, trace_id: str) -> SealedPracticeTrace | TraceVerification:
        """The verified trace, or the typed failure that stops it from being served."""
        row = self._db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        if row is None:
            failure = TraceFailure(TraceFailureCode.NOT_A_TRACE, "$", "no such trace")
            return TraceVerification(None, (failure,))
        return verify_stored_trace(trace_id, bytes(row[0]))

    def stored_traces(self) -> Iterator[tuple[str, bytes]]:
        """Every stored trace id with its raw bytes, unverified: for a reader that reports a
        tampered row instead of stopping at it (Workbench)."""
        for trace_id, body in self._db.execute(
            "SELECT trace_id, body FROM traces ORDER BY trace_id"
        ):
            yield trace_id, bytes(body)

    def cases_of_trace(self, trace_id: str) -> list[CaseRow]:
        """The case rows that name this trace (content addressing lets several share one)."""
        rows = self._db.execute(
            "SELECT * FROM cases WHERE trace_id = ? ORDER BY case_id", (trace_id,)
        )
        return [CaseRow(*row) for row in rows]


class ReadOnlyTraceStore(TraceStore):
    """An existing store opened for reading only (Workbench, ADR-0226 §8.11).

    SQLite opens the file in ``mode=ro``: every write on this connection is refused by SQLite
    itself, no table is created and the schema version is only checked, never recorded.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._batched = None
        if not path.is_file():
            raise StoreError(f"{path}: no such store")
        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            self._db = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
        except sqlite3.DatabaseError as error:  # the file vanished after the check above
            raise StoreError(f"{path}: cannot be opened ({error})") from None
        try:
            stored = self._db.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
        except sqlite3.DatabaseError as error:
            self._db.close()
            raise StoreError(f"{path}: not a practice-loop store ({error})") from None
        if stored is None or stored[0] != str(STORE_SCHEMA_VERSION):
            self._db.close()
            found = "no schema version" if stored is None else f"store schema {stored[0]}"
            raise StoreError(f"{self.path}: {found}, expected {STORE_SCHEMA_VERSION}")


def verify_stored_trace(trace_id: str, body: bytes) -> SealedPracticeTrace | TraceVerification:
    """The trace stored under ``trace_id`` as ``body``, verified, or the typed failure that
    stops it from being served: strict decoding, every identity and cross-identity, and the
    id it is stored under (docs/adr/0007)."""
    loaded = load_sealed_trace(body)
    if type(loaded) is not SealedPracticeTrace:
        return loaded
    verification = verify_sealed_trace(loaded)
    if not verification.valid:
        return verification
    if loaded.trace_id != trace_id:
        failure = TraceFailure(
            TraceFailureCode.TRACE_ID_MISMATCH, "store", "stored under another id"
        )
        return TraceVerification(loaded.trace_id, (failure,))
    return loaded
