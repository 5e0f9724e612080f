"""The obligation registry, the traceability matrix and the gate applied to it.

``docs/obligations.toml`` lists every obligation a test of this project must prove: the test
obligations, failure rows, table rows and normative rules of the given ADRs, and the rules of
our own records in ``docs/adr/``. Tests name what they prove with
``@pytest.mark.obligation("ADR-0228/17.7", ...)``.

This module is standard library only, so the command line can read a registry and re-apply the
gate to a finished run without pytest, and it imports nothing of this project. The pytest plugin
is :mod:`practice_loop.harness.gate_plugin` (``-p practice_loop.harness.gate_plugin``): it adds
the options and registers its ``ObligationPlugin``, which records each test's obligations and
outcome and, when asked, writes the matrix and fails the session. The dependency is one way:
the plugin imports this module, never the reverse.

The gate: an obligation in scope passes when at least one test names it and every test naming it
passed. No test is ``uncovered``; any test failed, errored, skipped, xfailed or xpassed is
``failing``. An obligation carrying a ``waiver`` (a property of an ADR's own pull request, which
no test can show) is listed apart and never gated; a test may not name it. A test that names an id
the registry does not hold, or a test naming no obligation that failed or errored, fails the gate
too.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .report_context import context_line

REGISTRY_SCHEMA = "obligations.v1"
MATRIX_SCHEMA = "obligation_matrix.v1"
DEFAULT_REGISTRY = Path("docs") / "obligations.toml"
MATRIX_JSON = "matrix.json"
MATRIX_MARKDOWN = "matrix.md"
MARKER = "obligation"
USER_PROPERTY = "obligations"
"""Name under which a test's obligation ids travel in ``item.user_properties`` (and so in every
report, including those pytest-xdist ships from its workers to the controller)."""

ADR_PATTERN = re.compile(r"(ADR|LOCAL)-[0-9]{4}")
# "ADR-0228/17.7", "ADR-0227/8.eligible_missing_role", "LOCAL-0003/blanked_self_seal".
ID_PATTERN = re.compile(
    r"(?P<adr>ADR-[0-9]{4})/(?P<section>[0-9]+)\.(?P<item>[a-z0-9][a-z0-9_]*)"
    r"|(?P<local>LOCAL-[0-9]{4})/(?P<slug>[a-z][a-z0-9_]*)"
)
ENTRY_KEYS = frozenset({"id", "adr", "section", "summary", "waiver", "no_mutant"})
REQUIRED_KEYS = ("id", "adr", "section", "summary")
TOP_LEVEL_KEYS = frozenset({"schema", "obligation"})
_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*obligation[ \t]*\]\]", re.MULTILINE)

PASSED = "passed"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 2, "error": 2}

COVERED = "covered"
UNCOVERED = "uncovered"
FAILING = "failing"
WAIVED = "waived"
MUTANT_NOT_KILLED = "mutant_not_killed"
NO_MUTANT = "no_mutant"

# Where every gated obligation needs a catalogued mutant (issue 17): the failure tables and test
# obligations of the given ADRs, and the rules of our own records. An obligation here may say,
# in ``no_mutant``, why no source edit can break it; anywhere else a mutant is welcome, not due.
MUTANTS_REQUIRED = frozenset(
    {
        ("ADR-0226", "8"),
        ("ADR-0227", "8"),
        ("ADR-0228", "16"),
        ("ADR-0228", "17"),
        ("ADR-0231", "17"),
        ("ADR-0231", "18"),
    }
)


class RegistryError(ValueError):
    """The registry cannot be read or breaks a rule; ``problems`` names each line or id."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__(
            f"invalid obligation registry {source}:\n" + "\n".join(f"  {p}" for p in problems)
        )


class MatrixError(ValueError):
    """A results file (``matrix.json``) is not one this module wrote."""


