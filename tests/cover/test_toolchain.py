"""The toolchain and the packaging (issue 18): what CI installs is pinned inside the ranges the
project declares, the nightly workflow is valid for GitHub and keeps its own limits, and the
package says what it is and that it is not for publishing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from ci_support import absent

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
CONSTRAINTS = ROOT / "constraints" / "ci.txt"
FLOOR = ROOT / "constraints" / "floor.txt"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
NIGHTLY = ROOT / ".github" / "workflows" / "nightly.yml"


def _pins(path: Path = CONSTRAINTS) -> dict[str, str]:
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, separator, version = line.partition("==")
            assert separator and version.strip(), f"{path.name}: not a pin: {line!r}"
            pins[canonicalize_name(name)] = version.strip()
    return pins


# --------------------------------------------------------------------------------------------
# The pinned toolchain


def test_every_package_of_the_test_extra_is_pinned_inside_its_declared_range():
    """constraints/ci.txt pins what the `test` extra resolves to; a pin outside a declared
    range (or a requirement without a pin) means the file was not regenerated."""
    pins = _pins()
    for text in PYPROJECT["project"]["optional-dependencies"]["test"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is in the test extra but not pinned"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{requirement.name}=={pins[name]} is outside the declared {requirement.specifier}"
        )


def test_the_floor_pins_each_package_of_the_test_extra_at_its_declared_lower_bound():
    """constraints/floor.txt is the floor a fresh venv is tested on: exactly the packages of
    the `test` extra, each at the lower bound its range declares, so raising a floor in
    pyproject.toml without the floor file (or the other way round) fails here."""
    floor = _pins(FLOOR)
    declared = {}
    for text in PYPROJECT["project"]["optional-dependencies"]["test"]:
        requirement = Requirement(text)
        (lower,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        declared[canonicalize_name(requirement.name)] = lower
    assert sorted(floor) == sorted(declared)
    for name, lower in declared.items():
        assert Version(floor[name]) == Version(lower), (name, floor[name], lower)


def test_ci_and_every_nightly_job_but_the_canary_and_the_floor_install_the_pinned_toolchain():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[test]' -c constraints/ci.txt" in ci
    installs = [line for line in NIGHTLY.read_text(encoding="utf-8").splitlines()
                if "pip install" in line and ".[test]" in line]  # fmt: skip
    assert len(installs) >= 6, installs  # the campaign, shards, sum, canary, floor, sdist
    pinned = [line for line in installs if "-c constraints/ci.txt" in line]
    floor = [line for line in installs if "-c constraints/floor.txt" in line]
    newest = [line for line in installs if "--upgrade" in line]
    assert len(floor) == len(newest) == 1 and len(pinned) == len(installs) - 2, installs
    assert "-c " not in newest[0]  # the canary: the newest releases, on purpose


def test_the_jobs_that_run_the_default_suite_have_what_it_drives():
    """The default suite drives Debian's Chromium and a redis-server, and under CI=true (as
    GitHub sets it) a missing one fails: every nightly job that runs it installs both."""
    running = []
    for name, job in _nightly()["jobs"].items():
        runs = [str(step.get("run", "")) for step in job["steps"]]
        if not any(re.search(r"python -m pytest -n auto\s*$", run) for run in runs):
            continue
        running.append(name)
        assert job.get("container", "").startswith("python:3.11-bookworm"), name
        assert any("apt-get install" in run and "chromium redis-server" in run for run in runs), (
            name
        )
    assert sorted(running) == ["canary", "floor", "sdist"]


# --------------------------------------------------------------------------------------------
# The nightly workflow


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_each_workflow_is_valid_against_githubs_schema(workflow):
    """GitHub's workflow schema, as check-jsonschema vendors it (no network)."""
    if shutil.which("check-jsonschema") is None:
        absent("check-jsonschema is not installed (pip install 'practice-loop[test]')")
    checked = subprocess.run(
        ["check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_each_workflow_passes_actionlint_where_it_is_installed(workflow):
    """actionlint also reads the shell in `run:` steps and the expressions; it is not on PyPI,
    so it is used where a developer has it and skipped, by name, elsewhere (CI too)."""
    if shutil.which("actionlint") is None:
        pytest.skip("actionlint is not installed (https://github.com/rhysd/actionlint)")
    checked = subprocess.run(
        ["actionlint", str(workflow)], capture_output=True, text=True, timeout=120
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _nightly() -> dict:
    yaml = pytest.importorskip("ruamel.yaml", reason="comes with check-jsonschema")
    return yaml.YAML(typ="safe").load(NIGHTLY.read_text(encoding="utf-8"))


def test_the_campaign_budget_is_a_number_checked_against_the_jobs_timeout():
    workflow = _nightly()
    minutes = workflow["on"]["workflow_dispatch"]["inputs"]["minutes"]
    assert minutes["type"] == "number"
    fuzz = workflow["jobs"]["fuzz"]
    check = fuzz["steps"][0]
    assert check["name"] == "Check the budget"
    bound = int(re.search(r"MINUTES > (\d+)", check["run"]).group(1))
    assert minutes["default"] <= bound < fuzz["timeout-minutes"]
    script = check["run"]
    for value, accepted in [("60", True), ("70", True), ("71", False), ("0", False),
                            ("1e3", False), ("", False), ("5; rm -rf /", False)]:  # fmt: skip
        run = subprocess.run(
            ["bash", "-c", script], env={"MINUTES": value, "PATH": os.environ["PATH"]},
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert (run.returncode == 0) is accepted, (value, run.stdout)


def test_the_example_database_is_cached_per_hypothesis_version_and_run_attempt():
    """A database is read only by the Hypothesis release that wrote it, and a re-run of a
    night (a new attempt) saves under a key of its own instead of skipping the save."""
    steps = _nightly()["jobs"]["fuzz"]["steps"]
    caches = [step for step in steps if str(step.get("uses", "")).startswith("actions/cache/")]
    assert len(caches) == 2
    for step in caches:
        key = step["with"]["key"]
        assert "steps.install.outputs.hypothesis" in key and "github.run_attempt" in key, key
    restore = caches[0]["with"]["restore-keys"]
    assert restore.startswith("fuzz-example-database-${{ steps.install.outputs.hypothesis }}-")


def test_one_night_runs_at_a_time_and_crosshair_is_installed_once():
    workflow = _nightly()
    assert workflow["concurrency"]["cancel-in-progress"] is False
    install = next(s for s in workflow["jobs"]["fuzz"]["steps"] if s.get("name") == "Install")
    assert "crosshair" not in install["run"]  # the test extra brings it


# --------------------------------------------------------------------------------------------
# Packaging


def test_the_licence_is_an_spdx_expression_with_its_file_and_the_package_is_never_uploaded():
    project = PYPROJECT["project"]
    assert re.fullmatch(r"LicenseRef-[A-Za-z0-9.\-]+", project["license"])
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), pattern
    assert "Private :: Do Not Upload" in project["classifiers"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639
    backend = [Requirement(text) for text in PYPROJECT["build-system"]["requires"]]
    setuptools = next(r for r in backend if r.name == "setuptools")
    assert not setuptools.specifier.contains("76.9") and setuptools.specifier.contains("77.0")



# --------------------------------------------------------------------------------------------
# What every report says it was made with


def test_a_reports_context_names_the_commit_and_every_tool(tmp_path, monkeypatch):
    from practice_loop.harness.report_context import context_line, run_context

    here = run_context(ROOT, "no-such-distribution")
    if (ROOT / ".git").exists():  # an unpacked sdist has no commit to name
        assert re.fullmatch(r"[0-9a-f]{40}(\+uncommitted)?", here["commit"]), here["commit"]
    assert list(here)[:5] == ["commit", "python", "practice-loop", "hypothesis", "pytest"]
    assert here["no-such-distribution"] == "not installed"
    assert run_context(tmp_path)["commit"] == "unknown"  # not a checkout
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all: still a context, never a crash
    assert run_context(ROOT)["commit"] == "unknown"
    assert context_line({"commit": "abc", "python": "3.11.7"}) == "commit `abc`, python `3.11.7`"
