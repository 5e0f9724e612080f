"""The kernel's generic mutation score (docs/adr/0015, issue 17): which of cosmic-ray's mutants
are equivalent and why, the seeded sample and the shards, each mutant judged by what its test
runs recorded, the score, and the shards added into one report. CI runs the real thing
(``.ci/run``); these tests pin each rule of it."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from practice_loop.harness import mutation_score as ms
from practice_loop.harness.mutants import CopyError, Phase, PytestRun, Worker
from practice_loop.harness.mutation_score import (
    ANNOTATION_REASON,
    Equivalent,
    Judged,
    Site,
    UsageError,
    Verdict,
)

_MODULE = """from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Row:
    limit: int | None = None


def bound(value: int | None, *, cap: "int | str" = 2) -> int | None:
    return value if value is None or value < cap else cap
"""


def _site(line: int, column: int, text: str, *, occurrence: int = 0, operator: str = "op") -> Site:
    return Site(
        job_id=f"{line}-{column}-{operator}-{occurrence}",
        file="src/practice_loop/kernel/m.py",
        operator=operator,
        occurrence=occurrence,
        line=line,
        column=column,
        text=text,
    )


def _root(tmp_path: Path, source: str = _MODULE) -> Path:
    kernel = tmp_path / "src" / "practice_loop" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "m.py").write_text(source, encoding="utf-8")
    (kernel / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tests" / "architecture").mkdir(parents=True)
    return tmp_path


# --------------------------------------------------------------------------------------------
# Equivalent mutants


@pytest.mark.obligation("LOCAL-0015/annotation_rule")
def test_only_function_annotations_of_a_postponed_module_are_equivalent_by_rule():
    """A record field's annotation is evaluated (record.py reads it with get_type_hints), so
    only parameters' and returns' annotations count, and only under PEP 563."""
    spans = ms.annotation_spans(_MODULE)
    # value: int | None, cap: "int | str", and the return annotation; not Row.limit.
    assert spans == [((11, 17), (11, 27)), ((11, 37), (11, 48)), ((11, 57), (11, 67))]
    assert ms.annotation_spans(_MODULE.replace("from __future__ import annotations\n", "")) == []


_SCOPES = """from __future__ import annotations

LIMITS: dict[str, int | None] = {}


class Row:
    limit: int | None = None


def f() -> None:
    local: int | None = None
    try:
        self.token: Token[int | None] | None = None
    except Error:
        class Inner:
            field: int | None = None
"""


@pytest.mark.obligation("LOCAL-0015/annotation_rule")
def test_a_module_scope_or_function_body_annotation_is_equivalent_by_rule_a_class_body_one_not():
    """A variable's annotation at module scope is kept as a string nobody reads, and one in a
    function's body, even of an attribute (``self.token: T = ...``), is not even kept under
    PEP 563; a class body's may be a record field's, which record.py evaluates, even for a
    class made inside a function."""
    lines = _SCOPES.splitlines()
    assert ms.annotation_spans(_SCOPES) == [
        ((3, 8), (3, lines[2].index(" = {}"))),
        ((10, 11), (10, 15)),  # the return annotation
        ((11, 11), (11, 21)),  # the local variable's
        ((13, 20), (13, lines[12].index(" = None"))),  # the attribute's, inside a try block
    ]
    assert ms.annotation_spans(_SCOPES.replace("from __future__ import annotations\n", "")) == []


@pytest.mark.obligation("LOCAL-0015/annotation_rule")
def test_annotation_columns_are_characters_not_bytes():
    """cosmic-ray counts characters; ast counts UTF-8 bytes."""
    source = "from __future__ import annotations\n\ndef f(é: int, x: str) -> None: ...\n"
    assert ms.annotation_spans(source) == [
        ((3, 9), (3, 12)),
        ((3, 17), (3, 20)),
        ((3, 25), (3, 29)),
    ]


_IDENTITIES = """def f(x, y):
    return type(x) is not int, x is None, type(x) is type(y), 1 < type(x) is int
"""


@pytest.mark.obligation("LOCAL-0015/type_identity_rule")
def test_type_identity_made_equality_is_judged_like_any_identity(tmp_path):
    """No rule sets `type(x) is not int` made `type(x) != int` aside: x's class may have a
    metaclass whose __eq__ says yes to every class (practice_strategies.Impostor), so the
    two differ. Every mutant of the line is a candidate, with no reason given."""
    line = _IDENTITIES.splitlines()[1]
    kernel = _root(tmp_path, _IDENTITIES)
    column = line.index(" is not int")
    same = _site(2, column, line.strip(), operator="core/ReplaceComparisonOperator_IsNot_NotEq")
    flipped = _site(2, column, line.strip(), operator="core/ReplaceComparisonOperator_IsNot_Is")
    between = _site(
        2, line.index(" is type(y)"), line.strip(), operator="core/ReplaceComparisonOperator_Is_Eq"
    )
    none = _site(
        2, line.index(" is None"), line.strip(), operator="core/ReplaceComparisonOperator_Is_Eq"
    )
    candidates, reasons, _ = ms.classify(kernel, [same, flipped, between, none], [])
    assert reasons == {}
    assert candidates == [same, flipped, between, none]
    assert ms.equivalence_rules(_IDENTITIES, ms.enum_fields([_IDENTITIES])) == []


_ENUMS = """import enum

class Colour(enum.Enum):
    RED = "red"

class Loud(enum.Enum):
    A = "a"
    def __eq__(self, other):
        return True
"""
_ENUM_FIELDS = """from typing import Annotated

class Paint(Record):
    colour: Annotated[Colour, member_of(Colour)]
    tint: Annotated[Colour | None, optional(member_of(Colour))]
    shade: Annotated[Colour, member_of(Colour)]
    noise: Annotated[Loud, member_of(Loud)]
    name: Annotated[str, label]

class Swatch(Record):
    shade: Annotated[str, label]

