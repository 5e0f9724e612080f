"""Structural coupling: the kernel's import surface, parsed with ``ast`` (ARCHITECTURE §2,
ADR-0228 §15 and §17.14-16)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

KERNEL = Path(__file__).resolve().parents[2] / "src" / "practice_loop" / "kernel"

# The one-way order: a module may import only from modules before it.
ORDER = [
    "identity",
    "trust",
    "checks",
    "record",
    "span",
    "refusal",
    "frame",
    "assessment",
    "proof",
    "residual",
    "gate",
    "budget",
    "search_run",
    "operators",
    "replay",
    "answer",
    "trace",
    "loop",
]

# Standard-library modules the kernel may use at all; everything else is refused, including
# standard modules that reach the clock, environment, filesystem, network or processes.
ALLOWED_STDLIB = {
    "__future__",
    "contextlib",
    "contextvars",  # one call's trust, per thread (docs/adr/0013)
    "dataclasses",
    "enum",
    "functools",
    "hashlib",
    "json",
    "operator",
    "re",
    "types",
    "typing",
    "collections",
}
FORBIDDEN_CALLS = {
    "open",
    "eval",
    "exec",
    "compile",
    "__import__",
    "input",
    "print",
    "globals",
    "locals",
    "vars",
    "breakpoint",
}

# ADR-0228 §15: what search_run may take from each upstream module (value types only).
SEARCH_RUN_ALLOWED_NAMES = {
    "identity": None,  # any value helper
    "trust": None,
    "checks": None,
    "record": None,
    "span": None,
    "refusal": None,
    "frame": {"SourceSpan", "ProblemFrame"},
    "assessment": {"ContractAssessment", "AssessmentStatus"},
    "residual": {"ContractResidual", "ResidualKind"},
    "gate": {"SearchGateDecision", "SearchGateStatus"},
    "budget": {"ComputeBudgetDecision", "ComputeBudgetStatus", "LIMIT_FIELDS"},  # names only
}
# ADR-0231 §16.1: what the operator may take from upstream (value types, the frame's and
# the manifest's identity helpers, and its own run value types).
OPERATOR_ALLOWED_NAMES = {
    "identity": None,  # the value vocabulary, whole
    "trust": None,
    "checks": None,
    "record": None,
    "span": None,
    "refusal": None,
    "frame": {
        "UNARY_DELTA_ORGAN",
        "UNARY_DELTA_RELATION",
        "Direction",
        "ProblemFrame",
        "Role",
        "problem_frame_digest",
    },
    "assessment": {"ContractAssessment"},
    "residual": {"ContractResidual", "ResidualKind"},
    "gate": {"SearchGateDecision", "SearchGateStatus"},
    "budget": {"ComputeBudgetDecision", "ComputeBudgetStatus"},
    "search_run": {
        "CANDIDATE_OPERATOR_SET_VERSION",
        "BudgetCharge",
        "CandidateAttempt",
        "CandidateReplayStatus",
        "OpenedSearchRun",
        "OperatorManifestRow",
        "OperatorSetManifest",
        "operator_set_id",
    },
}
PRODUCERS = {
    "assess",
    "check_proof",
    "project_residuals",
    "decide_search_gate",
    "decide_compute_budget",
}


def _tree(module: str) -> ast.Module:
    return ast.parse((KERNEL / f"{module}.py").read_text(encoding="utf-8"))


def _imports(module: str) -> list[tuple[str, int, set[str]]]:
    """(target, level, names) for every import; level 1 means a sibling kernel module."""
    found = []
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, 0, set()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", node.level, {a.name for a in node.names}))
    return found


@pytest.mark.obligation("ADR-0226/13.5", "ADR-0228/17.structural_coupling")
def test_every_kernel_module_is_in_the_order():
    """ARCHITECTURE §2: the kernel is exactly these modules (plus the façade)."""
    modules = {path.stem for path in KERNEL.glob("*.py")} - {"__init__"}
    assert modules == set(ORDER)


@pytest.mark.obligation(
    "ADR-0228/17.14",
    "ADR-0228/17.15",
    "ADR-0231/18.21",
    "ADR-0226/8.5",
    "ADR-0226/8.10",
    "ADR-0226/8.12",
    "ADR-0226/13.9",
    "ADR-0226/13.11",
    "ADR-0228/17.structural_coupling",
    "ADR-0231/18.static_coupling",
)
@pytest.mark.parametrize("module", ORDER)
def test_kernel_imports_only_the_allowed_standard_library(module):
    """ADR-0228 §15, §17.15: no I/O, clock, random, environment, process or dynamic import."""
    for target, level, _names in _imports(module):
        if level == 0:
            assert target.split(".")[0] in ALLOWED_STDLIB, (module, target)
            assert target.split(".")[0] in sys.stdlib_module_names | {"__future__"}


@pytest.mark.obligation("ADR-0228/17.16", "ADR-0226/13.5", "ADR-0228/17.structural_coupling")
@pytest.mark.parametrize("module", ORDER)
def test_imports_point_only_up_the_order(module):
    """ARCHITECTURE §2, ADR-0228 §17.16: no reverse dependency."""
    position = ORDER.index(module)
    for target, level, names in _imports(module):
        if level == 1:
            # ``from .x import y`` names x; ``from . import x`` names the modules themselves.
            for imported in [target] if target else sorted(names):
                assert imported in ORDER[:position], f"{module} imports {imported}, later in ORDER"
        else:
            assert level == 0, (module, "uses a parent-relative import")


@pytest.mark.obligation(
    "ADR-0228/17.14",
    "ADR-0228/17.15",
    "ADR-0231/18.21",
    "ADR-0226/8.10",
    "ADR-0226/13.9",
    "ADR-0231/18.static_coupling",
)
@pytest.mark.parametrize("module", ORDER)
def test_no_forbidden_builtin_is_called(module):
    """ADR-0228 §15, §17.15: no file, console, eval or dynamic-import builtins."""
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, (module, node.func.id, node.lineno)


@pytest.mark.obligation(
    "ADR-0228/17.17",
    "ADR-0228/17.structural_coupling",
    "LOCAL-0004/imports",
    "LOCAL-0006/authority_calls",
)
def test_search_run_depends_only_on_value_types():
    """ADR-0228 §15: record types from upstream, never their producers."""
    for target, level, names in _imports("search_run"):
        if level == 1:
            allowed = SEARCH_RUN_ALLOWED_NAMES[target]
            assert allowed is None or names <= allowed, (target, names - (allowed or set()))
    used = {node.id for node in ast.walk(_tree("search_run")) if isinstance(node, ast.Name)}
    used |= {node.attr for node in ast.walk(_tree("search_run")) if isinstance(node, ast.Attribute)}
    assert not used & PRODUCERS


@pytest.mark.obligation(
    "ADR-0231/18.20",
    "ADR-0231/18.21",
    "ADR-0231/18.static_coupling",
    "LOCAL-0008/run_binding",
    "LOCAL-0006/authority_calls",
)
def test_operator_depends_only_on_value_types():
    """ADR-0231 §16, §18.20-22: values in, no producer, no replay, no run lifecycle calls."""
    for target, level, names in _imports("operators"):
        if level == 1:
            allowed = OPERATOR_ALLOWED_NAMES[target]
            assert allowed is None or names <= allowed, (target, names - (allowed or set()))
    tree = _tree("operators")
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not used & (PRODUCERS | {"open_search_run", "record_attempts"})


@pytest.mark.obligation("ADR-0231/18.22")
def test_no_module_imports_the_operator_upstream():
    """ADR-0231 §5, §18.22: no reverse dependency into the operator boundary."""
    for module in ORDER[: ORDER.index("operators")]:
        targets = {target for target, level, _ in _imports(module) if level == 1}
        assert "operators" not in targets, module


@pytest.mark.obligation("ADR-0228/17.16")
def test_upstream_modules_never_import_the_search_run():
    """ADR-0228 §17.16: budget, gate, residual, assessment do not reach the run."""
    for module in ["assessment", "residual", "gate", "budget"]:
        targets = {target for target, level, _ in _imports(module) if level == 1}
        assert "search_run" not in targets


@pytest.mark.obligation("ADR-0228/17.15", "ADR-0231/18.21")
def test_importing_the_kernel_loads_only_the_standard_library():
    """Issue 2: ``import practice_loop.kernel`` pulls in nothing outside the stdlib."""
    script = (
        "import sys; before = set(sys.modules); import practice_loop.kernel; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print('\\n'.join(sorted(new)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = set(result.stdout.split())
    outside = {m for m in loaded if m not in sys.stdlib_module_names} - {"practice_loop"}
    assert not outside, outside
    assert "practice_loop" in loaded
