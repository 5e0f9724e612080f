"""The mutant catalogue and its runner (docs/adr/0014, issue 17): the catalogue's schema, each
mutant judged by what its test runs recorded, kills confirmed on the unmutated copy, the kill
matrix, and the gate's mutant half. The run in real copies of the checkout is in
``tests/nocover/test_mutants_run.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from practice_loop.harness import mutants
from practice_loop.harness.mutants import (
    Catalogue,
    CatalogueError,
    KillMatrixError,
    Mutant,
    MutantResult,
    Phase,
    PytestRun,
    Status,
    Worker,
    confirm_kills,
    kill_matrix,
    kills_from_matrix,
    load_catalogue,
    mutated_source,
    obligation_tests,
)
from practice_loop.harness.obligations import (
    COVERED,
    FAILING,
    MUTANT_NOT_KILLED,
    NO_MUTANT,
    MutantKill,
    NodeResult,
    RegistryError,
    evaluate,
    load_registry,
    parse_registry,
    verdict_lines,
)

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = load_registry(ROOT / "docs" / "obligations.toml")
CATALOGUE = ROOT / "docs" / "mutants"

_ENTRY = """
[[mutant]]
id = "budget-parallel"
obligations = ["ADR-0227/13.4"]
file = "src/practice_loop/kernel/budget.py"
find = "max_parallelism != 1"
replace = "max_parallelism < 1"
summary = "A budget row may grant parallel search."
"""


def _catalogue(tmp_path: Path, text: str, name: str = "a.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(_catalogue(tmp_path, text), REGISTRY)
    return [problem.split(": ", 1)[1] for problem in caught.value.problems]


# --------------------------------------------------------------------------------------------
# The catalogue as it is


@pytest.mark.obligation("LOCAL-0014/stale_fails", "LOCAL-0014/invalid_fails")
def test_every_catalogued_mutant_applies_exactly_once_and_compiles():
    """docs/adr/0014: the catalogue moves with the code. Every edit site is in its file exactly
    once (else the mutant is stale) and the mutated file compiles (else it is no semantic
    violation); checked here so a stale mutant fails the default suite, not only the run.
    Under a mutant the runner checks this itself, before applying it."""
    if os.environ.get(mutants.MUTANT_ENVIRONMENT):
        pytest.skip("run under a mutant: its own edit site is gone by design")
    catalogue = load_catalogue(CATALOGUE, REGISTRY)
    assert catalogue.mutants
    for mutant in catalogue.mutants:
        text, why = mutated_source(mutant, (ROOT / mutant.file).read_text(encoding="utf-8"))
        assert text is not None, f"{mutant.id} ({mutant.source}) is stale: {why}"
        compile(text, mutant.file, "exec")


@pytest.mark.obligation("LOCAL-0014/kill_matrix_of_catalogue")
def test_the_catalogue_digest_is_of_its_entries_not_their_order_or_files(tmp_path):
    """A kill matrix names the catalogue it was made of by digest; moving an entry between
    files or reordering keeps it, changing any field moves it."""
    second = _ENTRY.replace("budget-parallel", "budget-parallel-2").replace("!= 1", "!= 1 ")
    one = load_catalogue(
        _catalogue(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY + second), REGISTRY
    )
    folder = tmp_path / "split"
    folder.mkdir()
    _catalogue(folder, 'schema = "mutants.v1"\n' + second, "b.toml")
    _catalogue(folder, 'schema = "mutants.v1"\n' + _ENTRY, "c.toml")
    split = load_catalogue(folder, REGISTRY)
    assert one.digest == split.digest
    changed = _catalogue(
        tmp_path, 'schema = "mutants.v1"\n' + _ENTRY.replace("< 1", "<= 1"), "d.toml"
    )
    assert (
        load_catalogue(changed, REGISTRY).digest
        != load_catalogue(
            _catalogue(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY, "e.toml"), REGISTRY
        ).digest
    )


# --------------------------------------------------------------------------------------------
# Refusals of the catalogue, each with its reason


@pytest.mark.obligation("LOCAL-0014/catalogue_schema")
@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (("budget-parallel", "Budget_Parallel"), "id 'Budget_Parallel' must be lowercase letters"),
        (('["ADR-0227/13.4"]', '["ADR-0227/13.44"]'), "obligations: unknown id 'ADR-0227/13.44'"),
        (('["ADR-0227/13.4"]', '["ADR-0227/13.1"]'), "obligations: ADR-0227/13.1 is waived"),
        (('["ADR-0227/13.4"]', "[]"), "obligations must be a non-empty list of ids"),
        (
            ('["ADR-0227/13.4"]', '["ADR-0227/13.4", "ADR-0227/13.4"]'),
            "obligations: an id is named twice",
        ),
        (
            ("src/practice_loop/kernel/budget.py", "tests/cover/test_budget.py"),
            "file 'tests/cover/test_budget.py' must be a relative .py path under src/ or "
            "strategies/",
        ),
        (
            ("src/practice_loop/kernel/budget.py", "src/../tests/x.py"),
            "file 'src/../tests/x.py' must be a relative .py path",
        ),
        (
            ('replace = "max_parallelism < 1"', 'replace = "max_parallelism != 1"'),
            "replace is the same as find",
        ),
        (('find = "max_parallelism != 1"', 'find = ""'), "find must not be empty"),
        (
            ('summary = "A budget row may grant parallel search."', 'summary = " "'),
            "summary must be one",
        ),
        (("summary =", "sumary ="), "unknown key 'sumary'"),
    ],
)
def test_a_malformed_mutant_is_refused_with_its_reason(tmp_path, edit, problem):
    """docs/adr/0014: a catalogue entry that breaks the schema is a usage error naming the
    entry and the rule, never a mutant that silently does nothing."""
    problems = _problems(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY.replace(*edit))
    assert any(problem in found for found in problems), problems


@pytest.mark.obligation("LOCAL-0014/catalogue_schema")
def test_catalogue_level_refusals(tmp_path):
    assert _problems(tmp_path, 'schema = "mutants.v0"\n' + _ENTRY) == [
        "schema must be 'mutants.v1', found 'mutants.v0'"
    ]
    assert _problems(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY + _ENTRY) == [
        f"duplicate id 'budget-parallel' (first {tmp_path / 'a.toml'}:3)"
    ]
    assert _problems(tmp_path, 'schema = "mutants.v1"\n') == ["no [[mutant]] entries"]
    assert "cannot be read as TOML" in _problems(tmp_path, "schema = \n")[0]
    (tmp_path / "empty").mkdir()
    with pytest.raises(CatalogueError, match="no \\*.toml files"):
        load_catalogue(tmp_path / "empty", REGISTRY)


@pytest.mark.obligation("LOCAL-0014/catalogue_schema")
def test_an_unknown_obligation_is_refused_with_a_suggestion(tmp_path):
    problems = _problems(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY.replace("13.4", "13.04"))
    assert len(problems) == 1
    assert problems[0].startswith("obligations: unknown id 'ADR-0227/13.04' (did you mean ")
    assert "ADR-0227/13.4" in problems[0]


@pytest.mark.obligation("LOCAL-0014/stale_fails")
@pytest.mark.parametrize(
    ("source", "count"),
    [("x = 1\n", 0), ("a = max_parallelism != 1\nb = max_parallelism != 1\n", 2)],
)
def test_an_edit_site_not_there_exactly_once_is_stale(source, count):
    """docs/adr/0014: a mutant whose edit site is gone, or no longer unique, is stale."""
    mutant = Mutant("m", ("ADR-0227/13.4",), "src/x.py", "max_parallelism != 1", "y", "s", "here")
    text, why = mutated_source(mutant, source)
    assert text is None
    assert why == (
        "the edit site is not in src/x.py"
        if count == 0
        else "the edit site occurs 2 times in src/x.py"
    )


# --------------------------------------------------------------------------------------------
# Judging one mutant from its recorded test runs


class _ScriptedWorker(Worker):
    """A worker whose pytest runs are given, in order, instead of run."""

    def __init__(self, copy: Path, runs: list[PytestRun]) -> None:
        super().__init__(copy, timeout=5)
        self.runs = runs
        self.calls: list[tuple[list[str], str]] = []
        self.under: list[str] = []  # the mutant each run was told it is under
        self.timeouts: list[float | None] = []  # each run's own timeout (None: the worker's)

    def pytest(self, arguments, *, first_failure_only, mutant="", timeout=None):
        module = self.copy / "src" / "m.py"
        self.calls.append((list(arguments), module.read_text(encoding="utf-8")))
        self.under.append(mutant)
        self.timeouts.append(timeout)
        return self.runs.pop(0)


def _copy(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("LIMIT = 1\n", encoding="utf-8")
    return tmp_path


_MUTANT = Mutant("m", ("ADR-0227/13.4",), "src/m.py", "LIMIT = 1", "LIMIT = 2", "s", "here")
_PASS = PytestRun(0, (), 1.0, "")


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first", "LOCAL-0014/copies_only")
def test_a_mutant_killed_by_its_obligation_tests_stops_there(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [PytestRun(1, (("t::a", "call"),), 2.0, "")])
    result = worker.judge(_MUTANT, ["t::a", "t::b"])
    assert (result.status, result.phase, result.killed_by) == (
        Status.KILLED,
        Phase.OBLIGATION_TESTS,
        "t::a",
    )
    assert worker.calls == [(["t::a", "t::b"], "LIMIT = 2\n")]  # run under the mutant
    assert worker.under == ["m"]  # and told so (the catalogue check skips itself)
    assert (tmp_path / "src" / "m.py").read_text() == "LIMIT = 1\n"  # and restored


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first")
def test_a_mutant_that_survives_its_obligation_tests_meets_the_whole_suite(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [_PASS, PytestRun(1, (("u::c", "call"),), 9.0, "")])
    result = worker.judge(_MUTANT, ["t::a"])
    assert (result.status, result.phase, result.killed_by, result.seconds) == (
        Status.KILLED,
        Phase.SUITE,
        "u::c",
        10.0,
    )
    assert [arguments for arguments, _ in worker.calls] == [["t::a"], []]


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first")
def test_a_mutant_that_passes_everything_survived(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [_PASS, _PASS])
    assert worker.judge(_MUTANT, ["t::a"]).status is Status.SURVIVED


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first")
def test_a_mutant_of_an_obligation_no_test_names_meets_the_whole_suite(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [_PASS])
    assert worker.judge(_MUTANT, []).status is Status.SURVIVED
    assert [arguments for arguments, _ in worker.calls] == [[]]


@pytest.mark.obligation("LOCAL-0014/invalid_fails", "LOCAL-0014/kills_confirmed")
@pytest.mark.parametrize(
    ("run", "status", "detail"),
    [
        (PytestRun(None, (), 5.0, ""), Status.TIMED_OUT, "timeout after 5 s"),
        (
            PytestRun(2, (("tests/x.py", "collect"),), 1.0, ""),
            Status.INVALID,
            "a test module cannot be imported: tests/x.py",
        ),
        (PytestRun(4, (), 1.0, "usage"), Status.INVALID, "pytest exited 4:\nusage"),
        (PytestRun(1, (), 1.0, "none"), Status.INVALID, "pytest exited 1:\nnone"),
    ],
)
def test_a_hang_counts_as_a_kill_but_an_import_crash_or_a_broken_run_does_not(
    tmp_path, run, status, detail
):
    """docs/adr/0014: a hang is a fault the suite detects; a test module that cannot be
    imported, or a run that ends without a recorded failing test, proves nothing, and the
    report says which it was."""
    result = _ScriptedWorker(_copy(tmp_path), [run]).judge(_MUTANT, ["t::a"])
    assert (result.status, result.detail) == (status, detail)
    assert (tmp_path / "src" / "m.py").read_text() == "LIMIT = 1\n"


@pytest.mark.obligation("LOCAL-0014/invalid_fails")
def test_a_mutant_that_does_not_compile_is_invalid_and_never_run(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [])
    broken = Mutant("m", ("ADR-0227/13.4",), "src/m.py", "LIMIT = 1", "LIMIT = (", "s", "here")
    result = worker.judge(broken, ["t::a"])
    assert result.status is Status.INVALID and result.detail.startswith("does not compile")
    assert worker.calls == []


@pytest.mark.obligation("LOCAL-0014/stale_fails")
def test_a_stale_mutant_is_never_run(tmp_path):
    worker = _ScriptedWorker(_copy(tmp_path), [])
    gone = Mutant("m", ("ADR-0227/13.4",), "src/m.py", "LIMIT = 3", "LIMIT = 2", "s", "here")
    assert worker.judge(gone, ["t::a"]).status is Status.STALE
    missing = Mutant("m", ("ADR-0227/13.4",), "src/gone.py", "a", "b", "s", "here")
    assert worker.judge(missing, ["t::a"]).status is Status.STALE
    assert worker.calls == []


@pytest.mark.obligation("LOCAL-0014/copies_only")
def test_writing_a_mutated_module_drops_its_cached_bytecode(tmp_path):
    """A restored file can match a mutant's size and modification second; its cached bytecode
    must go with every write, or one mutant's code would run under the next."""
    module = tmp_path / "m.py"
    module.write_text("LIMIT = 1\n", encoding="utf-8")
    cache = Path(importlib.util.cache_from_source(str(module)))
    py_compile.compile(str(module), cfile=str(cache))
    assert cache.is_file()
    mutants._write_source(module, "LIMIT = 2\n")
    assert not cache.exists()


