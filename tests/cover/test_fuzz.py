"""``practice-loop fuzz`` (issue 7): the campaign, its example databases, its records and
reports. The campaigns here run tiny synthetic test files with planted defects, so they cost
seconds; the long campaigns are nightly's (docs/nightly-fuzzing.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from ci_support import absent
from practice_loop.cli import main
from practice_loop.harness.fuzz import STOP_GRACE_SECONDS, confirmation_reserve
from practice_loop.harness.fuzz_adaptive import WorkerLoss
from practice_loop.harness.fuzz_database import (
    DATABASE_ENV,
    READ_ONLY_ENV,
    REPLAY_ENV,
    DatabaseError,
    DatabaseKind,
    DatabaseRefusal,
    campaign_database,
    check_reachable,
    database_from_environment,
    open_database,
    parse_database_spec,
)
from practice_loop.harness.fuzz_report import (
    CampaignReport,
    FailureExample,
    FailureSource,
    Fault,
    LaneStatus,
    LaneSummary,
    RecordError,
    RecordRefusal,
    Regression,
    RoundEnding,
    RoundSummary,
    RunOutcome,
    TestRun,
    failures_from_notes,
    read_round,
    regression_patch,
    write_json,
    write_junit,
    write_markdown,
)
from practice_loop.harness.hypothesis_internals import reads_artifact_zips

SAMPLE = """\
import os
import time

from hypothesis import given, strategies as st


@given(st.integers(min_value=0))
def test_planted(x):
    assert x < 100  # the planted defect


@given(st.integers())
def test_hangs(x):
    if x > 5:
        time.sleep(600)


@given(st.integers())
def test_crashes(x):
    if x > 5:
        os._exit(3)


@given(st.integers())
def test_fine(x):
    assert isinstance(x, int)


def test_not_a_property():
    pass
"""

MACHINE = """\
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule


