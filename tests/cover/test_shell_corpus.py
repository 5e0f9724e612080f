"""The labelled shell corpus (tests/corpus/shell_corpus.json): the command line's contract of
issue 15 (docs/adr/0012), case by case, through the real CLI in a subprocess.

Each case is data: a setup (input lines, a copy of the sample store and how it is damaged, or
what else is at the store path), the argv after ``practice-loop`` and the exact expectation
(exit status, the typed skip, unjudged, store or verification reason, and whether a file may
change). The corpus file's top-level ``comment`` is the vocabulary; this module is its one
interpreter. A second test holds the file itself to its rules: its schema version, unique
ids, a closed list of flags, and every member of the reason vocabularies the corpus covers
reached by some case or listed in ``not_covered`` with why. A case flagged ``known_bug`` is
``xfail(strict=True)`` with its reason, so it fails, and must be unflagged, once fixed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import practice_loop
from practice_loop.kernel import TraceFailureCode
from practice_loop.product.runner import _CONFLICTS, SkipReason, Unjudged
from practice_loop.product.store import _MESSAGES, DEFAULT_STORE, StoreProblem
from practice_loop.product.verification import CaseProblem
from store_support import immutable

CORPUS_PATH = Path(__file__).resolve().parents[1] / "corpus" / "shell_corpus.json"
CORPUS: dict[str, Any] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))
SCHEMA_VERSION = "shell_corpus.v1"
STORE = "store.sqlite"
INPUT = "input.jsonl"
TIMEOUT_SECONDS = 120

FLAGS = frozenset(
    {
        "valid",
        "idempotence",
        "hostile_line",
        "gold",
        "wrong_answer",
        "conflict",
        "damaged_store",
        "forged_trace",
        "foreign_file",
        "missing_path",
        "locked",
        "usage",
        "ci",
        "known_bug",
    }
)
CASE_KEYS = frozenset({"id", "comment", "flags", "setup", "command", "expect", "known_bug"})
SETUP_KEYS = frozenset(
    {
        "store",
        "damage",
        "file",
        "lines",
        "files",
        "before",
        "env",
        "lock",
        "immutable",
    }
)
DAMAGE_KEYS = frozenset({"sql", "vector", "truncate", "truncate_bytes", "zero"})
FILE_KEYS = frozenset({"bytes_b64", "text", "sqlite", "directory", "symlink"})
EXPECT_KEYS = frozenset(
    {
        "exit",
        "stdout_contains",
        "stderr_contains",
        "stdout_excludes",
        "stderr_excludes",
        "skipped",
        "findings",
        "json",
        "store_problem",
        "rows",
        "verify_after",
        "store_unchanged",
        "no_file_created",
        "stdout_line_count",
        "stderr_line_count",
    }
)
VOCABULARIES: dict[str, type] = {
    "SkipReason": SkipReason,
    "Unjudged": Unjudged,
    "StoreProblem": StoreProblem,
    "CaseProblem": CaseProblem,
    "TraceFailureCode": TraceFailureCode,
}
_PLACEHOLDER = re.compile(r"\{(store|input|trace_of|vector_trace_id)(?::([^{}]+))?\}")


# ------------------------------------------------------------------------------------------
# the sample store, built once per module (per xdist worker) and copied per case


def _cli(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "practice_loop", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=TIMEOUT_SECONDS,
    )


@pytest.fixture(scope="module")
def child_env(tmp_path_factory) -> dict[str, str]:
    """The environment of every command: this one without ``CI`` (a case sets it), and with
    byte code cached in a directory of the session's own, so that each of the corpus's
    hundred-odd interpreters does not compile the package again (nothing is written to src/).

    The commands run the package this test imported: its directory goes first on the path,
    then this one's entries made absolute. A relative entry (``PYTHONPATH=src``) would name a
    directory under the case's, and the command would run whatever copy is installed, which
    need not be the tree under test (a patched copy of it, say)."""
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    package_root = Path(practice_loop.__file__).resolve().parents[1]
    inherited = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(package_root), *inherited])
    return env


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory, child_env) -> tuple[Path, dict[str, str]]:
    """The store the main job writes from the shipped sample, and each case's trace id."""
    directory = tmp_path_factory.mktemp("sample")
    done = _cli(["run", "--store", STORE, "--quiet"], directory, child_env)
    assert done.returncode == 0, done.stderr
    with contextlib.closing(sqlite3.connect(f"file:{directory / STORE}?mode=ro", uri=True)) as db:
        traces = dict(db.execute("SELECT case_id, trace_id FROM cases"))
    return directory / STORE, traces


# ------------------------------------------------------------------------------------------
# setting a case up


