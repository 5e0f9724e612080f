"""``practice-loop mutation-score``: the kernel's generic mutation score (docs/adr/0015).

The catalogue (docs/adr/0014) proves that a test fails for each prohibited state we thought
of. This score asks the converse of every line of the kernel: cosmic-ray enumerates each place
one of its operators applies (a comparison flipped, a number moved, a condition negated, a
loop that never runs, ...) and applies it; each such mutant is judged in the same warm copies
as the catalogue's, by the mutated module's own test file first and then the rest of the
kernel's tests (every kernel module's test file and ``CROSS_STAGE_TESTS``), with ``-x``; of
those, only the tests that reach its line, as one unmutated run under coverage measured them
(``measure_reach``), unless the line runs before the first test (``--every-test``: all).

A mutant is ``killed`` (a test that passes unmutated fails under it, or a test module cannot
even be imported: the suite noticed), ``timed_out`` (counted as killed, listed apart),
``survived``, ``unconfirmed`` (its killing test fails unmutated too: not a kill), or
``incompetent`` (cosmic-ray's word: the operator no longer applies, or the mutated module does
not compile; never scored). ``equivalent`` mutants are never run, and each carries its reason:
a site inside a function's, a module-scope variable's or a function body's assignment's
annotation, which Python never evaluates here (PEP 563), ``type(...) is X`` or a
``member_of`` field ``is`` an enum member made ``==`` (the reasons below say why), or an
entry of ``docs/kernel-equivalents.toml``. The score is killed (with timeouts) over
killed, survived and unconfirmed.

CI judges a seeded sample (``--sample N --seed S``); the nightly workflow judges every mutant,
split into ``--shard K/N`` jobs, and ``--combine`` adds the shards' reports into one. The
session is cosmic-ray's own database (``OUT/session.sqlite``), so ``cr-report`` reads it too.
Each verdict is also appended to ``OUT/judged.jsonl`` as it comes in; ``--resume`` goes on
from there after an interruption, under the same commit, tools and selection only.

Exit status: 0 the score is at least ``--min-score``; 1 it is lower, an equivalents entry is
stale (it matches no mutant), or a copy's tests fail unmutated; 2 a usage error (cosmic-ray
missing, a malformed equivalents file or shard, shards that do not add up); 130 interrupted.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import enum
import hashlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import tomllib
import types
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from . import mutants
from .mutants import CopyError, Phase, Status, Worker
from .report_context import run_context

SCORE_SCHEMA = "mutation_score.v1"
EQUIVALENTS_SCHEMA = "kernel_equivalents.v1"
KERNEL = Path("src") / "practice_loop" / "kernel"
DEFAULT_EQUIVALENTS = Path("docs") / "kernel-equivalents.toml"
DEFAULT_OUT = Path("mutation-score")
SESSION = "session.sqlite"
SCORE_JSON = "score.json"
SCORE_MARKDOWN = "score.md"
JOURNAL = "judged.jsonl"  # each verdict as it comes in: what --resume goes on from
JOURNAL_SCHEMA = "mutation_score.journal.v1"
REACH_DATA = "reach.sqlite"  # coverage's data of the selection run, kept for inspection
REACH_LOG = "reach.log"  # and pytest's whole output of it
PYTEST_INTERNAL_ERROR = 3  # pytest.ExitCode.INTERNAL_ERROR
# Imported whole before the first test module (reach_plugin's --reach-import): the helpers the
# tests share, so a test module's import is charged to that module alone (docs/adr/0015).
SHARED_PACKAGES = ("practice_loop", "practice_strategies")
NO_TEST_REACHES = "no kernel test executes this line or reaches the module out of coverage"
DEFAULT_MIN_SCORE = 95.0
DEFAULT_TIMEOUT_SECONDS = 1800  # the kernel tests take minutes on one core
# The second phase, after the module's own tests: every kernel module's test file and these,
# the tests that drive the kernel across its stages. The product's, Workbench's and the
# harness's own tests, and the slow directories (stateful, nocover, browser), are not in it.
CROSS_STAGE_TESTS = (
    "tests/cover/test_contracts.py",
    "tests/cover/test_corruption_catalogue.py",
    "tests/cover/test_cross_stage_properties.py",
    "tests/cover/test_fail_closed.py",
    "tests/cover/test_gate_policy.py",
    "tests/cover/test_prohibited_states_0226_0227.py",
    "tests/cover/test_prohibited_states_0228.py",
    "tests/cover/test_prohibited_states_0231_failures.py",
    "tests/cover/test_prohibited_states_local_0001_0005.py",
    "tests/cover/test_prohibited_states_local_0006_0013.py",
    "tests/cover/test_public_api.py",
    "tests/cover/test_type_registration.py",
    "tests/cover/test_vectors.py",
    "tests/cover/test_verification.py",
    "tests/architecture",
    "tests/quality",
)
ANNOTATION_REASON = (
    "inside a function's, a module-scope variable's or a function body's assignment's "
    "annotation, which Python never evaluates in this module (from __future__ import "
    "annotations); the kernel evaluates only record fields' annotations (record.py, trace.py)"
)
# `is` and `==` agree when one side is a member of a plain enum that the other side was checked
# to be. Never by rule for `type(x) is X`: x's class may have a metaclass whose __eq__ says
# yes to every class (practice_strategies.Impostor), so those mutants are judged.
IDENTITY_AS_EQUALITY = frozenset(
    {"core/ReplaceComparisonOperator_Is_Eq", "core/ReplaceComparisonOperator_IsNot_NotEq"}
)
ENUM_FIELD_REASON = (
    "`record.field is Enum.MEMBER` made `==` (or `is not` made `!=`): every kernel field of that "
    "name is checked by member_of to be exactly a plain kernel enum (or None), whose == is "
    "identity, and every stage inspects a record before it reads a field (docs/adr/0003)"
)
RULE_REASONS = frozenset({ANNOTATION_REASON, ENUM_FIELD_REASON})
_SHARD = re.compile(r"([1-9][0-9]*)/([1-9][0-9]*)")
_EQUIVALENT_KEYS = frozenset({"file", "operator", "line", "column", "mutated", "reason"})


class Verdict(enum.StrEnum):
    KILLED = "killed"
    TIMED_OUT = "timed_out"
    SURVIVED = "survived"
    UNCONFIRMED = "unconfirmed"
    INCOMPETENT = "incompetent"


SCORED = (Verdict.KILLED, Verdict.TIMED_OUT, Verdict.SURVIVED, Verdict.UNCONFIRMED)


class UsageError(ValueError):
    """The command cannot run as asked; the message says why."""


@dataclasses.dataclass(frozen=True, slots=True)
class Site:
    """One cosmic-ray mutation: an operator at one place of one kernel module."""

    job_id: str  # cosmic-ray's work item, in OUT/session.sqlite
    file: str  # relative to the checkout
    operator: str
    occurrence: int  # the operator's n-th place in the file: what cosmic-ray applies
    line: int  # 1-based
    column: int  # 0-based, in characters
    text: str  # the source line, stripped

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.file, self.operator, self.occurrence)

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}:{self.column} {self.operator}#{self.occurrence}"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "operator": self.operator,
            "occurrence": self.occurrence,
            "source": self.text,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Equivalent:
    """A recorded equivalent mutant: the site of ``operator`` at ``column`` of the stripped
    source ``line`` of ``file`` that makes it ``mutated`` (one operator can make several
    mutants at one place: a number moved up or down), with the reason no test can tell it
    from the original."""

    file: str
    operator: str
    line: str
    column: int
    mutated: str
    reason: str
    source: str  # where the entry is

    def at(self, site: Site, indent: int) -> bool:
        return (site.file, site.operator, site.text, site.column - indent) == (
            self.file,
            self.operator,
            self.line,
            self.column,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Judged:
    site: Site
    verdict: Verdict
    phase: Phase | None = None
    seconds: float = 0.0
    killed_by: str | None = None
    detail: str = ""
    diff: str = ""

    def to_json(self) -> dict[str, Any]:
        return self.site.to_json() | {
            "status": self.verdict.value,
            "phase": None if self.phase is None else self.phase.value,
            "seconds": round(self.seconds, 2),
            "killed_by": self.killed_by,
            "detail": self.detail,
            "diff": self.diff,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any], site: Site) -> Judged:
        phase = entry["phase"]
        return cls(
            site,
            Verdict(entry["status"]),
            None if phase is None else Phase(phase),
            float(entry["seconds"]),
            entry["killed_by"],
            str(entry["detail"]),
            str(entry["diff"]),
        )


# ---------------------------------------------------------------------------------------------
# The mutants: cosmic-ray's enumeration, and the equivalent ones


def _cosmic_ray() -> types.SimpleNamespace:
    """The parts of cosmic-ray this module uses; ``UsageError`` naming the extra without it."""
    try:
        from cosmic_ray.commands.init import init
        from cosmic_ray.mutating import mutate_code
        from cosmic_ray.plugins import get_operator
        from cosmic_ray.work_db import WorkDB, use_db
        from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult
    except ImportError as error:
        raise UsageError(
            f"needs cosmic-ray ({error}): pip install 'practice-loop[test]'"
        ) from error
    return types.SimpleNamespace(
        init=init,
        mutate_code=mutate_code,
        get_operator=get_operator,
        WorkDB=WorkDB,
        use_db=use_db,
        TestOutcome=TestOutcome,
        WorkerOutcome=WorkerOutcome,
        WorkResult=WorkResult,
    )


def kernel_modules(root: Path) -> list[Path]:
    return sorted(path for path in (root / KERNEL).glob("*.py") if path.name != "__init__.py")


def enumerate_sites(root: Path, session: Path) -> list[Site]:
    """Every mutation cosmic-ray's operators make of the kernel, recorded in a new ``session``
    database; in key order."""
    cr = _cosmic_ray()
    session.unlink(missing_ok=True)
    lines = {path: path.read_text(encoding="utf-8").splitlines() for path in kernel_modules(root)}
    with cr.use_db(str(session), cr.WorkDB.Mode.create) as db:
        cr.init(list(lines), db, {})
        items = list(db.pending_work_items)
    sites = []
    for item in items:
        (spec,) = item.mutations
        path = Path(spec.module_path)
        row, column = spec.start_pos
        sites.append(
            Site(
                job_id=item.job_id,
                file=path.relative_to(root).as_posix(),
                operator=spec.operator_name,
                occurrence=spec.occurrence,
                line=row,
                column=column,
                text=lines[path][row - 1].strip(),
            )
        )
    return sorted(sites, key=lambda site: site.key)


def enumeration_digest(sites: Iterable[Site]) -> str:
    """What a report was judged over: shards of one enumeration may be combined, no others."""
    rows = sorted([*site.key, site.line, site.column] for site in sites)
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


Span = tuple[tuple[int, int], tuple[int, int]]  # (line, column) start and end, in characters


def _spans_of(nodes: Iterable[ast.expr], lines: Sequence[str]) -> list[Span]:
    def characters(row: int, byte_column: int) -> int:  # ast counts UTF-8 bytes
        return len(lines[row - 1].encode("utf-8")[:byte_column].decode("utf-8"))

    return [
        (
            (node.lineno, characters(node.lineno, node.col_offset)),
            (node.end_lineno, characters(node.end_lineno, node.end_col_offset or 0)),
        )
        for node in nodes
        if node.end_lineno is not None
    ]


def annotation_spans(source: str) -> list[Span]:
    """Every function annotation, every annotation of a variable at module scope, and every
    annotated assignment in a function's body (``self._token: T = None`` too: PEP 563 leaves
    even an attribute target's annotation unevaluated), of a module that has ``from __future__
    import annotations``; none for a module without it. A class body's annotations are not
    among them, nor a class's nested in a function: a record's are its fields' checks."""
    tree = ast.parse(source)
    postponed = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    if not postponed:
        return []
    # Module scope only: ``tree.body``, not a class's or a function's body.
    annotations: list[ast.expr] = [
        node.annotation for node in tree.body if isinstance(node, ast.AnnAssign)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            parameters = [
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                *filter(None, [arguments.vararg, arguments.kwarg]),
            ]
            annotations += [p.annotation for p in parameters if p.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
            annotations += [item.annotation for item in _function_body_annotated(node.body)]
    return _spans_of(annotations, source.splitlines())


def _function_body_annotated(body: Sequence[ast.stmt]) -> list[ast.AnnAssign]:
    """The annotated assignments of a function's own body, at any depth of its blocks but not
    inside a nested function (walked on its own) or class (whose body a record may read)."""
    found: list[ast.AnnAssign] = []
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.AnnAssign):
            found.append(node)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending += [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.expr)]
    return sorted(found, key=lambda node: (node.lineno, node.col_offset))


