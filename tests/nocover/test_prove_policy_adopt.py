"""``practice-loop prove-policy FILE --adopt PATCH`` (issue 21, docs/proving-policy-versions.md
"Adopting a proven set").

Each shipped valid example is adopted, its patch applied with ``git apply`` to a fresh clone
of HEAD, and a fast subset of the suite run there in a child interpreter on that tree's
``src``: the golden vectors (``tests/cover/test_vectors.py``) and the loop
(``tests/cover/test_loop.py``). The same file proved in the patched tree is the version in
force, with no differences. Slow (a clone, a patch and a child pytest per kind), hence here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from practice_loop.harness import policy_adopt
from practice_loop.harness.catalogue.forging import next_unregistered_version
from practice_loop.harness.policy_adopt import (
    AdoptError,
    AdoptReason,
    adopted_sources,
    plan_adoption,
)
from practice_loop.harness.policy_file import load_policy_file
from practice_loop.harness.policy_set import PolicySet
from practice_loop.harness.prove_policy import main
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SETS,
    COMPUTE_BUDGET_IN_FORCE,
    SEARCH_GATE_IN_FORCE,
)
from practice_loop.kernel.budget import BUDGET_POLICIES
from practice_loop.kernel.gate import GATE_POLICIES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
FAST = ("--examples", "5", "--crosshair-seconds", "0")
# The fast subset run in the patched tree: every golden vector, and the loop end to end.
SUBSET = ("tests/cover/test_vectors.py", "tests/cover/test_loop.py")
VALID = ("candidate_operators.v2.json", "compute_budget.v2.json", "search_gate.v2.json")
REGISTRIES = {
    "compute_budget": BUDGET_POLICIES,
    "search_gate": GATE_POLICIES,
    "candidate_operators": CANDIDATE_OPERATOR_SETS,
}
NEXT_OPERATOR_SET = next_unregistered_version("candidate_operators", CANDIDATE_OPERATOR_SETS)


def _as_next_version(example: str, directory: Path, *, repin: bool = True) -> Path:
    """The shipped example under the next free version of its kind (an operator file's pins
    moved to the versions in force, unless ``repin`` is false). At HEAD this is the shipped
    file itself; in a tree that has adopted it already, the same table as the next version,
    so that the suite also passes there."""
    document = json.loads((EXAMPLES / example).read_text("utf-8"))
    kind = document["policy"]
    document["version"] = next_unregistered_version(kind, REGISTRIES[kind])
    if kind == "candidate_operators" and repin:
        for row in document["operators"]:
            row["policy_versions"]["compute_budget"] = COMPUTE_BUDGET_IN_FORCE.version
            row["policy_versions"]["search_gate"] = SEARCH_GATE_IN_FORCE.version
    path = directory / f"{document['version']}.json"
    path.write_text(json.dumps(document, indent=2), "utf-8")
    return path


def _in(tree: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree / "strategies")]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    environment.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, *args],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _fresh_clone(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(tree)], check=True)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", head], check=True)
    return tree


@pytest.mark.parametrize("example", VALID)
def test_a_proven_example_is_adopted_by_a_patch_that_applies_and_passes(
    example: str, tmp_path: Path
) -> None:
    """ADR-0227 §6, ADR-0231 §10; docs/adr/0009: the patch registers the new version, puts
    it in force (with a new operator set when a pin moves) and moves the vectors with it;
    applied to HEAD, the vectors and the loop pass, and the file is then the version in
    force with no differences."""
    patch = tmp_path / "adopt.patch"
    candidate = _as_next_version(example, tmp_path)
    status = main(["prove-policy", str(candidate), *FAST, "--out", str(tmp_path / "r")]
                  + ["--adopt", str(patch)])  # fmt: skip
    assert status == 0
    text = patch.read_text("utf-8")
    version = json.loads(candidate.read_text("utf-8"))["version"]
    for registered in {version, NEXT_OPERATOR_SET}:
        assert f'"{registered}"' in text, f"{registered} is not registered by the patch"
    assert "src/practice_loop/data/vectors/" in text, "the golden vectors were not regenerated"

    tree = _fresh_clone(tmp_path)
    for check in (["--check"], []):
        applied = subprocess.run(
            ["git", "apply", *check, str(patch)], cwd=tree, capture_output=True, text=True
        )
        assert applied.returncode == 0, applied.stderr
    ran = _in(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *SUBSET)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]

    report = tmp_path / "after"
    proved = _in(tree, "-m", "practice_loop", "prove-policy", str(candidate),
                 *FAST, "--out", str(report))  # fmt: skip
    assert proved.returncode == 0, proved.stdout[-4000:] + proved.stderr[-2000:]
    proof = json.loads((report / "proof.json").read_text("utf-8"))["candidates"][0]
    in_force = proof["comparisons"][0]
    assert in_force["version"] == proof["version"] == version, "the candidate is not in force"
    assert in_force["differences"] == []


def test_a_set_not_proven_writes_no_patch(tmp_path: Path) -> None:
    """docs/proving-policy-versions.md: --adopt writes nothing unless the set is proven."""
    patch = tmp_path / "adopt.patch"
    status = main(["prove-policy", str(EXAMPLES / "invalid-nonzero-blocked-row.json"), *FAST,
                   "--out", str(tmp_path / "r"), "--adopt", str(patch)])  # fmt: skip
    assert status == 1
    assert not patch.exists()
    assert list(tmp_path.glob(".adopt.patch.*")) == []


def test_an_unwritable_patch_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A patch that cannot be written is refused before anything is proved (exit 2)."""
    patch = tmp_path / "missing-directory" / "adopt.patch"
    status = main(["prove-policy", str(EXAMPLES / "compute_budget.v2.json"), *FAST,
                   "--out", str(tmp_path / "r"), "--adopt", str(patch)])  # fmt: skip
    assert status == 2
    assert f"cannot write --adopt {patch}" in capsys.readouterr().err
    assert not (tmp_path / "r").exists(), "nothing may be proved for an unwritable patch"


