"""Where a fuzz campaign keeps Hypothesis's example database (issue 7).

A database is named by a *spec*: a directory path, ``redis://HOST:PORT[/DB]`` for
Hypothesis's ``RedisExampleDatabase``, which several machines or CI jobs share, or
``gh:OWNER/REPO[/ARTIFACT]`` for the newest artifact of that name (default
``fuzz-example-database``, the nightly workflow's) through Hypothesis's
``GitHubArtifactDatabase``, which is read-only and so only ever a replay source. A campaign
writes to one database and may replay another read-only (``ReadOnlyDatabase`` inside a
``MultiplexedDatabase``), so a developer can replay CI's findings without changing CI's store
and without downloading them by hand.

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
GITHUB_SCHEME = "gh:"
# The artifact the nightly workflow uploads its campaign database as.
DEFAULT_ARTIFACT = "fuzz-example-database"
# A Redis server that does not answer within this many seconds counts as unreachable.
REDIS_TIMEOUT_SECONDS = 5.0

_REDIS_ADDRESS = re.compile(r"redis://(?P<host>[^:/\s]+):(?P<port>[0-9]{1,5})(?:/(?P<db>[0-9]+))?")
# GitHub's own rules for an account name and a repository name; an artifact name is ours.
_GITHUB_ADDRESS = re.compile(
    r"gh:(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/(?P<repo>[A-Za-z0-9._-]{1,100})"
    r"(?:/(?P<artifact>[A-Za-z0-9._-]{1,200}))?"
)
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"", "0", "false", "no"})


class DatabaseKind(enum.Enum):
    DIRECTORY = "directory"
    REDIS = "redis"
    GITHUB_ARTIFACT = "github_artifact"  # read-only: a replay source, never a campaign's own


class DatabaseRefusal(enum.Enum):
    """Why a database spec or its server cannot be used."""

    EMPTY_SPEC = "empty_spec"
    UNSUPPORTED_SCHEME = "unsupported_scheme"
    BAD_REDIS_ADDRESS = "bad_redis_address"
    BAD_GITHUB_ADDRESS = "bad_github_address"
    REPLAY_ONLY = "replay_only"  # a read-only source named as the database a campaign writes
    NEEDS_NEWER_HYPOTHESIS = "needs_newer_hypothesis"
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
    location: str  # a directory, a Redis host, or OWNER/REPO
    port: int = 0
    db: int = 0
    artifact: str = ""  # a GitHub artifact's name

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
        if self.kind is DatabaseKind.GITHUB_ARTIFACT:
            return f"{GITHUB_SCHEME}{self.location}/{self.artifact}"
        return self.location


def parse_database_spec(text: str) -> DatabaseSpec:
    """``redis://HOST:PORT[/DB]``, ``gh:OWNER/REPO[/ARTIFACT]`` or a directory path;
    anything else is refused."""
    if not text.strip():
        raise DatabaseError(DatabaseRefusal.EMPTY_SPEC, "the database spec is empty")
    if text.startswith(GITHUB_SCHEME):
        match = _GITHUB_ADDRESS.fullmatch(text)
        if match is None:
            raise DatabaseError(
                DatabaseRefusal.BAD_GITHUB_ADDRESS,
                f"{text!r} is not {GITHUB_SCHEME}OWNER/REPO[/ARTIFACT]",
            )
        return DatabaseSpec(
            DatabaseKind.GITHUB_ARTIFACT,
            f"{match['owner']}/{match['repo']}",
            artifact=match["artifact"] or DEFAULT_ARTIFACT,
        )
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
            f"{text!r}: only directories, {REDIS_SCHEME}HOST:PORT and "
            f"{GITHUB_SCHEME}OWNER/REPO are supported",
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
    """The Hypothesis database ``spec`` names; a Redis one connects on first use, and a
    GitHub artifact is downloaded on first use (then cached for a day under
    ``.hypothesis/github-artifacts/OWNER/REPO/ARTIFACT/``), read-only."""
    if spec.kind is DatabaseKind.REDIS:
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(_redis_client(spec))
    if spec.kind is DatabaseKind.GITHUB_ARTIFACT:
        from hypothesis.database import GitHubArtifactDatabase, ReadOnlyDatabase

        from .hypothesis_internals import READS_ARTIFACT_ZIPS, reads_artifact_zips, storage_path

        if not reads_artifact_zips():
            needed = ".".join(map(str, READS_ARTIFACT_ZIPS))
            raise DatabaseError(
                DatabaseRefusal.NEEDS_NEWER_HYPOTHESIS,
                f"{spec}: replaying a GitHub artifact needs Hypothesis {needed} or newer "
                "(older releases cannot read the zips GitHub Actions uploads)",
            )
        owner, repo = spec.location.split("/")
        # Cached per repository: Hypothesis's own cache is per artifact name, so a fork's
        # artifact of the same name would be served for its upstream's within the day.
        cache = storage_path("github-artifacts", owner, repo, spec.artifact)
        return ReadOnlyDatabase(
            GitHubArtifactDatabase(owner, repo, artifact_name=spec.artifact, path=cache)
        )
    from hypothesis.database import DirectoryBasedExampleDatabase

    return DirectoryBasedExampleDatabase(spec.location)


def check_reachable(spec: DatabaseSpec) -> None:
    """Raise ``UNREACHABLE`` when a Redis server does not answer, or a GitHub artifact can be
    neither downloaded nor found fresh in the cache; directories always are."""
    if spec.kind is DatabaseKind.GITHUB_ARTIFACT:
        _check_artifact(spec)
    if spec.kind is not DatabaseKind.REDIS:
        return
    client = _redis_client(spec)
    try:
        client.ping()
    except Exception as error:  # redis raises its own ConnectionError, TimeoutError, ...
        raise DatabaseError(DatabaseRefusal.UNREACHABLE, f"{spec}: {error}") from error
    finally:
        client.close()


def writable(spec: DatabaseSpec) -> DatabaseSpec:
    """``spec``, if a campaign can write to it: a GitHub artifact is only ever replayed."""
    if spec.kind is DatabaseKind.GITHUB_ARTIFACT:
        raise DatabaseError(
            DatabaseRefusal.REPLAY_ONLY,
            f"{spec} is read-only: a campaign writes its database (use it with --replay)",
        )
    return spec


def _check_artifact(spec: DatabaseSpec) -> None:
    """Hypothesis's artifact database warns, then replays nothing, when it can neither fetch
    the artifact nor use a fresh cached copy: a campaign asked to replay it is refused
    instead, with that warning as the reason."""
    import warnings

    from hypothesis.errors import HypothesisWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HypothesisWarning)
        list(open_database(spec).fetch(b"practice-loop: is the artifact there?"))
    said = [str(w.message).strip() for w in caught if issubclass(w.category, HypothesisWarning)]
    if said:
        raise DatabaseError(
            DatabaseRefusal.UNREACHABLE,
            f"{spec}: {' '.join(said)} (a private repository needs GITHUB_TOKEN with "
            "actions:read)",
        )


def campaign_database(
    spec: DatabaseSpec, *, read_only: bool = False, replay: DatabaseSpec | None = None
) -> ExampleDatabase:
    """``spec``'s database (wrapped read-only when asked), multiplexed with a read-only
    ``replay`` source when one is given. A GitHub artifact is only ever ``replay``."""
    from hypothesis.database import MultiplexedDatabase, ReadOnlyDatabase

    database = open_database(writable(spec))
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