class Counter(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.total = 0

    @rule(k=st.integers(0, 5))
    def add(self, k):
        self.total += k

    @invariant()
    def below_seven(self):
        assert self.total < 7


TestCounter = Counter.TestCase
TestCounter.settings = settings(print_blob=True, database=None)
"""


def _environment() -> dict[str, str]:
    """A clean environment for a child campaign: none of this pytest run's own variables."""
    drop = ("PYTEST_", "HYPOTHESIS_", "PRACTICE_LOOP_EXAMPLE_DB")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def _campaign(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "practice_loop", "fuzz", "--profile", "default"]
    command += ["--crosshair-share", "0", *arguments]
    return subprocess.run(
        command, cwd=cwd, env=_environment(), capture_output=True, text=True, check=False
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A real redis-server on a free loopback port, for this module only."""
    binary = shutil.which("redis-server")
    if binary is None:
        absent("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                check_reachable(parse_database_spec(url))
                break
            except DatabaseError:
                if server.poll() is not None:
                    break
                time.sleep(0.1)
        else:
            pytest.fail(f"redis-server did not answer on port {port}")
        if server.poll() is not None:
            pytest.fail(f"redis-server exited with status {server.returncode}")
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


# -- databases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, reason",
    [
        ("", DatabaseRefusal.EMPTY_SPEC),
        ("ftp://host/db", DatabaseRefusal.UNSUPPORTED_SCHEME),
        ("redis://host", DatabaseRefusal.BAD_REDIS_ADDRESS),
        ("redis://host:99999", DatabaseRefusal.BAD_REDIS_ADDRESS),
        ("redis://:6379", DatabaseRefusal.BAD_REDIS_ADDRESS),
        ("gh:owner", DatabaseRefusal.BAD_GITHUB_ADDRESS),
        ("gh:-owner/repo", DatabaseRefusal.BAD_GITHUB_ADDRESS),
        ("gh:owner/re po", DatabaseRefusal.BAD_GITHUB_ADDRESS),
        ("gh:owner/repo/", DatabaseRefusal.BAD_GITHUB_ADDRESS),
        ("gh:owner/repo/a/b", DatabaseRefusal.BAD_GITHUB_ADDRESS),
    ],
)
def test_a_bad_database_spec_is_refused_with_its_reason(spec, reason):
    """Issues 7 and 18: a database spec is a directory, redis://HOST:PORT or
    gh:OWNER/REPO[/ARTIFACT]; anything else is refused with its reason."""
    with pytest.raises(DatabaseError) as refused:
        parse_database_spec(spec)
    assert refused.value.reason is reason


def test_a_file_is_not_a_directory_database(tmp_path):
    """Issue 7: a directory database cannot be a file."""
    (tmp_path / "file").write_text("")
    with pytest.raises(DatabaseError) as refused:
        parse_database_spec(str(tmp_path / "file"))
    assert refused.value.reason is DatabaseRefusal.NOT_A_DIRECTORY


def test_the_environment_chooses_the_database(tmp_path):
    """Issue 7: the campaign's choice reaches every pytest process through the environment:
    a directory, read-only, or multiplexed with a read-only replay source."""
    plain = database_from_environment({DATABASE_ENV: str(tmp_path / "a")})
    assert type(plain) is DirectoryBasedExampleDatabase
    read_only = database_from_environment({DATABASE_ENV: str(tmp_path / "a"), READ_ONLY_ENV: "1"})
    assert type(read_only) is ReadOnlyDatabase
    replayed = database_from_environment(
        {DATABASE_ENV: str(tmp_path / "a"), REPLAY_ENV: str(tmp_path / "ci")}
    )
    assert type(replayed) is MultiplexedDatabase
    with pytest.raises(DatabaseError) as refused:
        database_from_environment({READ_ONLY_ENV: "maybe"})
    assert refused.value.reason is DatabaseRefusal.BAD_READ_ONLY_FLAG


def test_a_read_only_database_is_never_written(tmp_path):
    """Issue 7: replaying CI's database locally does not change it."""
    ci = parse_database_spec(str(tmp_path / "ci"))
    campaign_database(ci).save(b"key", b"found in CI")
    local = parse_database_spec(str(tmp_path / "local"))
    replaying = campaign_database(local, replay=ci)
    assert list(replaying.fetch(b"key")) == [b"found in CI"]
    replaying.save(b"key", b"found locally")
    assert set(campaign_database(ci).fetch(b"key")) == {b"found in CI"}
    assert set(campaign_database(local).fetch(b"key")) == {b"found locally"}
    campaign_database(ci, read_only=True).save(b"key", b"never")
    assert set(campaign_database(ci).fetch(b"key")) == {b"found in CI"}


@pytest.fixture
def hypothesis_home(tmp_path):
    """Hypothesis's storage directory (where an artifact's download is cached) in tmp_path,
    for the test only; it is fixed when Hypothesis is imported, so chdir does not move it."""
    from hypothesis.configuration import set_hypothesis_home_dir

    from practice_loop.harness.hypothesis_internals import storage_path

    previous = storage_path()
    set_hypothesis_home_dir(tmp_path / ".hypothesis")
    try:
        yield tmp_path
    finally:
        set_hypothesis_home_dir(previous)


def _cached_artifact(home: Path, cache: str, examples: dict[bytes, bytes]) -> None:
    """What GitHubArtifactDatabase keeps after a download: the artifact's zip (a directory
    database's files at its root), named by the time it was fetched, in its ``cache``
    (OWNER/REPO/ARTIFACT)."""
    import datetime
    import zipfile

    source = DirectoryBasedExampleDatabase(home / "uploaded")
    for key, value in examples.items():
        source.save(key, value)
    folder = home / ".hypothesis" / "github-artifacts" / cache
    folder.mkdir(parents=True)
    fetched = datetime.datetime.now(datetime.UTC).isoformat().replace(":", "_")
    with zipfile.ZipFile(folder / f"{fetched}.zip", "w") as archive:
        for path in sorted((home / "uploaded").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(home / "uploaded").as_posix())


needs_artifact_zips = pytest.mark.skipif(
    not reads_artifact_zips(), reason="this Hypothesis cannot read GitHub's artifact zips"
)


def test_an_artifact_replay_on_a_hypothesis_too_old_for_it_is_refused(monkeypatch):
    """Issue 18: before 6.156.2 Hypothesis fails with a KeyError on the zips GitHub Actions
    uploads; such a replay is refused up front, naming the release it needs."""
    from practice_loop.harness import hypothesis_internals

    monkeypatch.setattr(hypothesis_internals, "READS_ARTIFACT_ZIPS", (999, 0, 0))
    with pytest.raises(DatabaseError) as refused:
        open_database(parse_database_spec("gh:our-org/practice-loop"))
    assert refused.value.reason is DatabaseRefusal.NEEDS_NEWER_HYPOTHESIS
    assert "needs Hypothesis 999.0.0 or newer" in str(refused.value)


@needs_artifact_zips
def test_a_github_artifact_is_replayed_read_only_and_never_written(hypothesis_home, tmp_path):
    """Issue 18: ``gh:OWNER/REPO`` replays the newest nightly database artifact through
    Hypothesis's GitHubArtifactDatabase, read-only; it can never be the database a campaign
    writes. (The artifact is the one a download leaves in the cache: no network here.)"""
    spec = parse_database_spec("gh:our-org/practice-loop")
    assert (spec.kind, spec.location, spec.artifact) == (
        DatabaseKind.GITHUB_ARTIFACT, "our-org/practice-loop", "fuzz-example-database"
    )  # fmt: skip
    assert str(parse_database_spec("gh:o/r/other-db")) == "gh:o/r/other-db"
    cached = "our-org/practice-loop/fuzz-example-database"
    _cached_artifact(tmp_path, cached, {b"property": b"found at night"})
    check_reachable(spec)
    local = parse_database_spec(str(tmp_path / "local"))
    replaying = database_from_environment({DATABASE_ENV: str(tmp_path / "local"),
                                           REPLAY_ENV: "gh:our-org/practice-loop"})  # fmt: skip
    assert list(replaying.fetch(b"property")) == [b"found at night"]
    replaying.save(b"property", b"found here")
    assert set(campaign_database(local).fetch(b"property")) == {b"found here"}
    assert set(open_database(spec).fetch(b"property")) == {b"found at night"}
    with pytest.raises(DatabaseError) as refused:
        campaign_database(spec)
    assert refused.value.reason is DatabaseRefusal.REPLAY_ONLY


@needs_artifact_zips
def test_an_artifact_that_cannot_be_fetched_is_unreachable_not_an_empty_replay(
    hypothesis_home, tmp_path, monkeypatch
):
    """Issue 18: Hypothesis only warns, then replays nothing, when the artifact can be
    neither downloaded nor found in its cache; a campaign asked to replay it says why and
    exits 1 with its reports, and ``--database gh:...`` is a usage error."""
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")  # GitHub is out of reach
    spec = parse_database_spec("gh:practice-loop-tests/no-such-repository")
    # An artifact of the same name left where Hypothesis caches by name alone (another
    # repository's download) is not this repository's.
    _cached_artifact(tmp_path, "fuzz-example-database", {b"p": b"theirs"})
    with pytest.raises(DatabaseError) as refused:
        check_reachable(spec)
    assert refused.value.reason is DatabaseRefusal.UNREACHABLE
    assert "GITHUB_TOKEN" in str(refused.value)
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    replayed = _campaign(tmp_path, "--minutes", "1", "--replay", str(spec), "test_sample.py")
    assert replayed.returncode == 1, replayed.stderr
    report = json.loads((tmp_path / "fuzz-report" / "fuzz-report.json").read_text())
    assert [f["fault"] for f in report["faults"]] == ["database_unreachable"]
    written = _campaign(tmp_path, "--minutes", "1", "--database", str(spec), "test_sample.py")
    assert written.returncode == 2 and "replay_only" in written.stderr, written.stderr


def test_redis_round_trip(redis_url):
    """Issue 7: a Redis database stores and replays examples through Hypothesis's
    RedisExampleDatabase; read-only, it is not written."""
    spec = parse_database_spec(redis_url + "/3")
    assert spec.kind is DatabaseKind.REDIS and spec.db == 3
    check_reachable(spec)
    campaign_database(spec).save(b"property", b"minimal")
    assert list(campaign_database(spec).fetch(b"property")) == [b"minimal"]
    campaign_database(spec, read_only=True).save(b"property", b"other")
    assert list(campaign_database(spec).fetch(b"property")) == [b"minimal"]


def test_an_unreachable_redis_is_a_fault_with_reports(tmp_path):
    """Issue 7: an unreachable Redis: the campaign says so, writes its reports, exits 1."""
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    url = f"redis://127.0.0.1:{_free_port()}"
    with pytest.raises(DatabaseError) as refused:
        check_reachable(parse_database_spec(url))
    assert refused.value.reason is DatabaseRefusal.UNREACHABLE
    result = _campaign(tmp_path, "--minutes", "1", "--database", url, "test_sample.py")
    assert result.returncode == 1, result.stderr
    report = json.loads((tmp_path / "fuzz-report" / "fuzz-report.json").read_text())
    assert report["status"] == "incomplete" and report["rounds"] == []
    assert [f["fault"] for f in report["faults"]] == ["database_unreachable"]
    assert "database_unreachable" in result.stderr


# -- usage ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--minutes", "0"], "--minutes must be positive"),
        (["-j", "many"], "--jobs takes a number"),
        (["--crosshair-share", "1"], "--crosshair-share must be in [0, 1)"),
        (["--test-timeout", "-1"], "--test-timeout must be positive"),
        (["--first-examples", "0"], "--first-examples must be at least 1"),
        (["--database", "ftp://x"], "unsupported_scheme"),
        (["no_such_test.py"], "no such test path: no_such_test.py"),
    ],
)
def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys, arguments, message):
    """Issue 7: a usage error exits 2, names the problem, and runs nothing."""
    monkeypatch.chdir(tmp_path)
    assert main(["fuzz", "--out", str(tmp_path / "out"), *arguments]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_argparse_usage_errors_exit_2(capsys):
    """Issue 7: an option argparse cannot read is a usage error too."""
    with pytest.raises(SystemExit) as exited:
        main(["fuzz", "--minutes", "soon"])
    assert exited.value.code == 2


@pytest.mark.parametrize(
    "profile, source, message",
    [
        ("ci", SAMPLE, "is derandomized"),  # Hypothesis's own `ci` profile
        ("default", "def test_plain():\n    pass\n", "no Hypothesis test"),
    ],
)
def test_a_campaign_pytest_refuses_exits_2(tmp_path, profile, source, message):
    """Issue 7: a derandomized profile (the automatic `ci` one) or a selection without a
    Hypothesis test is refused: exit 2, never a campaign that fuzzes nothing."""
    (tmp_path / "test_sample.py").write_text(source)
    result = _campaign(
        tmp_path, "--minutes", "1", "--profile", profile, "-j", "0", "test_sample.py"
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


# -- records, reports and patches ----------------------------------------------------------


def test_failures_are_read_from_hypothesis_notes():
    """Issue 7: the minimal example and its blob, for a property and a state machine, in
    Hypothesis's wording up to 6.158 ("Falsifying example")."""
    function = failures_from_notes(
        [
            "Falsifying example: test_fn(\n    x=10,\n)",
            "You can reproduce this example by temporarily adding "
            "@reproduce_failure('6.155.2', b'AEEKAYAA') as a decorator on your test case",
        ]
    )
    assert function == [FailureExample("test_fn(\n    x=10,\n)", "6.155.2", "AEEKAYAA")]
    machine = failures_from_notes(
        ["Falsifying example:", "state = M()", "state.add(k=2)", "state.teardown()",
         "\nYou can reproduce this example by temporarily adding "
         "@reproduce_failure('6.155.2', b'AABB') as a decorator on your test case"]
    )  # fmt: skip
    assert machine == [
        FailureExample("state = M()\nstate.add(k=2)\nstate.teardown()", "6.155.2", "AABB")
    ]


@pytest.mark.parametrize(
    "machine_heading", ["Failing test case:", "Failing test case: <state machine>"]
)
def test_failures_are_read_in_the_test_case_wording(machine_heading):
    """Issue 7: the minimal example and its blob in Hypothesis's "test case" wording (6.159 on;
    by 6.170 a state machine's heading says ``<state machine>``), explicit examples included."""
    reproduce = (
        "\nYou can reproduce this test case by temporarily adding "
        "@reproduce_failure('6.170.17', b'AEFk') as a decorator on your test function"
    )
    function = failures_from_notes(["Failing test case: test_fn(\n    x=10,\n)", reproduce])
    assert function == [FailureExample("test_fn(\n    x=10,\n)", "6.170.17", "AEFk")]
    explicit = failures_from_notes(["Failing explicit example: test_fn(\n    x=100,\n)"])
    assert explicit == [FailureExample("test_fn(\n    x=100,\n)")]
    machine = failures_from_notes(
        [machine_heading, "state = M()", "state.add(k=2)", "state.teardown()", reproduce]
    )
    assert machine == [
        FailureExample("state = M()\nstate.add(k=2)\nstate.teardown()", "6.170.17", "AEFk")
    ]


OBSERVED = """\
from hypothesis import example, given, settings, strategies as st


@settings(database=None, derandomize=True)
@given(st.integers())
def test_two_bugs(x):
    if x > 10:
        raise ValueError(x)
    if x < -10:
        raise KeyError(x)


@settings(database=None)
@example(5)
@given(st.integers())
def test_explicit(x):
    assert x != 5
"""


def _finish_records(cwd: Path, *paths: str) -> dict[str, dict]:
    """One recorded round of the fuzz plugin over ``paths``: each test's finish record."""
    command = [sys.executable, "-m", "pytest", "-p", "practice_loop.harness.fuzz_plugin",
               "--fuzz-record", "records", "--fuzz-round", "1", "--hypothesis-profile",
               "default", "-p", "no:cacheprovider", "-q", *paths]  # fmt: skip
    done = subprocess.run(command, cwd=cwd, env=_environment(), capture_output=True, text=True)
    assert done.returncode == 1, done.stdout[-3000:]
    lines = [json.loads(line) for path in sorted((cwd / "records").glob("*.jsonl"))
             for line in path.read_text().splitlines()]  # fmt: skip
    return {r["nodeid"].split("::")[-1]: r for r in lines if r["event"] == "finish"}


def test_failures_are_recorded_from_hypothesis_observations(tmp_path):
    """Issue 18: each minimal failing test case is recorded from Hypothesis's observation of
    it (two distinct failures of one property, a state machine's steps), with the blob that
    replays it; only a failing explicit example, which Hypothesis observes as given up, is
    read from the exception's notes, and the record says which source it used."""
    import hypothesis

    (tmp_path / "test_observed.py").write_text(OBSERVED)
    (tmp_path / "test_machine.py").write_text(MACHINE)
    finished = _finish_records(tmp_path, "test_observed.py", "test_machine.py")
    two, machine, explicit = (finished[n] for n in ("test_two_bugs", "runTest", "test_explicit"))
    assert two["failures_from"] == machine["failures_from"] == "observability"
    assert sorted(f["example"] for f in two["failures"]) == [
        "test_two_bugs(\n    x=-11,\n)",
        "test_two_bugs(\n    x=11,\n)",
    ]
    (steps,) = machine["failures"]
    assert steps["example"].startswith("state = Counter()\n")
    assert steps["example"].endswith("\nstate.teardown()")
    for failure in [*two["failures"], steps]:
        assert failure["version"] == hypothesis.__version__ and failure["blob"], failure
    assert explicit["failures_from"] == "notes"
    assert explicit["failures"] == [
        {"example": "test_explicit(\n    x=5,\n)", "version": None, "blob": None}
    ]


def _records(folder: Path, stem: str, *records: dict, tail: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r) + "\n" for r in records)
    (folder / f"{stem}.jsonl").write_text(lines + tail)


def test_a_test_that_never_finished_is_never_passed(tmp_path):
    """Issue 7: a started test without a finish line is hung (its timeout dumped stacks),
    crashed (xdist said so, or the round ended by itself) or cut off (the campaign stopped
    the round); a selected test never started is reported as such; a half-written last line
    is not a record."""
    start = {"event": "start", "round": 1, "seed": 7}
    _records(tmp_path, "gw0-1", {**start, "nodeid": "t.py::hung"}, tail='{"event": "fin')
    (tmp_path / "gw0-1.hang").write_text("Timeout (0:00:03)!\nThread 0x1:\n  File t.py")
    _records(tmp_path, "gw1-2", {**start, "nodeid": "t.py::crashed"})
    _records(tmp_path, "main-3", {"event": "crash", "nodeid": "t.py::crashed", "round": 1})
    collected = ["t.py::hung", "t.py::crashed", "t.py::fine", "t.py::running", "t.py::never"]
    _records(
        tmp_path, "gw0-4", {"event": "collected", "nodeids": collected, "round": 1},
        {**start, "nodeid": "t.py::fine"},
        {"event": "finish", "nodeid": "t.py::fine", "outcome": "passed", "examples": 9},
        {**start, "nodeid": "t.py::running"},
    )  # fmt: skip
    stopped = {r.nodeid: r for r in read_round(tmp_path, 1, stopped=True)}
    assert {k: r.outcome for k, r in stopped.items()} == {
        "t.py::hung": RunOutcome.HUNG,
        "t.py::crashed": RunOutcome.CRASHED,
        "t.py::fine": RunOutcome.PASSED,
        "t.py::running": RunOutcome.CUT_OFF,
        "t.py::never": RunOutcome.NOT_STARTED,
    }
    assert stopped["t.py::hung"].seed == 7 and "t.py" in stopped["t.py::hung"].stacks
    ended = {r.nodeid: r.outcome for r in read_round(tmp_path, 1, stopped=False)}
    assert ended["t.py::running"] is RunOutcome.CRASHED
    _records(tmp_path, "gw9-9", {"event": "start"}, tail="\n")
    (tmp_path / "gw9-9.jsonl").write_text('not json\n{"event": "start"}\n')
    with pytest.raises(RecordError) as refused:
        read_round(tmp_path, 1, stopped=True)
    assert refused.value.reason is RecordRefusal.MALFORMED_LINE


def test_a_finish_record_names_where_its_failures_were_read(tmp_path):
    """Issue 18: ``failures_from`` is read into the run; a source the plugin never writes is
    a malformed line, not a guess."""
    finish = {"event": "finish", "nodeid": "t.py::p", "outcome": "failed", "round": 1,
              "failures": [{"example": "p(x=1)", "version": None, "blob": None}]}  # fmt: skip
    _records(tmp_path / "good", "gw0-1", {**finish, "failures_from": "notes"})
    (run,) = read_round(tmp_path / "good", 1, stopped=True)
    assert run.failures_from is FailureSource.NOTES and run.failures[0].example == "p(x=1)"
    _records(tmp_path / "bad", "gw0-1", {**finish, "failures_from": "stdout"})
    with pytest.raises(RecordError) as refused:
        read_round(tmp_path / "bad", 1, stopped=True)
    assert refused.value.reason is RecordRefusal.MALFORMED_LINE and "stdout" in str(refused.value)


def _report(runs: tuple[TestRun, ...]) -> CampaignReport:
    return CampaignReport(
        profile="nightly", workers=2, cores=2, budget_seconds=60, elapsed_seconds=59.5,
        rounds_seconds=58.0, database="/db", read_only=False, replay=None, selection=(),
        test_timeout=30,
        rounds=(RoundSummary(1, 25, 0.0, 30.0, RoundEnding.COMPLETED, 1, "r1.log"),
                RoundSummary(2, 50, 30.0, 28.0, RoundEnding.CUT_OFF, -2, "r2.log")),
        runs=runs, crosshair=LaneSummary(LaneStatus.NOT_RUN, "--crosshair-share 0"),
        cpu_seconds=104.4, faults=(), started_at="2026-01-01T00:00:00+00:00",
        context={"commit": "abc123", "python": "3.11.7", "hypothesis": "6.170.17"},
    )  # fmt: skip


def test_reports_name_every_finding_with_its_reproduction(tmp_path):
    """Issue 7: JSON (per test: examples, seed, minimal example, reproduction command),
    Markdown and JUnit XML agree; a repeated failure is one finding over its rounds."""
    failure = FailureExample("test_p(\n    x=100,\n)", "6.155.2", "AAAB")
    found = dict(failures=(failure,), failures_from=FailureSource.OBSERVABILITY, error="E")
    runs = (
        TestRun("t.py::test_p", 1, RunOutcome.FAILED, 1.0, 40, 11, "generate", **found),
        TestRun("t.py::test_p", 2, RunOutcome.FAILED, 0.5, 1, 12, "reuse", **found),
        TestRun("t.py::test_h", 1, RunOutcome.HUNG, seed=13, stacks="Timeout (0:00:30)!"),
        TestRun("t.py::test_f", 1, RunOutcome.PASSED, 2.0, 50, 14),
        TestRun("t.py::test_c", 2, RunOutcome.CUT_OFF, seed=15),
    )
    report = _report(runs)
    data = json.loads(write_json(report, tmp_path).read_text())
    assert data["status"] == "failed" and data["exit_status"] == 1
    assert data["totals"]["findings"] == 2 and data["totals"]["examples"] == 91
    assert data["totals"]["busy_share"] == round(104.4 / (58.0 * 2), 4)
    tests = {t["nodeid"]: t for t in data["tests"]}
    (planted,) = tests["t.py::test_p"]["failures"]
    assert planted["rounds"] == [1, 2] and planted["seed"] == 11
    assert planted["examples_from"] == "observability"
    (example,) = planted["examples"]
    assert example["minimal_example"] == failure.example
    assert example["command"] == (
        "python -m pytest t.py::test_p -p practice_loop.harness.fuzz_plugin "
        "--hypothesis-profile=nightly --fuzz-reproduce=6.155.2:AAAB"
    )
    (hung,) = tests["t.py::test_h"]["failures"]
    assert hung["outcome"] == "hung" and "--fuzz-seed=13" in hung["rerun_command"]
    assert tests["t.py::test_f"]["examples_per_second"] == 25.0
    assert tests["t.py::test_c"]["runs"] == 0 and tests["t.py::test_c"]["cut_off"] == 1
    markdown = write_markdown(report, tmp_path).read_text()
    assert example["command"] in markdown and "x=100" in markdown
    # Issue 18: each report says which code and which tools made it.
    assert data["context"] == report.context
    assert "made with commit `abc123`, python `3.11.7`, hypothesis `6.170.17`" in markdown
    suite = ET.parse(write_junit(report, tmp_path)).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("5", "1", "1")
    assert suite.get("skipped") == "2"  # the test cut off every time, and the lane not run
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["test_p"].find("failure") is not None
    assert cases["test_h"].find("error") is not None
    assert cases["test_f"].find("failure") is None and cases["test_f"].find("error") is None


@pytest.fixture(scope="session")
def junit_10_schema(tmp_path_factory):
    """The junit-10.xsd pytest's JUnit XML follows, from the sdist of the pytest installed
    here (the wheel lacks it; pip fetches the sdist from the index it is configured with, and
    nothing of it is kept in this repository)."""
    import io
    import tarfile

    try:
        import xmlschema
    except ImportError:
        absent("xmlschema is not installed (pip install 'practice-loop[test]')")
    folder = tmp_path_factory.mktemp("pytest-sdist")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
               ":all:", f"pytest=={pytest.__version__}", "-d", str(folder)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        absent(f"pytest's sdist could not be downloaded: {done.stderr[-1500:]}")
    (sdist,) = folder.glob("pytest-*.tar.gz")
    with tarfile.open(sdist) as archive:
        (member,) = [m for m in archive.getmembers() if m.name.endswith("/junit-10.xsd")]
        schema = archive.extractfile(member).read()
    return xmlschema.XMLSchema(io.BytesIO(schema))


def test_the_junit_report_validates_against_pytests_junit_10_schema(junit_10_schema, tmp_path):
    """Issue 18: every part of fuzz-junit.xml (a failure, a hung test, one never run, the
    lane cut off or with a counterexample, a fault) is valid junit-10.xsd, the schema pytest's
    own JUnit XML follows; per-test figures are in its output, not properties."""
    failure = FailureExample("test_p(\n    x=100,\n)", "6.155.2", "AAAB")
    runs = (
        TestRun("t.py::test_p", 1, RunOutcome.FAILED, 1.0, 40, 11, "generate",
                failures=(failure,), failures_from=FailureSource.OBSERVABILITY, error="E"),
        TestRun("t.py::test_h", 1, RunOutcome.HUNG, seed=13, stacks="Timeout (0:00:30)!"),
        TestRun("t.py::test_c", 2, RunOutcome.CUT_OFF, seed=15),
        TestRun("t.py::test_f", 1, RunOutcome.PASSED, 2.0, 50, 14),
    )  # fmt: skip
    report = _report(runs)
    for lane in (report.crosshair, LaneSummary(LaneStatus.COUNTEREXAMPLE, "x == 3")):
        variant = CampaignReport(
            **{**{f: getattr(report, f) for f in report.__slots__}, "crosshair": lane,
               "faults": [(Fault.PYTEST_ERROR, "pytest exited with status 3")]}
        )  # fmt: skip
        path = write_junit(variant, tmp_path)
        junit_10_schema.validate(str(path))
    cases = {c.get("name"): c for c in ET.parse(path).getroot().iter("testcase")}
    assert cases["test_f"].findtext("system-out") == "examples: 50\nseeds: 14"
    assert cases["pytest_error"].find("error") is not None


_NAMED = """\
import pytest


class TestGroup:
    def test_method(self):
        pass

    @pytest.mark.parametrize("value", ["a::b", "c/d"])
    def test_param(self, value):
        pass


def test_function():
    pass
"""


def test_the_junit_report_names_each_test_as_pytest_does(tmp_path):
    """Issue 18: a test case's classname and name are pytest's own (classes in the classname,
    parameters in the name, whatever they contain), so a CI tool shows a campaign's tests
    under the names pytest's own report gives them."""
    folder = tmp_path / "tests" / "sub"
    folder.mkdir(parents=True)
    (folder / "test_named.py").write_text(_NAMED)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--junitxml=own.xml",
         "-o", "junit_family=xunit2", "tests"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout
    own = ET.parse(tmp_path / "own.xml").getroot().iter("testcase")
    expected = sorted((case.get("classname"), case.get("name")) for case in own)
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
         "tests"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True,
    )  # fmt: skip
    nodeids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(nodeids) == len(expected) == 4, collected.stdout
    report = _report(tuple(TestRun(n, 1, RunOutcome.PASSED, 1.0, 5) for n in nodeids))
    ours = ET.parse(write_junit(report, tmp_path)).getroot().iter("testcase")
    named = sorted((c.get("classname"), c.get("name")) for c in ours if c.get("classname")
                   not in ("crosshair", "campaign"))  # fmt: skip
    assert named == expected


