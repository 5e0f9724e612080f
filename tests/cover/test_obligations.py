"""The obligation registry (docs/obligations.toml), the pytest plugin and the gate command.

The registry's counts are checked twice: against the enumeration written in the registry's
header, and, where ``../shared/spec/`` is present, against the numbered items and table rows of
the ADR texts themselves. The plugin and ``practice-loop gate`` are run in child processes on a
tiny registry and tiny test files, each case built to make one verdict happen.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from practice_loop.harness import obligation_gate
from practice_loop.harness.obligations import (
    ID_PATTERN,
    MATRIX_JSON,
    MATRIX_MARKDOWN,
    RegistryError,
    load_registry,
    parse_registry,
    summary_by_section,
)

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "docs" / "obligations.toml"
SPEC = ROOT.parent / "shared" / "spec"

# What we enumerated from each section (the registry header explains the conventions).
EXPECTED_COUNTS = {
    ("ADR-0226", "8"): 12,
    ("ADR-0226", "9"): 18,
    ("ADR-0226", "13"): 12,
    ("ADR-0227", "8"): 6,
    ("ADR-0227", "13"): 6,
    ("ADR-0228", "16"): 13,
    ("ADR-0228", "17"): 17 + 3,
    ("ADR-0231", "17"): 19,
    ("ADR-0231", "18"): 25 + 5,
    ("LOCAL-0001", ""): 6,
    ("LOCAL-0002", ""): 16,
    ("LOCAL-0003", ""): 19,  # the memo and compiled kinds went with docs/adr/0013
    ("LOCAL-0004", ""): 12,
    ("LOCAL-0005", ""): 9,
    ("LOCAL-0006", ""): 8,
    ("LOCAL-0007", ""): 10,
    ("LOCAL-0008", ""): 14,
    ("LOCAL-0012", ""): 8,  # the store, verification and the command line (issue 15)
    ("LOCAL-0013", ""): 5,  # one encoder, fields declared once, one call's trust (issue 16)
    ("LOCAL-0014", ""): 8,  # mutants prove the tests can fail (issue 17)
    ("LOCAL-0015", ""): 9,  # a kernel mutation score from cosmic-ray (issue 17)
}
# Sections whose items are numbered in the ADR: their numeric ids must be exactly 1..n.
NUMBERED = {
    ("ADR-0226", "8"): 12,
    ("ADR-0226", "9"): 18,
    ("ADR-0226", "13"): 12,
    ("ADR-0227", "13"): 6,
    ("ADR-0228", "16"): 13,
    ("ADR-0228", "17"): 17,
    ("ADR-0231", "17"): 19,
    ("ADR-0231", "18"): 25,
}
# Criteria about an ADR's own pull request: no test can show them (the registry says why).
WAIVED = {
    "ADR-0226/13.1",
    "ADR-0226/13.2",
    "ADR-0226/13.3",
    "ADR-0226/13.12",
    "ADR-0227/13.1",
    "ADR-0227/13.6",
}


@pytest.fixture(scope="module")
def registry():
    return load_registry(REGISTRY)


# ---------------------------------------------------------------------------------------------
# The registry


def test_registry_loads_with_unique_well_formed_ids(registry) -> None:
    """Issue 5: the registry loads; every id is unique, well formed and starts with its ADR."""
    ids = registry.ids
    assert len(ids) == len(set(ids)) == sum(EXPECTED_COUNTS.values())
    for obligation in registry.obligations:
        assert ID_PATTERN.fullmatch(obligation.id), obligation.id
        assert obligation.id.startswith(obligation.adr + "/")
        assert obligation.summary.endswith("."), obligation.id
        assert len(obligation.summary) <= 200, obligation.id


def test_counts_per_section_match_the_enumeration(registry) -> None:
    """Issue 5: each section holds exactly the obligations we enumerated from its ADR."""
    assert dict(summary_by_section(registry)) == EXPECTED_COUNTS


def test_numbered_sections_are_numbered_one_to_n(registry) -> None:
    """Issue 5: a numbered item is neither skipped nor repeated."""
    for (adr, section), count in NUMBERED.items():
        numbers = sorted(
            int(o.id.split(".", 1)[1])
            for o in registry.obligations
            if o.adr == adr and o.section == section and o.id.split(".", 1)[1].isdigit()
        )
        assert numbers == list(range(1, count + 1)), (adr, section)


def test_budget_table_rows_are_named_by_their_gate_reason(registry) -> None:
    """ADR-0227 §8: one obligation per row of the compute_budget.v1 table."""
    rows = {o.id for o in registry.obligations if o.adr == "ADR-0227" and o.section == "8"}
    assert rows == {
        "ADR-0227/8.non_eligible",
        "ADR-0227/8.eligible_missing_role",
        "ADR-0227/8.eligible_missing_relation",
        "ADR-0227/8.eligible_missing_proposal",
        "ADR-0227/8.eligible_target_unbound",
        "ADR-0227/8.eligible_unknown_code",
    }


def test_only_pull_request_criteria_are_waived(registry) -> None:
    """Issue 5: a waiver is reserved for criteria about an ADR's own pull request."""
    assert {o.id for o in registry.obligations if o.waiver is not None} == WAIVED


