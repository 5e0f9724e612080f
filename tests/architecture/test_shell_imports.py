"""Structural coupling of the shell: Workbench's package, parsed with ``ast`` (ARCHITECTURE §5,
issue 16).

Workbench is three modules imported one way, server -> pages -> model, and the model imports
only the product below it (store, verification, kernel, progress). Nothing below imports
Workbench back, so there is no cycle, at run time or under ``TYPE_CHECKING``; and no Workbench
module needs the test tools."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "practice_loop.workbench"

# The one-way order inside the package: a module may import only from modules before it.
ORDER = ["model", "pages", "server"]
# What the package may import from the rest of practice_loop.
BELOW = {
    "practice_loop.store",
    "practice_loop.verification",
    "practice_loop.kernel",
    "practice_loop.progress",
}
TEST_TOOLS = {"hypothesis", "pytest", "_pytest", "crosshair", "practice_strategies"}


def _file(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(module: str) -> tuple[set[str], set[str]]:
    """The practice_loop modules ``module`` imports (``from . import x`` resolved to the module
    x where there is one), and the top-level names of everything else it imports. Every import
    counts, ``TYPE_CHECKING`` ones and those inside functions included."""
    path = _file(module)
    assert path is not None, module
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    ours, others = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                (ours if target.split(".")[0] == "practice_loop" else others).add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "practice_loop":
                others.add(target.split(".")[0])
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                ours.add(submodule if _file(submodule) is not None else target)
    return ours, {name.split(".")[0] for name in others}


def _reachable(start: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        module = todo.pop()
        if module in seen or _file(module) is None:
            continue
        seen.add(module)
        todo.extend(_imports(module)[0])
    return seen


def _workbench_modules() -> list[str]:
    folder = SRC / "practice_loop" / "workbench"
    return sorted(f"{PACKAGE}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__")


def test_the_package_is_exactly_model_pages_server():
    assert [m.rsplit(".", 1)[1] for m in _workbench_modules()] == sorted(ORDER)


@pytest.mark.parametrize("name", ORDER)
def test_workbench_imports_point_one_way(name):
    """server -> pages -> model -> (store, verification, kernel, progress), never back."""
    ours, _ = _imports(f"{PACKAGE}.{name}")
    earlier = {f"{PACKAGE}.{m}" for m in ORDER[: ORDER.index(name)]}
    for target in ours:
        if target == PACKAGE or target.startswith(f"{PACKAGE}."):
            assert target in earlier, f"{name} imports {target}, not before it in ORDER"
        else:
            assert any(target == b or target.startswith(f"{b}.") for b in BELOW), (name, target)


def test_nothing_workbench_imports_imports_it_back():
    """No cycle through the product: no module the package reaches imports Workbench."""
    below = _reachable({t for m in _workbench_modules() for t in _imports(m)[0]})
    below = {m for m in below if m != PACKAGE and not m.startswith(f"{PACKAGE}.")}
    assert "practice_loop.store" in below and "practice_loop.kernel" in below
    for module in sorted(below):
        back = {t for t in _imports(module)[0] if t == PACKAGE or t.startswith(f"{PACKAGE}.")}
        assert not back, f"{module} imports {sorted(back)}: a cycle through Workbench"


@pytest.mark.parametrize("module", [PACKAGE, *[f"{PACKAGE}.{m}" for m in ORDER]])
def test_workbench_imports_no_test_tool(module):
    """Workbench is product code: no Hypothesis, pytest, CrossHair or the strategies."""
    _, others = _imports(module)
    assert not others & TEST_TOOLS, (module, sorted(others & TEST_TOOLS))
    assert others <= sys.stdlib_module_names | {"__future__"}, (module, sorted(others))


def test_importing_workbench_loads_no_test_tool():
    """At run time too, through everything it imports."""
    script = (
        "import sys; import practice_loop.workbench; "
        "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert not set(result.stdout.split()) & TEST_TOOLS