def test_a_report_without_findings_passes_only_with_work_done(tmp_path):
    """Issue 7: exit 0 only when nothing failed and no fault kept the campaign from its work."""
    passed = _report((TestRun("t.py::f", 1, RunOutcome.PASSED, 1.0, 5),))
    assert passed.exit_status == 0
    failed_lane = CampaignReport(
        **{**{f: getattr(passed, f) for f in passed.__slots__},
           "crosshair": LaneSummary(LaneStatus.COUNTEREXAMPLE, "counterexample")}
    )  # fmt: skip
    assert failed_lane.exit_status == 1


def test_regression_patches_apply_and_fail(tmp_path):
    """Issue 7: --write-regressions: an @example under the property's @given, and a
    step-by-step test for a state machine; applied, each fails on the minimal example."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    (tmp_path / "test_machine.py").write_text(MACHINE)
    sample = regression_patch(
        tmp_path, "test_sample.py",
        [Regression("test_sample.py::test_planted", "test_planted(\n    x=100,\n)")],
    )  # fmt: skip
    machine = regression_patch(
        tmp_path, "test_machine.py",
        [Regression("test_machine.py::TestCounter::runTest",
                    "state = Counter()\nstate.add(k=2)\nstate.add(k=5)\nstate.teardown()")],
    )  # fmt: skip
    assert sample.unresolved_names == () and sample.refused == ()
    assert machine.unresolved_names == () and machine.refused == ()
    assert "+@example(\n+    x=100,\n+)" in sample.diff
    for patch in (sample, machine):
        (tmp_path / "fix.patch").write_text(patch.diff)
        applied = subprocess.run(
            ["git", "apply", "fix.patch"], cwd=tmp_path, capture_output=True, text=True
        )
        assert applied.returncode == 0, applied.stderr
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--hypothesis-profile=default", "test_sample.py::test_planted", "test_machine.py",
         "-k", "planted or regression"],
        cwd=tmp_path, env=_environment(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "2 failed" in result.stdout, result.stdout
    # The @example's failure shows the explicit example and its argument; Hypothesis 6.159
    # renamed the heading "Falsifying explicit example" to "Failing explicit example".
    explicit = re.search(
        r"(?:Falsifying|Failing) explicit example: test_planted\(\n[E ]*x=100,", result.stdout
    )
    assert explicit is not None and "below_seven" in result.stdout, result.stdout


# -- whole campaigns -----------------------------------------------------------------------


def test_a_campaign_finds_reports_and_replays_a_planted_defect(tmp_path, redis_url):
    """Issue 7: a campaign on every worker finds the planted failure, reports a hung and a
    crashed test as such (never as passed), runs only Hypothesis tests, stops on its own
    near its budget, and hands out a reproduction command that fails on its own; the next
    campaign on the same Redis database replays the failure first."""
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    budget = 20.0
    first = _campaign(
        tmp_path, "--engine", "rounds", "--minutes", str(budget / 60), "-j", "2",
        "--database", redis_url, "--test-timeout", "3", "--write-regressions", "test_sample.py",
    )  # fmt: skip
    assert first.returncode == 1, first.stderr
    report = json.loads((tmp_path / "fuzz-report" / "fuzz-report.json").read_text())
    assert report["status"] == "failed" and report["totals"]["cpu_seconds"] > 0
    assert report["elapsed_seconds"] <= budget + STOP_GRACE_SECONDS + 5
    tests = {t["nodeid"]: t for t in report["tests"]}
    assert "test_sample.py::test_not_a_property" not in tests
    assert {f["outcome"] for f in tests["test_sample.py::test_hangs"]["failures"]} == {"hung"}
    assert "in test_hangs" in tests["test_sample.py::test_hangs"]["failures"][0]["stacks"]
    assert {f["outcome"] for f in tests["test_sample.py::test_crashes"]["failures"]} == {"crashed"}
    for nodeid in ("test_sample.py::test_hangs", "test_sample.py::test_crashes"):
        assert "passed" not in tests[nodeid]["outcomes"]
    assert tests["test_sample.py::test_fine"]["failures"] == []
    assert tests["test_sample.py::test_fine"]["examples"] > 0
    (planted,) = tests["test_sample.py::test_planted"]["failures"]
    (example,) = planted["examples"]
    assert example["minimal_example"] == "test_planted(\n    x=100,\n)"
    assert example["command"] in first.stderr
    assert (tmp_path / "fuzz-report" / "regressions" / "test_sample_py.patch").is_file()

    # The reproduction fails on its own: no database, one example.
    reproduced = subprocess.run(
        example["command"].split(), cwd=tmp_path, env=_environment(),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert reproduced.returncode == 1 and "x=100" in reproduced.stdout, reproduced.stdout

    second = _campaign(
        tmp_path, "--engine", "rounds", "--minutes", "0.15", "-j", "1", "--database", redis_url,
        "-k", "planted", "--out", "second", "test_sample.py",
    )  # fmt: skip
    assert second.returncode == 1, second.stderr
    replay = json.loads((tmp_path / "second" / "fuzz-report.json").read_text())
    assert [t["nodeid"] for t in replay["tests"]] == ["test_sample.py::test_planted"]
    (again,) = replay["tests"][0]["failures"]
    assert again["found_in"] == "reuse" and again["rounds"][0] == 1


PARAMETRIZED = """\