def test_local_sections_name_parts_of_their_record(registry) -> None:
    """docs/adr: every LOCAL obligation's section names a part of its record's Decision."""
    for obligation in registry.obligations:
        if not obligation.adr.startswith("LOCAL-"):
            continue
        number = obligation.adr.split("-")[1]
        (record,) = (ROOT / "docs" / "adr").glob(f"{number}-*.md")
        text = record.read_text(encoding="utf-8").lower().replace("`", "")
        assert obligation.section.startswith("Decision"), obligation.id
        part = obligation.section.split(",")[-1].split(":")[-1].strip().lower()
        assert part in text, (obligation.id, part)


def _section(text: str, start: str, end: str | None) -> str:
    lines = text.splitlines()
    first = lines.index(start)
    last = lines.index(end) if end is not None else len(lines)
    assert first < last, (start, end)
    return "\n".join(lines[first + 1 : last])


def _numbered(body: str) -> list[int]:
    return [int(m) for m in re.findall(r"^(\d+)\. ", body, flags=re.MULTILINE)]


def _table_rows(body: str) -> list[str]:
    rows = [line for line in body.splitlines() if line.startswith("|")]
    return [row for row in rows[2:]]  # header and separator


def _spec(name: str) -> str:
    matches = sorted(SPEC.glob(f"{name}-*.md"))
    if not matches:
        pytest.skip(f"the given ADRs are not at {SPEC}")
    return matches[0].read_text(encoding="utf-8")