def _vector(named: dict[str, Any]) -> dict[str, object]:
    """The parameters a damage binds from a trace document of the shipped vectors."""
    document = json.loads(
        (resources.files("practice_loop") / "data" / "vectors" / named["file"]).read_text(
            encoding="utf-8"
        )
    )
    for group in document["testGroups"]:
        for test in group["tests"]:
            if test["tcId"] == named["tcId"]:
                raw = test["input"]["bytes"]
                body = raw["utf8"].encode("utf-8") if "utf8" in raw else bytes.fromhex(raw["hex"])
                trace = json.loads(body)
                return {
                    "vector_body": body,
                    "vector_trace_id": trace["trace_id"],
                    "vector_question": trace["frame"]["source_text"],
                }
    raise AssertionError(f"no vector {named} in the shipped vectors")


def _run_sql(path: Path, statements: list[str], parameters: dict[str, object]) -> None:
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        for statement in statements:
            used = {name: value for name, value in parameters.items() if f":{name}" in statement}
            db.execute(statement, used)


def _damage(path: Path, damage: dict[str, Any]) -> dict[str, object]:
    parameters = _vector(damage["vector"]) if "vector" in damage else {}
    if "sql" in damage:
        _run_sql(path, damage["sql"], parameters)
    data = path.read_bytes()
    if "truncate" in damage:
        path.write_bytes(data[: int(len(data) * damage["truncate"])])
    if "truncate_bytes" in damage:
        path.write_bytes(data[: damage["truncate_bytes"]])
    if "zero" in damage:
        offset, length = damage["zero"]["offset"], damage["zero"]["length"]
        assert offset + length <= len(data)
        path.write_bytes(data[:offset] + bytes(length) + data[offset + length :])
    return parameters


def _put_file(path: Path, spec: dict[str, Any]) -> None:
    if "bytes_b64" in spec:
        path.write_bytes(base64.b64decode(spec["bytes_b64"]))
    elif "text" in spec:
        path.write_text(spec["text"], encoding="utf-8")
    elif "sqlite" in spec:
        _run_sql(path, spec["sqlite"], {})
    elif "directory" in spec:
        path.mkdir()
    elif "symlink" in spec:
        path.symlink_to(spec["symlink"])
    else:
        raise AssertionError(f"unknown file setup {spec}")


def _line_bytes(line: object) -> bytes:
    if type(line) is str:
        return line.encode("utf-8")
    assert type(line) is dict, line
    if "b64" in line:
        return base64.b64decode(line["b64"])
    parts = []
    for part in line["concat"]:
        parts.append(part if type(part) is str else part[0] * part[1])
    return "".join(parts).encode("utf-8")


