"""``practice-loop mutants``: the prohibited-state mutant catalogue and its kill matrix.

ADR-0228 §17 and ADR-0231 §18 ask for tests that *meaningfully fail* for each prohibited state.
The catalogue (``docs/mutants/*.toml``, schema ``mutants.v1``, docs/adr/0014) holds, for each
obligation, exact source edits that break it the way a careless implementer would. This module
applies each one in a copy of the checkout (never the working tree), runs first the tests that
name the mutant's obligations and, if it survives them, the whole default suite, and writes the
kill matrix (obligation -> mutants -> killing tests) as Markdown and JSON.

A mutant is

- ``killed`` when a test that passes on the unmutated copy fails under it (every killing test is
  run again on the unmutated copy at the end; one that fails there too makes the kill
  ``unconfirmed``);
- ``timed_out`` when a test run under it does not finish in ``--timeout`` seconds (a hang is a
  fault the suite detects: counted as killed, listed apart);
- ``survived`` when every test passes under it;
- ``stale`` when its edit site is not in the file exactly once: the catalogue must move with
  the code;
- ``invalid`` when the edit does not compile or a test module cannot even be imported under it:
  a mutant must be a semantic violation, never a syntax error or an import crash.

Exit status: 0 every mutant killed (or timed out); 1 any survivor, stale, invalid or unconfirmed
mutant, or a copy whose tests fail before any mutant is applied; 2 a usage error (a catalogue
or registry that breaks its schema, an unknown id, not run in a checkout); 130 interrupted.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import enum
import hashlib
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .obligations import DEFAULT_REGISTRY, MutantKill, Registry, RegistryError, load_registry
from .report_context import run_context

CATALOGUE_SCHEMA = "mutants.v1"
KILL_MATRIX_SCHEMA = "kill_matrix.v1"
DEFAULT_CATALOGUE = Path("docs") / "mutants"
DEFAULT_OUT = Path("mutants-report")
KILL_MATRIX_JSON = "kill-matrix.json"
KILL_MATRIX_MARKDOWN = "kill-matrix.md"
DEFAULT_TIMEOUT_SECONDS = 900
PLUGIN = "practice_loop.harness.mutant_plugin"
MUTANT_ENVIRONMENT = "PRACTICE_LOOP_MUTANT"  # the id of the mutant a test run is under
SERVER = Path(__file__).with_name("mutant_server.py")

MUTANT_KEYS = frozenset({"id", "obligations", "file", "find", "replace", "summary"})
TOP_LEVEL_KEYS = frozenset({"schema", "mutant"})
MUTANT_ID = re.compile(r"[a-z0-9][a-z0-9.-]*[a-z0-9]")
# Mutants edit the code under test, never a test: a mutated test proves nothing about the code.
MUTABLE_ROOTS = ("src/", "strategies/")
Item = TypeVar("Item")
Result = TypeVar("Result")
_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*mutant[ \t]*\]\]", re.MULTILINE)


class Status(enum.StrEnum):
    KILLED = "killed"
    TIMED_OUT = "timed_out"
    SURVIVED = "survived"
    STALE = "stale"
    INVALID = "invalid"
    UNCONFIRMED = "unconfirmed"


KILLING = frozenset({Status.KILLED, Status.TIMED_OUT})


class Phase(enum.StrEnum):
    OBLIGATION_TESTS = "obligation_tests"  # the tests that name the mutant's obligations
    SUITE = "suite"  # the whole default suite, for a mutant that survived them
    # A generic kernel mutant (``practice-loop mutation-score``, docs/adr/0015):
    MODULE_TESTS = "module_tests"  # the mutated module's own test file
    KERNEL_TESTS = "kernel_tests"  # then the fast directories of the suite


class CatalogueError(ValueError):
    """The catalogue cannot be read or breaks its schema; ``problems`` names each place."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            f"invalid mutant catalogue {source}:\n" + "\n".join(f"  {p}" for p in problems)
        )


class CopyError(RuntimeError):
    """The copy the mutants run in cannot be made or does not test as the checkout does."""


@dataclasses.dataclass(frozen=True, slots=True)
class Mutant:
    id: str
    obligations: tuple[str, ...]
    file: str  # a path relative to the checkout, under MUTABLE_ROOTS
    find: str  # exact source text, present exactly once in ``file``
    replace: str
    summary: str
    source: str  # the catalogue file and line that declare it

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "obligations": list(self.obligations),
            "file": self.file,
            "find": self.find,
            "replace": self.replace,
            "summary": self.summary,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Catalogue:
    source: str
    mutants: tuple[Mutant, ...]

    @property
    def digest(self) -> str:
        """SHA-256 of the entries' canonical JSON, in id order: what a kill matrix was made of."""
        entries = sorted((m.to_json() for m in self.mutants), key=lambda entry: entry["id"])
        payload = json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# The catalogue


