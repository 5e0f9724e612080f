"""The pytest side of ``practice-loop mutants`` (``-p practice_loop.harness.mutant_plugin``).

- ``--mutant-root=DIR`` refuses the session (a usage error, exit 4) unless ``practice_loop`` and
  ``practice_strategies`` are imported from under ``DIR``: a mutant applied to a copy that the
  tests do not import would survive every test, a false result.
- ``--mutant-collect=PATH`` writes, at the end of collection, every collected test's node id
  with the obligation ids its markers name, in collection order (JSON).
- ``--mutant-report=PATH`` writes the node id and phase of every test or module that failed,
  in the order they failed (JSON). The runner reads this, never pytest's printed output.
  Such a run judges a mutant, so Hypothesis skips its shrink and explain phases: a kill needs
  one failing example, not the smallest (docs/adr/0014 measured this as the largest cost of a
  kill).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings

from .obligations import MARKER

_PROFILE_SUFFIX = "-mutant"
_UNNEEDED_PHASES = frozenset({Phase.shrink, Phase.explain})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mutants", "the mutant catalogue's runner (practice-loop mutants)")
    group.addoption("--mutant-root", metavar="DIR", default=None)
    group.addoption("--mutant-collect", metavar="PATH", default=None)
    group.addoption("--mutant-report", metavar="PATH", default=None)


def pytest_configure(config: pytest.Config) -> None:
    root = config.getoption("--mutant-root")
    if root is not None:
        import practice_loop
        import practice_strategies

        for module in (practice_loop, practice_strategies):
            where = Path(module.__file__ or "").resolve()
            if not where.is_relative_to(Path(root).resolve()):
                raise pytest.UsageError(
                    f"{module.__name__} is imported from {where}, not from the copy {root}"
                )
    report = config.getoption("--mutant-report")
    if report is not None:
        _load_judging_profile()
        config.pluginmanager.register(_Failures(Path(report)), "practice_loop.mutant_report")


def _load_judging_profile() -> None:
    """The profile in force (``ci`` under the runner), without the phases a kill never needs."""
    name = settings.get_current_profile_name()
    phases = [phase for phase in settings.default.phases if phase not in _UNNEEDED_PHASES]
    settings.register_profile(
        name + _PROFILE_SUFFIX, parent=settings.get_profile(name), phases=phases
    )
    settings.load_profile(name + _PROFILE_SUFFIX)


def pytest_collection_finish(session: pytest.Session) -> None:
    target = session.config.getoption("--mutant-collect")
    if target is None:
        return
    tests = [
        {
            "nodeid": item.nodeid,
            "obligations": sorted(
                {ident for mark in item.iter_markers(MARKER) for ident in mark.args}
            ),
        }
        for item in session.items
    ]
    Path(target).write_text(json.dumps(tests, indent=1) + "\n", encoding="utf-8")


class _Failures:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.failures: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.outcome == "failed":
            self.failures.append({"nodeid": report.nodeid, "phase": report.when})

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.outcome == "failed":
            self.failures.append({"nodeid": report.nodeid, "phase": "collect"})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.path.write_text(json.dumps({"failures": self.failures}) + "\n", encoding="utf-8")