def f(paint, colour):
    return (
        paint.colour is Colour.RED,
        Colour.RED is not paint.tint,
        colour is Colour.RED,
        paint.shade is Colour.RED,
        paint.noise is Loud.A,
        paint.name is Colour.RED,
        paint.colour is Colour.RED is paint.tint,
        paint.colour is Swatch.RED,
    )
"""


@pytest.mark.obligation("LOCAL-0015/enum_field_rule")
def test_only_a_member_of_field_against_a_plain_enum_member_is_equivalent_by_rule(tmp_path):
    """docs/adr/0015: `paint.colour is Colour.RED` and `==` agree when every field named
    `colour` is checked by member_of to be exactly a plain enum, whose == is identity. Not a
    bare name (an argument nobody checked may define __eq__), not a field name another record
    declares unchecked, not an enum that defines __eq__, not a chained comparison, not a
    member of something that is not a plain enum; and only `is` made `==`."""
    known = ms.enum_fields([_ENUMS, _ENUM_FIELDS])
    assert known == ms.EnumFields(frozenset({"Colour"}), frozenset({"colour", "tint"}))
    lines = _ENUM_FIELDS.splitlines()
    row = lines.index("        paint.colour is Colour.RED,") + 1
    assert ms.enum_field_identity_spans(_ENUM_FIELDS, known) == [
        ((row, 8), (row, 34)),
        ((row + 1, 8), (row + 1, 36)),
    ]
    kernel = _root(tmp_path, _ENUM_FIELDS)
    (kernel / "src/practice_loop/kernel/enums.py").write_text(_ENUMS, encoding="utf-8")
    same = _site(row, 21, lines[row - 1].strip(), operator="core/ReplaceComparisonOperator_Is_Eq")
    negated = _site(
        row + 1, 19, lines[row].strip(), operator="core/ReplaceComparisonOperator_IsNot_NotEq"
    )
    flipped = _site(
        row, 21, lines[row - 1].strip(), operator="core/ReplaceComparisonOperator_Is_IsNot"
    )
    unchecked = [
        _site(
            row + k, 8, lines[row + k - 1].strip(), operator="core/ReplaceComparisonOperator_Is_Eq"
        )
        for k in range(2, 8)
    ]
    candidates, reasons, _ = ms.classify(kernel, [same, negated, flipped, *unchecked], [])
    assert reasons == {same.job_id: ms.ENUM_FIELD_REASON, negated.job_id: ms.ENUM_FIELD_REASON}
    assert candidates == [flipped, *unchecked]


@pytest.mark.obligation("LOCAL-0015/equivalents_with_reasons")
def test_classify_sets_aside_annotations_and_recorded_entries_and_finds_stale_ones(tmp_path):
    """A recorded entry names one mutant: its place and what it makes of the line, since one
    operator can make several mutants at one place (a number moved up, or down)."""
    root = _root(tmp_path)
    signature = _MODULE.splitlines()[10]
    number = signature.index("= 2") + 2  # the signature is not indented
    in_annotation = _site(11, 20, signature)
    in_field = _site(8, 15, "limit: int | None = None")
    up = _site(11, number, signature, operator="core/NumberReplacer", occurrence=0)
    down = _site(11, number, signature, operator="core/NumberReplacer", occurrence=1)
    recorded = Equivalent(
        "src/practice_loop/kernel/m.py",
        "core/NumberReplacer",
        signature,
        number,
        signature.replace("= 2", "= 3"),
        "a default of 3 caps every value the tests give as a default of 2 does",
        "entry #1",
    )
    stale = dataclasses.replace(recorded, line="this line is gone", source="entry #2")
    candidates, reasons, unmatched = ms.classify(
        root, [in_annotation, in_field, up, down], [recorded, stale]
    )
    assert candidates == [in_field, down]
    assert reasons == {in_annotation.job_id: ANNOTATION_REASON, up.job_id: recorded.reason}
    assert unmatched == [stale]


@pytest.mark.obligation("LOCAL-0015/equivalents_with_reasons")
def test_what_a_mutant_makes_of_its_lines_is_the_changed_lines_joined():
    """cosmic-ray writes a mutated comparison that spans two lines on one: an entry's
    ``mutated`` is every changed line, stripped and joined, never the unchanged line that
    moves up to the site's line number."""
    source = "ok = (\n    (left is None)\n    == (right == 1)\n)\nrest = 2\n"
    joined = _site(3, 4, "== (right == 1)", operator="core/ReplaceComparisonOperator_Eq_Is")
    assert ms.mutated_line(source, joined) == "(left is None) is (right == 1)"
    one_line = _site(5, 7, "rest = 2", operator="core/NumberReplacer", occurrence=2)
    assert ms.mutated_line(source, one_line) == "rest = 3"
    gone = _site(5, 7, "rest = 2", operator="core/NumberReplacer", occurrence=9)
    assert ms.mutated_line(source, gone) is None


_ENTRY = """
[[equivalent]]
file = "src/practice_loop/kernel/m.py"
operator = "core/NumberReplacer"
line = "x = 1"
column = 4
mutated = "x = 2"
reason = "x is never read"
"""


@pytest.mark.obligation("LOCAL-0015/equivalents_with_reasons")
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('schema = "other"\n' + _ENTRY, "needs schema = 'kernel_equivalents.v1'"),
        (
            'schema = "kernel_equivalents.v1"\n'
            + _ENTRY.replace('reason = "x is never read"\n', ""),
            "needs exactly the keys",
        ),
        (
            'schema = "kernel_equivalents.v1"\n' + _ENTRY.replace("x is never read", " "),
            "are non-empty strings",
        ),
        ('schema = "kernel_equivalents.v1"\n' + _ENTRY.replace("= 4", "= -1"), "non-negative"),
        ('schema = "kernel_equivalents.v1"\n[[equivalent]\n', "cannot be read"),
    ],
)
def test_a_malformed_equivalents_file_is_refused_naming_the_entry(tmp_path, text, problem):
    path = tmp_path / "equivalents.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=problem):
        ms.load_equivalents(path)


