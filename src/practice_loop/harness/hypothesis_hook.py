"""Hypothesis's entry point for this package (``[project.entry-points.hypothesis]``).

Hypothesis loads and calls every ``hypothesis`` entry point while it is being imported, with
no guard: a slow hook slows every ``import hypothesis`` in an environment that has our wheel,
and one that raises breaks that import. So this module imports only the standard library, and
its hook does no work of its own. The record strategies (``practice_strategies.registration``)
are registered once the kernel is imported, at once if it already is; nothing here imports
the kernel. Any error while registering is a warning, never a failed import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence

KERNEL = "practice_loop.kernel"


def setup() -> None:
    """Called by Hypothesis while it is imported."""
    try:
        if KERNEL in sys.modules:
            _register()
        elif not any(isinstance(finder, _AfterKernelImport) for finder in sys.meta_path):
            sys.meta_path.insert(0, _AfterKernelImport())
    except Exception as error:  # noqa: BLE001 (never break `import hypothesis`)
        _warn(error)


def _register() -> None:
    try:
        from practice_strategies.registration import register_record_strategies

        register_record_strategies()
    except Exception as error:  # noqa: BLE001 (a test without st.from_type still runs)
        _warn(error)


def _warn(error: BaseException) -> None:
    warnings.warn(
        "practice_strategies could not register its record strategies, so st.from_type of a "
        f"kernel record will fail: {type(error).__name__}: {error}",
        RuntimeWarning,
        stacklevel=2,
    )


class _AfterKernelImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when the kernel is about to be imported it leaves the path and
    wraps the kernel's own loader, so registering runs just after the kernel has loaded."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != KERNEL:
            return None
        sys.meta_path.remove(self)  # once: and the real finders below answer the lookup
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


class _RegisteringLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        _register()

    def __getattr__(self, name: str) -> object:  # get_source, is_package, resource readers
        return getattr(self.loader, name)