def _write_lines(path: Path, lines: list[object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(_line_bytes(line) + b"\n" for line in lines))


def _substitute(value: Any, context: dict[str, Any]) -> Any:
    if type(value) is str:

        def one(match: re.Match[str]) -> str:
            name, argument = match.group(1), match.group(2)
            if name == "trace_of":
                return context["traces"][argument]
            return str(context[name])

        return _PLACEHOLDER.sub(one, value)
    if type(value) is list:
        return [_substitute(item, context) for item in value]
    if type(value) is dict:
        return {_substitute(k, context): _substitute(v, context) for k, v in value.items()}
    return value


_HOLDER = """
import sqlite3, sys
holder = sqlite3.connect(sys.argv[1], isolation_level=None)
holder.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
holder.execute("ROLLBACK")
"""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Another process holds ``BEGIN EXCLUSIVE`` on ``path`` (in another process, because
    POSIX locks of this one would be dropped as soon as the snapshot closes the file)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.communicate(timeout=TIMEOUT_SECONDS)


def _snapshot(directory: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``directory``: a file's SHA-256, a link's target, a directory."""
    found: dict[str, tuple[str, str]] = {}
    pending = [directory]
    while pending:
        current = pending.pop()
        for entry in os.scandir(current):
            name = os.path.relpath(entry.path, directory)
            if entry.is_symlink():
                found[name] = ("link", os.readlink(entry.path))
            elif entry.is_dir():
                found[name] = ("dir", "")
                pending.append(Path(entry.path))
            else:
                found[name] = ("file", hashlib.sha256(Path(entry.path).read_bytes()).hexdigest())
    return found


def _store_argument(command: list[str]) -> str:
    if "--store" in command:
        return command[command.index("--store") + 1]
    return str(DEFAULT_STORE)


def _rows(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute("SELECT count(*) FROM cases").fetchone()[0]


def _expected_finding(entry: list[str]) -> list[str]:
    """A pending code (one the kernel does not have yet) as what is shown until it lands."""
    code, stage, *rest = entry
    known = {member.value for member in TraceFailureCode} | {m.value for m in CaseProblem}
    if code not in known and code in CORPUS["pending_codes"]:
        code, stage = CORPUS["pending_codes"][code]
    return [code, stage, *rest]


def _marks(case: dict[str, Any]) -> list[pytest.MarkDecorator]:
    if "known_bug" in case:
        return [pytest.mark.xfail(strict=True, reason=f"known bug: {case['known_bug']}")]
    return []


# ------------------------------------------------------------------------------------------
# running a case


@pytest.mark.parametrize(
    "case", [pytest.param(case, id=case["id"], marks=_marks(case)) for case in CORPUS["cases"]]
)
def test_shell_corpus_case(case, sample_store, child_env, tmp_path):
    """Issue 15 and docs/adr/0012: the command gives exactly the case's exit status, typed
    reason and output, touches no file it must not, and never prints a traceback."""
    setup, expect = case["setup"], case["expect"]
    directory = tmp_path / "case"
    directory.mkdir()
    store = directory / STORE
    sample, traces = sample_store
    context: dict[str, Any] = {"store": STORE, "input": INPUT, "traces": traces}
    if setup.get("store") == "sample":
        shutil.copyfile(sample, store)
        context.update(_damage(store, setup.get("damage", {})))
    if "file" in setup:
        _put_file(store, setup["file"])
    if "lines" in setup:
        _write_lines(directory / INPUT, setup["lines"])
    for name, lines in setup.get("files", {}).items():
        _write_lines(directory / name, lines)
    env = {**child_env, **setup.get("env", {})}
    for step in setup.get("before", []):
        done = _cli(_substitute(step["command"], context), directory, env)
        assert done.returncode == step["exit"], (step, done.stdout[-2000:], done.stderr[-2000:])

    command = _substitute(case["command"], context)
    with contextlib.ExitStack() as held:
        if setup.get("immutable"):
            held.enter_context(immutable(store))
        if setup.get("lock") == "exclusive":
            held.enter_context(_locked(store))
        before = _snapshot(directory)
        done = _cli(command, directory, env)
        after = _snapshot(directory)
    shown = (
        f"$ practice-loop {' '.join(command)}\n"
        f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    )

    assert "Traceback" not in done.stdout and "Traceback" not in done.stderr, shown
    assert not [name for name in after if ".creating-" in name], (after, shown)
    assert done.returncode == expect["exit"], shown
    for text in _substitute(expect.get("stdout_contains", []), context):
        assert text in done.stdout, (text, shown)
    for text in _substitute(expect.get("stderr_contains", []), context):
        assert text in done.stderr, (text, shown)
    for text in _substitute(expect.get("stdout_excludes", []), context):
        assert text not in done.stdout, (text, shown)
    for text in _substitute(expect.get("stderr_excludes", []), context):
        assert text not in done.stderr, (text, shown)
    if "stdout_line_count" in expect:
        assert done.stdout.count("\n") == expect["stdout_line_count"], shown
    if "stderr_line_count" in expect:
        assert done.stderr.count("\n") == expect["stderr_line_count"], shown
    store_path = directory / _store_argument(command)
    if "store_problem" in expect:
        message = _MESSAGES[StoreProblem(expect["store_problem"])]
        assert f"{_store_argument(command)}: {message}" in done.stderr, shown
    if expect.get("store_unchanged"):
        assert after == before, shown
    if expect.get("no_file_created"):
        assert after == before, shown
        assert not os.path.lexists(store_path), shown
    if {"skipped", "findings", "json"} & set(expect):
        output = json.loads(done.stdout)
        if "skipped" in expect:
            found = [[line["line_number"], line["reason"]] for line in output["skipped_lines"]]
            assert found == expect["skipped"], shown
            for number, reason in found:
                assert f"line {number} skipped: {reason}" in done.stderr, shown
        if "findings" in expect:
            given = _substitute(expect["findings"], context)
            wanted = [_expected_finding(entry) for entry in given]
            found = [
                [failure["code"], failure["stage"], failure["subject"]][: len(entry)]
                for failure, entry in zip(output["failures"], wanted, strict=False)
            ]
            assert len(output["failures"]) == len(wanted) and found == wanted, shown
        for key, value in _substitute(expect.get("json", {}), context).items():
            assert output[key] == value, (key, shown)
    if "rows" in expect:
        assert _rows(store_path) == expect["rows"], shown
    if "verify_after" in expect:
        verified = _cli(["verify", "--store", STORE, "--json", "--quiet"], directory, env)
        assert verified.returncode == expect["verify_after"], (verified.stdout, verified.stderr)
        if expect["verify_after"] == 0:
            assert json.loads(verified.stdout)["valid"] is True


# ------------------------------------------------------------------------------------------
# the corpus file itself


def _covered() -> dict[str, set[str]]:
    """Each vocabulary's members some case (not a known bug) expects."""
    covered: dict[str, set[str]] = {name: set() for name in VOCABULARIES}
    codes = {
        "CaseProblem": {member.value for member in CaseProblem},
        "TraceFailureCode": {member.value for member in TraceFailureCode},
    }
    for case in CORPUS["cases"]:
        if "known_bug" in case:
            continue
        expect = case["expect"]
        covered["SkipReason"] |= {reason for _, reason in expect.get("skipped", [])}
        covered["Unjudged"] |= set(expect.get("json", {}).get("unjudged_by_reason", {}))
        if "store_problem" in expect:
            covered["StoreProblem"].add(expect["store_problem"])
        for code, *_ in expect.get("findings", []):
            for name, values in codes.items():
                if code in values:
                    covered[name].add(code)
    for problem, reason in _CONFLICTS.items():
        if reason.value in covered["SkipReason"]:
            covered["StoreProblem"].add(problem.value)
    return covered


def test_the_corpus_file_keeps_its_rules():
    """docs/adr/0012 as data: the corpus is pinned to its schema version; its ids are unique;
    each case uses only the documented keys and flags, says what it checks in one sentence,
    and names every reason it expects from the product's own vocabularies."""
    assert CORPUS["schema_version"] == SCHEMA_VERSION
    assert set(CORPUS["flags"]) == FLAGS, "the corpus's documented flags are the closed list"
    cases = CORPUS["cases"]
    assert CORPUS["numberOfCases"] == len(cases)
    ids = [case["id"] for case in cases]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    values = {name: {member.value for member in enum} for name, enum in VOCABULARIES.items()}
    for case in cases:
        where = case["id"]
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", where), where
        assert set(case) <= CASE_KEYS and {
            "id",
            "comment",
            "flags",
            "setup",
            "command",
            "expect",
        } <= set(case), where
        comment = case["comment"]
        assert comment.endswith(".") and "\n" not in comment and len(comment) < 240, where
        assert case["flags"] and set(case["flags"]) <= FLAGS, where
        assert ("known_bug" in case) == ("known_bug" in case["flags"]), where
        setup, expect = case["setup"], case["expect"]
        assert set(setup) <= SETUP_KEYS, where
        assert set(setup.get("damage", {})) <= DAMAGE_KEYS, where
        assert "damage" not in setup or setup.get("store") == "sample", where
        assert len(setup.get("file", {"one": 1})) == 1 and set(setup.get("file", {})) <= FILE_KEYS
        assert not ("file" in setup and "store" in setup), where
        assert setup.get("lock") in (None, "exclusive"), where
        assert set(expect) <= EXPECT_KEYS and type(expect["exit"]) is int, where
        assert all(type(arg) is str for arg in case["command"]), where
        assert {reason for _, reason in expect.get("skipped", [])} <= values["SkipReason"], where
        assert set(expect.get("json", {}).get("unjudged_by_reason", {})) <= values["Unjudged"]
        if "store_problem" in expect:
            assert expect["store_problem"] in values["StoreProblem"], where
            assert expect["exit"] == 2, where
        known = values["CaseProblem"] | values["TraceFailureCode"] | set(CORPUS["pending_codes"])
        for finding in expect.get("findings", []):
            assert finding[0] in known and len(finding) in (2, 3), (where, finding)
    for code, (shown, _) in CORPUS["pending_codes"].items():
        assert shown in values["TraceFailureCode"], code


def test_the_corpus_covers_every_reason_it_promises():
    """docs/adr/0012: every SkipReason, Unjudged, StoreProblem, CaseProblem and TraceFailureCode
    member is expected by some case (known bugs aside), or listed in ``not_covered`` with its
    reason; a member listed there that a case now covers must leave the list."""
    covered = _covered()
    assert set(CORPUS["covers"]) == set(VOCABULARIES)
    for name, enum in VOCABULARIES.items():
        members = {member.value for member in enum}
        skipped = CORPUS["not_covered"].get(name, {})
        assert all(type(why) is str and why for why in skipped.values()), name
        assert not covered[name] & set(skipped), (name, covered[name] & set(skipped))
        assert covered[name] | set(skipped) == members, (
            name,
            f"neither covered nor listed: {sorted(members - covered[name] - set(skipped))}",
            f"not members: {sorted((covered[name] | set(skipped)) - members)}",
        )