def test_a_well_formed_equivalents_file_and_a_missing_one(tmp_path):
    path = tmp_path / "equivalents.toml"
    assert ms.load_equivalents(path) == []
    path.write_text('schema = "kernel_equivalents.v1"\n' + _ENTRY, encoding="utf-8")
    (entry,) = ms.load_equivalents(path)
    assert (entry.operator, entry.line, entry.column, entry.mutated, entry.reason) == (
        "core/NumberReplacer",
        "x = 1",
        4,
        "x = 2",
        "x is never read",
    )


@pytest.mark.obligation("LOCAL-0015/equivalents_with_reasons")
def test_the_shipped_equivalents_file_is_well_formed_and_every_entry_has_a_reason():
    entries = ms.load_equivalents(Path(__file__).resolve().parents[2] / ms.DEFAULT_EQUIVALENTS)
    assert all(len(entry.reason.split()) >= 5 for entry in entries)  # a reason, not a label


# --------------------------------------------------------------------------------------------
# The sample and the shards


_CANDIDATES = [_site(line, 0, f"line {line}", occurrence=line) for line in range(1, 41)]


@pytest.mark.obligation("LOCAL-0015/seeded_sample")
def test_the_sample_depends_only_on_the_seed_and_the_candidates():
    first = ms.select(_CANDIDATES, sample=5, seed=3, shard=None)
    assert first == ms.select(list(reversed(_CANDIDATES)), sample=5, seed=3, shard=None)
    assert first == sorted(first, key=lambda site: site.key) and len(first) == 5
    assert first != ms.select(_CANDIDATES, sample=5, seed=4, shard=None)
    assert ms.select(_CANDIDATES, sample=100, seed=3, shard=None) == _CANDIDATES


@pytest.mark.obligation("LOCAL-0015/seeded_sample")
def test_recording_an_equivalent_never_redraws_the_sample():
    """Samples are drawn from every site not equivalent by rule: a recorded equivalent stays
    in the pool (shown, not judged), so writing an entry for one leaves the others drawn."""
    recorded = {
        _CANDIDATES[7].job_id: "a recorded reason",
        _CANDIDATES[8].job_id: ANNOTATION_REASON,
    }
    pool = ms.drawable(_CANDIDATES, recorded)
    assert _CANDIDATES[7] in pool and _CANDIDATES[8] not in pool
    before = ms.select(
        ms.drawable(_CANDIDATES, {_CANDIDATES[8].job_id: ANNOTATION_REASON}),
        sample=9,
        seed=5,
        shard=None,
    )
    assert ms.select(pool, sample=9, seed=5, shard=None) == before


@pytest.mark.obligation("LOCAL-0015/shards_add_up")
def test_shards_partition_the_candidates():
    shards = [ms.select(_CANDIDATES, sample=None, seed=0, shard=(k, 3)) for k in (1, 2, 3)]
    assert sorted(site.key for shard in shards for site in shard) == [
        site.key for site in _CANDIDATES
    ]
    assert {len(shard) for shard in shards} == {13, 14}


@pytest.mark.obligation("LOCAL-0015/shards_add_up")
def test_module_names_a_kernel_file_by_stem_or_path_and_refuses_any_other(tmp_path):
    root = _root(tmp_path)
    (root / "src" / "practice_loop" / "kernel" / "other.py").write_text("", encoding="utf-8")
    file = "src/practice_loop/kernel/m.py"
    assert ms.module_files(root, None) is None
    assert ms.module_files(root, ["m"]) == ms.module_files(root, ["m.py", file]) == {file}
    with pytest.raises(
        UsageError,
        match=r"--module 'kernel/m.py' is not a kernel module; "
        r"the modules are m, other",
    ):
        ms.module_files(root, ["m", "kernel/m.py"])


@pytest.mark.obligation("LOCAL-0015/shards_add_up")
def test_a_module_run_judges_only_that_modules_candidates_and_samples_within_them():
    def elsewhere(site: Site) -> Site:
        return dataclasses.replace(
            site, file="src/practice_loop/kernel/n.py", job_id=site.job_id + "-n"
        )

    mixed = [*_CANDIDATES, *map(elsewhere, _CANDIDATES)]
    only_n = frozenset({"src/practice_loop/kernel/n.py"})
    chosen = ms.select(mixed, sample=None, seed=0, shard=None, files=only_n)
    assert [site.key for site in chosen] == sorted(elsewhere(site).key for site in _CANDIDATES)
    sampled = ms.select(mixed, sample=6, seed=3, shard=(1, 2), files=only_n)
    assert len(sampled) == 6 and {site.file for site in sampled} == only_n