def test_counts_match_the_adr_texts(registry) -> None:
    """Issue 5: the counts above are the ADRs' own numbered items and table rows."""
    counts = summary_by_section(registry)

    adr_0226 = _spec("ADR-0226")
    s8 = _section(adr_0226, "8. Authority boundaries", "Component\tMay decide\tMust not decide")
    assert _numbered(s8) == list(range(1, 13)) and counts["ADR-0226", "8"] == 12
    s9 = _section(
        adr_0226,
        "9. Determinism, replay, and failure semantics",
        "10. Preservation of CORE invariants",
    )
    same = re.findall(r"^• the same ", s9, flags=re.MULTILINE)
    fail_closed = re.search(r"(Malformed input,[^.]*?) must fail closed", s9)
    assert fail_closed is not None
    conditions = re.split(r",\s*(?:or\s+)?", fail_closed.group(1))
    # The seven "same" bullets, divergence, each fail-closed condition, no retry, new version.
    assert len(same) == 7 and len(conditions) == 8
    assert counts["ADR-0226", "9"] == len(same) + 1 + len(conditions) + 2
    s13 = _section(adr_0226, "13. Acceptance criteria", None)
    assert _numbered(s13) == list(range(1, 13)) and counts["ADR-0226", "13"] == 12

    adr_0227 = _spec("ADR-0227")
    table = _table_rows(_section(adr_0227, "## 8. Budget Policy Table (v1)", "### Constraints:"))
    assert len(table) == counts["ADR-0227", "8"] == 6
    codes = {m for row in table for m in re.findall(r"`(eligible_[a-z_]+)`", row)}
    assert {f"ADR-0227/8.{code}" for code in codes} <= set(registry.ids)
    s13 = _section(adr_0227, "## 13. Acceptance Criteria", None)
    assert _numbered(s13) == list(range(1, 7)) and counts["ADR-0227", "13"] == 6

    adr_0228 = _spec("ADR-0228")
    s16 = _section(
        adr_0228,
        "## 16. Failure modes and fail-closed behavior",
        "## 17. Test obligations for future implementation PR",
    )
    assert (
        len(_table_rows(s16)) == 13 == sum(1 for i in registry.ids if i.startswith("ADR-0228/16."))
    )
    s17 = _section(
        adr_0228,
        "## 17. Test obligations for future implementation PR",
        "## 18. Authorized next PR",
    )
    assert _numbered(s17) == list(range(1, 18))
    assert counts["ADR-0228", "17"] == 17 + 3  # plus the three requirements after the list

    adr_0231 = _spec("ADR-0231")
    s17 = _section(adr_0231, "17. Failure modes and fail-closed behavior", "No failure may become:")
    rows = [line for line in s17.splitlines() if line.endswith("\tCandidateOperatorRefusal")]
    assert len(rows) == counts["ADR-0231", "17"] == 19
    s18 = _section(
        adr_0231, "18. Test obligations for future implementation PR", "19. Authorized next PR"
    )
    assert _numbered(s18) == list(range(1, 26))
    controls = s18.split("Additional required controls:", 1)[1]
    assert len(re.findall(r"^• ", controls, flags=re.MULTILINE)) == 5
    assert counts["ADR-0231", "18"] == 25 + 5


GOOD_ENTRY = """\
schema = "obligations.v1"

[[obligation]]
id = "ADR-0001/1.1"
adr = "ADR-0001"
section = "1"
summary = "First."
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (GOOD_ENTRY + 'colour = "red"\n', "line 3 (ADR-0001/1.1): unknown key 'colour'"),
        (GOOD_ENTRY + "\n" + GOOD_ENTRY.split("\n", 2)[2], "line 9: duplicate id 'ADR-0001/1.1'"),
        (GOOD_ENTRY.replace("ADR-0001/1.1", "ADR-0001/one"), "malformed id 'ADR-0001/one'"),
        (GOOD_ENTRY.replace("ADR-0001/1.1", "adr-0001/1.1"), "malformed id 'adr-0001/1.1'"),
        (GOOD_ENTRY.replace("ADR-0001/1.1", "ADR-0001/1.Big"), "malformed id 'ADR-0001/1.Big'"),
        (GOOD_ENTRY.replace('summary = "First."\n', ""), "missing field 'summary'"),
        (GOOD_ENTRY.replace('section = "1"', 'section = "2"'), "names section 1"),
        (GOOD_ENTRY.replace('adr = "ADR-0001"', 'adr = "ADR-0002"'), "does not start with"),
        (GOOD_ENTRY.replace('"First."', "3"), "summary must be a string"),
        (GOOD_ENTRY.replace('"First."', '" "'), "summary must be one non-empty line"),
        (GOOD_ENTRY.replace("obligations.v1", "obligations.v2"), "schema must be"),
        (GOOD_ENTRY + "[other]\nx = 1\n", "unknown top-level key 'other'"),
        ('schema = "obligations.v1"\n', "no [[obligation]] entries"),
        (GOOD_ENTRY + "[[obligation]\n", "not TOML"),
    ],
)
def test_registry_defects_are_named(text: str, expected: str) -> None:
    """Issue 5: unknown keys, duplicates, malformed ids, missing fields: a clear error."""
    with pytest.raises(RegistryError) as raised:
        parse_registry(text, source="reg.toml")
    assert expected in str(raised.value)
    assert "reg.toml" in str(raised.value)


def test_the_good_entry_parses() -> None:
    """Control for the defects above: the unaltered entry is a registry of one."""
    (obligation,) = parse_registry(GOOD_ENTRY).obligations
    assert (obligation.id, obligation.line, obligation.waiver) == ("ADR-0001/1.1", 3, None)


# ---------------------------------------------------------------------------------------------
# The plugin and the gate, in child processes on a tiny registry

TINY_REGISTRY = """\
schema = "obligations.v1"