@dataclasses.dataclass(frozen=True, slots=True)
class EnumFields:
    """What the enum-field rule needs to know of the whole kernel."""

    enums: frozenset[str]  # `class E(enum.Enum)` whose body defines no __eq__
    fields: frozenset[str]  # names every declaration of which is checked by member_of(E)


def enum_fields(sources: Iterable[str]) -> EnumFields:
    """The plain enums of the kernel, and the field names that are declared only as
    ``Annotated[..., member_of(E)]`` or ``Annotated[..., optional(member_of(E))]`` of one."""
    classes = [
        node
        for source in sources
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
    ]

    def is_enum_base(base: ast.expr) -> bool:
        return (isinstance(base, ast.Name) and base.id == "Enum") or (
            isinstance(base, ast.Attribute)
            and base.attr == "Enum"
            and isinstance(base.value, ast.Name)
            and base.value.id == "enum"
        )

    enums = frozenset(
        node.name
        for node in classes
        if len(node.bases) == 1
        and is_enum_base(node.bases[0])
        and not any(
            isinstance(item, ast.FunctionDef) and item.name == "__eq__" for item in node.body
        )
    )

    def call_of(node: ast.expr, name: str) -> ast.expr | None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == name
            and len(node.args) == 1
            and not node.keywords
        ):
            return node.args[0]
        return None

    def enum_checked(annotation: ast.expr) -> bool:
        if not (
            isinstance(annotation, ast.Subscript)
            and isinstance(annotation.value, ast.Name)
            and annotation.value.id == "Annotated"
            and isinstance(annotation.slice, ast.Tuple)
            and len(annotation.slice.elts) == 2
        ):
            return False
        check = annotation.slice.elts[1]
        inner = call_of(check, "optional")
        enum_type = call_of(inner if inner is not None else check, "member_of")
        return isinstance(enum_type, ast.Name) and enum_type.id in enums

    declared: dict[str, bool] = {}
    for node in classes:
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                name = item.target.id
                declared[name] = declared.get(name, True) and enum_checked(item.annotation)
    return EnumFields(enums, frozenset(name for name, only in declared.items() if only))


