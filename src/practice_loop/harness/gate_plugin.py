"""The pytest side of the obligation gate; loaded through ``-p practice_loop.harness.gate_plugin``.

- Adds the ``--obligation-*`` options (``docs/obligations.toml`` is read by
  :mod:`practice_loop.harness.obligations`, which never imports this module).
- Registers the marker ``obligation(*ids)``.
- At collection, refuses (a usage error naming the test and the id) any marker that names an id
  the registry does not hold, a waived obligation, or something that is not an id.
- Puts each test's ids into ``item.user_properties``, so they reach the controller inside every
  report, also from pytest-xdist workers, and records each test's outcome from its reports.
- At the end of the session, on the controller only: writes the matrix when
  ``--obligation-matrix=DIR`` is given, and with ``--obligation-gate`` turns a passing session
  into a failing one when the gate fails (``--obligation-adr`` limits it to one ADR).

Under pytest-xdist, collection happens on the workers and a ``UsageError`` raised there turns into
an internal error on the controller. A worker therefore keeps the message in ``workeroutput`` and
collects nothing; the controller raises the usage error when that worker goes down.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from .obligations import (
    DEFAULT_REGISTRY,
    MARKER,
    USER_PROPERTY,
    NodeResult,
    Registry,
    RegistryError,
    evaluate,
    ids_of_user_properties,
    load_registry,
    verdict_lines,
    worse_outcome,
    write_matrix,
)
from .report_context import run_context

PLUGIN_NAME = "practice_loop.obligation_gate"
WORKER_ERROR_KEY = "practice_loop_obligation_usage_error"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("obligations", "obligation registry and gate (docs/obligations.toml)")
    group.addoption(
        "--obligation-registry",
        metavar="PATH",
        default=None,
        help="the obligation registry (default: <rootdir>/docs/obligations.toml)",
    )
    group.addoption(
        "--obligation-matrix",
        metavar="DIR",
        default=None,
        help="write matrix.md and matrix.json (obligation -> tests -> outcome) into DIR",
    )
    group.addoption(
        "--obligation-gate",
        action="store_true",
        default=False,
        help="fail the session when an obligation has no test, or a test naming it did not pass",
    )
    group.addoption(
        "--obligation-adr",
        metavar="ADR",
        default=None,
        help="gate only this ADR's obligations, e.g. ADR-0231 or LOCAL-0004",
    )


def pytest_configure(config: pytest.Config) -> None:
    configure(config)


def configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*ids): the registry obligations (docs/obligations.toml) this test proves",
    )
    if config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    option = config.getoption("obligation_registry")
    path = Path(option) if option else config.rootpath / DEFAULT_REGISTRY
    resolved = path.resolve()
    try:
        registry = load_registry(resolved)
    except RegistryError as error:
        raise pytest.UsageError(str(error)) from error
    try:  # reports name the registry relative to the rootdir when it lies inside it
        registry = dataclasses.replace(registry, source=str(resolved.relative_to(config.rootpath)))
    except ValueError:
        pass
    scope = config.getoption("obligation_adr")
    if scope is not None and scope not in registry.adrs:
        raise pytest.UsageError(
            f"--obligation-adr {scope}: the registry holds {', '.join(registry.adrs)}"
        )
    matrix = config.getoption("obligation_matrix")
    plugin = ObligationPlugin(
        config,
        registry,
        matrix_dir=Path(matrix).resolve() if matrix else None,
        gate=bool(config.getoption("obligation_gate")),
        scope=scope,
    )
    config.pluginmanager.register(plugin, PLUGIN_NAME)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _phase_outcome(report: pytest.TestReport) -> str | None:
    """What one phase says about the test; ``None`` for a setup or teardown that passed."""
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.outcome not in ("passed", "failed", "skipped"):
            return None  # e.g. a "rerun" report; the final report for the test follows it
        if xfail:
            return "xfailed" if report.skipped else "xpassed"
        return report.outcome
    if report.failed:
        return "error"
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    return None


class ObligationPlugin:
    def __init__(
        self,
        config: pytest.Config,
        registry: Registry,
        *,
        matrix_dir: Path | None,
        gate: bool,
        scope: str | None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.matrix_dir = matrix_dir
        self.gate = gate
        self.scope = scope
        self.outcomes: dict[str, str | None] = {}
        self.obligations: dict[str, tuple[str, ...]] = {}
        self.verdict_lines: list[str] = []
        self.written: tuple[Path, Path] | None = None
        self._worker_error_raised = False

    # -- collection (on each worker under xdist) -----------------------------------------------

    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        problems: list[str] = []
        for item in items:
            ids: dict[str, None] = {}
            for mark in item.iter_markers(name=MARKER):
                if mark.kwargs:
                    problems.append(
                        f"{item.nodeid}: @pytest.mark.{MARKER} takes ids only, "
                        f"not keywords {sorted(mark.kwargs)}"
                    )
                if not mark.args:
                    problems.append(f"{item.nodeid}: @pytest.mark.{MARKER} names no obligation")
                for ident in mark.args:
                    problem = self._check_id(ident)
                    if problem:
                        problems.append(f"{item.nodeid}: {problem}")
                    else:
                        ids[ident] = None
            if ids:
                item.user_properties.append((USER_PROPERTY, tuple(ids)))
        if not problems:
            return
        message = f"@pytest.mark.{MARKER} misused (registry {self.registry.source}):\n" + "\n".join(
            f"  {p}" for p in problems
        )
        if _is_worker(config):
            config.workeroutput[WORKER_ERROR_KEY] = message  # type: ignore[attr-defined]
            items[:] = []
            return
        raise pytest.UsageError(message)

    def _check_id(self, ident: object) -> str | None:
        if type(ident) is not str:
            return f"obligation ids are strings, got {ident!r}"
        if ident not in self.registry:
            hint = self.registry.suggest(ident)
            near = f" (did you mean {', '.join(hint)}?)" if hint else ""
            return f"unknown obligation {ident!r}{near}"
        if self.registry[ident].waiver is not None:
            return f"obligation {ident!r} is waived in the registry; a test cannot prove it"
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        message = getattr(node, "workeroutput", {}).get(WORKER_ERROR_KEY)
        if message and not self._worker_error_raised:
            self._worker_error_raised = True
            raise pytest.UsageError(message)

    # -- results (on the controller under xdist) -----------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        ids = ids_of_user_properties(report.user_properties)
        if ids:
            self.obligations[report.nodeid] = ids
        previous = self.outcomes.get(report.nodeid)
        self.outcomes[report.nodeid] = worse_outcome(previous, _phase_outcome(report))

    def results(self) -> list[NodeResult]:
        return [
            NodeResult(nodeid, outcome, self.obligations.get(nodeid, ()))
            for nodeid, outcome in self.outcomes.items()
            if outcome is not None
        ]

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if _is_worker(self.config):
            return
        if not (self.gate or self.matrix_dir):
            return
        if session.exitstatus == pytest.ExitCode.USAGE_ERROR:
            return
        results = self.results()
        verdict = evaluate(self.registry, results, self.scope)
        if self.matrix_dir is not None:
            self.written = write_matrix(
                self.matrix_dir,
                self.registry,
                results,
                verdict,
                enforced=self.gate,
                context=run_context(Path(session.config.rootpath)),
                exitstatus=int(session.exitstatus),
            )
        self.verdict_lines = verdict_lines(verdict)
        if (
            self.gate
            and not verdict.passed
            and session.exitstatus
            in (
                pytest.ExitCode.OK,
                pytest.ExitCode.NO_TESTS_COLLECTED,
            )
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.verdict_lines:
            return
        terminalreporter.section("obligations")
        lines = self.verdict_lines if self.gate else self.verdict_lines[:1]
        for line in lines:
            terminalreporter.write_line(line)
        if self.written:
            terminalreporter.write_line(f"matrix: {self.written[1]} and {self.written[0]}")