[[obligation]]
id = "ADR-0001/1.1"
adr = "ADR-0001"
section = "1"
summary = "First."

[[obligation]]
id = "ADR-0001/1.2"
adr = "ADR-0001"
section = "1"
summary = "Second."

[[obligation]]
id = "LOCAL-0001/rule"
adr = "LOCAL-0001"
section = "Decision"
summary = "Ours."

[[obligation]]
id = "ADR-0001/2.1"
adr = "ADR-0001"
section = "2"
summary = "About the pull request."
waiver = "No test can show it."
"""


def _tests(*, second: str = "assert True", rule: str = "", extra: str = "") -> str:
    """A tiny test module: ADR-0001/1.1 twice, ADR-0001/1.2 with ``second`` as its body."""
    blocks = [
        "import pytest",
        '@pytest.mark.obligation("ADR-0001/1.1")\n'
        '@pytest.mark.parametrize("n", [1, 2])\n'
        "def test_first(n):\n"
        "    assert n in (1, 2)",
        f'@pytest.mark.obligation("ADR-0001/1.2")\ndef test_second():\n    {second}',
        "def test_names_nothing():\n    assert True",
        rule,
        extra,
    ]
    return "\n\n\n".join(block for block in blocks if block) + "\n"


COVERING_RULE = '@pytest.mark.obligation("LOCAL-0001/rule")\ndef test_rule():\n    assert True'


def _project(tmp_path: Path, tests: str, registry: str = TINY_REGISTRY) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers\n")
    (tmp_path / "reg.toml").write_text(registry)
    (tmp_path / "test_tiny.py").write_text(tests)
    return tmp_path


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(project / "pytest.ini"),
        "--rootdir",
        str(project),
        "-p",
        "no:cacheprovider",
        "-p",
        "practice_loop.harness.gate_plugin",
        "--obligation-registry",
        str(project / "reg.toml"),
        *args,
        str(project / "test_tiny.py"),
    ]
    return subprocess.run(
        command, cwd=project, env=_env(), capture_output=True, text=True, timeout=120
    )


def _matrix(directory: Path) -> dict:
    return json.loads((directory / MATRIX_JSON).read_text(encoding="utf-8"))


def _status(matrix: dict) -> dict[str, str]:
    return {o["id"]: o["status"] for o in matrix["obligations"]}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_unknown_id_is_a_collection_usage_error(tmp_path: Path, workers: list[str]) -> None:
    """Issue 5: a marker naming an id the registry lacks stops the run, naming test and id."""
    extra = '@pytest.mark.obligation("ADR-0001/1.9")\ndef test_typo():\n    assert True'
    run = _pytest(_project(tmp_path, _tests(rule=COVERING_RULE, extra=extra)), *workers)
    assert run.returncode == 4, run.stdout + run.stderr
    output = run.stdout + run.stderr
    assert "test_tiny.py::test_typo: unknown obligation 'ADR-0001/1.9'" in output
    assert "passed" not in run.stdout  # nothing ran


def test_a_waived_obligation_cannot_be_named(tmp_path: Path) -> None:
    """Issue 5: a waived obligation has no test by definition; naming one is a usage error."""
    extra = '@pytest.mark.obligation("ADR-0001/2.1")\ndef test_waived():\n    assert True'
    run = _pytest(_project(tmp_path, _tests(rule=COVERING_RULE, extra=extra)))
    assert run.returncode == 4
    assert "test_tiny.py::test_waived: obligation 'ADR-0001/2.1' is waived" in run.stderr


def test_gate_passes_when_every_obligation_has_passing_tests(tmp_path: Path) -> None:
    """Issue 5: all covered and passing, the session passes and the matrix says so."""
    project = _project(tmp_path, _tests(rule=COVERING_RULE))
    out = tmp_path / "out"
    run = _pytest(project, "--obligation-gate", f"--obligation-matrix={out}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "obligation gate (all ADRs): PASSED: 3 of 3" in run.stdout
    matrix = _matrix(out)
    assert matrix["gate"]["passed"] is True
    # Issue 18: the matrix says which code and tools made it (the project is no git checkout).
    assert matrix["context"]["commit"] == "unknown"
    assert matrix["context"]["pytest"] == importlib.metadata.version("pytest")
    assert f"pytest `{matrix['context']['pytest']}`" in (out / "matrix.md").read_text()
    assert _status(matrix) == {
        "ADR-0001/1.1": "covered",
        "ADR-0001/1.2": "covered",
        "LOCAL-0001/rule": "covered",
        "ADR-0001/2.1": "waived",
    }
    tests = {t["nodeid"]: t for t in matrix["tests"]}
    assert tests["test_tiny.py::test_first[1]"]["obligations"] == ["ADR-0001/1.1"]
    assert tests["test_tiny.py::test_names_nothing"] == {
        "nodeid": "test_tiny.py::test_names_nothing",
        "outcome": "passed",
        "obligations": [],
    }
    markdown = (out / MATRIX_MARKDOWN).read_text(encoding="utf-8")
    assert "## Uncovered: no test names these (0)" in markdown
    assert "`test_tiny.py::test_first` (2 passed)" in markdown


@pytest.mark.parametrize(
    "body, outcome",
    [
        ("assert False", "failed"),
        ('pytest.skip("not here")', "skipped"),
        ('pytest.xfail("known")', "xfailed"),
    ],
)
def test_gate_fails_naming_an_obligation_whose_test_did_not_pass(
    tmp_path: Path, body: str, outcome: str
) -> None:
    """Issue 5: a failed, skipped or xfailed test proves nothing; the gate names its obligation."""
    project = _project(tmp_path, _tests(second=body, rule=COVERING_RULE))
    out = tmp_path / "out"
    run = _pytest(project, "--obligation-gate", f"--obligation-matrix={out}")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"ADR-0001/1.2: test_tiny.py::test_second ({outcome})" in run.stdout
    matrix = _matrix(out)
    assert _status(matrix)["ADR-0001/1.2"] == "failing"
    assert [o["id"] for o in matrix["gate"]["offending"]] == ["ADR-0001/1.2"]
    markdown = (out / MATRIX_MARKDOWN).read_text(encoding="utf-8")
    assert f"| ADR-0001/1.2 | `test_tiny.py::test_second` ({outcome}) |" in markdown


def test_a_failing_fixture_is_an_error_for_its_obligation(tmp_path: Path) -> None:
    """Issue 5: an error in setup counts against the obligation like a failure."""
    extra = textwrap.dedent(
        """\
        @pytest.fixture
        def broken():
            raise RuntimeError("setup")

        @pytest.mark.obligation("LOCAL-0001/rule")
        def test_rule(broken):
            assert True
        """
    )
    out = tmp_path / "out"
    run = _pytest(
        _project(tmp_path, _tests(extra=extra)), "--obligation-gate", f"--obligation-matrix={out}"
    )
    assert run.returncode == 1
    assert "LOCAL-0001/rule: test_tiny.py::test_rule (error)" in run.stdout
    assert _status(_matrix(out))["LOCAL-0001/rule"] == "failing"


def test_gate_fails_naming_an_obligation_without_a_test(tmp_path: Path) -> None:
    """Issue 5: an obligation no test names fails the gate, listed first in the matrix."""
    out = tmp_path / "out"
    run = _pytest(_project(tmp_path, _tests()), "--obligation-gate", f"--obligation-matrix={out}")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "LOCAL-0001/rule: no test names it" in run.stdout
    assert "2 of 3 gated obligations" in run.stdout
    markdown = (out / MATRIX_MARKDOWN).read_text(encoding="utf-8")
    uncovered = markdown.index("## Uncovered: no test names these (1)")
    assert markdown.index("| LOCAL-0001/rule | Decision | Ours. |") > uncovered
    assert uncovered < markdown.index("## ADR-0001")


def test_without_the_gate_option_the_matrix_is_written_but_not_enforced(tmp_path: Path) -> None:
    """Issue 5: --obligation-matrix alone reports; only --obligation-gate fails the session."""
    out = tmp_path / "out"
    run = _pytest(_project(tmp_path, _tests()), f"--obligation-matrix={out}")
    assert run.returncode == 0, run.stdout + run.stderr
    matrix = _matrix(out)
    assert matrix["gate"] == {**matrix["gate"], "enforced": False, "passed": False}


def test_scope_limits_the_gate_to_one_adr(tmp_path: Path) -> None:
    """Issue 5: --obligation-adr gates only that ADR's obligations."""
    project = _project(tmp_path, _tests())  # LOCAL-0001/rule has no test
    assert _pytest(project, "--obligation-gate", "--obligation-adr=ADR-0001").returncode == 0
    run = _pytest(project, "--obligation-gate", "--obligation-adr=LOCAL-0001")
    assert run.returncode == 1 and "LOCAL-0001/rule: no test names it" in run.stdout
    run = _pytest(project, "--obligation-gate", "--obligation-adr=ADR-0009")
    assert run.returncode == 4 and "--obligation-adr ADR-0009" in run.stderr