_PHASES_PROBE = """
from hypothesis import settings

def test_phases():
    print("PHASES", sorted(phase.name for phase in settings.default.phases))
"""


@pytest.mark.parametrize(
    ("judging", "expected"),
    [
        (True, ["explicit", "generate", "reuse", "target"]),
        (False, ["explain", "explicit", "generate", "reuse", "shrink", "target"]),
    ],
)
def test_a_judging_run_skips_shrinking_and_only_it_does(tmp_path, judging, expected):
    """docs/adr/0014: under a mutant one failing example is a kill, so the runs that judge one
    (those with ``--mutant-report``) skip Hypothesis's shrink and explain phases, the largest
    cost of a kill; every other phase, and every other run, is as the profile says."""
    (tmp_path / "test_probe.py").write_text(_PHASES_PROBE, encoding="utf-8")
    report = tmp_path / "report.json"
    judge = [f"--mutant-report={report}"] if judging else []
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-s",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "practice_loop.harness.mutant_plugin",
            *judge,
            "test_probe.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env=os.environ | {"HYPOTHESIS_PROFILE": "default"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"PHASES {expected}" in done.stdout
    assert report.is_file() is judging


@pytest.mark.obligation("LOCAL-0014/kills_confirmed")
def test_a_timeout_counts_only_when_the_same_tests_finish_unmutated(tmp_path):
    """A phase cut off by --timeout proves a hang only if the same tests finish in time on the
    unmutated copy; if they time out there too, the timeout is too short and the mutant is
    unconfirmed, never a kill."""
    slow = MutantResult(_MUTANT, Status.TIMED_OUT, Phase.SUITE, 5.0)
    hang = MutantResult(
        dataclasses_replace(_MUTANT, id="n"), Status.TIMED_OUT, Phase.OBLIGATION_TESTS, 5.0
    )
    arguments = {"m": [], "n": ["t::a"]}
    worker = _ScriptedWorker(_copy(tmp_path), [PytestRun(None, (), 5.0, ""), _PASS])
    confirmed = confirm_kills([worker], [slow, hang], lambda r: arguments[r.mutant.id])
    assert [r.status for r in confirmed] == [Status.UNCONFIRMED, Status.TIMED_OUT]
    assert "longer than --timeout on the unmutated copy" in confirmed[0].detail
    assert worker.calls == [([], "LIMIT = 1\n"), (["t::a"], "LIMIT = 1\n")]  # unmutated
    assert worker.timeouts == [None, None]  # the catalogue's: the worker's own --timeout


