"""What coverage cannot see of a test's reach (``-p practice_loop.harness.reach_plugin``).

``practice-loop mutation-score`` judges a mutant by the tests that execute its line, as
coverage's per-test contexts record them (docs/adr/0015). Two ways a test reaches the kernel
escape coverage: it starts another process (the command line, a fresh interpreter), or it
reads a kernel module's source (the architecture rules parse it). With ``--reach-out=PATH
--reach-watch=DIR`` an audit hook (PEP 578) records every test that does either, and the run
writes ``{"processes": [node id, ...], "reads": {node id: [file under DIR, ...]}}`` to
``PATH`` (under pytest-xdist, to ``PATH.<worker id>``, one file per process). The record
also keeps, under ``"durations"``, the seconds each test took (setup, call and teardown, as
pytest reports them) and each test module's import took (under the module's node id): what a
run of those tests under a mutant may take is measured from them.

It also names what a test module's import reaches. Each ``--reach-import=PACKAGE`` (every
module of it) is imported before the first test module, in coverage's global context; then
each test module is imported in a context of its own, ``<module node id>|import``, so a kernel
line its module-level code runs (an example frame, a parametrize list) is charged to that
module's tests instead of to every test. A test module whose import brings in another module
of the checkout (a helper first imported there) shares what it builds with every test; the
record lists it under ``"shared"``, and its import counts as global.

It imports nothing of this project and nothing of Hypothesis: coverage starts before the
kernel is imported, or the lines run at import time would be missed.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

# The audit events (PEP 578 and the standard library's table) that start another program.
PROCESS_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.posix_spawn",
        "os.spawn",
        "os.exec",
        "os.fork",
        "os.forkpty",
    }
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("reach", "mutation-score's test selection")
    group.addoption("--reach-out", metavar="PATH", default=None)
    group.addoption("--reach-watch", metavar="DIR", default=None)
    group.addoption("--reach-import", metavar="PACKAGE", action="append", default=[])


def pytest_configure(config: pytest.Config) -> None:
    out, watched = config.getoption("--reach-out"), config.getoption("--reach-watch")
    if (out is None) != (watched is None):
        raise pytest.UsageError("--reach-out and --reach-watch go together")
    if out is not None:
        # An xdist worker's own id, never the environment's: a run started by a test that is
        # itself under xdist inherits PYTEST_XDIST_WORKER, and would write over its workers.
        worker = getattr(config, "workerinput", {}).get("workerid")
        target = Path(f"{out}.{worker}" if worker else out)
        recorder = _Recorder(
            target, Path(watched), Path(config.rootpath), config.getoption("--reach-import")
        )
        config.pluginmanager.register(recorder, "practice_loop.reach")


# The phase of the coverage context a test module's import runs in (pytest-cov's are setup,
# run and teardown).
IMPORT_PHASE = "import"


class _Recorder:
    def __init__(self, target: Path, watched: Path, root: Path, packages: list[str]) -> None:
        self.target = target
        self.watched = os.path.realpath(watched) + os.sep
        self.root = os.path.realpath(root) + os.sep
        self.installed = os.path.realpath(sys.prefix) + os.sep  # a virtualenv in the checkout
        self.packages = packages
        self.imported = False
        self.test: str | None = None
        self.processes: set[str] = set()
        self.reads: dict[str, set[str]] = {}
        self.shared: dict[str, list[str]] = {}
        self.durations: dict[str, float] = {}
        sys.addaudithook(self._audit)  # for the life of the process: hooks cannot be removed

    def _audit(self, event: str, arguments: tuple[Any, ...]) -> None:
        test = self.test
        if test is None:
            return
        if event in PROCESS_EVENTS:
            self.processes.add(test)
        elif event == "open" and isinstance(arguments[0], (str, bytes, os.PathLike)):
            path = os.path.realpath(os.fsdecode(arguments[0]))
            if path.startswith(self.watched):
                self.reads.setdefault(test, set()).add(path)

    def _import_packages(self) -> None:
        for name in self.packages:
            package = importlib.import_module(name)
            for found in pkgutil.walk_packages(package.__path__, f"{name}."):
                if found.name.rpartition(".")[2] != "__main__":  # a __main__ runs a program
                    importlib.import_module(found.name)

    def _file_in_checkout(self, name: str) -> str | None:
        file = getattr(sys.modules.get(name), "__file__", None)
        if not isinstance(file, str):
            return None
        path = os.path.realpath(file)
        inside = path.startswith(self.root) and not path.startswith(self.installed)
        return path if inside else None

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, object, object]:
        if not self.imported:  # the first collector, in the process that collects
            self.imported = True
            self._import_packages()
        if not isinstance(collector, pytest.Module):
            return (yield)
        coverage = _current_coverage()
        before = set(sys.modules)
        start = time.perf_counter()
        if coverage is not None:
            coverage.switch_context(f"{collector.nodeid}|{IMPORT_PHASE}")
        try:
            return (yield)
        finally:
            self.durations[collector.nodeid] = time.perf_counter() - start
            if coverage is not None:
                coverage.switch_context("")
                own = os.path.realpath(collector.path)
                brought = sorted(
                    name
                    for name in set(sys.modules) - before
                    if self._file_in_checkout(name) not in (None, own)
                )
                if brought:
                    self.shared[collector.nodeid] = brought

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.test = item.nodeid
        try:
            return (yield)
        finally:
            self.test = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.durations[report.nodeid] = self.durations.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        reads = {test: sorted(paths) for test, paths in sorted(self.reads.items())}
        record = {
            "processes": sorted(self.processes),
            "reads": reads,
            "shared": dict(sorted(self.shared.items())),
            "durations": dict(sorted(self.durations.items())),
        }
        self.target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _current_coverage() -> Any:
    """The coverage measurement running in this process (pytest-cov's), or ``None``: then a
    test module's import stays in the global context, which is charged to every test."""
    try:
        from coverage import Coverage
    except ImportError:
        return None
    return Coverage.current()