def load_catalogue(path: Path, registry: Registry) -> Catalogue:
    """Every ``*.toml`` of the directory ``path`` (or the one file ``path``), validated against
    ``registry``; :class:`CatalogueError` naming every defect."""
    files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
    if not files:
        raise CatalogueError(str(path), ["no *.toml files"])
    problems: list[str] = []
    mutants: list[Mutant] = []
    seen: dict[str, str] = {}
    for file in files:
        for mutant in _parse_file(file, registry, problems):
            if mutant.id in seen:
                problems.append(
                    f"{mutant.source}: duplicate id {mutant.id!r} (first {seen[mutant.id]})"
                )
                continue
            seen[mutant.id] = mutant.source
            mutants.append(mutant)
    if problems:
        raise CatalogueError(str(path), problems)
    return Catalogue(str(path), tuple(mutants))


def _parse_file(file: Path, registry: Registry, problems: list[str]) -> list[Mutant]:
    try:
        text = file.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        problems.append(f"{file}: cannot be read as TOML: {error}")
        return []
    for key in sorted(set(data) - TOP_LEVEL_KEYS):
        problems.append(f"{file}: unknown top-level key {key!r} (allowed: schema, mutant)")
    if data.get("schema") != CATALOGUE_SCHEMA:
        problems.append(
            f"{file}: schema must be {CATALOGUE_SCHEMA!r}, found {data.get('schema')!r}"
        )
    entries = data.get("mutant", [])
    if not isinstance(entries, list) or not entries:
        problems.append(f"{file}: no [[mutant]] entries")
        return []
    # tomllib keeps no positions; the n-th [[mutant]] header is the n-th entry.
    lines = [text.count("\n", 0, match.start()) + 1 for match in _HEADER.finditer(text)]
    if len(lines) != len(entries):
        lines = [0] * len(entries)
    found = []
    for entry, line in zip(entries, lines, strict=True):
        mutant = _check_entry(entry, f"{file}:{line}", registry, problems)
        if mutant is not None:
            found.append(mutant)
    return found


def _check_entry(
    entry: object, where: str, registry: Registry, problems: list[str]
) -> Mutant | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: a mutant must be a table")
        return None
    before = len(problems)
    for key in sorted(set(entry) - MUTANT_KEYS):
        problems.append(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(MUTANT_KEYS))})")
    for key in sorted(MUTANT_KEYS - set(entry)):
        problems.append(f"{where}: missing key {key!r}")
    if len(problems) > before:
        return None
    for key in ("id", "file", "find", "replace", "summary"):
        if type(entry[key]) is not str:
            problems.append(f"{where}: {key} must be a string, found {type(entry[key]).__name__}")
    if len(problems) > before:
        return None
    ident, file, find, replace, summary = (
        entry[key] for key in ("id", "file", "find", "replace", "summary")
    )
    if MUTANT_ID.fullmatch(ident) is None:
        problems.append(f"{where}: id {ident!r} must be lowercase letters, digits, '.' and '-'")
    obligations = entry["obligations"]
    if not isinstance(obligations, list) or not obligations:
        problems.append(f"{where} ({ident}): obligations must be a non-empty list of ids")
        obligations = []
    for obligation in obligations:
        if type(obligation) is not str or obligation not in registry:
            close = registry.suggest(obligation) if type(obligation) is str else []
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            problems.append(f"{where} ({ident}): obligations: unknown id {obligation!r}{hint}")
        elif registry[obligation].waiver is not None:
            problems.append(f"{where} ({ident}): obligations: {obligation} is waived")
    if len(set(map(str, obligations))) != len(obligations):
        problems.append(f"{where} ({ident}): obligations: an id is named twice")
    posix = Path(file).as_posix()
    if (
        posix != file
        or ".." in Path(file).parts
        or not file.startswith(MUTABLE_ROOTS)
        or not file.endswith(".py")
    ):
        problems.append(
            f"{where} ({ident}): file {file!r} must be a relative .py path under "
            f"{' or '.join(MUTABLE_ROOTS)}"
        )
    if not find:
        problems.append(f"{where} ({ident}): find must not be empty")
    if find == replace:
        problems.append(f"{where} ({ident}): replace is the same as find: no mutation")
    if not summary.strip() or "\n" in summary.strip():
        problems.append(f"{where} ({ident}): summary must be one non-empty line")
    if len(problems) > before:
        return None
    return Mutant(ident, tuple(obligations), file, find, replace, summary.strip(), where)