@pytest.mark.obligation("LOCAL-0014/kills_confirmed", "LOCAL-0015/phase_timeouts")
def test_a_timed_out_run_is_confirmed_unmutated_within_its_own_timeout(tmp_path):
    """A run cut off at its own timeout (docs/adr/0015) is run unmutated within that same
    timeout: a longer one could call a hang what the unmutated tests also take."""
    worker = _ScriptedWorker(_copy(tmp_path), [PytestRun(None, (), 40.0, ""), _PASS])
    limits = {("t::a",): 40.0, ("t::b",): 90.0}
    assert mutants.slow_unmutated([worker], list(limits), limits.__getitem__) == {("t::a",)}
    assert worker.timeouts == [40.0, 90.0]


@pytest.mark.obligation("LOCAL-0014/kills_confirmed")
def test_a_kill_by_a_test_that_fails_unmutated_too_is_unconfirmed(tmp_path):
    """A test failing without any mutant killed nothing: every kill is re-run unmutated."""
    results = [
        MutantResult(_MUTANT, Status.KILLED, Phase.OBLIGATION_TESTS, 1.0, "t::flaky"),
        MutantResult(
            dataclasses_replace(_MUTANT, id="n"),
            Status.KILLED,
            Phase.OBLIGATION_TESTS,
            1.0,
            "t::good",
        ),
        MutantResult(dataclasses_replace(_MUTANT, id="o"), Status.STALE),
    ]
    worker = _ScriptedWorker(_copy(tmp_path), [PytestRun(1, (("t::flaky", "call"),), 1.0, "")])
    confirmed = confirm_kills([worker], results)
    assert [r.status for r in confirmed] == [Status.UNCONFIRMED, Status.KILLED, Status.STALE]
    assert worker.calls == [(["t::flaky", "t::good"], "LIMIT = 1\n")]