import pytest


@pytest.mark.parametrize("k", [1, 3])
@given(st.text())
def test_parametrized(k, s):
    assert len(s) * k != 6  # fails for k=1 (six characters) and k=3 (two)
"""


@pytest.mark.parametrize(
    "search, outcomes, expected",
    [
        (30.0, (), 12.0),  # the floor
        (300.0, (), 60.0),  # a fifth of the search
        (1000.0, (), 120.0),  # the ceiling
        (100.0, ("hung", "crashed"), 20.0 + (2.5 + 3.0) + 2.5),  # each loss paid again
        (100.0, ("crashed",), 20.0 + 2.5),  # a crash ends its worker at once
        (30.0, ("hung", "crashed"), 15.0),  # never more than half the search
        (1000.0, ("hung",), 120.0),  # nor past the ceiling
    ],
)
def test_the_confirmation_round_keeps_what_each_lost_worker_costs_it_again(
    search, outcomes, expected
):
    """Issue 19: the round re-runs each test that lost the search a worker, and that test
    ends the round's pytest-xdist worker again: after its timeout if it hung, then a new
    worker starts. The reserve pays both, a worker's start as the search measured it."""
    losses = [WorkerLoss(f"t.py::{o}", o, "", "", 1.0) for o in outcomes]
    reserve = confirmation_reserve(search, losses, test_timeout=3.0, start_seconds=2.5)
    assert reserve == pytest.approx(expected)


