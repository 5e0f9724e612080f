"""Where a fuzz campaign keeps Hypothesis's example database (issue 7).

A database is named by a *spec*: a directory path, or ``redis://HOST:PORT[/DB]`` for
Hypothesis's ``RedisExampleDatabase``, which several machines or CI jobs share. A campaign
writes to one database and may replay others read-only (``ReadOnlyDatabase`` inside a
``MultiplexedDatabase``), so a developer can replay CI's findings without changing CI's store.

The choice travels to pytest, and to every pytest-xdist worker, through the environment
(``tests/conftest.py`` reads it for the ``nightly`` profile, ``practice_loop.harness.fuzz_plugin``
for every campaign round):

- ``PRACTICE_LOOP_EXAMPLE_DB``: the database spec (default ``.hypothesis/nightly``);
- ``PRACTICE_LOOP_EXAMPLE_DB_READONLY``: ``1`` to read that database without writing to it;
- ``PRACTICE_LOOP_EXAMPLE_DB_REPLAY``: one more spec, always read-only, replayed alongside.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Hypothesis is a test dependency: the command line loads it only to fuzz
    from hypothesis.database import ExampleDatabase

DATABASE_ENV = "PRACTICE_LOOP_EXAMPLE_DB"
READ_ONLY_ENV = "PRACTICE_LOOP_EXAMPLE_DB_READONLY"
REPLAY_ENV = "PRACTICE_LOOP_EXAMPLE_DB_REPLAY"
DEFAULT_DATABASE = ".hypothesis/nightly"
REDIS_SCHEME = "redis://"
# A Redis server that does not answer within this many seconds counts as unreachable.
REDIS_TIMEOUT_SECONDS = 5.0

_REDIS_ADDRESS = re.compile(r"redis://(?P<host>[^:/\s]+):(?P<port>[0-9]{1,5})(?:/(?P<db>[0-9]+))?")
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"", "0", "false", "no"})


class DatabaseKind(enum.Enum):
    DIRECTORY = "directory"
    REDIS = "redis"


class DatabaseRefusal(enum.Enum):
    """Why a database spec or its server cannot be used."""

    EMPTY_SPEC = "empty_spec"
    UNSUPPORTED_SCHEME = "unsupported_scheme"
    BAD_REDIS_ADDRESS = "bad_redis_address"
    NOT_A_DIRECTORY = "not_a_directory"
    BAD_READ_ONLY_FLAG = "bad_read_only_flag"
    REDIS_CLIENT_MISSING = "redis_client_missing"
    UNREACHABLE = "unreachable"


class DatabaseError(ValueError):
    """A database spec that names nothing usable; ``reason`` says why."""

    def __init__(self, reason: DatabaseRefusal, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason.value}: {detail}")


@dataclasses.dataclass(frozen=True, slots=True)
class DatabaseSpec:
    """One example database: a directory, or a Redis server and database number."""

    kind: DatabaseKind
    location: str
    port: int = 0
    db: int = 0

    def __post_init__(self) -> None:
        if type(self.kind) is not DatabaseKind:
            raise DatabaseError(DatabaseRefusal.UNSUPPORTED_SCHEME, repr(self.kind))
        if not self.location:
            raise DatabaseError(DatabaseRefusal.EMPTY_SPEC, "no directory or host")
        if self.kind is DatabaseKind.REDIS and not (1 <= self.port <= 65535 and self.db >= 0):
            raise DatabaseError(
                DatabaseRefusal.BAD_REDIS_ADDRESS,
                f"port {self.port} / database {self.db} out of range",
            )

    def __str__(self) -> str:
        if self.kind is DatabaseKind.REDIS:
            return f"{REDIS_SCHEME}{self.location}:{self.port}/{self.db}"
        return self.location


def parse_database_spec(text: str) -> DatabaseSpec:
    """``redis://HOST:PORT[/DB]`` or a directory path; anything else is refused."""
    if not text.strip():
        raise DatabaseError(DatabaseRefusal.EMPTY_SPEC, "the database spec is empty")
    if text.startswith(REDIS_SCHEME):
        match = _REDIS_ADDRESS.fullmatch(text)
        if match is None:
            raise DatabaseError(
                DatabaseRefusal.BAD_REDIS_ADDRESS, f"{text!r} is not redis://HOST:PORT[/DB]"
            )
        return DatabaseSpec(
            DatabaseKind.REDIS,
            match["host"],
            port=int(match["port"]),
            db=int(match["db"] or 0),
        )
    if "://" in text:
        raise DatabaseError(
            DatabaseRefusal.UNSUPPORTED_SCHEME,
            f"{text!r}: only directories and {REDIS_SCHEME}HOST:PORT are supported",
        )
    if Path(text).exists() and not Path(text).is_dir():
        raise DatabaseError(DatabaseRefusal.NOT_A_DIRECTORY, f"{text} exists and is not one")
    return DatabaseSpec(DatabaseKind.DIRECTORY, text)