@pytest.mark.obligation("LOCAL-0014/kills_confirmed")
def test_a_kill_by_a_test_whose_fixture_errors_unmutated_is_unconfirmed(tmp_path):
    """A killing test that errors in its setup on the unmutated copy killed nothing either."""
    results = [MutantResult(_MUTANT, Status.KILLED, Phase.OBLIGATION_TESTS, 1.0, "t::fixture")]
    worker = _ScriptedWorker(_copy(tmp_path), [PytestRun(1, (("t::fixture", "setup"),), 1.0, "")])
    assert [r.status for r in confirm_kills([worker], results)] == [Status.UNCONFIRMED]


def dataclasses_replace(mutant: Mutant, **changes) -> Mutant:
    import dataclasses

    return dataclasses.replace(mutant, **changes)


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first")
def test_obligation_tests_come_own_file_first_slow_directories_last():
    collected = [
        {"nodeid": "tests/stateful/test_machine.py::t", "obligations": ["X"]},
        {"nodeid": "tests/cover/test_loop.py::a", "obligations": ["X"]},
        {"nodeid": "tests/cover/test_loop.py::b", "obligations": []},
        {"nodeid": "tests/cover/test_m.py::c[1]", "obligations": ["Y", "X"]},
        {"nodeid": "tests/cover/test_trace.py::d", "obligations": ["Z"]},
        {"nodeid": "tests/cover/test_m.py::e", "obligations": ["Z"]},
        {"nodeid": "tests/cover/test_other.py::f", "obligations": ["W"]},
    ]
    mutant = dataclasses_replace(_MUTANT, obligations=("X", "Z"))  # of src/m.py
    assert obligation_tests(collected, mutant) == [
        "tests/cover/test_m.py::c[1]",
        "tests/cover/test_m.py::e",
        "tests/cover/test_loop.py::a",
        "tests/cover/test_trace.py::d",
        "tests/stateful/test_machine.py::t",
    ]


