"""Structural coupling of the shell, parsed with ``ast`` and never imported (ARCHITECTURE §5,
issue 16, docs/index.md).

``src/practice_loop/`` is packages by who uses them: ``kernel/`` (its own test is
``test_imports.py``), ``product/`` (reader, runner, store, verification, render, progress),
``workbench/`` (model, pages, server), ``harness/`` (the tools that prove them) and the command
line (``cli.py``, ``__main__.py``). Every import counts: at module level, inside functions and
under ``TYPE_CHECKING``. What is checked:

- (a) the product and Workbench import only the standard library and ``practice_loop``: never
  Hypothesis, pytest, CrossHair, the strategies or anything under ``practice_loop.harness``;
- (b) outside the kernel, the kernel is imported only as its façade ``practice_loop.kernel``
  or one of its own modules, and never a private name; the kernel imports nothing of the shell;
- (c) there is no import cycle among the modules of ``practice_loop``;
- (d) the product imports only the kernel and itself (never Workbench, the command line or the
  harness); Workbench imports only the product, the kernel and itself, server -> pages ->
  model; the harness never imports Workbench or the command line;
- (e) the command line imports the product and the kernel only; every other command's module is
  named in ``EXTENSION_COMMANDS`` and loaded when its command is (``test_cli.py`` checks that
  at run time).
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = "practice_loop"
# Where the package is found on the import path (``find_spec`` of a top-level package locates it
# without running it), so a copy put first on PYTHONPATH is the one checked.
SRC = Path(next(iter(importlib.util.find_spec(ROOT).submodule_search_locations))).parent
KERNEL = f"{ROOT}.kernel"
PRODUCT = f"{ROOT}.product"
WORKBENCH = f"{ROOT}.workbench"
HARNESS = f"{ROOT}.harness"
CLI = f"{ROOT}.cli"
# Modules directly in src/practice_loop/; everything else lives in one of the packages above.
TOP_LEVEL = {ROOT, f"{ROOT}.__main__", CLI}
TEST_TOOLS = {"hypothesis", "pytest", "_pytest", "crosshair", "practice_strategies"}
STDLIB = sys.stdlib_module_names | {"__future__"}

# Workbench's one-way order: a module may import only the modules before it.
WORKBENCH_ORDER = ["model", "pages", "server"]


@dataclass(frozen=True)
class Import:
    """One imported module, as ``module`` line ``line`` writes it."""

    module: str  # the importer
    target: str  # a practice_loop module (resolved), or the top-level name of anything else
    line: int
    names: frozenset[str]  # the names a ``from`` import takes from ``target``

    @property
    def ours(self) -> bool:
        return self.target == ROOT or self.target.startswith(f"{ROOT}.")

    def __str__(self) -> str:
        return f"{self.module} imports {self.target} (line {self.line})"


def _file(module: str) -> Path | None:
    base = SRC.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _all_modules() -> list[str]:
    found = []
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


MODULES = _all_modules()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def _imports(module: str) -> list[Import]:
    """Every import of ``module``. ``from . import x`` and ``from p import x`` name the module
    ``p.x`` where there is one, else ``p``; relative imports are resolved."""
    path = _file(module)
    assert path is not None, module
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                target = name if name.split(".")[0] == ROOT else name.split(".")[0]
                found.append(Import(module, target, node.lineno, frozenset()))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = frozenset(alias.name for alias in node.names)
            if target.split(".")[0] != ROOT:
                found.append(Import(module, target.split(".")[0], node.lineno, names))
                continue
            plain = {n for n in names if _file(f"{target}.{n}") is None}
            for name in sorted(names - plain):
                found.append(Import(module, f"{target}.{name}", node.lineno, frozenset()))
            if plain or not names:
                found.append(Import(module, target, node.lineno, frozenset(plain)))
    return found


def _area(module: str) -> str:
    for package in (KERNEL, PRODUCT, WORKBENCH, HARNESS):
        if _within(module, package):
            return package
    return module


def _in(*packages: str) -> list[str]:
    return [m for m in MODULES if any(_within(m, p) for p in packages)]


def _violations(modules: list[str], allowed) -> Iterator[str]:
    for module in modules:
        for found in _imports(module):
            if not allowed(found):
                yield str(found)


# --------------------------------------------------------------------------------------------
# The layout


def test_every_module_belongs_to_a_package_by_user():
    """Nothing is left flat beside the command line: each module is in kernel/, product/,
    workbench/ or harness/ (issue 16)."""
    stray = [
        m for m in MODULES if _area(m) not in {KERNEL, PRODUCT, WORKBENCH, HARNESS} | TOP_LEVEL
    ]
    assert not stray, f"modules outside kernel/, product/, workbench/, harness/: {stray}"
    for package in (KERNEL, PRODUCT, WORKBENCH, HARNESS):
        assert package in MODULES, f"{package} has no __init__.py"


def test_workbench_is_exactly_model_pages_server():
    names = sorted(m.rsplit(".", 1)[1] for m in _in(WORKBENCH) if m != WORKBENCH)
    assert names == sorted(WORKBENCH_ORDER)


def test_every_import_of_ours_names_a_module_that_exists():
    """A moved module leaves no import of its old path behind."""
    bad = [str(i) for m in MODULES for i in _imports(m) if i.ours and _file(i.target) is None]
    assert not bad, "imports of modules that do not exist:\n" + "\n".join(bad)


# --------------------------------------------------------------------------------------------
# (a) no test tool, no harness in the product or Workbench


@pytest.mark.parametrize("module", _in(PRODUCT, WORKBENCH))
def test_product_and_workbench_import_no_test_tool_and_no_harness(module):
    """The product and Workbench are what a user installs without the ``test`` extra."""
    bad = list(
        _violations(
            [module],
            lambda i: not (i.target in TEST_TOOLS or _within(i.target, HARNESS))
            and (i.ours or i.target in STDLIB),
        )
    )
    assert not bad, "the product and Workbench import a test tool, the harness or a library:\n" + (
        "\n".join(bad)
    )


def test_the_package_roots_import_nothing_heavy():
    """``practice_loop``, ``product`` and ``harness`` load nothing on their own, so importing
    one product module (or a standard-library harness module) loads only what it needs."""
    for package in (ROOT, PRODUCT, HARNESS):
        found = [str(i) for i in _imports(package) if i.target != "__future__"]
        assert not found, f"{package}/__init__.py imports: {found}"


# --------------------------------------------------------------------------------------------
# (b) the kernel's surface


def test_the_shell_reaches_the_kernel_only_through_its_facade_or_its_modules():
    kernel_modules = set(_in(KERNEL))

    def allowed(found: Import) -> bool:
        if not _within(found.target, KERNEL):
            return True
        private = {n for n in found.names if n.startswith("_")}
        return found.target in kernel_modules and not private

    bad = list(_violations([m for m in MODULES if _area(m) != KERNEL], allowed))
    assert not bad, "kernel imports other than its façade, its modules or public names:\n" + (
        "\n".join(bad)
    )


def test_the_kernel_imports_nothing_of_the_shell():
    bad = list(_violations(_in(KERNEL), lambda i: not i.ours or _within(i.target, KERNEL)))
    assert not bad, "the kernel imports the shell:\n" + "\n".join(bad)


# --------------------------------------------------------------------------------------------
# (c) no cycle


def _cycle() -> list[Import] | None:
    """One import cycle among practice_loop's modules, as the imports that close it."""
    edges = {m: [i for i in _imports(m) if i.ours and i.target != m] for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[Import] = []

    def visit(module: str) -> list[Import] | None:
        state[module] = 1
        for found in edges.get(module, []):
            if state.get(found.target) == 1:
                start = next(
                    (k for k, step in enumerate(path) if step.module == found.target), len(path)
                )
                return [*path[start:], found]
            if found.target not in state:
                path.append(found)
                cycle = visit(found.target)
                if cycle:
                    return cycle
                path.pop()
        state[module] = 2
        return None

    for module in MODULES:
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def test_there_is_no_import_cycle():
    """No module of practice_loop reaches itself through its imports (issue 16: the cycles
    obligations <-> gate_plugin and workbench <-> workbench_pages are gone)."""
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(
        [cycle[0].module, *(i.target for i in cycle)]
    ) + "\n" + "\n".join(str(i) for i in cycle)


# --------------------------------------------------------------------------------------------
# (d) who imports whom


@pytest.mark.parametrize("module", _in(PRODUCT))
def test_the_product_imports_only_the_kernel_and_itself(module):
    bad = list(
        _violations([module], lambda i: not i.ours or _area(i.target) in {KERNEL, PRODUCT})
    )
    assert not bad, "the product imports Workbench, the command line or the harness:\n" + (
        "\n".join(bad)
    )


@pytest.mark.parametrize("name", WORKBENCH_ORDER)
def test_workbench_imports_the_product_the_kernel_and_itself_one_way(name):
    """server -> pages -> model -> (product, kernel), never back."""
    module = f"{WORKBENCH}.{name}"
    earlier = {f"{WORKBENCH}.{m}" for m in WORKBENCH_ORDER[: WORKBENCH_ORDER.index(name)]}

    def allowed(found: Import) -> bool:
        if not found.ours:
            return True
        if _within(found.target, WORKBENCH):
            return found.target in earlier
        return _area(found.target) in {KERNEL, PRODUCT}

    bad = list(_violations([module], allowed))
    assert not bad, "Workbench imports out of its order or outside product and kernel:\n" + (
        "\n".join(bad)
    )


def test_the_workbench_package_imports_only_its_modules():
    bad = list(
        _violations([WORKBENCH], lambda i: not i.ours or _within(i.target, WORKBENCH))
    )
    assert not bad, "\n".join(bad)


def test_nothing_workbench_imports_imports_it_back():
    """Nothing below Workbench (the product, the kernel) imports any part of it."""
    below = _in(PRODUCT, KERNEL)
    bad = list(_violations(below, lambda i: not _within(i.target, WORKBENCH)))
    assert not bad, "a cycle through Workbench:\n" + "\n".join(bad)


def test_the_harness_never_imports_workbench_or_the_command_line():
    bad = list(
        _violations(
            _in(HARNESS),
            lambda i: not (_within(i.target, WORKBENCH) or i.target in TOP_LEVEL - {ROOT}),
        )
    )
    assert not bad, "the harness imports Workbench or the command line:\n" + "\n".join(bad)


def test_the_obligation_registry_needs_no_test_tool():
    """``practice-loop gate --from-json`` re-reads a matrix without pytest: the registry, the
    mutant catalogue, the gate command and what their reports say they were made with
    (``report_context``) are standard library only; the pytest sides are ``gate_plugin`` and
    ``mutant_plugin``, which import the registry one way."""
    context = f"{HARNESS}.report_context"
    allowed = {
        "report_context": set(),
        "obligations": {context},
        "mutants": {f"{HARNESS}.obligations", context},
        "obligation_gate": {f"{HARNESS}.obligations", f"{HARNESS}.mutants", context},
    }
    for name, ours in allowed.items():
        bad = list(
            _violations(
                [f"{HARNESS}.{name}"], lambda i, ours=ours: i.target in STDLIB or i.target in ours
            )
        )
        assert not bad, "\n".join(bad)


def test_the_hypothesis_entry_point_imports_only_the_standard_library():
    """Hypothesis runs the entry point during every ``import hypothesis`` (issue 18): its
    module imports the standard library, and the strategies only inside the function that
    registers them, once the kernel is imported."""
    bad = list(
        _violations(
            [f"{HARNESS}.hypothesis_hook"],
            lambda i: i.target in STDLIB or i.target == "practice_strategies",
        )
    )
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------------------------
# (e) the command line


def _extension_modules() -> dict[str, str]:
    tree = ast.parse(_file(CLI).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EXTENSION_COMMANDS" for t in node.targets
        ):
            table = ast.literal_eval(node.value)
            return {command: f"{ROOT}.{module}" for command, (module, _adder) in table.items()}
    raise AssertionError("cli.py defines no EXTENSION_COMMANDS")


def test_the_command_line_imports_only_the_product_and_the_kernel():
    """Every other command loads its module lazily, by name (EXTENSION_COMMANDS)."""
    allowed_areas = {KERNEL, PRODUCT, ROOT}
    bad = list(
        _violations(
            [CLI], lambda i: i.target in STDLIB if not i.ours else _area(i.target) in allowed_areas
        )
    )
    assert not bad, "the command line imports more than the product and the kernel:\n" + (
        "\n".join(bad)
    )
    main = [str(i) for i in _imports(f"{ROOT}.__main__") if i.ours and i.target != CLI]
    assert not main, main


def test_every_lazy_command_names_a_module_that_exists():
    missing = {c: m for c, m in _extension_modules().items() if _file(m) is None}
    assert not missing, f"EXTENSION_COMMANDS names modules that do not exist: {missing}"


def test_importing_the_product_and_workbench_loads_no_test_tool():
    """At run time too, through everything they import (a fresh interpreter)."""
    modules = [m for m in _in(PRODUCT, WORKBENCH)] + [CLI]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "from practice_loop.cli import build_parser; build_parser('run')\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = set(result.stdout.split())
    tools = sorted(m for m in loaded if m.split(".")[0] in TEST_TOOLS and "." not in m)
    assert not tools, f"importing {modules} loaded test tools: {tools}"
    harness = sorted(m for m in loaded if _within(m, HARNESS))
    assert not harness, f"importing {modules} loaded the harness: {harness}"