def enum_field_identity_spans(source: str, known: EnumFields) -> list[Span]:
    """Every ``x.field is E.MEMBER`` or ``is not`` (one comparison, either side) where the
    field is one ``known`` holds and ``E`` a plain kernel enum."""

    def is_field(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in known.fields

    def is_member(node: ast.expr) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in known.enums
        )

    found = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Is | ast.IsNot)
        and (
            (is_field(node.left) and is_member(node.comparators[0]))
            or (is_member(node.left) and is_field(node.comparators[0]))
        )
    ]
    return _spans_of(found, source.splitlines())


def equivalence_rules(
    source: str, known: EnumFields
) -> list[tuple[Span, frozenset[str] | None, str]]:
    """The spans of a module where mutants are equivalent by rule: each with the operators
    it holds for (``None``: every operator) and the reason."""
    return [
        *((span, None, ANNOTATION_REASON) for span in annotation_spans(source)),
        *(
            (span, IDENTITY_AS_EQUALITY, ENUM_FIELD_REASON)
            for span in enum_field_identity_spans(source, known)
        ),
    ]


def load_equivalents(path: Path) -> list[Equivalent]:
    """The recorded equivalents; ``UsageError`` naming each malformed entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise UsageError(f"{path}: cannot be read: {error}") from error
    if data.get("schema") != EQUIVALENTS_SCHEMA or set(data) - {"schema", "equivalent"}:
        raise UsageError(f"{path}: needs schema = {EQUIVALENTS_SCHEMA!r} and [[equivalent]] only")
    entries = data.get("equivalent", [])
    problems, found = [], []
    for index, entry in enumerate(entries if isinstance(entries, list) else [None]):
        where = f"{path} equivalent #{index + 1}"
        if not isinstance(entry, dict) or set(entry) != _EQUIVALENT_KEYS:
            problems.append(f"{where}: needs exactly the keys {sorted(_EQUIVALENT_KEYS)}")
            continue
        texts = [entry[key] for key in ("file", "operator", "line", "mutated", "reason")]
        if not all(isinstance(text, str) and text.strip() for text in texts):
            problems.append(
                f"{where}: file, operator, line, mutated and reason are non-empty strings"
            )
            continue
        if not isinstance(entry["column"], int) or entry["column"] < 0:
            problems.append(f"{where}: column is a non-negative integer")
            continue
        found.append(
            Equivalent(
                entry["file"],
                entry["operator"],
                entry["line"],
                entry["column"],
                entry["mutated"],
                " ".join(entry["reason"].split()),
                where,
            )
        )
    if problems:
        raise UsageError("\n".join(problems))
    return found


def classify(
    root: Path, sites: Sequence[Site], recorded: Sequence[Equivalent]
) -> tuple[list[Site], dict[str, str], list[Equivalent]]:
    """The candidates (every site not equivalent), each equivalent site's reason by job id,
    and the recorded entries that match no site (stale)."""
    rules: dict[str, list[tuple[Span, frozenset[str] | None, str]]] = {}
    indents: dict[tuple[str, int], int] = {}
    sources: dict[str, str] = {}
    for path in kernel_modules(root):
        sources[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    known = enum_fields(sources.values())
    for name, source in sources.items():
        rules[name] = equivalence_rules(source, known)
        for row, line in enumerate(source.splitlines(), 1):
            indents[name, row] = len(line) - len(line.lstrip())
    reasons: dict[str, str] = {}
    used: set[int] = set()
    candidates = []
    for site in sites:
        position = (site.line, site.column)
        rule = next(
            (
                reason
                for (start, end), operators, reason in rules.get(site.file, ())
                if start <= position < end and (operators is None or site.operator in operators)
            ),
            None,
        )
        if rule is not None:
            reasons[site.job_id] = rule
            continue
        indent = indents.get((site.file, site.line), 0)
        here = [i for i, entry in enumerate(recorded) if entry.at(site, indent)]
        mutated = mutated_line(sources[site.file], site) if here else None
        match = next((i for i in here if recorded[i].mutated == mutated), None)
        if match is not None:
            used.add(match)
            reasons[site.job_id] = recorded[match].reason
            continue
        candidates.append(site)
    stale = [entry for index, entry in enumerate(recorded) if index not in used]
    return candidates, reasons, stale


def mutated_line(source: str, site: Site) -> str | None:
    """The lines the mutant changes, as it makes them: stripped and joined by one space
    (``None``: it no longer applies). Mostly the site's one line; a mutated comparison
    written over two lines comes back from cosmic-ray on one."""
    cr = _cosmic_ray()
    text = cr.mutate_code(source, cr.get_operator(site.operator)(), site.occurrence)
    if text is None:
        return None
    before, after = source.splitlines(), text.splitlines()
    same = min(len(before), len(after))
    start = next((i for i in range(same) if before[i] != after[i]), same)
    end = next((i for i in range(same - start) if before[-1 - i] != after[-1 - i]), same - start)
    return " ".join(line.strip() for line in after[start : len(after) - end])


def drawable(sites: Sequence[Site], reasons: dict[str, str]) -> list[Site]:
    """What samples and shards are drawn from: every site not equivalent by rule. A recorded
    equivalent stays in, so recording one never redraws the sample; it is shown, not judged."""
    return [site for site in sites if reasons.get(site.job_id) not in RULE_REASONS]


def module_files(root: Path, names: Sequence[str] | None) -> frozenset[str] | None:
    """The kernel files that ``--module`` names (``None``: every module), each name a module's
    stem (``answer``) or its path; ``UsageError`` naming the modules for any other name."""
    if not names:
        return None
    stems = {path.relative_to(root).as_posix(): path.stem for path in kernel_modules(root)}
    by_name = {stem: file for file, stem in stems.items()} | {file: file for file in stems}
    chosen = set()
    for name in names:
        file = by_name.get(name) or by_name.get(name.removesuffix(".py"))
        if file is None:
            raise UsageError(
                f"--module {name!r} is not a kernel module; the modules are "
                + ", ".join(sorted(stems.values()))
            )
        chosen.add(file)
    return frozenset(chosen)


def select(
    candidates: Sequence[Site],
    *,
    sample: int | None,
    seed: int,
    shard: tuple[int, int] | None,
    files: frozenset[str] | None = None,
) -> list[Site]:
    """The candidates to judge: of the given kernel files (or all), a seeded sample, one shard,
    or them all; in key order. The sample depends only on the candidates' keys and the seed."""
    chosen = sorted(
        (site for site in candidates if files is None or site.file in files),
        key=lambda site: site.key,
    )
    if shard is not None:
        index, count = shard
        chosen = chosen[index - 1 :: count]
    if sample is not None and sample < len(chosen):
        chosen = sorted(random.Random(seed).sample(chosen, sample), key=lambda site: site.key)
    return chosen


# ---------------------------------------------------------------------------------------------
# Judging, in the catalogue's warm copies


def module_tests(file: str, root: Path) -> list[str]:
    own = Path("tests") / "cover" / f"test_{Path(file).stem}.py"
    return [own.as_posix()] if (root / own).is_file() else []


def kernel_test_files(file: str, root: Path) -> list[tuple[Phase, list[str]]]:
    """The module's own test file, then the rest of the kernel's tests: every test that could
    notice the mutant, whatever it executes."""
    own = module_tests(file, root)
    others = [
        test
        for module in kernel_modules(root)
        for test in module_tests(module.name, root)
        if test not in own
    ]
    rest = [*others, *(test for test in CROSS_STAGE_TESTS if (root / test).exists())]
    # Never an empty list: to pytest that is the whole suite.
    return [
        (phase, tests)
        for phase, tests in [(Phase.MODULE_TESTS, own), (Phase.KERNEL_TESTS, rest)]
        if tests
    ]