def test_failures_outside_the_scope_and_untagged_failures(tmp_path: Path) -> None:
    """Issue 5: a failing test that names nothing fails any gate; a failing test naming only
    another ADR's obligation does not fail a gate scoped elsewhere (pytest still fails)."""
    extra = "def test_broken():\n    assert False"
    project = _project(tmp_path, _tests(rule=COVERING_RULE, extra=extra))
    run = _pytest(project, "--obligation-gate", "--obligation-adr=LOCAL-0001")
    assert run.returncode == 1
    assert "obligation gate (LOCAL-0001): FAILED" in run.stdout
    assert "test_tiny.py::test_broken: failed (names no obligation)" in run.stdout
    project = _project(tmp_path, _tests(second="assert False", rule=COVERING_RULE))
    run = _pytest(project, "--obligation-gate", "--obligation-adr=LOCAL-0001")
    assert run.returncode == 1  # test_second failed
    assert "obligation gate (LOCAL-0001): PASSED: 1 of 1" in run.stdout


def test_gate_results_arrive_from_xdist_workers(tmp_path: Path) -> None:
    """Issue 5: under pytest-xdist the controller records every worker's outcomes and ids."""
    project = _project(tmp_path, _tests(second="assert False", rule=COVERING_RULE))
    out = tmp_path / "out"
    run = _pytest(project, "-n", "2", "--obligation-gate", f"--obligation-matrix={out}")
    assert run.returncode == 1, run.stdout + run.stderr
    matrix = _matrix(out)
    outcomes = {t["nodeid"]: (t["outcome"], t["obligations"]) for t in matrix["tests"]}
    assert outcomes == {
        "test_tiny.py::test_first[1]": ("passed", ["ADR-0001/1.1"]),
        "test_tiny.py::test_first[2]": ("passed", ["ADR-0001/1.1"]),
        "test_tiny.py::test_second": ("failed", ["ADR-0001/1.2"]),
        "test_tiny.py::test_rule": ("passed", ["LOCAL-0001/rule"]),
        "test_tiny.py::test_names_nothing": ("passed", []),
    }
    assert _status(matrix)["ADR-0001/1.2"] == "failing"


