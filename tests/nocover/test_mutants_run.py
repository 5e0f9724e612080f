"""``practice-loop mutants`` for real (docs/adr/0014, issue 17): copies of this checkout, pytest
runs under each mutant, the kill matrix, and a working tree left exactly as it was."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CATALOGUE = """schema = "mutants.v1"

[[mutant]]
id = "budget-grants-parallel-search"
obligations = ["ADR-0227/13.4"]
file = "src/practice_loop/kernel/budget.py"
find = "limits.max_candidates < 1 or limits.max_steps < 1 or limits.max_parallelism != 1"
replace = "limits.max_candidates < 1 or limits.max_steps < 1 or limits.max_parallelism < 1"
summary = "A budget row may grant parallel search."

[[mutant]]
id = "an-edit-site-that-is-gone"
obligations = ["ADR-0227/13.4"]
file = "src/practice_loop/kernel/budget.py"
find = "this text is not in budget.py"
replace = "nor is this"
summary = "Stale: the code moved and the catalogue did not."

[[mutant]]
id = "a-syntax-error"
obligations = ["ADR-0227/13.4"]
file = "src/practice_loop/kernel/budget.py"
find = "limits.max_candidates < 1 or limits.max_steps < 1 or limits.max_parallelism != 1"
replace = "limits.max_candidates < 1 or ("
summary = "Invalid: no semantic violation, a file that does not compile."
"""


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def checkout():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the project")


def test_a_run_judges_each_mutant_and_leaves_the_working_tree_alone(checkout, tmp_path):
    """The killed mutant is killed by a test naming its obligation; the stale and the invalid
    one fail the run (exit 1); the kill matrix says so; the checkout is byte for byte as
    before (the mutants ran in copies)."""
    catalogue = tmp_path / "catalogue.toml"
    catalogue.write_text(CATALOGUE, encoding="utf-8")
    budget = (ROOT / "src/practice_loop/kernel/budget.py").read_bytes()
    status = _git("status", "--porcelain", "--untracked-files=no")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "practice_loop",
            "mutants",
            "--catalogue",
            str(catalogue),
            "--out",
            str(tmp_path / "out"),
            "-j",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    matrix = json.loads((tmp_path / "out" / "kill-matrix.json").read_text(encoding="utf-8"))
    by_id = {entry["id"]: entry for entry in matrix["mutants"]}
    killed = by_id["budget-grants-parallel-search"]
    assert (killed["status"], killed["phase"]) == ("killed", "obligation_tests")
    assert killed["killed_by"].startswith("tests/cover/test_budget.py::")
    assert by_id["an-edit-site-that-is-gone"]["status"] == "stale"
    assert by_id["a-syntax-error"]["status"] == "invalid"
    assert (matrix["totals"]["killed"], matrix["totals"]["stale"], matrix["totals"]["invalid"]) == (
        1,
        1,
        1,
    )
    assert "mutants: FAILED: 1 killed" in done.stdout
    assert (
        (tmp_path / "out" / "kill-matrix.md")
        .read_text(encoding="utf-8")
        .startswith("# Kill matrix")
    )
    assert (ROOT / "src/practice_loop/kernel/budget.py").read_bytes() == budget
    assert _git("status", "--porcelain", "--untracked-files=no") == status
    assert not list(ROOT.glob(".mutant-*"))


def test_a_copy_the_tests_do_not_import_is_refused(tmp_path):
    """A mutant applied where the tests do not look would survive everything: the plugin
    refuses a session whose ``practice_loop`` is not the copy's (pytest's usage error)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "practice_loop.harness.mutant_plugin",
            f"--mutant-root={tmp_path}",
            "--collect-only",
            "-q",
            "tests/cover/test_budget.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": ""},
        timeout=300,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"not from the copy {tmp_path}" in done.stderr


# An equivalent edit: it survives its obligation's tests, so the run goes on to the whole suite.
_LONG = """schema = "mutants.v1"

[[mutant]]
id = "an-equivalent-edit"
obligations = ["ADR-0227/13.4"]
file = "src/practice_loop/kernel/budget.py"
find = "limits.max_candidates < 1 or limits.max_steps < 1 or limits.max_parallelism != 1"
replace = "limits.max_candidates <= 0 or limits.max_steps < 1 or limits.max_parallelism != 1"
summary = "The same bound written another way."
"""


@pytest.mark.obligation("LOCAL-0014/copies_only")
def test_a_terminated_run_leaves_no_test_run_and_no_copy_behind(checkout, tmp_path):
    """A cancelled CI job sends SIGTERM: the run ends with 130, every pytest it started has
    ended (they run in sessions of their own, out of reach of the terminal), its copies are
    gone, and no kill matrix claims anything."""
    catalogue = tmp_path / "catalogue.toml"
    catalogue.write_text(_LONG, encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "kill-matrix.json").write_text("{}", encoding="utf-8")  # an older run's
    run = subprocess.Popen(
        [sys.executable, "-m", "practice_loop", "mutants", "--catalogue", str(catalogue)]
        + ["--out", str(tmp_path / "out"), "-j", "1"],
        cwd=ROOT,
        env=os.environ | {"TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Wait until the suite is collected and the mutant is being judged: a run the worker
    # threads started, not the main thread.
    deadline = time.monotonic() + 300
    while not list(scratch.glob("*/worker-0/.mutant-collect.json")):
        assert time.monotonic() < deadline, "the run never collected the suite"
        time.sleep(0.5)
    time.sleep(3)
    assert _running_in(scratch), "nothing runs in the copies"
    run.send_signal(signal.SIGTERM)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130, stderr
    assert "interrupted; no kill matrix written" in stderr
    assert not _running_in(scratch)
    assert list(scratch.iterdir()) == []
    assert not (tmp_path / "out" / "kill-matrix.json").exists()


def _running_in(folder: Path) -> list[int]:
    """Processes working under ``folder`` (the copies are made there, and every test run and
    warm pytest works in one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd.is_relative_to(folder):
                found.append(int(entry.name))
    return found