# --------------------------------------------------------------------------------------------
# The kill matrix and the gate's mutant half


def _matrix(catalogue: Catalogue, statuses: dict[str, Status]) -> dict:
    results = [
        MutantResult(m, statuses[m.id], Phase.OBLIGATION_TESTS, 1.0, "t::a")
        for m in catalogue.mutants
    ]
    return json.loads(
        json.dumps(kill_matrix(catalogue, results, context={}, jobs=1, wall_seconds=1.0))
    )


def _two(tmp_path: Path) -> Catalogue:
    second = _ENTRY.replace("budget-parallel", "other").replace(
        '["ADR-0227/13.4"]', '["ADR-0228/16.1"]'
    )
    return load_catalogue(
        _catalogue(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY + second), REGISTRY
    )


@pytest.mark.obligation("LOCAL-0014/obligation_tests_first")
def test_the_kill_matrix_totals_and_rows(tmp_path):
    catalogue = _two(tmp_path)
    matrix = _matrix(catalogue, {"budget-parallel": Status.KILLED, "other": Status.SURVIVED})
    assert matrix["totals"]["killed"] == 1 and matrix["totals"]["survived"] == 1
    assert matrix["totals"]["obligations_with_mutants"] == 2
    assert matrix["obligations"]["ADR-0228/16.1"] == [
        {"mutant": "other", "status": "survived", "killed_by": "t::a"}
    ]
    markdown = mutants.kill_matrix_markdown(matrix)
    assert "## Not killed" in markdown and "`other` | survived" in markdown