@dataclasses.dataclass(frozen=True)
class Obligation:
    id: str
    adr: str
    section: str
    summary: str
    waiver: str | None = None
    no_mutant: str | None = None  # why no source edit can break it, where a mutant is due
    line: int = 0

    @property
    def needs_mutant(self) -> bool:
        """Whether the gate's mutant half needs a catalogued mutant of this obligation."""
        due = self.adr.startswith("LOCAL-") or (self.adr, self.section) in MUTANTS_REQUIRED
        return due and self.waiver is None and self.no_mutant is None


@dataclasses.dataclass(frozen=True)
class Registry:
    source: str
    obligations: tuple[Obligation, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {o.id: o for o in self.obligations})

    def __contains__(self, obligation_id: object) -> bool:
        return obligation_id in self._by_id  # type: ignore[attr-defined]

    def __getitem__(self, obligation_id: str) -> Obligation:
        return self._by_id[obligation_id]  # type: ignore[attr-defined]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(o.id for o in self.obligations)

    @property
    def adrs(self) -> tuple[str, ...]:
        """Every ``adr`` value, in registry order."""
        return tuple(dict.fromkeys(o.adr for o in self.obligations))

    def suggest(self, unknown: str) -> list[str]:
        return difflib.get_close_matches(unknown, self.ids, n=3, cutoff=0.75)


# ---------------------------------------------------------------------------------------------
# Loading and validating the registry