def test_an_adaptive_campaign_searches_confirms_and_replays_what_it_found(tmp_path, redis_url):
    """Issue 19: the long-lived workers find the planted failures (a parametrized test's
    too), lose a worker to the hung and the crashed test and go on without them, and the
    confirmation round replays each failure from the database (``reuse``) and shrinks it
    once, so the report has the usual minimal examples and reproductions. The report holds
    the search: per-property counts, every worker's seeds, SVG charts. The next campaign
    on the same database replays the failures its workers kept, once, as known."""
    (tmp_path / "test_sample.py").write_text(SAMPLE + PARAMETRIZED)
    # A Redis database of its own: the round-robin test above leaves test_planted's shrunk
    # failure in the module's shared one, which this campaign would rightly replay as known.
    database = redis_url + "/4"
    # Long enough that the confirmation round's reserve (the floor, plus test_hangs' timeout
    # and two workers' starts) is not cut to half the search.
    budget = 45.0
    first = _campaign(
        tmp_path, "--minutes", str(budget / 60), "-j", "2", "--database", database,
        "--test-timeout", "3", "test_sample.py",
    )  # fmt: skip
    assert first.returncode == 1, first.stderr
    report = json.loads((tmp_path / "fuzz-report" / "fuzz-report.json").read_text())
    assert report["engine"] == "adaptive" and report["status"] == "failed"
    assert report["elapsed_seconds"] <= budget + STOP_GRACE_SECONDS + 5
    search = report["adaptive"]
    planted = "test_sample.py::test_planted"
    params = {"test_sample.py::test_parametrized[1]", "test_sample.py::test_parametrized[3]"}
    assert {f["nodeid"] for f in search["findings"]} == {planted, *params}
    assert all(not f["known"] for f in search["findings"])
    # Each lost its worker once: the restarted worker goes on without it.
    assert sorted((loss["nodeid"], loss["outcome"]) for loss in search["losses"]) == [
        ("test_sample.py::test_crashes", "crashed"),
        ("test_sample.py::test_hangs", "hung"),
    ]
    (hang,) = [loss for loss in search["losses"] if loss["outcome"] == "hung"]
    assert "in test_hangs" in hang["stacks"]
    properties = {p["nodeid"]: p for p in search["properties"]}
    assert "test_sample.py::test_not_a_property" not in properties
    assert properties["test_sample.py::test_fine"]["examples"] > 100
    assert properties["test_sample.py::test_fine"]["findings"] == 0
    assert all(len(w["seeds"]) >= 1 for w in search["workers"]) and len(search["workers"]) == 2
    assert 0 < search["worker_start_seconds"] < budget  # what the confirmation reserve paid
    for chart in search["charts"]:
        assert ElementTree.parse(tmp_path / chart).getroot().tag.endswith("svg")
    # The confirmation round: only what needs it, each failure replayed from the database.
    tests = {t["nodeid"]: t for t in report["tests"]}
    assert set(tests) == {planted, *params, "test_sample.py::test_hangs",
                          "test_sample.py::test_crashes"}  # fmt: skip
    for nodeid in (planted, *params):
        (failure,) = tests[nodeid]["failures"]
        assert failure["found_in"] == "reuse", nodeid
    (example,) = tests[planted]["failures"][0]["examples"]
    assert example["minimal_example"] == "test_planted(\n    x=100,\n)"
    assert {f["outcome"] for f in tests["test_sample.py::test_hangs"]["failures"]} == {"hung"}
    assert {f["outcome"] for f in tests["test_sample.py::test_crashes"]["failures"]} == {"crashed"}
    markdown = (tmp_path / "fuzz-report" / "fuzz-report.md").read_text()
    assert "## Adaptive search" in markdown and "](charts/coverage.svg)" in markdown

    second = _campaign(
        tmp_path, "--minutes", "0.3", "-j", "1", "--database", database, "-k", "planted",
        "--out", "second", "test_sample.py",
    )  # fmt: skip
    assert second.returncode == 1, second.stderr
    again = json.loads((tmp_path / "second" / "fuzz-report.json").read_text())
    (known,) = again["adaptive"]["findings"]
    assert known["nodeid"] == planted and known["known"]
    assert [t["nodeid"] for t in again["tests"]] == [planted]
    assert again["tests"][0]["failures"][0]["found_in"] == "reuse"