@pytest.mark.parametrize("text", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2"])
def test_a_malformed_shard_is_a_usage_error(text):
    with pytest.raises(UsageError, match="K/N"):
        ms.parse_shard(text)


# --------------------------------------------------------------------------------------------
# Judging one mutant


class _ScriptedWorker(Worker):
    def __init__(self, copy: Path, runs: list[PytestRun]) -> None:
        super().__init__(copy, timeout=5)
        self.runs = runs
        self.calls: list[list[str]] = []
        self.sources: list[str] = []
        self.timeouts: list[float | None] = []  # each run's own timeout (None: the worker's)

    def pytest(self, arguments, *, first_failure_only, mutant="", timeout=None):
        self.calls.append(list(arguments))
        self.timeouts.append(timeout)
        self.sources.append((self.copy / "src/practice_loop/kernel/m.py").read_text())
        return self.runs.pop(0)


def _comparison_site() -> Site:
    # cosmic-ray's first `<` -> `<=` replacement in _MODULE: `value < cap`.
    return _site(12, 44, "return ...", operator="core/ReplaceComparisonOperator_Lt_LtE")


def test_a_kernel_mutant_meets_its_module_tests_then_the_fast_directories(tmp_path):
    root = _root(tmp_path)
    (root / "src/practice_loop/kernel/n.py").write_text("", encoding="utf-8")
    for test in ("tests/cover/test_m.py", "tests/cover/test_n.py", "tests/architecture/t.py"):
        (root / test).parent.mkdir(parents=True, exist_ok=True)
        (root / test).write_text("", encoding="utf-8")
    passed = PytestRun(0, (), 1.0, "")
    worker = _ScriptedWorker(
        root, [passed, PytestRun(1, (("tests/cover/test_x.py::t", "call"),), 2.0, "")]
    )
    site = _comparison_site()
    result = ms.judge_site(worker, site, ms.site_phases(site, root, None, {}))
    assert (result.verdict, result.phase, result.killed_by, result.seconds) == (
        Verdict.KILLED,
        Phase.KERNEL_TESTS,
        "tests/cover/test_x.py::t",
        3.0,
    )
    assert worker.calls == [
        ["tests/cover/test_m.py"],
        ["tests/cover/test_n.py", "tests/architecture"],  # the other modules', the others
    ]
    assert all("value <= cap" in source for source in worker.sources)  # run under the mutant
    assert (
        result.diff.splitlines()[1]
        .strip()
        .startswith("+    return value if value is None or value <= cap")
    )
    assert "value < cap" in (root / "src/practice_loop/kernel/m.py").read_text()  # restored


def test_a_phase_without_tests_is_left_out_never_run_as_the_whole_suite(tmp_path):
    """To pytest, no arguments means every test: a phase with none is not a phase."""
    root = _root(tmp_path)
    assert ms.site_phases(_comparison_site(), root, None, {}) == [
        (Phase.KERNEL_TESTS, ["tests/architecture"])
    ]
    (root / "tests" / "architecture").rmdir()
    assert ms.site_phases(_comparison_site(), root, None, {}) == []


def test_an_import_crash_under_a_kernel_mutant_is_a_kill(tmp_path):
    worker = _ScriptedWorker(
        _root(tmp_path), [PytestRun(2, (("tests/cover/test_y.py", "collect"),), 1.0, "")]
    )
    result = ms.judge_site(worker, _comparison_site(), [(Phase.KERNEL_TESTS, ["tests/cover"])])
    assert (result.verdict, result.killed_by) == (Verdict.KILLED, "tests/cover/test_y.py")


def test_a_surviving_kernel_mutant_and_one_whose_operator_no_longer_applies(tmp_path):
    root = _root(tmp_path)
    phases = [(Phase.KERNEL_TESTS, ["tests/architecture"])]
    worker = _ScriptedWorker(root, [PytestRun(0, (), 1.0, "")])
    survivor = ms.judge_site(worker, _comparison_site(), phases)
    assert (survivor.verdict, survivor.phase) == (Verdict.SURVIVED, Phase.KERNEL_TESTS)
    gone = dataclasses.replace(_comparison_site(), occurrence=99)
    worker = _ScriptedWorker(root, [])
    assert ms.judge_site(worker, gone, phases).verdict is Verdict.INCOMPETENT
    assert worker.calls == []


# --------------------------------------------------------------------------------------------
# Choosing each mutant's tests by what reaches its line

_STATEMENTS = """import functools


@functools.cache
def f(
    x=1,
):
    if (x >
            2):
        return [
            x,
        ]
    try:
        pass
    except ValueError:
        raise
"""


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_a_sites_lines_are_its_innermost_statements_own_lines():
    """What a tracer reports for the statement, or the header, a site is in; never a nested
    statement's lines, always the site's own."""
    tree = ms.statements_of(ast.parse(_STATEMENTS))
    assert ms.statement_lines(tree, 6) == {4, 5, 6, 7}  # a default: decorator and signature
    assert ms.statement_lines(tree, 9) == {8, 9}  # an `if` test: the header, not the body
    assert ms.statement_lines(tree, 11) == {10, 11, 12}  # a simple statement: all its lines
    assert ms.statement_lines(tree, 15) == {13, 15}  # an `except` clause: the `try`'s own


_OWN = "tests/cover/test_m.py"
_MORE = "tests/cover/test_m_more.py"


def _reach(*, at_import=(), executed=None, unmeasured=(), durations=None) -> ms.Reach:
    file = "src/practice_loop/kernel/m.py"
    return ms.Reach(
        tests={file: {line: frozenset(tests) for line, tests in (executed or {}).items()}},
        at_import={file: frozenset(at_import)},
        unmeasured={file: frozenset(unmeasured)},
        seconds=1.0,
        durations=durations or {},
    )


def _trees() -> dict[str, list[ms.Statement]]:
    return {"src/practice_loop/kernel/m.py": ms.statements_of(ast.parse(_MODULE))}


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_a_line_run_before_the_first_test_is_judged_by_every_kernel_test_file(tmp_path):
    """A mutant of what the imports run can change any later test: coverage cannot say which."""
    root = _root(tmp_path)
    (root / _OWN).parent.mkdir(parents=True)
    (root / _OWN).write_text("", encoding="utf-8")
    reach = _reach(at_import={12}, executed={12: {f"{_OWN}::t"}})
    assert ms.site_phases(_comparison_site(), root, reach, _trees()) == [
        (Phase.MODULE_TESTS, [_OWN]),
        (Phase.KERNEL_TESTS, ["tests/architecture"]),
    ]


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_a_line_is_judged_by_the_tests_that_execute_it_and_those_coverage_cannot_see(tmp_path):
    root = _root(tmp_path)
    (root / _OWN).parent.mkdir(parents=True)
    (root / _OWN).write_text("", encoding="utf-8")
    reach = _reach(
        at_import={11},  # the `def` line: not the site's statement
        executed={
            12: {f"{_OWN}::b", "tests/cover/test_m_extra.py::c", f"{_OWN}::a"},
            13: {f"{_OWN}::elsewhere"},
        },
        unmeasured={"tests/architecture/test_x.py::starts_a_process"},
    )
    assert ms.site_phases(_comparison_site(), root, reach, _trees()) == [
        (Phase.MODULE_TESTS, [f"{_OWN}::a", f"{_OWN}::b"]),
        (
            Phase.KERNEL_TESTS,
            ["tests/architecture/test_x.py::starts_a_process", "tests/cover/test_m_extra.py::c"],
        ),
    ]


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_the_other_files_run_cheapest_first_by_what_the_measuring_run_timed(tmp_path):
    """The second phase stops at its first failure, so a kill by a quick file must not wait
    on a slow one: files in the order of their measured seconds (import and every test), a
    file's tests together, a file never timed last; the module's own file still first."""
    root = _root(tmp_path)
    slow, quick, untimed = (f"tests/cover/test_{n}.py" for n in ("a_slow", "b_quick", "c_new"))
    (root / _OWN).parent.mkdir(parents=True)
    (root / _OWN).write_text("", encoding="utf-8")
    durations = {
        f"{slow}::s": 300.0,  # a module fixture that runs the sample loop
        slow: 2.0,
        f"{quick}::q1": 0.5,
        f"{quick}::q2": 0.5,
        quick: 1.0,
        f"{_OWN}::a": 50.0,
        "tests/architecture/test_x.py::x": 9.0,
        "tests/architecture/test_y.py::y": 9.0,
    }
    executed = {12: {f"{_OWN}::a", f"{slow}::s", f"{quick}::q2", f"{untimed}::u", f"{quick}::q1"}}
    reach = _reach(at_import={11}, executed=executed, durations=durations)
    assert ms.site_phases(_comparison_site(), root, reach, _trees()) == [
        (Phase.MODULE_TESTS, [f"{_OWN}::a"]),
        (Phase.KERNEL_TESTS, [f"{quick}::q1", f"{quick}::q2", f"{slow}::s", f"{untimed}::u"]),
    ]
    # A line the imports run goes to every kernel test file: the same order, a directory
    # costing what its files took (18 s here, less than the other module's test file).
    (root / "src" / "practice_loop" / "kernel" / "n.py").write_text("", encoding="utf-8")
    other = "tests/cover/test_n.py"
    (root / other).write_text("", encoding="utf-8")
    reach = _reach(at_import={12}, durations={**durations, f"{other}::n": 60.0})
    assert ms.site_phases(_comparison_site(), root, reach, _trees()) == [
        (Phase.MODULE_TESTS, [_OWN]),
        (Phase.KERNEL_TESTS, ["tests/architecture", other]),
    ]


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_a_line_no_test_reaches_survives_without_a_run(tmp_path):
    root = _root(tmp_path)
    phases = ms.site_phases(_comparison_site(), root, _reach(executed={13: {"t::x"}}), _trees())
    assert phases == []
    worker = _ScriptedWorker(root, [])
    result = ms.judge_site(worker, _comparison_site(), phases)
    assert (result.verdict, result.detail, worker.calls) == (
        Verdict.SURVIVED,
        ms.NO_TEST_REACHES,
        [],
    )
    assert "value <= cap" in result.diff


_REACHED = """LIMIT = 2


def bound(value):
    if value > LIMIT:
        return LIMIT
    return value


def unused():
    return 0
"""

_REACHING_TESTS = """import pathlib
import subprocess
import sys

from practice_loop.kernel import m


def test_small():
    assert m.bound(1) == 1


def test_large():
    assert m.bound(5) == 2


def test_reads_the_source():
    assert "LIMIT" in pathlib.Path(m.__file__).read_text()


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
"""


def _reaching_project(
    tmp_path: Path, tests: str = _REACHING_TESTS, others: dict[str, str] | None = None
) -> tuple[Worker, set[str]]:
    """A checkout of one kernel module, its tests (and ``others``: more files by path), and
    the reach plugin, measured for real."""
    root = _root(tmp_path / "copy", _REACHED)
    for name, text in (others or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    harness = root / "src" / "practice_loop" / "harness"
    harness.mkdir()
    for name in ("__init__.py", "reach_plugin.py"):
        (harness / name).write_bytes((Path(ms.__file__).parent / name).read_bytes())
    (root / "src" / "practice_loop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / _OWN).parent.mkdir(parents=True, exist_ok=True)
    (root / _OWN).write_text(tests, encoding="utf-8")
    worker = Worker(root, timeout=300)
    worker.environment["HYPOTHESIS_NO_PLUGINS"] = "1"  # this project registers no strategies
    names = ("small", "large", "reads_the_source", "starts_a_process")
    return worker, {f"{_OWN}::test_{name}" for name in names}


@pytest.mark.obligation("LOCAL-0015/reach_selection")
@pytest.mark.parametrize("jobs", [1, 2])  # 2: pytest-xdist, a record per worker process
def test_the_reach_of_each_line_is_measured_under_coverage_in_one_run(tmp_path, jobs):
    worker, collected = _reaching_project(tmp_path)
    reach = ms.measure_reach(
        worker, [_OWN], jobs=jobs, out=tmp_path / "out", collected=collected, packages=()
    )
    file = "src/practice_loop/kernel/m.py"
    executed = reach.tests[file]
    assert executed[5] == {f"{_OWN}::test_small", f"{_OWN}::test_large"}
    assert executed[6] == {f"{_OWN}::test_large"}
    assert not executed.get(11)  # `unused` is never called
    assert {1, 4, 10} <= reach.at_import[file] and 5 not in reach.at_import[file]
    unmeasured = {f"{_OWN}::test_reads_the_source", f"{_OWN}::test_starts_a_process"}
    assert reach.unmeasured[file] == unmeasured
    assert (tmp_path / "out" / ms.REACH_DATA).is_file()  # kept, for coverage's own reports
    # What each test and the test module's import took, the base of a phase's timeout: each
    # once, under xdist too.
    assert set(reach.durations) == collected | {_OWN}
    assert all(0 < seconds < reach.seconds for seconds in reach.durations.values())


@pytest.mark.obligation("LOCAL-0015/phase_timeouts")
def test_a_phase_may_take_a_multiple_of_what_its_test_files_took_when_measured_never_more():
    """A run under a mutant is cut off at ``factor`` times the seconds the measuring run spent
    in the test files it runs (each file whole: its import and every test, whichever of them
    the run takes, as a module fixture's set-up is charged to the file's first test only),
    plus ``slack``, and never later than the ceiling (``--timeout``); a test in a file the
    measuring run did not time leaves the ceiling, and so does judging without one."""
    durations = {
        _OWN: 0.5,  # the module's import
        f"{_OWN}::test_small": 2.0,
        f"{_OWN}::test_large": 0.5,
        "tests/architecture/test_a.py::test_x": 4.0,
        f"{_MORE}::test_y": 100.0,  # another file, though its name starts so
    }
    files = ms.seconds_by_file(ms.Reach({}, {}, {}, 10.0, durations))
    assert files == {_OWN: 3.0, "tests/architecture/test_a.py": 4.0, _MORE: 100.0}

    def limit(tests: list[str], ceiling: float = 1800.0) -> float:
        return ms.phase_timeout(tests, files, ceiling, factor=5, slack=30)

    assert limit([f"{_OWN}::test_large"]) == limit([_OWN]) == 45  # the file whole
    assert limit(["tests/architecture"]) == limit(["tests/architecture/"]) == 50  # a directory
    assert limit([f"{_OWN}::test_small", _OWN, "tests/architecture"]) == 65  # each file once
    assert limit([_OWN], ceiling=44) == 44
    assert limit(["tests/cover/test_gone.py::test_z"]) == 1800
    assert limit([_OWN, "tests/stateful"]) == 1800
    assert ms.phase_timeout([_OWN], None, 1800) == 1800
    assert ms.phase_timeout([_OWN], files, 1800, factor=1, slack=1 / 3) == 3.3  # in tenths
    default = ms.phase_timeout([_OWN], files, 1800)
    assert default == ms.TIMEOUT_FACTOR * 3 + ms.TIMEOUT_SLACK < 1800


@pytest.mark.obligation("LOCAL-0015/phase_timeouts")
def test_each_phase_runs_within_its_own_timeout_and_a_cut_off_names_it(tmp_path):
    runs = [PytestRun(0, (), 1.0, ""), PytestRun(None, (), 45.0, "")]
    worker = _ScriptedWorker(_root(tmp_path), runs)
    phases = [(Phase.MODULE_TESTS, [f"{_OWN}::test_small"]), (Phase.KERNEL_TESTS, ["tests/a"])]
    result = ms.judge_site(worker, _comparison_site(), phases, [40.0, 45.5])
    assert worker.timeouts == [40.0, 45.5]
    assert (result.verdict, result.phase, result.detail) == (
        Verdict.TIMED_OUT,
        Phase.KERNEL_TESTS,
        "timeout after 45.5 s",
    )
    with pytest.raises(ValueError, match="2 phases, 1 timeouts"):
        ms.judge_site(worker, _comparison_site(), phases, [40.0])


_IMPORTING = "tests/cover/test_m_at_import.py"
_SHARING = "tests/cover/test_m_shares.py"
_OTHERS = {
    # A helper of the package: imported with it, before any test module.
    "src/practice_loop/examples.py": "from practice_loop.kernel import m\n\n\n"
    "def big():\n    return m.bound(9)\n",
    # Its module-level code reaches `return LIMIT` through that helper; its tests call nothing.
    _IMPORTING: "from practice_loop import examples\n\nBIG = examples.big()\n\n\n"
    "def test_one():\n    assert BIG == 2\n\n\ndef test_two():\n    pass\n",
    # It brings in a helper of the checkout, which calls `unused` as it is imported: what the
    # helper built may be read by any test that imports it later.
    "tests/cover/m_helper.py": "from practice_loop.kernel import m\n\nZERO = m.unused()\n",
    _SHARING: "import m_helper\n\n\ndef test_zero():\n    assert m_helper.ZERO == 0\n",
}


@pytest.mark.obligation("LOCAL-0015/reach_selection")
def test_what_a_test_modules_import_reaches_is_charged_to_that_modules_tests(tmp_path):
    """Each test module is imported in a context of its own: a kernel line its module-level
    code runs is judged by that module's tests, not by every kernel test file. A module that
    brings in a helper of the checkout shares it, so what it runs counts as global; the
    packages named are imported before any test module, in the global context."""
    worker, collected = _reaching_project(tmp_path, others=_OTHERS)
    collected |= {f"{_IMPORTING}::test_one", f"{_IMPORTING}::test_two", f"{_SHARING}::test_zero"}
    reach = ms.measure_reach(
        worker,
        [_OWN, _IMPORTING, _SHARING],
        jobs=1,
        out=tmp_path / "out",
        collected=collected,
        packages=("practice_loop",),
    )
    file = "src/practice_loop/kernel/m.py"
    executed, at_import = reach.tests[file], reach.at_import[file]
    by_import = {f"{_IMPORTING}::test_one", f"{_IMPORTING}::test_two"}
    assert executed[6] == {f"{_OWN}::test_large", *by_import}
    assert 6 not in at_import and 5 not in at_import
    assert 11 in at_import  # `unused`'s body, run by the shared helper's import
    assert {1, 4, 10} <= at_import  # the kernel module, imported with the packages named


_FAILING_TEST = "\n\ndef test_fails():\n    assert False\n"
_KERNEL_IMPORTED_IN_A_TEST = """def test_small():
    from practice_loop.kernel import m

    assert m.bound(1) == 1
"""


@pytest.mark.obligation("LOCAL-0015/reach_selection")
@pytest.mark.parametrize(
    ("tests", "collected", "problem"),
    [
        (_REACHING_TESTS + _FAILING_TEST, None, "do not pass unmutated under coverage"),
        (
            _KERNEL_IMPORTED_IN_A_TEST,
            {f"{_OWN}::test_small"},
            "coverage did not see src/practice_loop/kernel/m.py imported",
        ),
        (_REACHING_TESTS, {f"{_OWN}::test_small"}, "names tests that were not collected"),
    ],
    ids=["a_test_fails_unmutated", "the_kernel_imported_in_a_test", "an_uncollected_test"],
)
def test_a_reach_the_selection_cannot_trust_is_refused(tmp_path, tests, collected, problem):
    worker, every_test = _reaching_project(tmp_path, tests)
    with pytest.raises(CopyError, match=problem):
        ms.measure_reach(
            worker,
            [_OWN],
            jobs=1,
            out=tmp_path / "out",
            collected=collected or every_test,
            packages=(),  # the kernel imported first in a test stays so
        )


# A conftest whose session start is pytest's internal error (exit 3) on the first runs only.
_INTERNAL_ERROR_CONFTEST = """import pathlib

FAILURES = pathlib.Path(__file__).with_name("failures-left")


def pytest_sessionstart(session):
    left = int(FAILURES.read_text()) if FAILURES.exists() else 0
    if left:
        FAILURES.write_text(str(left - 1))
        raise RuntimeError("pytest itself broke")
"""


@pytest.mark.obligation("LOCAL-0015/reach_selection")
@pytest.mark.parametrize("internal_errors", [1, 2])
def test_pytests_own_internal_error_is_run_again_once(tmp_path, internal_errors):
    """Exit 3 is pytest's fault, not the tests' (pytest-xdist can lose a worker): the
    measuring run is made again once. A second one is refused like a failing test, naming
    the log that holds both runs' whole output."""
    others = {
        "conftest.py": _INTERNAL_ERROR_CONFTEST,
        "failures-left": str(internal_errors),
    }
    worker, collected = _reaching_project(tmp_path, others=others)
    out = tmp_path / "out"
    if internal_errors == 1:
        reach = ms.measure_reach(worker, [_OWN], jobs=1, out=out, collected=collected, packages=())
        assert reach.tests["src/practice_loop/kernel/m.py"][6] == {f"{_OWN}::test_large"}
    else:
        with pytest.raises(CopyError, match="exit 3; the whole output is in"):
            ms.measure_reach(worker, [_OWN], jobs=1, out=out, collected=collected, packages=())
    log = (out / ms.REACH_LOG).read_text(encoding="utf-8")
    assert log.count("RuntimeError: pytest itself broke") == internal_errors
    assert "run again after pytest's internal error" in log


# --------------------------------------------------------------------------------------------
# The score and the report


def _judged(verdict: Verdict, line: int = 1) -> Judged:
    return Judged(_site(line, 0, "x", occurrence=line), verdict, Phase.MODULE_TESTS, 1.0, "t")


@pytest.mark.obligation("LOCAL-0015/score_threshold")
def test_the_score_counts_timeouts_as_kills_and_unconfirmed_as_not_and_ignores_incompetent():
    statuses = ["killed"] * 17 + ["timed_out", "survived", "unconfirmed", "incompetent"]
    totals = ms.totals_of(statuses, equivalent=4, sites=30, candidates=26)
    assert totals["score"] == 90.0  # 18 of 20
    assert (totals["incompetent"], totals["judged"], totals["equivalent"]) == (1, 21, 4)


def _report(results, stale=(), shard=None, sites=None):
    sites = sites or [r.site for r in results]
    return ms.score_report(
        sites=sites,
        candidates=sites,
        reasons={},
        results=results,
        stale=list(stale),
        selection={"description": "test", "sample": None, "seed": None, "shard": shard},
        context={"commit": "c", "python": "3", "hypothesis": "6", "cosmic-ray": "8"},
        wall_seconds=1.0,
    )


@pytest.mark.obligation("LOCAL-0015/score_threshold")
def test_the_run_fails_below_the_minimum_score_or_with_a_stale_entry():
    twenty = [_judged(Verdict.KILLED, line) for line in range(1, 20)] + [
        _judged(Verdict.SURVIVED, 20)
    ]
    assert ms._verdict_line(_report(twenty), 95.0)[0] is True
    assert ms._verdict_line(_report(twenty), 96.0)[0] is False
    entry = Equivalent("f", "op", "x", 0, "y", "a reason of five words", "entry #1")
    passed, line = ms._verdict_line(_report(twenty, stale=[entry]), 95.0)
    assert not passed and "1 stale equivalents entries" in line
    assert ms._verdict_line(_report([]), 0.0)[0] is False  # nothing judged proves nothing
    markdown = ms.score_markdown(_report(twenty))
    assert "**95.0%** of 20 judged" in markdown and "`src/practice_loop/kernel/m.py:20`" in markdown


@pytest.mark.obligation("LOCAL-0015/shards_add_up")
def test_shards_combine_only_when_they_are_all_the_shards_of_one_enumeration():
    sites = [_site(line, 0, "x", occurrence=line) for line in range(1, 5)]
    one = _report(
        [Judged(sites[0], Verdict.KILLED), Judged(sites[2], Verdict.SURVIVED)],
        shard=[1, 2],
        sites=sites,
    )
    two = _report(
        [Judged(sites[1], Verdict.KILLED), Judged(sites[3], Verdict.KILLED)],
        shard=[2, 2],
        sites=sites,
    )
    combined = ms.combine([two, one])
    assert combined["totals"]["score"] == 75.0 and combined["totals"]["judged"] == 4
    assert [entry["line"] for entry in combined["judged"]] == [1, 2, 3, 4]
    with pytest.raises(UsageError, match="not 1/N .. N/N"):
        ms.combine([one])
    with pytest.raises(UsageError, match="not 1/N .. N/N"):
        ms.combine([one, one])
    other = json.loads(json.dumps(two)) | {"enumeration_digest": "0" * 64}
    with pytest.raises(UsageError, match="enumeration_digest"):
        ms.combine([one, other])
    sampled = json.loads(json.dumps(two))
    sampled["selection"]["sample"] = 3
    with pytest.raises(UsageError, match="sampled"):
        ms.combine([one, sampled])
    partial = json.loads(json.dumps(two))
    partial["selection"]["modules"] = ["src/practice_loop/kernel/m.py"]
    with pytest.raises(UsageError, match="some modules"):
        ms.combine([one, partial])


def test_every_mutant_is_written_back_into_cosmic_rays_session(tmp_path):
    """cosmic-ray's own reports read the run: each judged mutant has its outcome and diff,
    an equivalent one is skipped with its reason, and one not drawn is skipped as such."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    root = _root(tmp_path)
    session = tmp_path / "session.sqlite"
    sites = ms.enumerate_sites(root, session)
    judged, equivalent, *_ = sites
    ms.record_in_session(
        session,
        [Judged(judged, Verdict.SURVIVED, Phase.KERNEL_TESTS, 1.0, None, "", "-a\n+b")],
        {equivalent.job_id: "a reason"},
    )
    with use_db(str(session), WorkDB.Mode.open) as db:
        results = dict(db.results)
        assert not list(db.pending_work_items)
    assert results[judged.job_id].test_outcome is TestOutcome.SURVIVED
    assert results[judged.job_id].diff == "-a\n+b"
    assert results[equivalent.job_id].worker_outcome is WorkerOutcome.SKIPPED
    assert results[equivalent.job_id].output == "equivalent: a reason"
    others = [results[site.job_id].output for site in sites[2:]]
    assert others and set(others) == {"not selected in this run"}


# --------------------------------------------------------------------------------------------
# An interrupted run, resumed


def _committed_checkout(tmp_path: Path) -> Path:
    """A git checkout of one kernel module, as ``practice-loop mutation-score`` runs in."""
    import subprocess

    root = _root(tmp_path / "checkout")
    (root / "docs").mkdir()
    (root / "docs" / "obligations.toml").write_text("", encoding="utf-8")
    (root / ".gitignore").write_text("out/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one module"], check=True)
    return root


class _FakeJudging:
    """``judge_sites`` without pytest: every site killed, reported one at a time; the first
    ``interrupt_after`` verdicts of a run, then Ctrl-C."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.interrupt_after = interrupt_after
        self.asked: list[Site] = []
        self.earlier: list[Judged] = []

    def __call__(self, root, sites, *, progress, earlier=(), **_):
        self.asked, self.earlier = list(sites), list(earlier)
        judged = []
        for site in sites:
            if self.interrupt_after is not None and len(judged) == self.interrupt_after:
                raise KeyboardInterrupt
            judged.append(Judged(site, Verdict.KILLED, Phase.MODULE_TESTS, 0.5, "t.py::k"))
            progress(judged[-1])
        return sorted([*earlier, *judged], key=lambda r: r.site.key), None


def test_an_interrupted_run_resumes_from_its_journal_and_only_under_the_same_checkout(
    tmp_path, monkeypatch, capsys
):
    """Issue 17: a run stopped part way keeps each verdict it reached; ``--resume`` judges
    only the rest and scores them all; a journal of another commit, selection or a dirty tree
    is refused, never carried over; a half-written last line is not a verdict."""
    import subprocess

    from practice_loop.cli import main

    root = _committed_checkout(tmp_path)
    monkeypatch.chdir(root)
    out = root / "out"
    command = ["mutation-score", "--out", str(out), "--min-score", "0"]
    first = _FakeJudging(interrupt_after=2)
    monkeypatch.setattr(ms, "judge_sites", first)
    assert main(command) == 130
    assert "the 2 verdicts reached are kept" in capsys.readouterr().err
    assert not (out / ms.SCORE_JSON).exists()
    every = first.asked
    assert len(every) > 3
    with (out / ms.JOURNAL).open("a") as journal:
        journal.write('{"file": "src/prac')  # killed mid-write

    second = _FakeJudging()
    monkeypatch.setattr(ms, "judge_sites", second)
    assert main([*command, "--resume"]) == 0
    assert [r.site.key for r in second.earlier] == [site.key for site in every[:2]]
    assert [site.key for site in second.asked] == [site.key for site in every[2:]]
    report = json.loads((out / ms.SCORE_JSON).read_text())
    assert report["totals"]["judged"] == len(every) and report["selection"]["resumed"] == 2
    third = _FakeJudging()  # the resumed run's journal resumes too: nothing is left to judge
    monkeypatch.setattr(ms, "judge_sites", third)
    assert main([*command, "--resume"]) == 0
    assert third.asked == [] and len(third.earlier) == len(every)
    capsys.readouterr()

    assert main([*command, "--resume", "--sample", "2"]) == 2  # another selection
    assert "another selection" in capsys.readouterr().err
    (root / "tests" / "cover").mkdir(parents=True)
    (root / "tests" / "cover" / "test_m.py").write_text("def test_new():\n    pass\n")
    assert main([*command, "--resume"]) == 2  # a tree the journal was not judged in
    assert "needs a committed checkout" in capsys.readouterr().err
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a test"], check=True)
    assert main([*command, "--resume"]) == 2  # another commit
    assert "another context" in capsys.readouterr().err
    (out / ms.JOURNAL).unlink()
    assert main([*command, "--resume"]) == 2
    assert "there is no run to go on" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ('{"file": "elsewhere.py", "operator": "op", "occurrence": 0}\n', "is not a verdict"),
        ("not json\n", "is not a verdict"),
        (None, "a second time"),
    ],
)
def test_a_journal_line_this_command_did_not_write_is_refused(tmp_path, tail, problem):
    site = _site(1, 0, "x")
    header = ms.journal_header([site], {"commit": "abc"}, {"sample": None})
    verdict = Judged(site, Verdict.KILLED, Phase.MODULE_TESTS, 1.0, "t.py::k")
    line = json.dumps(verdict.to_json()) + "\n"
    journal = tmp_path / ms.JOURNAL
    journal.write_text(json.dumps(header) + "\n" + line + (line if tail is None else tail))
    with pytest.raises(UsageError, match=problem):
        ms.resumed_results(journal, header, [site])
    journal.write_text(json.dumps(header) + "\n" + line)
    assert ms.resumed_results(journal, header, [site]) == [verdict]
