"""The trace store: sealed traces in SQLite, content-addressed by ``trace_id``.

Shell code (ARCHITECTURE §4). Each trace is stored as its canonical bytes under its own id;
the bytes are verified on every read (decoded strictly, rebuilt, re-sealed, cross-checked), so
a trace altered on disk is reported as failed, never served as valid. Writes happen in
``BEGIN IMMEDIATE`` transactions with a busy timeout and write-ahead logging, so several
processes can write one store; a case row and its trace land together or not at all.

A store is opened, never conjured (docs/adr/0012): only ``TraceStore`` (the writer of
``run``) creates one, and only where no file exists, atomically (built aside, then linked into
place). Every other file is inspected first and refused untouched, with one reason from
``StoreProblem``, unless it is a practice-loop store of a known schema version. Readers
(``ReadOnlyTraceStore``: ``verify``, ``show``, Workbench) never create or change a file.

A long run writes inside ``batch()``: one transaction commits many cases (a commit per case
would cost more than the case), each case within it under its own savepoint, so a case that
fails leaves nothing behind and the cases before it stay. Leaving the batch, normally or by an
exception such as Ctrl-C, commits every case that completed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

from ..kernel import (
    SealedPracticeTrace,
    TraceFailure,
    TraceFailureCode,
    TraceVerification,
    load_sealed_trace,
    sealed_trace_bytes,
    verify_sealed_trace,
)
from ..kernel.identity import MAX_DOCUMENT_BYTES

DEFAULT_STORE = Path("practice-loop.sqlite")
# Cases committed together inside ``batch()``: at most this many are lost to a power cut.
BATCH_CASES = 256
STORE_SCHEMA_VERSION = 1
# How long a connection waits for a store another process is writing (``--wait``).
DEFAULT_WAIT_SECONDS = 30.0

_TABLES = {
    "meta": "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "traces": (
        "CREATE TABLE traces (\n"
        "    trace_id TEXT PRIMARY KEY CHECK (length(trace_id) = 64),\n"
        "    body BLOB NOT NULL\n)"
    ),
    "cases": (
        "CREATE TABLE cases (\n"
        "    case_id TEXT PRIMARY KEY,\n"
        "    source TEXT NOT NULL,\n"
        "    question TEXT NOT NULL,\n"
        "    gold TEXT,\n"
        "    trace_id TEXT REFERENCES traces (trace_id),\n"
        "    outcome TEXT NOT NULL,\n"
        "    reason TEXT,\n"
        "    value INTEGER\n)"
    ),
}
# Besides the tables, a store holds only the indexes SQLite makes for their primary keys: a
# trigger, view or index of anyone else's could rewrite or hide what we store.
_AUTOINDEXES = {f"sqlite_autoindex_{table}_1": table for table in _TABLES}
_SQLITE_HEADER = b"SQLite format 3\x00"


class StoreProblem(enum.Enum):
    """Why a path cannot be used as a store; each has its own message (docs/adr/0012)."""

    MISSING = "store_missing"
    DIRECTORY_MISSING = "directory_missing"
    NOT_A_FILE = "not_a_file"
    UNREADABLE = "unreadable"
    NOT_SQLITE = "not_sqlite"
    FOREIGN_SCHEMA = "foreign_schema"
    SCHEMA_VERSION_UNSUPPORTED = "schema_version_unsupported"
    CORRUPT = "corrupt"
    LOCKED = "locked"
    READ_ONLY = "read_only"
    # A hot rollback journal or an unrecovered WAL index that only a writer may repair.
    NEEDS_RECOVERY = "needs_recovery"
    FULL = "full"
    # A case id already stored with other content (content is never overwritten).
    CASE_CONFLICT = "case_conflict"
    # A trace id already stored with other bytes (content addressing).
    TRACE_CONFLICT = "trace_conflict"
    # SQLite failed in a way none of the above names; its own error name is the detail.
    UNUSABLE = "unusable"


_MESSAGES = {
    StoreProblem.MISSING: "no such store",
    StoreProblem.DIRECTORY_MISSING: "the directory it would be in does not exist",
    StoreProblem.NOT_A_FILE: "not a regular file",
    StoreProblem.UNREADABLE: "cannot be read",
    StoreProblem.NOT_SQLITE: "not a practice-loop store: not an SQLite database",
    StoreProblem.FOREIGN_SCHEMA: "not a practice-loop store: an SQLite database of other tables",
    StoreProblem.SCHEMA_VERSION_UNSUPPORTED: "a practice-loop store of an unsupported schema",
    StoreProblem.CORRUPT: "the store is damaged",
    StoreProblem.LOCKED: "the store is locked by another process",
    StoreProblem.READ_ONLY: "the store cannot be written",
    StoreProblem.NEEDS_RECOVERY: (
        "left mid-write by a writer that stopped; a writer must open it once to recover it "
        "(practice-loop run FILE --store PATH)"
    ),
    StoreProblem.FULL: "the disk is full",
    StoreProblem.CASE_CONFLICT: "a case of this id is already stored with other content",
    StoreProblem.TRACE_CONFLICT: "a trace of this id is already stored with other bytes",
    StoreProblem.UNUSABLE: "SQLite cannot use the store",
}


class StoreError(Exception):
    """The store cannot be opened, read or written; ``problem`` says why."""

    def __init__(self, problem: StoreProblem, path: Path | str, detail: str = "") -> None:
        self.problem = problem
        self.path = str(path)
        self.detail = detail
        message = f"{path}: {_MESSAGES[problem]}"
        super().__init__(f"{message} ({detail})" if detail else message)


# SQLite's result codes and the problem each means: an extended code (``SQLITE_READONLY_
# ROLLBACK``) where it says more than its primary code, else the primary code.
_SQLITE_PROBLEMS = {
    "SQLITE_BUSY": StoreProblem.LOCKED,
    "SQLITE_LOCKED": StoreProblem.LOCKED,
    "SQLITE_READONLY": StoreProblem.READ_ONLY,
    "SQLITE_READONLY_ROLLBACK": StoreProblem.NEEDS_RECOVERY,
    "SQLITE_READONLY_RECOVERY": StoreProblem.NEEDS_RECOVERY,
    "SQLITE_READONLY_CANTINIT": StoreProblem.NEEDS_RECOVERY,
    "SQLITE_CORRUPT": StoreProblem.CORRUPT,
    "SQLITE_NOTADB": StoreProblem.CORRUPT,
    "SQLITE_FULL": StoreProblem.FULL,
    "SQLITE_CANTOPEN": StoreProblem.UNREADABLE,
    "SQLITE_PERM": StoreProblem.UNREADABLE,
    "SQLITE_AUTH": StoreProblem.UNREADABLE,
    "SQLITE_IOERR": StoreProblem.CORRUPT,
}


def store_error(error: sqlite3.Error, path: Path | str, wait: float) -> StoreError:
    """The typed store error an SQLite error means."""
    name = getattr(error, "sqlite_errorname", None) or "SQLITE_ERROR"
    primary = "_".join(name.split("_")[:2])
    problem = _SQLITE_PROBLEMS.get(name) or _SQLITE_PROBLEMS.get(primary, StoreProblem.UNUSABLE)
    if problem is StoreProblem.LOCKED:
        return StoreError(problem, path, f"waited {wait:g} s; --wait sets how long")
    return StoreError(problem, path, f"{name}: {error}")


def not_utf8(error: UnicodeDecodeError, path: Path | str) -> StoreError:
    """Our schema keeps text as UTF-8, so a TEXT value SQLite hands back that is not UTF-8
    (a damaged page, or a value another tool wrote) means a damaged store."""
    return StoreError(
        StoreProblem.CORRUPT, path, f"a TEXT value that is not UTF-8 ({error.reason})"
    )


def _inspect_file(path: Path) -> bytes:
    """Refuse, without opening it with SQLite, a path that is not a complete SQLite file.

    A missing file is ``MISSING`` (or ``DIRECTORY_MISSING``); the caller decides whether that
    means "create". The header check catches an empty file, another kind of file and a store
    cut short (SQLite's header records the database's size in pages).
    """
    try:
        status = os.stat(path)
    except FileNotFoundError:
        parent = path.parent
        if not parent.is_dir():
            detail = f"no directory {parent}"
            raise StoreError(StoreProblem.DIRECTORY_MISSING, path, detail) from None
        raise StoreError(StoreProblem.MISSING, path) from None
    except NotADirectoryError:
        raise StoreError(StoreProblem.DIRECTORY_MISSING, path, "a parent is a file") from None
    except OSError as error:
        raise StoreError(StoreProblem.UNREADABLE, path, error.strerror or str(error)) from None
    if not stat.S_ISREG(status.st_mode):
        kind = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        raise StoreError(StoreProblem.NOT_A_FILE, path, kind)
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError as error:
        raise StoreError(StoreProblem.UNREADABLE, path, error.strerror or str(error)) from None
    if not header:
        raise StoreError(StoreProblem.NOT_SQLITE, path, "an empty file")
    if not header.startswith(_SQLITE_HEADER):
        raise StoreError(StoreProblem.NOT_SQLITE, path)
    if len(header) < 100:
        raise StoreError(StoreProblem.CORRUPT, path, "cut short inside its header")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid only while its "version-valid-for" number equals the change
    # counter (SQLite's file format, §1.3.8); every SQLite since 3.7.0 keeps it so.
    # In WAL mode a checkpoint writes page 1 (the new count) before the pages after it: a
    # writer killed then leaves a short file whose missing pages are still in its ``-wal``.
    pending_wal = _in_wal_mode(header) and _size(Path(f"{path}-wal")) > 0
    if header[24:28] == header[92:96] and pages * page_size > status.st_size and not pending_wal:
        detail = f"cut short: {status.st_size} of {pages * page_size} bytes"
        raise StoreError(StoreProblem.CORRUPT, path, detail)
    return header


def _check_writable(path: Path) -> None:
    """Refuse a store this process may not write before SQLite opens it: SQLite would fall
    back to reading it and leave its WAL side files behind before the first write fails."""
    try:
        with open(path, "r+b"):
            pass
    except OSError as error:
        raise StoreError(StoreProblem.READ_ONLY, path, error.strerror or str(error)) from None


def _in_wal_mode(header: bytes) -> bool:
    return header[18:20] == b"\x02\x02"  # the file format's read and write versions


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _normalized(sql: str) -> str:
    return " ".join(sql.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    """Exactly our tables, as we create them (SQLite keeps each one's CREATE text), with only
    their primary-key indexes, and a known schema version."""
    objects = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    tables = {name: sql for kind, name, _, sql in objects if kind == "table"}
    if set(tables) != set(_TABLES):
        found = ", ".join(sorted(tables)) or "none"
        raise StoreError(StoreProblem.FOREIGN_SCHEMA, path, f"tables: {found}")
    for table, sql in _TABLES.items():
        if type(tables[table]) is not str or _normalized(tables[table]) != _normalized(sql):
            raise StoreError(StoreProblem.FOREIGN_SCHEMA, path, f"table {table} differs")
    for kind, name, table, _ in objects:
        if kind != "table" and _AUTOINDEXES.get(name) != table:
            raise StoreError(StoreProblem.FOREIGN_SCHEMA, path, f"{kind} {name} is not ours")
    stored = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if stored is None:
        raise StoreError(StoreProblem.FOREIGN_SCHEMA, path, "no schema version")
    if stored[0] != str(STORE_SCHEMA_VERSION):
        detail = f"schema {stored[0]!r}, this version reads {STORE_SCHEMA_VERSION}"
        raise StoreError(StoreProblem.SCHEMA_VERSION_UNSUPPORTED, path, detail)


def _create_store(path: Path, wait: float) -> None:
    """Build an empty store beside ``path`` and link it into place: another process sees no
    store or a complete one, and a store that appeared meanwhile is left as it is."""
    _remove_abandoned_creations(path)
    aside = path.with_name(f".{path.name}.creating-{os.getpid()}")
    for leftover in _with_side_files(aside):
        leftover.unlink(missing_ok=True)
    try:
        db = sqlite3.connect(aside, timeout=wait, isolation_level=None)
        try:
            # Born in WAL mode, never switched: a switch writes through a rollback journal,
            # and a writer killed inside one leaves a hot journal no read-only reader can use.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("BEGIN IMMEDIATE")
            for sql in _TABLES.values():
                db.execute(sql)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(STORE_SCHEMA_VERSION),),
            )
            db.execute("COMMIT")
        finally:
            db.close()
        try:
            os.link(aside, path)
        except FileExistsError:
            pass  # created meanwhile by another run: it is inspected like any existing file
    except sqlite3.Error as error:
        raise store_error(error, path, wait) from None
    except OSError as error:
        problem = StoreProblem.READ_ONLY if error.errno in (1, 13, 30) else StoreProblem.UNUSABLE
        raise StoreError(problem, path, error.strerror or str(error)) from None
    finally:
        for leftover in _with_side_files(aside):
            leftover.unlink(missing_ok=True)


# The files SQLite keeps beside a database: a WAL-mode file has its ``-wal`` and ``-shm`` while
# a connection is open (a kill leaves them), and ``-journal`` is a rollback journal's.
_SIDE_FILE_SUFFIXES = ("-wal", "-shm", "-journal")


def _with_side_files(database: Path) -> tuple[Path, ...]:
    return (database, *(Path(f"{database}{suffix}") for suffix in _SIDE_FILE_SUFFIXES))


def _remove_abandoned_creations(path: Path) -> None:
    """Remove the half-built stores of writers killed while creating ``path``, side files
    included (each named by its process id; a process that still exists keeps its own)."""
    prefix = f".{path.name}.creating-"
    with contextlib.suppress(OSError):
        for leftover in path.parent.iterdir():
            pid = leftover.name.removeprefix(prefix)
            for suffix in _SIDE_FILE_SUFFIXES:
                pid = pid.removesuffix(suffix)
            if not leftover.name.startswith(prefix) or not pid.isdigit():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass  # the process exists (another user's): its file is its own


@dataclasses.dataclass(frozen=True, slots=True)
class CaseRow:
    """What the store keeps about one case besides its trace; typed on construction, so a
    row edited to hold another type is refused where it is read."""

    case_id: str
    source: str
    question: str
    gold: str | None
    trace_id: str | None
    outcome: str
    reason: str | None
    value: int | None

    def __post_init__(self) -> None:
        for name in ("case_id", "source", "question", "outcome"):
            if type(getattr(self, name)) is not str:
                raise TypeError(f"{name} is not text")
        for name in ("gold", "trace_id", "reason"):
            if getattr(self, name) is not None and type(getattr(self, name)) is not str:
                raise TypeError(f"{name} is neither text nor NULL")
        if self.value is not None and type(self.value) is not int:
            raise TypeError("value is neither an integer nor NULL")

    def as_tuple(self) -> tuple[object, ...]:
        # Every field is a scalar: ``dataclasses.astuple`` would deep-copy each one.
        return tuple([getattr(self, field.name) for field in dataclasses.fields(self)])


@dataclasses.dataclass(frozen=True, slots=True)
class MalformedRow:
    """A stored row that is not of its table's types (edited by hand, or by another tool)."""

    key: str
    detail: str


@dataclasses.dataclass(frozen=True, slots=True)
class StoredBody:
    """One ``traces`` row: its bytes when they are a BLOB of at most the canonical size cap,
    else ``None`` with the SQLite type (and size) that kept them from being read."""

    trace_id: str
    body: bytes | None
    refused: str | None


class TraceStore:
    """A store opened for writing (``run``); created, atomically, where no file exists."""

    def __init__(self, path: Path, *, wait: float = DEFAULT_WAIT_SECONDS) -> None:
        self.path = Path(path)
        self.wait = wait
        self._batched: int | None = None
        try:
            _inspect_file(self.path)
        except StoreError as error:
            if error.problem is not StoreProblem.MISSING:
                raise
            _create_store(self.path, wait)
            _inspect_file(self.path)
        _check_writable(self.path)
        self._open(
            str(self.path),
            # A no-op on our stores (born in WAL mode); converts one an older version made.
            "PRAGMA journal_mode=WAL",
            # Under WAL, NORMAL keeps every transaction atomic and the file consistent; a power
            # cut may lose the last commits, never corrupt or half-write one.
            "PRAGMA synchronous=NORMAL",
            "PRAGMA foreign_keys=ON",
        )

    def _open(self, target: str, *statements: str, uri: bool = False) -> None:
        """Connect, check the schema, run ``statements``; any failure closes the connection
        and is raised as the typed ``StoreError`` it means."""
        try:
            self._db = sqlite3.connect(target, uri=uri, timeout=self.wait, isolation_level=None)
        except sqlite3.Error as error:
            raise store_error(error, self.path, self.wait) from None
        try:
            _check_schema(self._db, self.path)
            for statement in statements:
                self._db.execute(statement)
            self._db.create_function(_CONTAINS_FOLDED, 3, _contains_folded, deterministic=True)
        except sqlite3.Error as error:
            self._db.close()
            raise store_error(error, self.path, self.wait) from None
        except UnicodeDecodeError as error:
            self._db.close()
            raise not_utf8(error, self.path) from None
        except StoreError:
            self._db.close()
            raise

    def close(self) -> None:
        # The last connection to close checkpoints the WAL and removes its side files, so a
        # store at rest is one file (docs/adr/0012).
        self._db.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _sqlite_errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise store_error(error, self.path, self.wait) from None
        except UnicodeDecodeError as error:
            raise not_utf8(error, self.path) from None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Write the cases put inside in shared transactions of up to ``BATCH_CASES``."""
        if self._batched is not None:
            raise StoreError(StoreProblem.UNUSABLE, self.path, "batch() is already open")
        with self._sqlite_errors():
            self._db.execute("BEGIN IMMEDIATE")
        self._batched = 0
        try:
            yield
        finally:
            self._batched = None
            with self._sqlite_errors():
                self._db.execute("COMMIT")

    def put_case(self, row: CaseRow, trace: SealedPracticeTrace | None) -> None:
        """Store a case and its trace atomically. A trace id already stored must hold the same
        bytes (content addressing) and a case id already stored the same row (no overwrite),
        else nothing is written and ``StoreError`` names the conflict."""
        body = sealed_trace_bytes(trace) if trace is not None else None
        with self._sqlite_errors():
            if self._batched is None:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._write_case(row, trace, body)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                return
            self._db.execute("SAVEPOINT put_case")
            try:
                self._write_case(row, trace, body)
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

    def _write_case(
        self, row: CaseRow, trace: SealedPracticeTrace | None, body: bytes | None
    ) -> None:
        db = self._db
        if trace is not None:
            inserted = db.execute(
                "INSERT OR IGNORE INTO traces (trace_id, body) VALUES (?, ?)",
                (trace.trace_id, body),
            ).rowcount
            if not inserted:  # already stored: content addressing wants the very same bytes
                (existing,) = db.execute(
                    "SELECT body FROM traces WHERE trace_id = ?", (trace.trace_id,)
                ).fetchone()
                if type(existing) is not bytes or existing != body:
                    raise StoreError(StoreProblem.TRACE_CONFLICT, self.path, trace.trace_id)
        inserted = db.execute(
            "INSERT OR IGNORE INTO cases VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row.as_tuple()
        ).rowcount
        if not inserted:
            existing = db.execute("SELECT * FROM cases WHERE case_id = ?", (row.case_id,))
            if tuple(existing.fetchone()) != row.as_tuple():
                raise StoreError(StoreProblem.CASE_CONFLICT, self.path, row.case_id)

    # ----------------------------------------------------------------------------------------
    # Reading (both kinds of store)

    def trace_ids(self) -> list[str]:
        with self._sqlite_errors():
            rows = self._db.execute("SELECT trace_id FROM traces ORDER BY trace_id").fetchall()
        return [trace_id for (trace_id,) in rows if type(trace_id) is str]

    def count(self, table: str) -> int:
        assert table in _TABLES
        with self._sqlite_errors():
            (count,) = self._db.execute(f"SELECT count(*) FROM {table}").fetchone()
        return count

    def case_rows(self) -> Iterator[CaseRow | MalformedRow]:
        """Every case row, typed, or ``MalformedRow`` where a column holds another type."""
        with self._sqlite_errors():
            for rowid, *columns in self._db.execute("SELECT rowid, * FROM cases ORDER BY case_id"):
                yield _case_row(rowid, columns)

    def cases(self) -> Iterator[CaseRow]:
        """The well-typed case rows (Workbench's list; ``verify`` reports the others)."""
        for row in self.case_rows():
            if type(row) is CaseRow:
                yield row

    def named_trace_ids(self) -> set[object]:
        """Every trace id some case row names, whatever the row's other columns hold."""
        with self._sqlite_errors():
            rows = self._db.execute("SELECT DISTINCT trace_id FROM cases").fetchall()
        return {trace_id for (trace_id,) in rows if trace_id is not None}

    def case_rows_of_trace(self, trace_id: str) -> list[CaseRow | MalformedRow]:
        """Every case row that names this trace (content addressing lets several share one)."""
        with self._sqlite_errors():
            rows = self._db.execute(
                "SELECT rowid, * FROM cases WHERE trace_id = ? ORDER BY case_id", (trace_id,)
            ).fetchall()
        return [_case_row(rowid, rest) for rowid, *rest in rows]

    def cases_of_trace(self, trace_id: str) -> list[CaseRow]:
        """The well-typed case rows that name this trace."""
        return [row for row in self.case_rows_of_trace(trace_id) if type(row) is CaseRow]

    def case(self, case_id: str) -> CaseRow | MalformedRow | None:
        with self._sqlite_errors():
            found = self._db.execute(
                "SELECT rowid, * FROM cases WHERE case_id = ?", (case_id,)
            ).fetchone()
        return None if found is None else _case_row(found[0], found[1:])

    # ----------------------------------------------------------------------------------------
    # Workbench's list: counts and one page at a time, each in SQL, nothing read beyond them

    def recorded_counts(self) -> list[tuple[object, object, int]]:
        """How many case rows record each (outcome, reason), as stored: what the rows claim,
        unverified, whatever types the columns hold. One pass over the cases table."""
        with self._sqlite_errors():
            return self._db.execute(
                "SELECT outcome, reason, count(*) FROM cases GROUP BY outcome, reason"
            ).fetchall()

    def count_selected(self, selection: CaseSelection) -> int:
        """How many case rows ``selection`` matches, by what they record."""
        where, arguments = _where(selection)
        with self._sqlite_errors():
            (count,) = self._db.execute(f"SELECT count(*) FROM cases{where}", arguments).fetchone()
        return count

    def selected_rows(
        self, selection: CaseSelection, limit: int, offset: int
    ) -> list[CaseRow | MalformedRow]:
        """The case rows ``selection`` matches, in case id order, ``limit`` of them after the
        first ``offset``: the primary key's index gives the order, so a page reads its own rows
        (and, filtered, the rows it skips), never the traces."""
        where, arguments = _where(selection)
        with self._sqlite_errors():
            rows = self._db.execute(
                f"SELECT rowid, * FROM cases{where} ORDER BY case_id LIMIT ? OFFSET ?",
                (*arguments, limit, offset),
            ).fetchall()
        return [_case_row(rowid, rest) for rowid, *rest in rows]

    def searched_rows(
        self, selection: CaseSelection, limit: int, offset: int
    ) -> tuple[int, list[CaseRow | MalformedRow]]:
        """How many case rows ``selection`` matches, and ``limit`` of them after the first
        ``offset`` in case id order, from one pass over the table: a text search cannot use an
        index, so counting and paging in SQL would pass over it twice. Only the matches' ids
        are kept, ordered as SQL orders them, then the page's rows are read."""
        where, arguments = _where(selection)
        with self._sqlite_errors():
            found = self._db.execute(f"SELECT case_id, rowid FROM cases{where}", arguments)
            keys = sorted(found.fetchall(), key=lambda pair: _sql_order(pair[0]))
            page = [rowid for _, rowid in keys[offset : offset + limit]]
            rows = self._db.execute(
                f"SELECT rowid, * FROM cases WHERE rowid IN ({', '.join('?' * len(page))})"
                " ORDER BY case_id",
                page,
            ).fetchall()
        return len(keys), [_case_row(rowid, rest) for rowid, *rest in rows]

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read inside one transaction: every query within sees the same committed state."""
        with self._sqlite_errors():
            self._db.execute("BEGIN")
        try:
            yield
        finally:
            with self._sqlite_errors():
                self._db.execute("COMMIT")

    _BODY_QUERY = (
        "SELECT trace_id, typeof(body), length(body),"
        " CASE WHEN typeof(body) = 'blob' AND length(body) <= ? THEN body END FROM traces"
    )

    def stored_bodies(self) -> Iterator[StoredBody]:
        """Every stored trace with its raw bytes, unverified, in id order: a wrong-typed or
        oversized body is named, never converted (an INTEGER ``n`` is not ``n`` bytes)."""
        with self._sqlite_errors():
            query = self._BODY_QUERY + " ORDER BY trace_id"
            for row in self._db.execute(query, (MAX_DOCUMENT_BYTES,)):
                yield _stored_body(*row)

    def stored_body(self, trace_id: str) -> StoredBody | None:
        with self._sqlite_errors():
            row = self._db.execute(
                self._BODY_QUERY + " WHERE trace_id = ?", (MAX_DOCUMENT_BYTES, trace_id)
            ).fetchone()
        return None if row is None else _stored_body(*row)

    def read_trace(self, trace_id: str) -> SealedPracticeTrace | TraceVerification:
        """The trace, verified on its own (strict decoding, every identity and cross-identity,
        the id it is stored under), or the typed failure that stops it from being served."""
        stored = self.stored_body(trace_id)
        if stored is None:
            failure = TraceFailure(TraceFailureCode.NOT_A_TRACE, "$", "no such trace")
            return TraceVerification(None, (failure,))
        if stored.body is None:
            failure = TraceFailure(TraceFailureCode.NOT_A_TRACE, "store", stored.refused or "")
            return TraceVerification(None, (failure,))
        return verify_stored_trace(trace_id, stored.body)


@dataclasses.dataclass(frozen=True, slots=True)
class CaseSelection:
    """Which case rows a list shows, by what they record: an outcome and a reason exactly as
    stored, and text that the question or the case id holds, ignoring case (``str.casefold``;
    empty: any)."""

    outcome: str | None = None
    reason: str | None = None
    text: str = ""

    def __post_init__(self) -> None:
        for name in ("outcome", "reason"):
            if getattr(self, name) is not None and type(getattr(self, name)) is not str:
                raise TypeError(f"{name} is neither text nor None")
        if type(self.text) is not str:
            raise TypeError("text is not text")


# SQLite's own lower() folds ASCII only; the list's search folds as Python does.
_CONTAINS_FOLDED = "practice_loop_contains_folded"


def _contains_folded(needle: object, question: object, case_id: object) -> bool:
    """Whether the question or the case id holds ``needle`` (already folded): one call per
    row, not one per column."""
    if type(needle) is not str:
        return False
    # Spelled out, not ``any(...)`` over a generator: this runs once per row of the table.
    return (type(question) is str and needle in question.casefold()) or (
        type(case_id) is str and needle in case_id.casefold()
    )


def _sql_order(value: object) -> tuple[int, object]:
    """SQLite's order of values under its BINARY collation: NULL, numbers, text (UTF-8 byte
    order, which is code point order), then BLOBs."""
    if value is None:
        return (0, 0)
    if type(value) is int or type(value) is float:
        return (1, value)
    if type(value) is str:
        return (2, value)
    return (3, bytes(value))  # type: ignore[arg-type]


def _where(selection: CaseSelection) -> tuple[str, tuple[object, ...]]:
    clauses: list[str] = []
    arguments: list[object] = []
    if selection.outcome is not None:
        clauses.append("outcome = ?")
        arguments.append(selection.outcome)
    if selection.reason is not None:
        clauses.append("reason = ?")
        arguments.append(selection.reason)
    if selection.text:
        needle = selection.text.casefold()
        clauses.append(f"{_CONTAINS_FOLDED}(?, question, case_id)")
        arguments.append(needle)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), tuple(arguments)


def _case_row(rowid: int, columns: list[object] | tuple[object, ...]) -> CaseRow | MalformedRow:
    try:
        return CaseRow(*columns)  # type: ignore[arg-type]
    except TypeError as error:
        key = columns[0] if type(columns[0]) is str else f"rowid {rowid}"
        return MalformedRow(key, str(error))  # type: ignore[arg-type]


def _stored_body(trace_id: object, kind: str, size: int | None, body: object) -> StoredBody:
    name = trace_id if type(trace_id) is str else f"{trace_id!r}"
    if type(body) is bytes:
        return StoredBody(name, body, None)  # type: ignore[arg-type]
    if kind == "blob":
        return StoredBody(name, None, f"a body of {size} bytes, over the size cap")  # type: ignore[arg-type]
    return StoredBody(name, None, f"a body of SQLite type {kind.upper()}, not BLOB")  # type: ignore[arg-type]


class ReadOnlyTraceStore(TraceStore):
    """An existing store opened for reading only (``verify``, ``show``, Workbench;
    ADR-0226 §8.11).

    The file is inspected before SQLite sees it and opened with ``mode=ro``: SQLite itself
    refuses every write on this connection, and no table or file is created (docs/adr/0012).
    """

    def __init__(self, path: Path, *, wait: float = DEFAULT_WAIT_SECONDS) -> None:
        self.path = Path(path)
        self.wait = wait
        self._batched = None
        header = _inspect_file(self.path)
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        if _in_wal_mode(header) and not any(
            Path(f"{self.path}{side}").exists() for side in ("-wal", "-shm")
        ):
            # A WAL-mode file with no side files has no connection open (each keeps the
            # ``-shm`` while it lives); a read-only reader would create both and could not
            # remove them, so it reads the file as it is (docs/adr/0012).
            uri += "&immutable=1"
        self._open(uri, uri=True)

    def close(self) -> None:
        self._db.close()


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
