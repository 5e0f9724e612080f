"""What coverage cannot see of a test's reach (``-p practice_loop.harness.reach_plugin``).

``practice-loop mutation-score`` judges a mutant by the tests that execute its line, as
coverage's per-test contexts record them (docs/adr/0015). Two ways a test reaches the kernel
escape coverage: it starts another process (the command line, a fresh interpreter), or it
reads a kernel module's source (the architecture rules parse it). With ``--reach-out=PATH
--reach-watch=DIR`` an audit hook (PEP 578) records every test that does either, and the run
writes ``{"processes": [node id, ...], "reads": {node id: [file under DIR, ...]}}`` to
``PATH`` (under pytest-xdist, to ``PATH.<worker id>``, one file per process).

It imports nothing of this project and nothing of Hypothesis: coverage starts before the
kernel is imported, or the lines run at import time would be missed.
"""

from __future__ import annotations

import json
import os
import sys
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


def pytest_configure(config: pytest.Config) -> None:
    out, watched = config.getoption("--reach-out"), config.getoption("--reach-watch")
    if (out is None) != (watched is None):
        raise pytest.UsageError("--reach-out and --reach-watch go together")
    if out is not None:
        # An xdist worker's own id, never the environment's: a run started by a test that is
        # itself under xdist inherits PYTEST_XDIST_WORKER, and would write over its workers.
        worker = getattr(config, "workerinput", {}).get("workerid")
        target = Path(f"{out}.{worker}" if worker else out)
        config.pluginmanager.register(_Recorder(target, Path(watched)), "practice_loop.reach")


class _Recorder:
    def __init__(self, target: Path, watched: Path) -> None:
        self.target = target
        self.watched = os.path.realpath(watched) + os.sep
        self.test: str | None = None
        self.processes: set[str] = set()
        self.reads: dict[str, set[str]] = {}
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

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.test = item.nodeid
        try:
            return (yield)
        finally:
            self.test = None

    def pytest_sessionfinish(self) -> None:
        reads = {test: sorted(paths) for test, paths in sorted(self.reads.items())}
        record = {"processes": sorted(self.processes), "reads": reads}
        self.target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