def mutated_source(mutant: Mutant, original: str) -> tuple[str | None, str]:
    """The file's text with the mutant applied, or ``None`` and why it is stale."""
    count = original.count(mutant.find)
    if count != 1:
        where = "is not in" if count == 0 else f"occurs {count} times in"
        return None, f"the edit site {where} {mutant.file}"
    return original.replace(mutant.find, mutant.replace), ""


# ---------------------------------------------------------------------------------------------
# Results


@dataclasses.dataclass(frozen=True, slots=True)
class MutantResult:
    mutant: Mutant
    status: Status
    phase: Phase | None = None
    seconds: float = 0.0
    killed_by: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.mutant.id,
            "obligations": list(self.mutant.obligations),
            "file": self.mutant.file,
            "summary": self.mutant.summary,
            "status": self.status.value,
            "phase": None if self.phase is None else self.phase.value,
            "seconds": round(self.seconds, 2),
            "killed_by": self.killed_by,
            "detail": self.detail,
        }


# ---------------------------------------------------------------------------------------------
# Copies of the checkout, one per worker


def checkout_root(start: Path) -> Path:
    """The checkout the command runs in; ``CopyError`` when there is none."""
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=start,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        raise CopyError(
            "practice-loop mutants runs in a git checkout of practice-loop (its tests and "
            f"docs/mutants are not in an installed package): {error}"
        ) from error
    root = Path(top)
    if not (root / "tests").is_dir() or not (root / DEFAULT_REGISTRY).is_file():
        raise CopyError(f"{root} is not a checkout of practice-loop (no tests/ or registry)")
    return root