# ---------------------------------------------------------------------------------------------
# Which kernel tests reach each line: the selection (docs/adr/0015)


@dataclasses.dataclass(frozen=True, slots=True)
class Reach:
    """What one unmutated run of the kernel's tests under coverage saw, per kernel module (paths
    relative to the checkout). The tests are derandomized (the ``ci`` profile), so a test that
    never executes a line makes, under a mutant of it, the run that was measured; only order
    effects between tests (a fixture one test sets up and the next reads) can hide a killer,
    and that shows as a survivor, never as a kill."""

    # line -> the node ids that execute it, or whose test module's import does
    tests: dict[str, dict[int, frozenset[str]]]
    # Lines executed by the global imports (the kernel, the shared helpers, a test module that
    # brings in a helper of its own), which build tables, defaults and example frames that any
    # test may read.
    at_import: dict[str, frozenset[int]]
    # Tests that reach the module out of coverage's sight: they start a process, or read it.
    unmeasured: dict[str, frozenset[str]]
    seconds: float
    # node id -> the seconds the test took in that run (setup, call and teardown), and a test
    # module's node id (its path) -> the seconds its import took
    durations: dict[str, float]


Statement = tuple[int, int, frozenset[int]]  # first line, last line, the lines of its own


def statements_of(tree: ast.Module) -> list[Statement]:
    """Every statement of ``tree`` with the lines that are its own, not a nested statement's:
    what a tracer reports when that statement, or its header, runs."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first, last = _first_line(node), node.end_lineno or node.lineno
            own = set(range(first, last + 1))
            for nested in ast.walk(node):
                if isinstance(nested, ast.stmt) and nested is not node:
                    own -= set(range(_first_line(nested), (nested.end_lineno or 0) + 1))
            found.append((first, last, frozenset(own)))
    return found


def statement_lines(statements: Sequence[Statement], line: int) -> frozenset[int]:
    """The own lines of the innermost statement at ``line``, and ``line`` itself."""
    containing = [s for s in statements if s[0] <= line <= s[1]]
    # Nested statements start later, or on the same line (`if x: return`), listed after.
    innermost = max(enumerate(containing), key=lambda item: (item[1][0], item[0]), default=None)
    return frozenset({line} | (innermost[1][2] if innermost else set()))


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(decorator.lineno for decorator in decorators)])


def _first_executed_line(tree: ast.Module) -> int | None:
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            return _first_line(node)
    return None


def site_phases(
    site: Site,
    root: Path,
    reach: Reach | None,
    statements: dict[str, list[Statement]],
    files: dict[str, float] | None = None,
) -> list[tuple[Phase, list[str]]]:
    """The tests that judge ``site``, in phases: the module's own test file's, then the
    others', cheapest file first by ``files`` (``seconds_by_file``, measured from ``reach``
    when not given). Without ``reach``, or for a line executed before the first test (its
    effect can be anywhere), every kernel test file; otherwise the tests that execute the
    line and those that reach the module unmeasured. ``[]``: no test can notice the mutant."""
    if reach is None:
        return kernel_test_files(site.file, root)
    if files is None:
        files = seconds_by_file(reach)
    lines = statement_lines(statements[site.file], site.line)
    if lines & reach.at_import.get(site.file, frozenset()):
        return [
            (phase, cheapest_first(tests, files) if phase is Phase.KERNEL_TESTS else tests)
            for phase, tests in kernel_test_files(site.file, root)
        ]
    executed = reach.tests.get(site.file, {})
    tests = set(reach.unmeasured.get(site.file, frozenset()))
    tests.update(*(executed.get(line, frozenset()) for line in lines))
    own_files = tuple(f"{test}::" for test in module_tests(site.file, root))
    own = sorted(test for test in tests if test.startswith(own_files)) if own_files else []
    rest = cheapest_first(tests.difference(own), files)
    return [
        (phase, chosen)
        for phase, chosen in [(Phase.MODULE_TESTS, own), (Phase.KERNEL_TESTS, rest)]
        if chosen
    ]


def _coverage_data() -> Any:
    try:
        from coverage import CoverageData
    except ImportError as error:
        raise UsageError(f"needs coverage ({error}): pip install 'practice-loop[test]'") from error
    return CoverageData


def measure_reach(
    worker: Worker,
    tests: Sequence[str],
    *,
    jobs: int,
    out: Path,
    collected: set[str],
    packages: Sequence[str] = SHARED_PACKAGES,
) -> Reach:
    """Run ``tests`` once, unmutated, in the worker's copy under coverage with one context per
    test (pytest-cov's ``--cov-context=test``) and ``reach_plugin``, with ``packages`` imported
    before the first test module and each test module imported in a context of its own.
    ``CopyError`` if they fail, if coverage did not see a kernel module imported before the
    tests (its import-time lines would be missed), or if a measured context is not a collected
    test. A line that only test modules' imports run is charged to their tests;
    one run by the global imports, or by a test module that brings in a helper of the
    checkout, is at import (every test may read what it built)."""
    out.mkdir(parents=True, exist_ok=True)
    data_file = out / REACH_DATA
    for stale in out.glob(f"{REACH_DATA}*"):  # the combined data and any worker's leftovers
        stale.unlink()
    record = worker.copy / ".reach.json"
    for stale in worker.copy.glob(".reach.json*"):
        stale.unlink()
    kernel = (worker.copy / KERNEL).resolve()
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "practice_loop.harness.reach_plugin",
        f"--reach-out={record}",
        f"--reach-watch={kernel}",
        *(f"--reach-import={package}" for package in packages),
        f"--cov={kernel}",
        "--cov-context=test",
        # Never erase at start (the old data is removed above): under pytest-xdist the
        # controller's erase can remove a worker's data file that a test module's import
        # already wrote to, and that worker's tests then fail ("no such table: context").
        "--cov-append",
        "--cov-report=",
        *(["-n", str(jobs)] if jobs > 1 else []),
        *tests,
    ]
    environment = worker.environment | {"COVERAGE_FILE": str(data_file.resolve())}
    log = out / REACH_LOG
    start = time.monotonic()
    returncode, output = _run_in_session(command, worker.copy, environment, worker.timeout)
    if returncode == PYTEST_INTERNAL_ERROR:
        # pytest's own fault, not a verdict on the tests (pytest-xdist can lose track of a
        # worker, pytest-dev/pytest-xdist#714): the run is made once more, and a second
        # internal error is refused like any other failure.
        for stale in [*out.glob(f"{REACH_DATA}*"), *worker.copy.glob(".reach.json*")]:
            stale.unlink()
        first = output
        returncode, output = _run_in_session(command, worker.copy, environment, worker.timeout)
        output = f"{first}\n--- run again after pytest's internal error ---\n{output}"
    seconds = time.monotonic() - start
    log.write_text(output, encoding="utf-8")
    if returncode != 0:
        status = "timed out" if returncode is None else f"exit {returncode}"
        raise CopyError(
            f"the kernel's tests do not pass unmutated under coverage ({status}; the whole "
            f"output is in {log}):\n{mutants.tail_of(output)}"
        )
    from .reach_plugin import IMPORT_PHASE  # needs pytest, as the measuring run does

    records = _reach_records(sorted(worker.copy.glob(".reach.json*")))
    unmeasured = _unmeasured(worker.copy, records)
    shared = {module for record in records for module in record["shared"]}
    module_tests: dict[str, set[str]] = {}
    for test in collected:
        module_tests.setdefault(test.partition("::")[0], set()).add(test)
    data = _coverage_data()(basename=str(data_file))
    data.read()
    tests_by_line: dict[str, dict[int, frozenset[str]]] = {}
    at_import: dict[str, frozenset[int]] = {}
    strangers: set[str] = set()
    for measured in data.measured_files():
        path = Path(measured).resolve()
        if not path.is_relative_to(kernel):
            continue
        file = path.relative_to(worker.copy.resolve()).as_posix()
        by_line, global_lines = {}, set()
        for line, contexts in data.contexts_by_lineno(measured).items():
            reached: set[str] = set()
            for context in contexts:
                name, _, phase = context.rpartition("|")
                if not context or (phase == IMPORT_PHASE and name in shared):
                    global_lines.add(line)
                elif phase == IMPORT_PHASE:  # only collected tests are charged: none is made up
                    reached.update(module_tests.get(name, ()))
                else:
                    strangers.update({name} - collected)
                    reached.add(name)
            by_line[line] = frozenset(reached)
        tests_by_line[file], at_import[file] = by_line, frozenset(global_lines)
    if strangers:
        raise CopyError(f"coverage names tests that were not collected, e.g. {min(strangers)!r}")
    for module in kernel_modules(worker.copy):
        file = module.relative_to(worker.copy).as_posix()
        first = _first_executed_line(ast.parse(module.read_text(encoding="utf-8")))
        if first is not None and first not in at_import.get(file, frozenset()):
            raise CopyError(
                f"coverage did not see {file} imported before the tests ran; its import-time "
                "lines would be missed (is coverage started after the kernel is imported?)"
            )
    durations: dict[str, float] = {}
    for record in records:  # under pytest-xdist the controller reports its workers' tests too
        for test, spent in record["durations"].items():
            durations[test] = max(spent, durations.get(test, 0.0))
    return Reach(tests_by_line, at_import, unmeasured, seconds, durations)


def _run_in_session(
    command: Sequence[str], cwd: Path, environment: dict[str, str], timeout: float
) -> tuple[int | None, str]:
    """Run ``command`` in a process group of its own, ended whole at ``timeout`` (``None``) or
    on an interrupt: pytest-xdist's workers must not outlive it."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return None, process.communicate()[0]
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise


def _reach_records(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """``reach_plugin``'s records, one per pytest process."""
    if not paths:
        raise CopyError("the reach plugin wrote no record: the selection would miss tests")
    return [json.loads(path.read_text(encoding="utf-8")) for path in paths]


def _unmeasured(copy: Path, records: Sequence[dict[str, Any]]) -> dict[str, frozenset[str]]:
    """Per kernel module, the tests that start a process (they may run any module) or read
    the module's source."""
    processes: set[str] = set()
    reads: dict[str, set[str]] = {}
    for entry in records:
        processes.update(entry["processes"])
        for test, paths in entry["reads"].items():
            for path in paths:
                file = Path(path).relative_to(copy.resolve()).as_posix()
                reads.setdefault(file, set()).add(test)
    files = [module.relative_to(copy).as_posix() for module in kernel_modules(copy)]
    return {file: frozenset(processes | reads.get(file, set())) for file in files}


# A run under a mutant is cut off at TIMEOUT_FACTOR times what the test files it runs took in
# the measuring run, plus TIMEOUT_SLACK seconds (the fork, pytest's start), never past
# --timeout: a mutant that loops for ever ends in minutes, not at half an hour. A test file is
# counted whole (its import and every test of it), whichever of its tests the run takes: a
# module-scoped fixture's set-up is charged to the file's first test only. The measuring run
# is under coverage, slower than a run under a mutant, so the margin is wider than it looks.
TIMEOUT_FACTOR = 5
TIMEOUT_SLACK = 30.0


def seconds_by_file(reach: Reach) -> dict[str, float]:
    """What the measuring run spent in each test file: its import and every test of it."""
    files: dict[str, float] = {}
    for node, seconds in reach.durations.items():
        file = node.partition("::")[0]
        files[file] = files.get(file, 0.0) + seconds
    return files


def _measured_files(test: str, files: dict[str, float]) -> set[str]:
    """The measured test files that ``test`` (a node id, a test file or a directory) runs in."""
    path = test.partition("::")[0].rstrip("/")
    return {path} if path in files else {file for file in files if file.startswith(f"{path}/")}


def cheapest_first(tests: Iterable[str], files: dict[str, float]) -> list[str]:
    """``tests`` (node ids, test files or directories) ordered by what their file took in the
    measuring run, cheapest first, a file's tests together in name order, any file it did not
    time last. A phase runs with ``-x``, so a kill costs the files before the killing one: in
    name order a mutant killed by a quick file could wait minutes on a slow one (a module
    fixture that runs the sample loop) that cannot notice it."""

    def cost(test: str) -> tuple[bool, float, str]:
        measured = _measured_files(test, files)
        return not measured, sum(files[file] for file in measured), test

    return sorted(tests, key=cost)


def phase_timeout(
    tests: Sequence[str],
    files: dict[str, float] | None,
    ceiling: float,
    *,
    factor: float = TIMEOUT_FACTOR,
    slack: float = TIMEOUT_SLACK,
) -> float:
    """The seconds a run of ``tests`` (node ids, test files or directories) under a mutant
    may take, from ``files`` (``seconds_by_file``) for the test files they are in, at most
    ``ceiling``; the ceiling itself without a measuring run or when one of ``tests`` is in no
    file it measured."""
    if files is None or not tests:
        return ceiling
    touched: set[str] = set()
    for path in {test.partition("::")[0] for test in tests}:
        inside = _measured_files(path, files)
        if not inside:
            return ceiling
        touched |= inside
    return round(min(ceiling, factor * sum(files[file] for file in touched) + slack), 1)


def judge_site(
    worker: Worker,
    site: Site,
    phases: Sequence[tuple[Phase, Sequence[str]]],
    timeouts: Sequence[float] | None = None,
) -> Judged:
    cr = _cosmic_ray()
    path = worker.copy / site.file
    original = path.read_text(encoding="utf-8")
    operator = cr.get_operator(site.operator)()
    text = cr.mutate_code(original, operator, site.occurrence)
    if text is None:
        return Judged(site, Verdict.INCOMPETENT, detail="the operator no longer applies here")
    try:
        compile(text, site.file, "exec")
    except SyntaxError as error:
        return Judged(site, Verdict.INCOMPETENT, detail=f"does not compile: {error}")
    diff = "\n".join(
        line
        for line in difflib.unified_diff(original.splitlines(), text.splitlines(), n=0, lineterm="")
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )
    if not phases:
        return Judged(site, Verdict.SURVIVED, detail=NO_TEST_REACHES, diff=diff)
    status, phase, seconds, killed_by, detail = worker.run_under(
        path, text, phases, site.name, import_crash=Status.KILLED, timeouts=timeouts
    )
    verdict = {
        Status.KILLED: Verdict.KILLED,
        Status.TIMED_OUT: Verdict.TIMED_OUT,
        Status.SURVIVED: Verdict.SURVIVED,
        # pytest could not even start its session (a conftest imports the mutated module):
        # the unmutated copy collects every test the phases name (judge_sites checks), so the
        # mutant did that.
        Status.INVALID: Verdict.KILLED,
    }[status]
    return Judged(site, verdict, phase, seconds, killed_by, detail, diff)


def judge_sites(
    root: Path,
    sites: Sequence[Site],
    *,
    jobs: int,
    timeout: float,
    out: Path,
    every_test: bool = False,
    progress: Callable[[Judged], None] | None = None,
    earlier: Sequence[Judged] = (),
) -> tuple[list[Judged], Reach | None]:
    """Judge ``sites``, each by the tests that reach its line (``every_test``: by every kernel
    test file); the results, ``earlier`` ones (an interrupted run's, resumed) among them, in
    key order, each kill confirmed on the unmutated copy; and the reach measured."""
    everything = [*sites, *(result.site for result in earlier)]
    statements = {
        file: statements_of(ast.parse((root / file).read_text(encoding="utf-8")))
        for file in sorted({site.file for site in everything})
    }
    kernel_tests = sorted(
        {
            test
            for file in statements
            for _, tests in kernel_test_files(file, root)
            for test in tests
        }
    )
    with mutants.copies(root, max(1, min(jobs, len(sites))), timeout) as workers:
        collected = {entry["nodeid"] for entry in workers[0].collect(kernel_tests)}
        reach = (
            None
            if every_test
            else measure_reach(workers[0], kernel_tests, jobs=jobs, out=out, collected=collected)
        )
        files = None if reach is None else seconds_by_file(reach)
        plan = {site.key: site_phases(site, root, reach, statements, files) for site in everything}

        def limit(tests: Sequence[str]) -> float:
            return phase_timeout(tests, files, timeout)

        def judge(worker: Worker, site: Site) -> Judged:
            phases = plan[site.key]
            return judge_site(worker, site, phases, [limit(tests) for _, tests in phases])

        judged = mutants.judge_all(workers, sites, judge, progress)
        results = sorted([*earlier, *judged], key=lambda result: result.site.key)
        killers = {
            r.killed_by
            for r in results
            if r.verdict is Verdict.KILLED and r.killed_by and "::" in r.killed_by
        }
        failing = mutants.failing_unmutated(workers, killers)

        def arguments_of(result: Judged) -> tuple[str, ...]:
            phases = dict(plan[result.site.key])
            return tuple(phases.get(result.phase, ())) if result.phase else ()

        timed_out = sorted({arguments_of(r) for r in results if r.verdict is Verdict.TIMED_OUT})
        slow = mutants.slow_unmutated(workers, timed_out, limit)

    def confirmed(result: Judged) -> Judged:
        if result.verdict is Verdict.KILLED and result.killed_by in failing:
            detail = f"{result.killed_by} fails unmutated too"
            return dataclasses.replace(result, verdict=Verdict.UNCONFIRMED, detail=detail)
        if result.verdict is Verdict.TIMED_OUT and arguments_of(result) in slow:
            detail = "its tests take longer than its timeout unmutated too"
            return dataclasses.replace(result, verdict=Verdict.UNCONFIRMED, detail=detail)
        return result

    return [confirmed(result) for result in results], reach


def journal_header(
    sites: Sequence[Site], context: dict[str, str], selection: dict[str, Any]
) -> dict[str, Any]:
    """What a journal's verdicts were judged against: resumed only under the same."""
    return {
        "schema": JOURNAL_SCHEMA,
        "enumeration_digest": enumeration_digest(sites),
        "context": context,
        "selection": selection,
    }


def resumed_results(path: Path, header: dict[str, Any], sites: Sequence[Site]) -> list[Judged]:
    """The verdicts an interrupted run wrote into its journal at ``path``, if it judged under
    ``header``: the same mutants, the same committed checkout and tools, the same selection.
    ``UsageError`` otherwise: a verdict of other code or other tests is never carried over."""
    commit = header["context"]["commit"]
    if commit == "unknown" or commit.endswith("+uncommitted"):
        raise UsageError(
            f"--resume needs a committed checkout (this one is {commit!r}): "
            "an uncommitted tree cannot be shown to be the one the journal was judged in"
        )
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        raise UsageError(f"--resume: {path} does not exist: there is no run to go on") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--resume: {path}: {error}") from None
    try:
        written = json.loads(lines[0])
        differing = [key for key in header if written.get(key) != header[key]]
    except (json.JSONDecodeError, AttributeError) as error:
        raise UsageError(f"--resume: {path} is not a journal this command wrote: {error}") from None
    if differing:
        key = differing[0]
        raise UsageError(
            f"--resume: {path} was judged under another {key} "
            f"({written.get(key)!r}, not {header[key]!r}); run without --resume"
        )
    by_key = {site.key: site for site in sites}
    results: dict[tuple[str, str, int], Judged] = {}
    # A run killed mid-write leaves one unterminated last line: not a verdict.
    for number, line in enumerate(lines[1:-1], start=2):
        try:
            entry = json.loads(line)
            site = by_key[(entry["file"], entry["operator"], entry["occurrence"])]
            result = Judged.from_json(entry, site)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
            raise UsageError(f"--resume: {path}:{number} is not a verdict: {error!r}") from None
        if site.key in results:
            raise UsageError(f"--resume: {path}:{number} judges {site.name} a second time")
        results[site.key] = result
    return list(results.values())


def record_in_session(session: Path, results: Sequence[Judged], reasons: dict[str, str]) -> None:
    """Write every outcome into cosmic-ray's database, so its own reports read the run; every
    mutant left pending was not judged (equivalent, or not selected)."""
    cr = _cosmic_ray()
    outcome = {
        Verdict.KILLED: cr.TestOutcome.KILLED,
        Verdict.TIMED_OUT: cr.TestOutcome.KILLED,
        Verdict.SURVIVED: cr.TestOutcome.SURVIVED,
        Verdict.UNCONFIRMED: cr.TestOutcome.SURVIVED,
        Verdict.INCOMPETENT: cr.TestOutcome.INCOMPETENT,
    }
    with cr.use_db(str(session), cr.WorkDB.Mode.open) as db:
        for result in results:
            db.set_result(
                result.site.job_id,
                cr.WorkResult(
                    output=f"{result.verdict.value} {result.killed_by or ''} {result.detail}",
                    test_outcome=outcome[result.verdict],
                    worker_outcome=cr.WorkerOutcome.NORMAL,
                    diff=result.diff,
                ),
            )
        for job in list(db.pending_work_items):
            db.set_result(
                job.job_id,
                cr.WorkResult(
                    output=f"equivalent: {reasons[job.job_id]}"
                    if job.job_id in reasons
                    else "not selected in this run",
                    worker_outcome=cr.WorkerOutcome.SKIPPED,
                ),
            )


# ---------------------------------------------------------------------------------------------
# The report


def totals_of(
    statuses: Sequence[str], equivalent: int, sites: int, candidates: int
) -> dict[str, Any]:
    counts = Counter(statuses)
    killed = counts[Verdict.KILLED] + counts[Verdict.TIMED_OUT]
    scored = sum(counts[verdict] for verdict in SCORED)
    return {
        "sites": sites,
        "equivalent": equivalent,
        "candidates": candidates,
        "judged": len(statuses),
        **{verdict.value: counts[verdict] for verdict in Verdict},
        "score": round(100 * killed / scored, 2) if scored else None,
    }


def score_report(
    *,
    sites: Sequence[Site],
    candidates: Sequence[Site],
    reasons: dict[str, str],
    results: Sequence[Judged],
    stale: Sequence[Equivalent],
    selection: dict[str, Any],
    context: dict[str, str],
    wall_seconds: float,
) -> dict[str, Any]:
    by_job = {site.job_id: site for site in sites}
    equivalents = sorted((by_job[job] for job in reasons), key=lambda site: site.key)
    seconds = [r.seconds for r in results if r.verdict in (Verdict.KILLED, Verdict.TIMED_OUT)]
    return {
        "schema": SCORE_SCHEMA,
        "context": context,
        "selection": selection,
        "enumeration_digest": enumeration_digest(sites),
        "totals": totals_of(
            [r.verdict.value for r in results], len(reasons), len(sites), len(candidates)
        ),
        "median_seconds_to_kill": round(statistics.median(seconds), 2) if seconds else None,
        "wall_seconds": round(wall_seconds, 1),
        "equivalent_reasons": dict(Counter(reasons.values()).most_common()),
        "stale_equivalents": [entry.source for entry in stale],
        "judged": [r.to_json() for r in results],
        "equivalents": [site.to_json() | {"reason": reasons[site.job_id]} for site in equivalents],
    }


def score_markdown(report: dict[str, Any]) -> str:
    totals = report["totals"]
    selection = report["selection"]
    context = report["context"]
    lines = [
        "# Kernel mutation score (docs/adr/0015)",
        "",
        f"**{totals['score']}%** of {totals['judged']} judged mutants killed "
        f"({selection['description']}); {totals['candidates']} candidates of "
        f"{totals['sites']} cosmic-ray mutants, {totals['equivalent']} equivalent. Each "
        f"judged by {selection.get('tests', 'every kernel test file')}.",
        "",
        f"Commit `{context['commit']}`, Python {context['python']}, Hypothesis "
        f"{context['hypothesis']}, cosmic-ray {context.get('cosmic-ray', '?')}; "
        f"{report['wall_seconds']} s; median {report['median_seconds_to_kill']} s to kill.",
        "",
        "| killed | timed out | survived | unconfirmed | incompetent |",
        "|---:|---:|---:|---:|---:|",
        f"| {totals['killed']} | {totals['timed_out']} | {totals['survived']} | "
        f"{totals['unconfirmed']} | {totals['incompetent']} |",
        "",
        "## Survivors",
        "",
    ]
    survivors = [r for r in report["judged"] if r["status"] in ("survived", "unconfirmed")]
    if not survivors:
        lines.append("None.")
    for entry in survivors:
        lines += [
            f"- `{entry['file']}:{entry['line']}` {entry['operator']}#{entry['occurrence']} "
            f"({entry['status']}{': ' + entry['detail'] if entry['detail'] else ''})",
            "",
            "  ```diff",
            *(f"  {line}" for line in entry["diff"].splitlines()),
            "  ```",
        ]
    lines += [
        "",
        "## Per module",
        "",
        "| module | judged | killed | survived |",
        "|---|---:|---:|---:|",
    ]
    per_module: dict[str, Counter[str]] = {}
    for entry in report["judged"]:
        per_module.setdefault(entry["file"], Counter())[entry["status"]] += 1
    for module, counts in sorted(per_module.items()):
        killed = counts["killed"] + counts["timed_out"]
        survived = counts["survived"] + counts["unconfirmed"]
        lines.append(f"| `{module}` | {sum(counts.values())} | {killed} | {survived} |")
    lines += ["", "## Equivalent mutants, by reason", "", "| mutants | reason |", "|---:|---|"]
    for reason, count in report["equivalent_reasons"].items():
        lines.append(f"| {count} | {reason} |")
    if report["stale_equivalents"]:
        lines += ["", "## Stale equivalents entries (they match no mutant)", ""]
        lines += [f"- {source}" for source in report["stale_equivalents"]]
    return "\n".join(lines) + "\n"


def write_report(out: Path, report: dict[str, Any]) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / SCORE_JSON, out / SCORE_MARKDOWN
    json_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    md_path.write_text(score_markdown(report), encoding="utf-8")
    return json_path, md_path


def combine(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report of the shards ``1/N .. N/N`` of one enumeration; ``UsageError`` unless the
    reports are exactly those shards."""
    if not reports:
        raise UsageError("--combine needs the shards' score.json files")
    for report in reports:
        if not isinstance(report, dict) or report.get("schema") != SCORE_SCHEMA:
            raise UsageError(f"--combine: not a {SCORE_SCHEMA} report")
    first = reports[0]
    shards = sorted(tuple(report["selection"].get("shard") or ()) for report in reports)
    count = first["selection"].get("shard", [0, 0])[1] if first["selection"].get("shard") else 0
    if shards != [(index, count) for index in range(1, count + 1)]:
        raise UsageError(f"--combine: the reports are shards {shards}, not 1/N .. N/N of one run")
    for report in reports:
        if report["selection"].get("sample") is not None:
            raise UsageError("--combine: a sampled shard does not judge every mutant")
        if report["selection"].get("modules"):
            raise UsageError("--combine: a shard of some modules does not judge every mutant")
        for key in ("enumeration_digest", "context", "equivalents", "stale_equivalents"):
            if report[key] != first[key]:
                raise UsageError(f"--combine: the shards differ in {key}")
        if report["selection"].get("tests") != first["selection"].get("tests"):
            raise UsageError("--combine: the shards chose their tests differently")
    judged = sorted(
        (entry for report in reports for entry in report["judged"]),
        key=lambda entry: (entry["file"], entry["operator"], entry["occurrence"]),
    )
    seconds = [e["seconds"] for e in judged if e["status"] in ("killed", "timed_out")]
    totals = totals_of(
        [entry["status"] for entry in judged],
        first["totals"]["equivalent"],
        first["totals"]["sites"],
        first["totals"]["candidates"],
    )
    return first | {
        "selection": {
            "description": f"every mutant, in {count} shards",
            "shard": None,
            "sample": None,
            "seed": None,
            "tests": first["selection"].get("tests"),
            "reach_seconds": round(
                sum(report["selection"].get("reach_seconds") or 0 for report in reports), 1
            ),
        },
        "totals": totals,
        "median_seconds_to_kill": round(statistics.median(seconds), 2) if seconds else None,
        "wall_seconds": round(sum(report["wall_seconds"] for report in reports), 1),
        "judged": judged,
    }


# ---------------------------------------------------------------------------------------------
# The command


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "mutation-score",
        help="the kernel's generic mutation score, with cosmic-ray's operators",
        description="Enumerate cosmic-ray's mutants of every kernel module, set aside the "
        "equivalent ones with their reasons, judge the rest (or a seeded sample, or one shard) "
        "in copies of this checkout, each by the kernel tests that reach its line (one "
        "unmutated run under coverage says which), and write the score and every survivor. "
        "Exit status: 0 the score is at least --min-score; 1 it is lower, an equivalents entry "
        "is stale, or a copy's tests fail unmutated; 2 a usage error; 130 interrupted.",
    )
    parser.add_argument(
        "--sample", type=int, metavar="N", help="judge N candidates, drawn with --seed"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed")
    parser.add_argument("--shard", metavar="K/N", help="judge only the K-th of N equal shares")
    parser.add_argument(
        "--module",
        action="append",
        metavar="NAME",
        help="judge only the mutants of this kernel module (its name, as in answer, or its "
        "path); repeatable. A partial run: its score is not the kernel's",
    )
    parser.add_argument(
        "--every-test",
        action="store_true",
        help="judge each mutant by every kernel test file, not only by the tests that reach "
        "its line (coverage)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help=f"go on from the verdicts an interrupted run of the same command kept in "
        f"OUT/{JOURNAL} (same mutants, commit, tools and selection; refused otherwise)",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        type=Path,
        metavar="SCORE_JSON",
        help="add the score.json files of shards 1/N .. N/N into one report; judge nothing",
    )
    mutants.add_copy_arguments(
        parser,
        DEFAULT_TIMEOUT_SECONDS,
        f"; at most: a run is cut off sooner, at {TIMEOUT_FACTOR:g} times what its test files "
        f"took in the measuring run plus {TIMEOUT_SLACK:g} s",
    )
    parser.add_argument(
        "--min-score",
        type=float,
        default=DEFAULT_MIN_SCORE,
        metavar="PERCENT",
        help=f"the least score that passes (default {DEFAULT_MIN_SCORE:g})",
    )
    parser.add_argument(
        "--equivalents",
        type=Path,
        default=DEFAULT_EQUIVALENTS,
        metavar="PATH",
        help="the recorded equivalent mutants, each with its reason "
        f"(default {DEFAULT_EQUIVALENTS})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where score.md, score.json and cosmic-ray's session.sqlite go "
        f"(default {DEFAULT_OUT}/)",
    )
    parser.set_defaults(handler=run_command)
    return parser


def _usage(message: str) -> int:
    print(f"practice-loop mutation-score: {message}", file=sys.stderr)
    return 2


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = _SHARD.fullmatch(text)
    if match is None or not 1 <= int(match[1]) <= int(match[2]):
        raise UsageError(f"--shard must be K/N with 1 <= K <= N, not {text!r}")
    return int(match[1]), int(match[2])


def _verdict_line(report: dict[str, Any], minimum: float) -> tuple[bool, str]:
    totals = report["totals"]
    score = totals["score"]
    passed = score is not None and score >= minimum and not report["stale_equivalents"]
    line = (
        f"mutation-score: {'PASSED' if passed else 'FAILED'}: {score}% killed "
        f"(at least {minimum:g}% needed) of {totals['judged']} judged; {totals['killed']} "
        f"killed, {totals['timed_out']} timed out, {totals['survived']} survived, "
        f"{totals['unconfirmed']} unconfirmed, {totals['incompetent']} incompetent; "
        f"{totals['equivalent']} equivalent of {totals['sites']}"
    )
    if report["stale_equivalents"]:
        line += f"; {len(report['stale_equivalents'])} stale equivalents entries"
    return passed, line


def run_command(args: argparse.Namespace) -> int:
    try:
        if args.combine:
            reports = []
            for path in args.combine:
                try:
                    reports.append(json.loads(path.read_text(encoding="utf-8")))
                except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
                    raise UsageError(f"--combine: {path}: {error}") from error
            report = combine(reports)
        else:
            report = _judge(args)
    except UsageError as error:
        return _usage(str(error))
    except CopyError as error:
        print(f"practice-loop mutation-score: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        kept = _journal_verdicts(args.out / JOURNAL) if not args.combine else 0
        print(
            "practice-loop mutation-score: interrupted; no score written"
            + (
                f"; the {kept} verdicts reached are kept in {args.out / JOURNAL}: "
                "the same command with --resume goes on from them"
                if kept
                else ""
            ),
            file=sys.stderr,
        )
        return 130
    json_path, md_path = write_report(args.out, report)
    passed, line = _verdict_line(report, args.min_score)
    print(line)
    for entry in report["judged"]:
        if entry["status"] in ("survived", "unconfirmed"):
            print(
                f"  {entry['status']}: {entry['file']}:{entry['line']} {entry['operator']}: "
                f"{entry['diff']!r}"
            )
    for source in report["stale_equivalents"]:
        print(f"  stale: {source} matches no mutant")
    print(f"report: {md_path} and {json_path}")
    return 0 if passed else 1


def _journal_verdicts(path: Path) -> int:
    try:
        return max(0, path.read_text(encoding="utf-8").count("\n") - 1)
    except (OSError, UnicodeDecodeError):
        return 0


def _judge(args: argparse.Namespace) -> dict[str, Any]:
    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, not {args.timeout:g}")
    if args.sample is not None and args.sample < 1:
        raise UsageError(f"--sample must be at least 1, not {args.sample}")
    shard = parse_shard(args.shard)
    if args.resume and args.combine:
        raise UsageError("--resume goes on judging; --combine judges nothing")
    _cosmic_ray()  # refused here, before any work, when it is not installed
    root = mutants.checkout_root(Path.cwd())
    recorded = load_equivalents(root / args.equivalents)
    files = module_files(root, args.module)
    modules = sorted(files) if files is not None else None
    for stale in (SCORE_JSON, SCORE_MARKDOWN):  # never leave an older run's verdict
        (args.out / stale).unlink(missing_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    session = args.out / SESSION
    sites = enumerate_sites(root, session)
    candidates, reasons, stale = classify(root, sites, recorded)
    drawn = select(
        drawable(sites, reasons), sample=args.sample, seed=args.seed, shard=shard, files=files
    )
    chosen = [site for site in drawn if site.job_id not in reasons]
    context = run_context(root, "cosmic-ray")
    header = journal_header(
        sites,
        context,
        {
            "sample": args.sample,
            "seed": args.seed,
            "shard": args.shard,
            "every": args.every_test,
            "modules": modules,
        },
    )
    journal = args.out / JOURNAL
    earlier = resumed_results(journal, header, sites) if args.resume else []
    judged_before = {result.site.key for result in earlier}
    remaining = [site for site in chosen if site.key not in judged_before]
    description = (
        (
            f"a sample of {len(drawn)} drawn with seed {args.seed}, {len(drawn) - len(chosen)} "
            "of them recorded equivalents"
            if args.sample is not None
            else "every candidate"
        )
        + (f", shard {shard[0]}/{shard[1]}" if shard else "")
        + (f", of {', '.join(Path(file).stem for file in modules)} only" if modules else "")
    )
    resumed = f", {len(earlier)} of them judged before (--resume)" if args.resume else ""
    print(
        f"practice-loop mutation-score: {len(sites)} mutants, {len(reasons)} equivalent, "
        f"judging {len(chosen)} ({description}{resumed}) with {args.jobs} jobs",
        file=sys.stderr,
        flush=True,
    )
    done = len(earlier)
    # Begun afresh, or rewritten with what it held (a half-written last line dropped), so
    # that the verdicts appended next follow whole lines.
    lines = [header, *(result.to_json() for result in earlier)]
    unfinished = journal.with_name(f".{JOURNAL}.writing")
    unfinished.write_text(
        "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines), encoding="utf-8"
    )
    os.replace(unfinished, journal)
    writing = journal.open("a", encoding="utf-8")

    def progress(result: Judged) -> None:
        nonlocal done
        done += 1
        # Flushed line by line: an interrupted run keeps every verdict it reached.
        writing.write(json.dumps(result.to_json(), sort_keys=True) + "\n")
        writing.flush()
        by = f" by {result.killed_by}" if result.killed_by else ""
        print(
            f"[{done}/{len(chosen)}] {result.site.name}: {result.verdict.value}{by} "
            f"({result.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        results, reach = (
            judge_sites(
                root,
                remaining,
                jobs=args.jobs,
                timeout=args.timeout,
                out=args.out,
                every_test=args.every_test,
                progress=progress,
                earlier=earlier,
            )
            if chosen
            else ([], None)
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
        writing.close()
    record_in_session(session, results, reasons)
    return score_report(
        sites=sites,
        candidates=candidates,
        reasons=reasons,
        results=results,
        stale=stale,
        selection={
            "description": description,
            "sample": args.sample,
            "seed": args.seed if args.sample is not None else None,
            "shard": list(shard) if shard else None,
            "modules": modules,
            "tests": "every kernel test file" if args.every_test else "the tests that reach it",
            "reach_seconds": None if reach is None else round(reach.seconds, 1),
            "resumed": len(earlier),
        },
        context=context,
        wall_seconds=time.monotonic() - start,
    )