def test_a_broken_registry_stops_pytest(tmp_path: Path) -> None:
    """Issue 5: the plugin refuses to run against a registry it cannot validate."""
    broken = TINY_REGISTRY + "\n" + GOOD_ENTRY.split("\n", 2)[2]  # ADR-0001/1.1 again
    run = _pytest(_project(tmp_path, _tests(), registry=broken))
    assert run.returncode == 4
    assert "duplicate id 'ADR-0001/1.1' (first at line 3)" in run.stderr


# ---------------------------------------------------------------------------------------------
# practice-loop gate


def _gate(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="practice-loop")
    obligation_gate.add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["gate", *argv])
    return args.handler(args)


def test_gate_command_runs_the_suite_and_reapplies_its_results(tmp_path: Path, capsys) -> None:
    """Issue 5: `gate` exits 1 naming the uncovered obligation, 0 once it is covered, and
    --from-json re-applies the gate to a finished run against the current registry."""
    project = _project(tmp_path, _tests())
    out, reg = tmp_path / "report", str(project / "reg.toml")
    tests = str(project / "test_tiny.py")
    assert _gate("--registry", reg, "--out", str(out), "-j", "0", tests) == 1
    printed = capsys.readouterr().out
    assert "LOCAL-0001/rule: no test names it" in printed
    assert (out / MATRIX_MARKDOWN).is_file()
    results = tmp_path / "results.json"
    results.write_bytes((out / MATRIX_JSON).read_bytes())

    # The same results, gated on one ADR only, pass.
    assert (
        _gate(
            "--registry", reg, "--out", str(out), "--from-json", str(results), "--adr", "ADR-0001"
        )
        == 0
    )
    assert _matrix(out)["scope"] == "ADR-0001"

    # A registry that has since dropped an obligation a test names: the gate fails on it.
    smaller = TINY_REGISTRY.split('[[obligation]]\nid = "ADR-0001/1.2"')[0].rstrip() + "\n"
    smaller += TINY_REGISTRY.split('summary = "Second."\n', 1)[1]
    (tmp_path / "smaller.toml").write_text(smaller)
    assert (
        _gate(
            "--registry",
            str(tmp_path / "smaller.toml"),
            "--out",
            str(out),
            "--from-json",
            str(results),
            "--adr",
            "ADR-0001",
        )
        == 1
    )
    assert "names 'ADR-0001/1.2', which the registry does not hold" in capsys.readouterr().out

    (project / "test_tiny.py").write_text(_tests(rule=COVERING_RULE))
    assert _gate("--registry", reg, "--out", str(out), "-j", "0", tests) == 0
    assert _matrix(out)["gate"]["passed"] is True


def test_gate_command_usage_errors(tmp_path: Path, capsys) -> None:
    """Issue 5: a bad registry, ADR, results file or argument mix exits 2."""
    project = _project(tmp_path, _tests())
    reg = str(project / "reg.toml")
    not_results = tmp_path / "other.json"
    not_results.write_text('{"schema": "something.else"}')
    assert _gate("--registry", str(tmp_path / "missing.toml")) == 2
    assert _gate("--registry", reg, "--adr", "ADR-0009") == 2
    assert _gate("--registry", reg, "--from-json", str(not_results)) == 2
    assert _gate("--registry", reg, "--from-json", str(tmp_path / "absent.json")) == 2
    assert _gate("--registry", reg, "--from-json", str(not_results), "tests") == 2
    assert _gate("--registry", reg, "--jobs", "many") == 2
    errors = capsys.readouterr().err
    assert "unknown ADR 'ADR-0009'" in errors
    assert "not a results file" in errors