def checkout_files(root: Path) -> list[str]:
    """Every file of the working tree that git tracks or would track, as it is now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    return sorted({name for name in listed.split("\0") if name and (root / name).is_file()})


def make_copy(root: Path, files: Iterable[str], target: Path) -> Path:
    for name in files:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    return target


@dataclasses.dataclass(frozen=True, slots=True)
class PytestRun:
    returncode: int | None  # None: killed at the timeout
    failures: tuple[tuple[str, str], ...]  # (node id, phase) of each test that did not pass
    seconds: float
    output: str


class Worker:
    """One copy of the checkout and the pytest runs made in it, each forked from a warm
    pytest of its own (``mutant_server.py``)."""

    def __init__(self, copy: Path, timeout: float) -> None:
        self.copy = copy
        self.timeout = timeout
        self.server: subprocess.Popen[str] | None = None
        self.lock = threading.Lock()  # one run at a time on this copy
        self.stopped = threading.Event()
        self.paths = [str(copy / "src"), str(copy / "strategies")]
        self.environment = dict(os.environ)
        self.environment |= {
            # For the runs the tests start themselves (the command line in a subprocess).
            "PYTHONPATH": os.pathsep.join(
                filter(None, [*self.paths, os.environ.get("PYTHONPATH")])
            ),
            "HYPOTHESIS_PROFILE": "ci",  # derandomized, no example database
        }
        self.environment.pop("HYPOTHESIS_NO_PLUGINS", None)

    def _server(self) -> subprocess.Popen[str]:
        if self.server is None or self.server.poll() is not None:
            self.server = subprocess.Popen(
                [sys.executable, str(SERVER)],
                cwd=self.copy,
                env=self.environment,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        return self.server

    def pytest(
        self,
        arguments: Sequence[str],
        *,
        first_failure_only: bool,
        mutant: str = "",
        timeout: float | None = None,
    ) -> PytestRun:
        report = self.copy / ".mutant-report.json"
        output = self.copy / ".mutant-output.txt"
        report.unlink(missing_ok=True)
        request = {
            "cwd": str(self.copy),
            "path": self.paths,
            # The default suite checks the catalogue against the code; under a mutant that
            # check is the runner's (an applied mutant's own edit site is gone by design).
            "environment": self.environment | {MUTANT_ENVIRONMENT: mutant},
            "arguments": [
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                PLUGIN,
                f"--mutant-root={self.copy}",
                f"--mutant-report={report}",
                *(["-x"] if first_failure_only else []),
                *arguments,
            ],
            "output": str(output),
            "timeout": self.timeout if timeout is None else timeout,
        }
        with self.lock:
            if self.stopped.is_set():
                raise KeyboardInterrupt
            server = self._server()
            assert server.stdin is not None and server.stdout is not None
            try:
                server.stdin.write(json.dumps(request) + "\n")
                server.stdin.flush()
                answer = server.stdout.readline()
            except BrokenPipeError:
                answer = ""
        if self.stopped.is_set():
            raise KeyboardInterrupt
        if not answer:
            raise CopyError(f"the warm pytest of {self.copy} ended (status {server.poll()})")
        result = json.loads(answer)
        failures: tuple[tuple[str, str], ...] = ()
        if report.is_file():
            recorded = json.loads(report.read_text(encoding="utf-8"))["failures"]
            failures = tuple((entry["nodeid"], entry["phase"]) for entry in recorded)
        text = output.read_text(encoding="utf-8", errors="replace") if output.is_file() else ""
        return PytestRun(result["returncode"], failures, result["seconds"], text)

    def stop(self) -> None:
        """End the pytest run in progress, from another thread, and start no other: the warm
        pytest kills the run's process group, then itself."""
        self.stopped.set()
        self.close(terminate=True)

    def close(self, *, terminate: bool = False) -> None:
        server = self.server
        if server is None or server.poll() is not None:
            return
        if terminate:
            server.terminate()
        elif server.stdin is not None:
            server.stdin.close()  # end of input: it exits
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()

    def collect(self, tests: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Every test of ``tests`` (none: the default suite) with the obligations it names."""
        target = self.copy / ".mutant-collect.json"
        run = self.pytest(
            ["--collect-only", f"--mutant-collect={target}", *tests], first_failure_only=False
        )
        if run.returncode != 0 or not target.is_file():
            raise CopyError(f"collecting the suite in the copy failed:\n{tail_of(run.output)}")
        return json.loads(target.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def judge(self, mutant: Mutant, tests: Sequence[str]) -> MutantResult:
        path = self.copy / mutant.file
        try:
            original = path.read_text(encoding="utf-8")
        except OSError as error:
            return MutantResult(mutant, Status.STALE, detail=f"{mutant.file}: {error.strerror}")
        text, why = mutated_source(mutant, original)
        if text is None:
            return MutantResult(mutant, Status.STALE, detail=why)
        try:
            compile(text, mutant.file, "exec")
        except SyntaxError as error:
            return MutantResult(mutant, Status.INVALID, detail=f"does not compile: {error}")
        phases = [(Phase.OBLIGATION_TESTS, list(tests))] if tests else []
        verdict = self.run_under(path, text, [*phases, (Phase.SUITE, [])], mutant.id)
        return MutantResult(mutant, *verdict)

    def run_under(
        self,
        path: Path,
        text: str,
        phases: Sequence[tuple[Phase, Sequence[str]]],
        mutant_id: str,
        *,
        import_crash: Status = Status.INVALID,
        timeouts: Sequence[float] | None = None,
    ) -> tuple[Status, Phase | None, float, str | None, str]:
        """Write ``text`` over ``path`` and run each phase's tests (``[]``: the whole suite)
        with ``-x`` until one fails, each phase within its own of ``timeouts`` (default: the
        worker's); the file is restored whatever happens. Returns the status, the phase that
        settled it, the seconds spent, the killing test and a detail. A test module that
        cannot be imported is ``import_crash``: invalid for a catalogued mutant, which must be
        semantic; a kill for a generic one."""
        limits = [self.timeout] * len(phases) if timeouts is None else list(timeouts)
        if len(limits) != len(phases):
            raise ValueError(f"{len(phases)} phases, {len(limits)} timeouts")
        original = path.read_text(encoding="utf-8")
        _write_source(path, text)
        try:
            spent = 0.0
            for (phase, arguments), limit in zip(phases, limits, strict=True):
                run = self.pytest(
                    list(arguments), first_failure_only=True, mutant=mutant_id, timeout=limit
                )
                spent += run.seconds
                if run.returncode is None:
                    return Status.TIMED_OUT, phase, spent, None, f"timeout after {limit:g} s"
                if run.failures and run.failures[0][1] == "collect":
                    module = run.failures[0][0]
                    if import_crash is Status.KILLED:
                        return (
                            Status.KILLED,
                            phase,
                            spent,
                            module,
                            "a test module cannot be imported",
                        )
                    return (
                        import_crash,
                        phase,
                        spent,
                        None,
                        f"a test module cannot be imported: {module}",
                    )
                if run.returncode == 1 and run.failures:
                    return Status.KILLED, phase, spent, run.failures[0][0], ""
                if run.returncode != 0:
                    return (
                        Status.INVALID,
                        phase,
                        spent,
                        None,
                        f"pytest exited {run.returncode}:\n{tail_of(run.output)}",
                    )
            return Status.SURVIVED, phases[-1][0] if phases else None, spent, None, ""
        finally:
            _write_source(path, original)


def _write_source(path: Path, text: str) -> None:
    """Write a module's source and drop its cached bytecode: Python trusts a cache whose
    recorded modification second and size match, and a mutant can match both."""
    path.write_text(text, encoding="utf-8")
    Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)


def tail_of(output: str, lines: int = 15) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


# ---------------------------------------------------------------------------------------------
# The run


def obligation_tests(collected: Sequence[dict[str, Any]], mutant: Mutant) -> list[str]:
    """The node ids of the tests that name any of the mutant's obligations: first those of the
    mutated module's own test file (``kernel/budget.py``: ``test_budget.py``), the likeliest to
    kill it soon, then the others, the slow directories last; collection order within each."""
    wanted = set(mutant.obligations)
    own = f"test_{Path(mutant.file).stem}.py"

    def rank(nodeid: str) -> int:
        path = Path(nodeid.split("::", 1)[0])
        if path.name == own:
            return 0
        return 2 if path.parts[:2] in _SLOW_TESTS else 1

    chosen = [test["nodeid"] for test in collected if wanted.intersection(test["obligations"])]
    return sorted(chosen, key=rank)  # stable: collection order within a rank


_SLOW_TESTS = frozenset({("tests", "stateful"), ("tests", "nocover"), ("tests", "browser")})


def run_catalogue(
    root: Path,
    mutants: Sequence[Mutant],
    *,
    jobs: int,
    timeout: float,
    progress: Callable[[MutantResult], None] | None = None,
) -> list[MutantResult]:
    """Judge every mutant in ``jobs`` copies of ``root``, then confirm every kill on an
    unmutated copy. Results in catalogue order."""
    with copies(root, min(jobs, len(mutants)), timeout) as workers:
        collected = workers[0].collect()
        results = judge_all(
            workers,
            mutants,
            lambda worker, mutant: worker.judge(mutant, obligation_tests(collected, mutant)),
            progress,
        )

        def arguments_of(result: MutantResult) -> list[str]:
            if result.phase is Phase.OBLIGATION_TESTS:
                return obligation_tests(collected, result.mutant)
            return []

        return confirm_kills(workers, results, arguments_of)


@contextlib.contextmanager
def copies(root: Path, count: int, timeout: float) -> Iterator[list[Worker]]:
    """``count`` (at least one) workers, each with a copy of ``root`` made once and removed at
    the end. Interrupted, or a worker failed: no test run outlives the block (each runs in a
    session of its own, out of reach of the terminal's signal)."""
    files = checkout_files(root)
    with tempfile.TemporaryDirectory(prefix="practice-loop-mutants-") as scratch:
        workers = [
            Worker(make_copy(root, files, Path(scratch) / f"worker-{index}"), timeout)
            for index in range(max(1, count))
        ]
        try:
            yield workers
        except BaseException:
            for worker in workers:
                worker.stop()
            raise
        finally:
            for worker in workers:
                worker.close()


def judge_all(
    workers: Sequence[Worker],
    items: Sequence[Item],
    judge: Callable[[Worker, Item], Result],
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """``judge`` each item on whichever worker is idle, one item per worker at a time; the
    results in the items' order."""
    idle: queue.SimpleQueue[Worker] = queue.SimpleQueue()
    for worker in workers:
        idle.put(worker)

    def one(item: Item) -> Result:
        worker = idle.get()
        try:
            result = judge(worker, item)
        finally:
            idle.put(worker)
        if progress is not None:
            progress(result)
        return result

    pool = concurrent.futures.ThreadPoolExecutor(len(workers))
    try:
        futures = [pool.submit(one, item) for item in items]
        return [future.result() for future in futures]
    except BaseException:
        for worker in workers:  # before waiting for the runs in progress: it ends them
            worker.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def confirm_kills(
    workers: Sequence[Worker],
    results: list[MutantResult],
    arguments_of: Callable[[MutantResult], Sequence[str]] | None = None,
) -> list[MutantResult]:
    """Run every killing test once on the unmutated copy: a test that fails there too killed
    nothing, and its mutants are ``unconfirmed``. With ``arguments_of`` (the tests of the
    phase a result was settled in), every timed-out phase is run unmutated too: one that
    times out there as well says the timeout is too short, not that the mutant hangs."""
    killers = {r.killed_by for r in results if r.status is Status.KILLED and r.killed_by}
    failing = failing_unmutated(workers, killers)
    slow: set[tuple[str, ...]] = set()
    if arguments_of is not None:
        timed_out = sorted(
            {tuple(arguments_of(r)) for r in results if r.status is Status.TIMED_OUT}
        )
        slow = slow_unmutated(workers, timed_out)

    def confirmed(result: MutantResult) -> MutantResult:
        if result.status is Status.KILLED and result.killed_by in failing:
            detail = f"{result.killed_by} fails on the unmutated copy too"
            return dataclasses.replace(result, status=Status.UNCONFIRMED, detail=detail)
        if result.status is Status.TIMED_OUT and arguments_of is not None:
            if tuple(arguments_of(result)) in slow:
                detail = "its tests take longer than --timeout on the unmutated copy too"
                return dataclasses.replace(result, status=Status.UNCONFIRMED, detail=detail)
        return result

    return [confirmed(result) for result in results]


def slow_unmutated(
    workers: Sequence[Worker],
    runs: Sequence[tuple[str, ...]],
    limit: Callable[[tuple[str, ...]], float] | None = None,
) -> set[tuple[str, ...]]:
    """Which of the test runs ``runs`` (pytest arguments) time out on an unmutated copy,
    each within the timeout ``limit`` gives it (default: the worker's), as under a mutant."""

    def timed_out(worker: Worker, arguments: tuple[str, ...]) -> bool:
        timeout = None if limit is None else limit(arguments)
        run = worker.pytest(list(arguments), first_failure_only=True, timeout=timeout)
        return run.returncode is None

    verdicts = judge_all(workers, list(runs), timed_out) if runs else []
    return {arguments for arguments, slow in zip(runs, verdicts, strict=True) if slow}


def failing_unmutated(workers: Sequence[Worker], tests: Iterable[str]) -> set[str]:
    """Which of ``tests`` fail on the workers' copies with no mutant applied, shared out
    among the workers."""
    tests = sorted(set(tests))
    shares = [tests[index :: len(workers)] for index in range(len(workers))]

    def run(worker: Worker, share: list[str]) -> set[str]:
        result = worker.pytest(share, first_failure_only=False)
        if result.returncode not in (0, 1):
            raise CopyError(
                f"the killing tests cannot run on the unmutated copy:\n{tail_of(result.output)}"
            )
        return {nodeid for nodeid, _ in result.failures}

    return set().union(*judge_all(workers, [share for share in shares if share], run))


# ---------------------------------------------------------------------------------------------
# The kill matrix


def kill_matrix(
    catalogue: Catalogue,
    results: Sequence[MutantResult],
    *,
    context: dict[str, str],
    jobs: int,
    wall_seconds: float,
) -> dict[str, Any]:
    kill_times = [r.seconds for r in results if r.status in KILLING]
    by_obligation: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for obligation in result.mutant.obligations:
            by_obligation.setdefault(obligation, []).append(
                {
                    "mutant": result.mutant.id,
                    "status": result.status.value,
                    "killed_by": result.killed_by,
                }
            )
    totals: dict[str, Any] = {"mutants": len(results)}
    totals |= {status.value: sum(r.status is status for r in results) for status in Status}
    totals |= {
        "obligations_with_mutants": len(by_obligation),
        "median_seconds_to_kill": round(statistics.median(kill_times), 2) if kill_times else None,
        "worst_seconds_to_kill": round(max(kill_times), 2) if kill_times else None,
        "wall_seconds": round(wall_seconds, 1),
        "jobs": jobs,
    }
    return {
        "schema": KILL_MATRIX_SCHEMA,
        "catalogue": catalogue.source,
        "catalogue_digest": catalogue.digest,
        "complete": len(results) == len(catalogue.mutants),
        "context": context,
        "totals": totals,
        "mutants": [result.to_json() for result in results],
        "obligations": dict(sorted(by_obligation.items())),
    }


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def kill_matrix_markdown(matrix: dict[str, Any]) -> str:
    totals = matrix["totals"]
    lines = [
        "# Kill matrix",
        "",
        f"Catalogue `{matrix['catalogue']}` (digest `{matrix['catalogue_digest'][:16]}`), "
        + ", ".join(f"{key} {value}" for key, value in matrix["context"].items())
        + ".",
        "",
        f"{totals['mutants']} mutants over {totals['obligations_with_mutants']} obligations: "
        + ", ".join(f"{totals[s.value]} {s.value}" for s in Status)
        + f". Median seconds to kill {totals['median_seconds_to_kill']}, worst "
        f"{totals['worst_seconds_to_kill']}; {totals['wall_seconds']} s wall on "
        f"{totals['jobs']} jobs.",
        "",
    ]
    trouble = [m for m in matrix["mutants"] if m["status"] not in {s.value for s in KILLING}]
    if trouble:
        lines += ["## Not killed", "", "| mutant | status | file | why |", "|---|---|---|---|"]
        lines += [
            f"| `{m['id']}` | {m['status']} | `{m['file']}` | "
            f"{_cell(m['detail'] or m['summary'])} |"
            for m in trouble
        ]
        lines.append("")
    lines += [
        "## By obligation",
        "",
        "| obligation | mutant | status | killed by | phase | seconds |",
        "|---|---|---|---|---|---|",
    ]
    mutants = {m["id"]: m for m in matrix["mutants"]}
    for obligation, entries in matrix["obligations"].items():
        for entry in entries:
            mutant = mutants[entry["mutant"]]
            lines.append(
                f"| {obligation} | `{mutant['id']}` | {mutant['status']} | "
                f"{_cell(mutant['killed_by'] or '')} | {mutant['phase'] or ''} | "
                f"{mutant['seconds']} |"
            )
    return "\n".join(lines) + "\n"


def write_kill_matrix(out: Path, matrix: dict[str, Any]) -> tuple[Path, Path]:
    """Both files, each written whole to a temporary name and then renamed into place."""
    out.mkdir(parents=True, exist_ok=True)
    paths = (out / KILL_MATRIX_JSON, out / KILL_MATRIX_MARKDOWN)
    texts = (json.dumps(matrix, indent=2, ensure_ascii=False) + "\n", kill_matrix_markdown(matrix))
    for path, text in zip(paths, texts, strict=True):
        partial = path.with_name(path.name + ".partial")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return paths


class KillMatrixError(ValueError):
    """A kill matrix that is not one this module wrote for the catalogue as it is now."""


def kills_from_matrix(data: object, catalogue: Catalogue) -> dict[str, list[MutantKill]]:
    """The mutants of each obligation as the kill matrix ``data`` recorded them, for the gate.

    Refused (:class:`KillMatrixError`) unless the matrix was made of exactly this catalogue
    and judged all of it: a kill matrix of another catalogue, or of a filtered run, says
    nothing about the mutants it does not hold."""
    if not isinstance(data, dict) or data.get("schema") != KILL_MATRIX_SCHEMA:
        raise KillMatrixError(f"not a kill matrix (expected schema {KILL_MATRIX_SCHEMA!r})")
    if data.get("catalogue_digest") != catalogue.digest:
        raise KillMatrixError(
            f"it was made of another catalogue than {catalogue.source} as it is now; "
            "run practice-loop mutants again"
        )
    entries = data.get("mutants")
    if not isinstance(entries, list):
        raise KillMatrixError("'mutants' must be a list")
    recorded: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or type(entry.get("id")) is not str:
            raise KillMatrixError(f"mutants[{index}] must be an object with an id")
        if entry.get("status") not in {status.value for status in Status}:
            raise KillMatrixError(f"mutants[{index}]: unknown status {entry.get('status')!r}")
        recorded[entry["id"]] = entry
    missing = [m.id for m in catalogue.mutants if m.id not in recorded]
    if missing:
        raise KillMatrixError(
            f"it judged {len(catalogue.mutants) - len(missing)} of the catalogue's "
            f"{len(catalogue.mutants)} mutants (a filtered run?); missing: {', '.join(missing[:5])}"
        )
    kills: dict[str, list[MutantKill]] = {}
    for mutant in catalogue.mutants:
        entry = recorded[mutant.id]
        kill = MutantKill(
            mutant.id,
            entry["status"],
            Status(entry["status"]) in KILLING,
            entry.get("killed_by") if type(entry.get("killed_by")) is str else None,
        )
        for obligation in mutant.obligations:
            kills.setdefault(obligation, []).append(kill)
    return kills


# ---------------------------------------------------------------------------------------------
# The command


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``mutants`` to the command line's subparsers; the handler is :func:`run_command`."""
    parser = subparsers.add_parser(
        "mutants",
        help="apply every catalogued prohibited-state mutant and check that a test kills it",
        description="Apply each mutant of the catalogue in a copy of this checkout, run the "
        "tests naming its obligations and then, if it survives, the whole suite; write the "
        "kill matrix. Exit status: 0 every mutant killed; 1 a mutant survived, is stale, "
        "invalid or unconfirmed; 2 a usage error; 130 interrupted.",
    )
    parser.add_argument(
        "--obligation",
        action="append",
        default=[],
        metavar="ID",
        help="only the mutants of this obligation (repeatable)",
    )
    parser.add_argument(
        "--mutant", action="append", default=[], metavar="ID", help="only this mutant (repeatable)"
    )
    add_copy_arguments(parser, DEFAULT_TIMEOUT_SECONDS)
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where kill-matrix.md and kill-matrix.json go (default {DEFAULT_OUT}/)",
    )
    parser.add_argument(
        "--catalogue",
        type=Path,
        default=DEFAULT_CATALOGUE,
        metavar="PATH",
        help=f"the mutant catalogue, a folder of TOML files (default {DEFAULT_CATALOGUE}/)",
    )
    parser.add_argument(
        "--registry",
        type=Path,
        default=DEFAULT_REGISTRY,
        metavar="PATH",
        help=f"the obligation registry the mutants name (default {DEFAULT_REGISTRY})",
    )
    parser.set_defaults(handler=run_command)
    return parser


def add_copy_arguments(
    parser: argparse.ArgumentParser, timeout: float, timeout_help: str = ""
) -> None:
    """``-j/--jobs`` and ``--timeout``, as every command that judges mutants in copies has;
    ``timeout_help`` says what else bounds a run, if anything does."""
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="copies of the checkout judging mutants at once (default: every core)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        metavar="S",
        help="wall-clock seconds one pytest run under a mutant may take before the mutant "
        f"counts as timed out, confirmed by running the same tests unmutated{timeout_help} "
        f"(default {timeout:g})",
    )


def _usage(message: str) -> int:
    print(f"practice-loop mutants: {message}", file=sys.stderr)
    return 2


def selected(catalogue: Catalogue, obligations: Sequence[str], ids: Sequence[str]) -> list[Mutant]:
    chosen = [
        m
        for m in catalogue.mutants
        if (not obligations or set(obligations) & set(m.obligations)) and (not ids or m.id in ids)
    ]
    return chosen


def run_command(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        return _usage(f"--jobs must be at least 1, not {args.jobs}")
    if args.timeout <= 0:
        return _usage(f"--timeout must be positive, not {args.timeout:g}")
    try:
        root = checkout_root(Path.cwd())
        registry = load_registry(root / args.registry)
        catalogue = load_catalogue(root / args.catalogue, registry)
    except (CopyError, RegistryError, CatalogueError) as error:
        return _usage(str(error))
    known = {m.id for m in catalogue.mutants}
    for ident in args.mutant:
        if ident not in known:
            return _usage(f"--mutant: the catalogue has no mutant {ident!r}")
    for ident in args.obligation:
        if ident not in registry:
            return _usage(f"--obligation: the registry has no obligation {ident!r}")
    mutants = selected(catalogue, args.obligation, args.mutant)
    if not mutants:
        return _usage("no mutant of the catalogue matches --obligation/--mutant")
    print(
        f"practice-loop mutants: {len(mutants)} mutants, {args.jobs} jobs",
        file=sys.stderr,
        flush=True,
    )
    done = 0

    def progress(result: MutantResult) -> None:
        nonlocal done
        done += 1
        where = f" by {result.killed_by}" if result.killed_by else ""
        if result.phase is not None:
            where += f" in {result.phase.value}"
        note = f": {result.detail.splitlines()[0]}" if result.detail else ""
        print(
            f"[{done}/{len(mutants)}] {result.mutant.id}: {result.status.value}{where} "
            f"({result.seconds:.1f} s){note}",
            file=sys.stderr,
            flush=True,
        )

    for stale in (KILL_MATRIX_JSON, KILL_MATRIX_MARKDOWN):  # never leave an older run's verdict
        (args.out / stale).unlink(missing_ok=True)
    start = time.monotonic()
    # SIGTERM (a CI job cancelled) ends the run as Ctrl-C does: children stopped, copies removed.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        results = run_catalogue(
            root, mutants, jobs=args.jobs, timeout=args.timeout, progress=progress
        )
    except CopyError as error:
        print(f"practice-loop mutants: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("practice-loop mutants: interrupted; no kill matrix written", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    matrix = kill_matrix(
        catalogue,
        results,
        context=run_context(root),
        jobs=args.jobs,
        wall_seconds=time.monotonic() - start,
    )
    json_path, md_path = write_kill_matrix(args.out, matrix)
    totals = matrix["totals"]
    bad = [r for r in results if r.status not in KILLING]
    print(
        f"mutants: {'PASSED' if not bad else 'FAILED'}: {totals['killed']} killed, "
        f"{totals['timed_out']} timed out, {totals['survived']} survived, {totals['stale']} "
        f"stale, {totals['invalid']} invalid, {totals['unconfirmed']} unconfirmed of "
        f"{totals['mutants']}; median {totals['median_seconds_to_kill']} s to kill"
    )
    for result in bad:
        print(
            f"  {result.mutant.id} ({result.mutant.source}): {result.status.value} {result.detail}"
        )
    print(f"kill matrix: {md_path} and {json_path}")
    return 0 if not bad else 1