@pytest.mark.obligation("LOCAL-0014/kill_matrix_of_catalogue")
def test_the_gate_refuses_a_kill_matrix_of_another_or_a_partial_catalogue(tmp_path):
    """A kill matrix speaks only for the catalogue it was made of, whole."""
    catalogue = _two(tmp_path)
    matrix = _matrix(catalogue, {"budget-parallel": Status.KILLED, "other": Status.KILLED})
    assert set(kills_from_matrix(matrix, catalogue)) == {"ADR-0227/13.4", "ADR-0228/16.1"}
    moved = load_catalogue(
        _catalogue(tmp_path, 'schema = "mutants.v1"\n' + _ENTRY.replace("< 1", "<= 1"), "z.toml"),
        REGISTRY,
    )
    with pytest.raises(KillMatrixError, match="another catalogue"):
        kills_from_matrix(matrix, moved)
    # The same file, edited in place since the run, is another catalogue too.
    same_path = Path(catalogue.source)
    same_path.write_text(same_path.read_text().replace("< 1", "<= 1"), encoding="utf-8")
    with pytest.raises(KillMatrixError, match="another catalogue"):
        kills_from_matrix(matrix, load_catalogue(same_path, REGISTRY))
    partial = dict(matrix, mutants=matrix["mutants"][:1])
    with pytest.raises(KillMatrixError, match="judged 1 of the catalogue's 2 mutants"):
        kills_from_matrix(partial, catalogue)
    with pytest.raises(KillMatrixError, match="unknown status"):
        kills_from_matrix(
            dict(matrix, mutants=[dict(matrix["mutants"][0], status="fine")]), catalogue
        )
    with pytest.raises(KillMatrixError, match="not a kill matrix"):
        kills_from_matrix({"schema": "obligation_matrix.v1"}, catalogue)


_SMALL_REGISTRY = """schema = "obligations.v1"

[[obligation]]
id = "ADR-0228/16.1"
adr = "ADR-0228"
section = "16"
summary = "A row of a failure table."

[[obligation]]
id = "ADR-0226/9.1"
adr = "ADR-0226"
section = "9"
summary = "A determinism rule."

[[obligation]]
id = "LOCAL-0004/imports"
adr = "LOCAL-0004"
section = "Decision: Imports"
summary = "A rule of ours."
no_mutant = "An import rule: the architecture test is what breaks."

[[obligation]]
id = "LOCAL-0004/admission"
adr = "LOCAL-0004"
section = "Decision: Admission"
summary = "Another rule of ours, one a source edit can break."
"""


def _kill(mutant: str, killed: bool) -> MutantKill:
    return MutantKill(mutant, "killed" if killed else "survived", killed, None)


@pytest.mark.obligation("LOCAL-0014/gate_mutant_half")
def test_the_gate_covers_an_obligation_only_when_its_tests_pass_and_its_mutants_die():
    """Issue 17: covered means a passing test *and* every mutant of it killed, and a mutant
    where one is due (ADR-0228 §16 here); a rule with ``no_mutant`` needs none, one outside
    the required sections may have none."""
    registry = parse_registry(_SMALL_REGISTRY)
    results = [NodeResult(f"t::{i}", "passed", (i,)) for i in registry.ids]

    def statuses(kills):
        return {
            s.obligation.id: s.status for s in evaluate(registry, results, None, kills).statuses
        }

    assert statuses(None) == dict.fromkeys(registry.ids, COVERED)
    assert statuses({}) == {
        "ADR-0228/16.1": NO_MUTANT,
        "ADR-0226/9.1": COVERED,
        "LOCAL-0004/imports": COVERED,
        "LOCAL-0004/admission": NO_MUTANT,
    }
    live = {
        "ADR-0228/16.1": [_kill("a", True), _kill("b", False)],
        "ADR-0226/9.1": [_kill("c", False)],
    }
    assert statuses(live) == {
        "ADR-0228/16.1": MUTANT_NOT_KILLED,
        "ADR-0226/9.1": MUTANT_NOT_KILLED,
        "LOCAL-0004/imports": COVERED,
        "LOCAL-0004/admission": NO_MUTANT,
    }
    failing = [NodeResult("t::x", "failed", ("ADR-0228/16.1",)), *results[1:]]
    verdict = evaluate(registry, failing, None, {"ADR-0228/16.1": [_kill("a", True)]})
    assert verdict.statuses[0].status == FAILING  # the tests' half is named first
    lines = verdict_lines(evaluate(registry, results, None, live))
    assert "  ADR-0228/16.1: its tests pass, but a mutant is not killed: b (survived)" in lines
    assert "no kill matrix" in verdict_lines(evaluate(registry, results))[0]


@pytest.mark.obligation("LOCAL-0014/gate_mutant_half")
@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('no_mutant = "x"\nwaiver = "y"', "a waived obligation is never gated"),
        ('no_mutant = "x"', "no_mutant: no mutant is due in ADR-0226 §9"),
    ],
)
def test_no_mutant_is_refused_where_it_means_nothing(extra, problem):
    text = _SMALL_REGISTRY.replace(
        'summary = "A determinism rule."', f'summary = "A determinism rule."\n{extra}'
    )
    with pytest.raises(RegistryError) as caught:
        parse_registry(text)
    assert any(problem in found for found in caught.value.problems), caught.value.problems