def _budget_plan(directory: Path) -> tuple[policy_adopt.Adoption, dict[str, str]]:
    candidate = _as_next_version("compute_budget.v2.json", directory)
    policies = PolicySet.of([load_policy_file(candidate)])
    modules = (
        policy_adopt.BUDGET_MODULE,
        policy_adopt.GATE_MODULE,
        policy_adopt.OPERATORS_MODULE,
        policy_adopt.SEARCH_RUN_MODULE,
    )
    return plan_adoption(policies), {path: (ROOT / path).read_text("utf-8") for path in modules}


@pytest.mark.parametrize(
    ("module", "start"),
    [
        (policy_adopt.BUDGET_MODULE, "COMPUTE_BUDGET_IN_FORCE = "),
        (policy_adopt.BUDGET_MODULE, policy_adopt.BUDGET_EDITS.registry),
        (policy_adopt.BUDGET_MODULE, policy_adopt.BUDGET_EDITS.before),
        (policy_adopt.SEARCH_RUN_MODULE, "SUPPORTED_BUDGET_POLICY_VERSIONS = ("),
        (policy_adopt.OPERATORS_MODULE, "CANDIDATE_OPERATOR_SET = "),
    ],
)
def test_a_missing_anchor_is_a_typed_refusal(module: str, start: str, tmp_path: Path) -> None:
    """Every edit is anchored on an exact line: without it, AdoptError(ANCHOR_MISSING) names
    the module and the line, and no source is returned."""
    adoption, sources = _budget_plan(tmp_path)
    assert adopted_sources(sources, adoption) != sources  # the anchors are there today
    (line,) = [found for found in sources[module].splitlines() if found.startswith(start)]
    assert sources[module].count(line + "\n") == 1
    edited = {**sources, module: sources[module].replace(line + "\n", "# moved by hand\n")}
    with pytest.raises(AdoptError) as refused:
        adopted_sources(edited, adoption)
    assert refused.value.reason is AdoptReason.ANCHOR_MISSING
    assert refused.value.where == module
    assert line.split(" = ")[0] in str(refused.value)


def test_an_operator_file_pinning_other_versions_than_the_set_is_refused(tmp_path: Path) -> None:
    """ADR-0231 §7.2, §10: the set in force's operator pins are what an operator input
    binds, so a set whose operator file pins a budget other than the set's is not adopted."""
    files = (
        _as_next_version("compute_budget.v2.json", tmp_path),
        _as_next_version("candidate_operators.v2.json", tmp_path, repin=False),
    )
    policies = PolicySet.of([load_policy_file(path) for path in files])
    with pytest.raises(AdoptError) as refused:
        plan_adoption(policies)
    assert refused.value.reason is AdoptReason.OPERATOR_PINS_DISAGREE
    assert "compute_budget.v1" in refused.value.detail


def test_a_budget_adoption_moves_the_operator_sets_pin_under_the_next_version(
    tmp_path: Path,
) -> None:
    """ADR-0231 §10: a changed table changes operator_set_id, so moving the budget pin makes
    the next free candidate_operators version, every other cell kept."""
    adoption, _ = _budget_plan(tmp_path)
    assert adoption.operators is not None and adoption.operators_derived
    assert adoption.operators.operator_set_version == NEXT_OPERATOR_SET
    (row,) = adoption.operators.operators
    (in_force,) = policy_adopt.CANDIDATE_OPERATOR_SET.operators
    budget = next_unregistered_version("compute_budget", BUDGET_POLICIES)
    assert dict(row.policy_versions)["compute_budget"] == budget
    assert dataclasses.replace(row, policy_versions=in_force.policy_versions) == in_force


def test_a_kernel_that_differs_from_head_is_refused(tmp_path: Path) -> None:
    """The patch is made against HEAD, but the set was proved (and the operator set's moved
    pins read) on the working tree's kernel: when the two differ, no patch."""
    adoption, _ = _budget_plan(tmp_path)
    tree = _fresh_clone(tmp_path)
    trace = tree / "src/practice_loop/kernel/trace.py"
    trace.write_text(trace.read_text("utf-8") + "# an uncommitted edit\n", "utf-8")
    with pytest.raises(AdoptError) as refused:
        policy_adopt.build_patch(adoption, tree)
    assert refused.value.reason is AdoptReason.KERNEL_NOT_COMMITTED
    assert refused.value.where == "src/practice_loop/kernel/trace.py"