def _redis_client(spec: DatabaseSpec):
    try:
        import redis
    except ImportError as error:
        raise DatabaseError(
            DatabaseRefusal.REDIS_CLIENT_MISSING,
            "the 'redis' package is not installed (pip install 'practice-loop[test]')",
        ) from error
    return redis.Redis(
        host=spec.location,
        port=spec.port,
        db=spec.db,
        socket_timeout=REDIS_TIMEOUT_SECONDS,
        socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
    )


def open_database(spec: DatabaseSpec) -> ExampleDatabase:
    """The Hypothesis database ``spec`` names; a Redis one connects on first use."""
    if spec.kind is DatabaseKind.REDIS:
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(_redis_client(spec))
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(spec.location)


def check_reachable(spec: DatabaseSpec) -> None:
    """Raise ``UNREACHABLE`` when a Redis server does not answer; directories always are."""
    if spec.kind is not DatabaseKind.REDIS:
        return
    client = _redis_client(spec)
    try:
        client.ping()
    except Exception as error:  # redis raises its own ConnectionError, TimeoutError, ...
        raise DatabaseError(DatabaseRefusal.UNREACHABLE, f"{spec}: {error}") from error
    finally:
        client.close()


def campaign_database(
    spec: DatabaseSpec, *, read_only: bool = False, replay: DatabaseSpec | None = None
) -> ExampleDatabase:
    """``spec``'s database (wrapped read-only when asked), multiplexed with a read-only
    ``replay`` source when one is given."""
    from hypothesis.database import MultiplexedDatabase, ReadOnlyDatabase

    database = open_database(spec)
    if read_only:
        database = ReadOnlyDatabase(database)
    if replay is None:
        return database
    return MultiplexedDatabase(database, ReadOnlyDatabase(open_database(replay)))


def read_only_flag(text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise DatabaseError(DatabaseRefusal.BAD_READ_ONLY_FLAG, f"{READ_ONLY_ENV}={text!r}: use 1 or 0")


def database_from_environment(environ: Mapping[str, str]) -> ExampleDatabase:
    """The database the three environment variables above describe."""
    replay = environ.get(REPLAY_ENV)
    return campaign_database(
        parse_database_spec(environ.get(DATABASE_ENV, DEFAULT_DATABASE)),
        read_only=read_only_flag(environ.get(READ_ONLY_ENV, "")),
        replay=parse_database_spec(replay) if replay else None,
    )


def environment_for(
    spec: DatabaseSpec, *, read_only: bool, replay: DatabaseSpec | None
) -> dict[str, str]:
    """The environment variables that make pytest (and its workers) use these databases."""
    environ = {DATABASE_ENV: str(spec), READ_ONLY_ENV: "1" if read_only else "0"}
    if replay is not None:
        environ[REPLAY_ENV] = str(replay)
    return environ