@pytest.mark.parametrize("engine", ["rounds", "adaptive"])
def test_ctrl_c_keeps_the_reports_and_exits_130(tmp_path, engine):
    """Issues 7, 19: Ctrl-C stops the round or the search, writes what was done, claims
    nothing it did not do."""
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    command = [sys.executable, "-m", "practice_loop", "fuzz", "--profile", "default",
               "--engine", engine, "--crosshair-share", "0", "--minutes", "2", "-j", "1",
               "-k", "fine", "--database", "db", "test_sample.py"]  # fmt: skip
    campaign = subprocess.Popen(
        command, cwd=tmp_path, env=_environment(), stderr=subprocess.PIPE, text=True
    )
    out = tmp_path / "fuzz-report"
    started = '"start"' if engine == "rounds" else '"status"'
    for _ in range(600):  # until the first test has started (run, for a worker)
        if any(started in p.read_text() for p in out.glob("*/*.jsonl")):
            break
        time.sleep(0.1)
    campaign.send_signal(signal.SIGINT)
    _, stderr = campaign.communicate(timeout=60)
    assert campaign.returncode == 130, stderr
    report = json.loads((out / "fuzz-report.json").read_text())
    assert report["status"] == "interrupted"
    assert [f["fault"] for f in report["faults"]] == ["interrupted"]
    if engine == "rounds":
        assert report["rounds"][-1]["ending"] == "interrupted"
    else:
        assert report["rounds"] == [] and report["adaptive"]["interrupted"]
        (fine,) = report["adaptive"]["properties"]
        assert fine["nodeid"] == "test_sample.py::test_fine" and fine["examples"] > 0