def load_registry(path: str | Path) -> Registry:
    """Read and validate the registry at ``path``; :class:`RegistryError` on any defect."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RegistryError(str(path), [f"cannot read: {error}"]) from error
    return parse_registry(text, source=str(path))


def parse_registry(text: str, source: str = "<registry>") -> Registry:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RegistryError(source, [f"not TOML: {error}"]) from error
    problems: list[str] = []
    for key in sorted(set(data) - TOP_LEVEL_KEYS):
        problems.append(f"unknown top-level key {key!r} (allowed: schema, obligation)")
    if data.get("schema") != REGISTRY_SCHEMA:
        problems.append(f"schema must be {REGISTRY_SCHEMA!r}, found {data.get('schema')!r}")
    entries = data.get("obligation")
    if not isinstance(entries, list) or not entries:
        problems.append("no [[obligation]] entries")
        raise RegistryError(source, problems)
    # tomllib keeps no positions; the n-th [[obligation]] header is the n-th entry.
    lines = [text.count("\n", 0, match.start()) + 1 for match in _HEADER.finditer(text)]
    if len(lines) != len(entries):
        lines = [0] * len(entries)
    seen: dict[str, int] = {}
    obligations = []
    for entry, line in zip(entries, lines, strict=True):
        obligation = _check_entry(entry, line, problems)
        if obligation is None:
            continue
        if obligation.id in seen:
            problems.append(
                f"line {line}: duplicate id {obligation.id!r} (first at line {seen[obligation.id]})"
            )
            continue
        seen[obligation.id] = line
        obligations.append(obligation)
    if problems:
        raise RegistryError(source, problems)
    return Registry(source, tuple(obligations))


def _check_entry(entry: object, line: int, problems: list[str]) -> Obligation | None:
    where = f"line {line}"
    if not isinstance(entry, dict):
        problems.append(f"{where}: an obligation must be a table")
        return None
    ident = entry.get("id")
    if isinstance(ident, str):
        where = f"line {line} ({ident})"
    before = len(problems)
    for key in sorted(set(entry) - ENTRY_KEYS):
        problems.append(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(ENTRY_KEYS))})")
    for key in REQUIRED_KEYS:
        if key not in entry:
            problems.append(f"{where}: missing field {key!r}")
    for key, value in entry.items():
        if key not in ENTRY_KEYS:
            continue
        if type(value) is not str:
            problems.append(f"{where}: {key} must be a string, found {type(value).__name__}")
        elif not value.strip() or value != value.strip() or "\n" in value:
            problems.append(f"{where}: {key} must be one non-empty line without outer spaces")
    if len(problems) > before:
        return None
    match = ID_PATTERN.fullmatch(ident)
    if match is None:
        problems.append(
            f"{where}: malformed id {ident!r} (expected ADR-NNNN/<section>.<item> "
            "or LOCAL-NNNN/<slug>, lowercase items)"
        )
        return None
    adr = entry["adr"]
    if ADR_PATTERN.fullmatch(adr) is None:
        problems.append(f"{where}: malformed adr {adr!r} (expected ADR-NNNN or LOCAL-NNNN)")
    elif (match["adr"] or match["local"]) != adr:
        problems.append(f"{where}: id {ident!r} does not start with its adr {adr!r}")
    elif match["adr"] and match["section"] != entry["section"]:
        problems.append(
            f"{where}: id {ident!r} names section {match['section']}, "
            f"but section is {entry['section']!r}"
        )
    if "no_mutant" in entry and "waiver" in entry:
        problems.append(f"{where}: a waived obligation is never gated; it needs no no_mutant")
    elif "no_mutant" in entry and not (
        adr.startswith("LOCAL-") or (adr, entry["section"]) in MUTANTS_REQUIRED
    ):
        problems.append(f"{where}: no_mutant: no mutant is due in {adr} §{entry['section']}")
    if len(problems) > before:
        return None
    return Obligation(
        id=ident,
        adr=adr,
        section=entry["section"],
        summary=entry["summary"],
        waiver=entry.get("waiver"),
        no_mutant=entry.get("no_mutant"),
        line=line,
    )


# ---------------------------------------------------------------------------------------------
# Test results and the gate


@dataclasses.dataclass(frozen=True)
class NodeResult:
    """One test item as it ran: its node id, its outcome and the obligations it names."""

    nodeid: str
    outcome: str
    obligations: tuple[str, ...] = ()


def worse_outcome(current: str | None, new: str | None) -> str | None:
    """Combine phase outcomes: an error or failure outranks a skip, which outranks a pass."""
    if new is None:
        return current
    if current is None or _RANK[new] > _RANK[current]:
        return new
    return current


@dataclasses.dataclass(frozen=True)
class MutantKill:
    """One catalogued mutant of an obligation, as a kill matrix recorded it."""

    mutant: str
    status: str
    killed: bool
    killed_by: str | None = None


@dataclasses.dataclass(frozen=True)
class ObligationStatus:
    obligation: Obligation
    status: str
    tests: tuple[NodeResult, ...]
    mutants: tuple[MutantKill, ...] = ()

    @property
    def offending_tests(self) -> tuple[NodeResult, ...]:
        return tuple(t for t in self.tests if t.outcome != PASSED)


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    scope: str | None
    statuses: tuple[ObligationStatus, ...]
    """Every obligation of the registry, in registry order."""
    unknown: tuple[tuple[str, str], ...]
    """(node id, obligation id) for each id a test names that the registry does not hold."""
    waived_named: tuple[tuple[str, str], ...]
    """(node id, obligation id) for each waived obligation a test names."""
    failed_tests: tuple[NodeResult, ...]
    """Tests that failed or errored, whatever they name."""
    mutants_checked: bool = False
    """Whether a kill matrix was applied (the mutant half of the gate)."""

    def in_scope(self, status: ObligationStatus) -> bool:
        return self.scope is None or status.obligation.adr == self.scope

    @property
    def gated(self) -> tuple[ObligationStatus, ...]:
        return tuple(s for s in self.statuses if self.in_scope(s) and s.status != WAIVED)

    @property
    def offending(self) -> tuple[ObligationStatus, ...]:
        return tuple(s for s in self.gated if s.status != COVERED)

    @property
    def untagged_failures(self) -> tuple[NodeResult, ...]:
        """Failed tests that name no obligation; a test naming one counts through its status."""
        return tuple(t for t in self.failed_tests if not t.obligations)

    @property
    def passed(self) -> bool:
        return not (self.offending or self.unknown or self.waived_named or self.untagged_failures)

    def count(self, status: str, *, scoped: bool = False) -> int:
        pool = [s for s in self.statuses if self.in_scope(s)] if scoped else self.statuses
        return sum(1 for s in pool if s.status == status)


def evaluate(
    registry: Registry,
    results: Iterable[NodeResult],
    scope: str | None = None,
    kills: Mapping[str, Sequence[MutantKill]] | None = None,
) -> GateVerdict:
    """Apply the gate to ``results``; ``scope`` limits it to one ADR's obligations. With
    ``kills`` (a kill matrix's mutants by obligation), an obligation whose tests pass is
    covered only when every mutant of it was killed, and, where one is due, it has one."""
    if scope is not None and scope not in registry.adrs:
        raise ValueError(f"unknown ADR {scope!r}: the registry holds {', '.join(registry.adrs)}")
    results = list(results)
    by_obligation: dict[str, list[NodeResult]] = {}
    unknown: list[tuple[str, str]] = []
    waived_named: list[tuple[str, str]] = []
    for result in results:
        for ident in result.obligations:
            if ident not in registry:
                unknown.append((result.nodeid, ident))
                continue
            if registry[ident].waiver is not None:
                waived_named.append((result.nodeid, ident))
            by_obligation.setdefault(ident, []).append(result)
    statuses = []
    for obligation in registry.obligations:
        tests = tuple(sorted(by_obligation.get(obligation.id, ()), key=lambda r: r.nodeid))
        if obligation.waiver is not None:
            status = WAIVED
        elif not tests:
            status = UNCOVERED
        elif any(t.outcome != PASSED for t in tests):
            status = FAILING
        elif kills is None:
            status = COVERED
        elif any(not kill.killed for kill in kills.get(obligation.id, ())):
            status = MUTANT_NOT_KILLED
        elif obligation.needs_mutant and not kills.get(obligation.id):
            status = NO_MUTANT
        else:
            status = COVERED
        mutants = tuple(kills.get(obligation.id, ())) if kills is not None else ()
        statuses.append(ObligationStatus(obligation, status, tests, mutants))
    failed = tuple(r for r in results if r.outcome in ("failed", "error"))
    return GateVerdict(
        scope, tuple(statuses), tuple(unknown), tuple(waived_named), failed, kills is not None
    )


def verdict_lines(verdict: GateVerdict) -> list[str]:
    """The verdict in a few lines, naming every offending obligation and test."""
    scope = verdict.scope or "all ADRs"
    gated = len(verdict.gated)
    head = (
        f"obligation gate ({scope}): "
        f"{'PASSED' if verdict.passed else 'FAILED'}: "
        f"{gated - len(verdict.offending)} of {gated} gated obligations covered by passing tests"
        + (" and killed mutants" if verdict.mutants_checked else "")
        + f", {verdict.count(WAIVED, scoped=True)} waived"
        + ("" if verdict.mutants_checked else " (mutant half not checked: no kill matrix)")
    )
    lines = [head]
    for status in verdict.offending:
        if status.status == UNCOVERED:
            lines.append(f"  {status.obligation.id}: no test names it")
        elif status.status == NO_MUTANT:
            lines.append(
                f"  {status.obligation.id}: its tests pass, but no catalogued mutant breaks it"
            )
        elif status.status == MUTANT_NOT_KILLED:
            missed = ", ".join(f"{k.mutant} ({k.status})" for k in status.mutants if not k.killed)
            lines.append(
                f"  {status.obligation.id}: its tests pass, but a mutant is not killed: {missed}"
            )
        else:
            bad = ", ".join(f"{t.nodeid} ({t.outcome})" for t in status.offending_tests)
            lines.append(f"  {status.obligation.id}: {bad}")
    for nodeid, ident in verdict.unknown:
        lines.append(f"  {nodeid}: names {ident!r}, which the registry does not hold")
    for nodeid, ident in verdict.waived_named:
        lines.append(f"  {nodeid}: names waived obligation {ident!r}")
    for result in verdict.untagged_failures:
        lines.append(f"  {result.nodeid}: {result.outcome} (names no obligation)")
    return lines


# ---------------------------------------------------------------------------------------------
# The matrix: JSON (the results, re-readable) and Markdown (for reviewers)


def matrix_json(
    registry: Registry,
    results: Sequence[NodeResult],
    verdict: GateVerdict,
    *,
    enforced: bool,
    context: dict[str, str],
    exitstatus: int | None = None,
) -> dict[str, Any]:
    def test_entry(result: NodeResult) -> dict[str, Any]:
        return {"nodeid": result.nodeid, "outcome": result.outcome}

    return {
        "schema": MATRIX_SCHEMA,
        "context": dict(context),
        "registry": registry.source,
        "scope": verdict.scope,
        "pytest_exitstatus": exitstatus,
        "gate": {
            "enforced": enforced,
            "passed": verdict.passed,
            "offending": [
                {
                    "id": s.obligation.id,
                    "status": s.status,
                    "tests": [test_entry(t) for t in s.offending_tests],
                    "mutants": [dataclasses.asdict(k) for k in s.mutants if not k.killed],
                }
                for s in verdict.offending
            ],
            "unknown": [{"nodeid": n, "id": i} for n, i in verdict.unknown],
            "waived_named": [{"nodeid": n, "id": i} for n, i in verdict.waived_named],
            "failed_tests": [test_entry(t) for t in verdict.failed_tests],
        },
        "summary": {
            "obligations": len(verdict.statuses),
            COVERED: verdict.count(COVERED),
            UNCOVERED: verdict.count(UNCOVERED),
            FAILING: verdict.count(FAILING),
            MUTANT_NOT_KILLED: verdict.count(MUTANT_NOT_KILLED),
            NO_MUTANT: verdict.count(NO_MUTANT),
            WAIVED: verdict.count(WAIVED),
            "mutants_checked": verdict.mutants_checked,
            "tests": len(results),
            "tests_naming_obligations": sum(1 for r in results if r.obligations),
        },
        "obligations": [
            {
                "id": s.obligation.id,
                "adr": s.obligation.adr,
                "section": s.obligation.section,
                "summary": s.obligation.summary,
                "waiver": s.obligation.waiver,
                "no_mutant": s.obligation.no_mutant,
                "status": s.status,
                "tests": [test_entry(t) for t in s.tests],
                "mutants": [dataclasses.asdict(kill) for kill in s.mutants],
            }
            for s in verdict.statuses
        ],
        "tests": [
            {"nodeid": r.nodeid, "outcome": r.outcome, "obligations": list(r.obligations)}
            for r in sorted(results, key=lambda r: r.nodeid)
        ],
    }


def results_from_matrix(data: object) -> tuple[list[NodeResult], dict[str, Any]]:
    """The test results recorded in a ``matrix.json`` object, and its other top-level fields."""
    if not isinstance(data, dict) or data.get("schema") != MATRIX_SCHEMA:
        raise MatrixError(f"not an obligation matrix (expected schema {MATRIX_SCHEMA!r})")
    tests = data.get("tests")
    if not isinstance(tests, list):
        raise MatrixError("'tests' must be a list")
    results = []
    for index, entry in enumerate(tests):
        if not isinstance(entry, dict) or set(entry) != {"nodeid", "outcome", "obligations"}:
            raise MatrixError(f"tests[{index}] must have exactly nodeid, outcome, obligations")
        nodeid, outcome, ids = entry["nodeid"], entry["outcome"], entry["obligations"]
        if type(nodeid) is not str or not nodeid:
            raise MatrixError(f"tests[{index}]: nodeid must be a non-empty string")
        if outcome not in OUTCOMES:
            raise MatrixError(f"tests[{index}] ({nodeid}): unknown outcome {outcome!r}")
        if not isinstance(ids, list) or any(type(i) is not str for i in ids):
            raise MatrixError(f"tests[{index}] ({nodeid}): obligations must be a list of ids")
        results.append(NodeResult(nodeid, outcome, tuple(ids)))
    meta = {key: value for key, value in data.items() if key != "tests"}
    return results, meta


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _test_cell(tests: Sequence[NodeResult]) -> str:
    """Tests grouped by function (parametrized cases counted), each with its outcomes."""
    groups: dict[str, dict[str, int]] = {}
    for test in tests:
        base = test.nodeid.split("[", 1)[0]
        counts = groups.setdefault(base, {})
        counts[test.outcome] = counts.get(test.outcome, 0) + 1
    parts = []
    for base, counts in groups.items():
        outcome = ", ".join(f"{n} {o}" if n > 1 else o for o, n in sorted(counts.items()))
        parts.append(f"`{_cell(base)}` ({outcome})")
    return "<br>".join(parts) if parts else "—"


def _mutant_cell(kills: Sequence[MutantKill], *, only_live: bool) -> str:
    shown = [k for k in kills if not (only_live and k.killed)]
    parts = [
        f"`{_cell(k.mutant)}` ({k.status}"
        + (f" by `{_cell(k.killed_by)}`" if k.killed_by and not only_live else "")
        + ")"
        for k in shown
    ]
    return "<br>".join(parts) if parts else "—"


def matrix_markdown(
    registry: Registry,
    results: Sequence[NodeResult],
    verdict: GateVerdict,
    *,
    enforced: bool,
    context: dict[str, str],
) -> str:
    out = ["# Obligation matrix", "", f"Made with {context_line(context)}.", ""]
    out.append(
        f"Registry `{registry.source}`: {len(verdict.statuses)} obligations, "
        f"{verdict.count(COVERED)} covered, {verdict.count(UNCOVERED)} uncovered, "
        f"{verdict.count(FAILING)} failing, {verdict.count(WAIVED)} waived; "
        f"{len(results)} tests ran, {sum(1 for r in results if r.obligations)} of them "
        "name obligations."
    )
    out.append("")
    scope = verdict.scope or "all ADRs"
    if enforced:
        result = "**passed**" if verdict.passed else "**failed**"
        out.append(f"Gate over {scope}: {result}.")
    else:
        out.append(
            f"Gate over {scope}: not enforced in this run (it would have "
            f"{'passed' if verdict.passed else 'failed'})."
        )
    out.append("")
    scoped = [s for s in verdict.statuses if verdict.in_scope(s)]
    uncovered = [s for s in scoped if s.status == UNCOVERED]
    failing = [s for s in scoped if s.status == FAILING]
    out += [f"## Uncovered: no test names these ({len(uncovered)})", ""]
    if uncovered:
        out += ["| obligation | section | summary |", "|---|---|---|"]
        out += [
            f"| {s.obligation.id} | {_cell(s.obligation.section)} | {_cell(s.obligation.summary)} |"
            for s in uncovered
        ]
    else:
        out.append("None.")
    out += ["", f"## Failing: a test naming these did not pass ({len(failing)})", ""]
    if failing:
        out += ["| obligation | tests that did not pass |", "|---|---|"]
        out += [f"| {s.obligation.id} | {_test_cell(s.offending_tests)} |" for s in failing]
    else:
        out.append("None.")
    if verdict.mutants_checked:
        not_killed = [s for s in scoped if s.status == MUTANT_NOT_KILLED]
        no_mutant = [s for s in scoped if s.status == NO_MUTANT]
        out += [
            "",
            f"## Mutant not killed: tests pass, a mutant of these lives ({len(not_killed)})",
        ]
        out += [""]
        if not_killed:
            out += ["| obligation | mutants not killed |", "|---|---|"]
            out += [
                f"| {s.obligation.id} | {_mutant_cell(s.mutants, only_live=True)} |"
                for s in not_killed
            ]
        else:
            out.append("None.")
        out += ["", f"## No mutant: tests pass, but nothing shows they can fail ({len(no_mutant)})"]
        out += [""]
        if no_mutant:
            out += ["| obligation | summary |", "|---|---|"]
            out += [f"| {s.obligation.id} | {_cell(s.obligation.summary)} |" for s in no_mutant]
        else:
            out.append("None.")
    else:
        out += [
            "",
            "Mutant half not checked: no kill matrix was given (`practice-loop gate --mutants`).",
        ]
    problems = [
        *(
            f"`{_cell(n)}` names `{_cell(i)}`, which the registry does not hold"
            for n, i in verdict.unknown
        ),
        *(f"`{_cell(n)}` names waived obligation `{_cell(i)}`" for n, i in verdict.waived_named),
        *(
            f"`{_cell(r.nodeid)}` {r.outcome} and names no obligation"
            for r in verdict.untagged_failures
        ),
    ]
    if problems:
        out += ["", f"## Other problems ({len(problems)})", ""]
        out += [f"- {p}" for p in problems]
    for adr in registry.adrs:
        rows = [s for s in verdict.statuses if s.obligation.adr == adr]
        out += ["", f"## {adr}", ""]
        out += [
            "| obligation | section | summary | status | tests | mutants |",
            "|---|---|---|---|---|---|",
        ]
        for s in rows:
            if s.status == WAIVED:
                tests = f"waived: {_cell(s.obligation.waiver or '')}"
            else:
                tests = _test_cell(s.tests)
            if s.obligation.no_mutant is not None and not s.mutants:
                mutants = f"none due: {_cell(s.obligation.no_mutant)}"
            else:
                mutants = _mutant_cell(s.mutants, only_live=False)
            out.append(
                f"| {s.obligation.id} | {_cell(s.obligation.section)} | "
                f"{_cell(s.obligation.summary)} | {s.status} | {tests} | {mutants} |"
            )
    out.append("")
    return "\n".join(out)


def write_matrix(
    directory: str | Path,
    registry: Registry,
    results: Sequence[NodeResult],
    verdict: GateVerdict,
    *,
    enforced: bool,
    context: dict[str, str],
    exitstatus: int | None = None,
) -> tuple[Path, Path]:
    """Write ``matrix.json`` and ``matrix.md`` into ``directory``; return their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    as_json = matrix_json(
        registry, results, verdict, enforced=enforced, context=context, exitstatus=exitstatus
    )
    json_path = directory / MATRIX_JSON
    md_path = directory / MATRIX_MARKDOWN
    markdown = matrix_markdown(registry, results, verdict, enforced=enforced, context=context)
    json_path.write_text(json.dumps(as_json, indent=2, ensure_ascii=False) + "\n", "utf-8")
    md_path.write_text(markdown, "utf-8")
    return json_path, md_path


def ids_of_user_properties(properties: Iterable[object]) -> tuple[str, ...]:
    """The obligation ids carried in a report's ``user_properties``, in order, once each.

    Reports shipped by pytest-xdist may carry the pairs as lists rather than tuples.
    """
    found: dict[str, None] = {}
    for prop in properties:
        if isinstance(prop, (tuple, list)) and len(prop) == 2 and prop[0] == USER_PROPERTY:
            value = prop[1]
            if isinstance(value, (tuple, list)):
                found.update((str(v), None) for v in value)
    return tuple(found)


def summary_by_section(registry: Registry) -> Mapping[tuple[str, str], int]:
    """How many obligations each (adr, section) holds; for LOCAL records, per record."""
    counts: dict[tuple[str, str], int] = {}
    for o in registry.obligations:
        key = (o.adr, o.section if o.adr.startswith("ADR-") else "")
        counts[key] = counts.get(key, 0) + 1
    return counts
