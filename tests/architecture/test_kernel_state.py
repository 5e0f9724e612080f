"""No process state in the kernel (docs/adr/0013, issue 16): every module-level value of every
kernel module, and every class attribute of every kernel class, is immutable; nothing the
kernel holds at module level changes while cases run, on one thread or on many. The only
context the kernel keeps is one call's trust, in a context variable (per thread, per task).
"""

from __future__ import annotations

import ast
import contextvars
import dataclasses
import enum
import importlib
import json
import operator
import pkgutil
import re
import types
import typing
from importlib import resources
from pathlib import Path

import pytest

import practice_loop.kernel as kernel
from practice_loop.kernel import (
    SealedPracticeTrace,
    load_sealed_trace,
    practice_case,
    replay_divergence,
    sealed_trace_bytes,
    verify_sealed_trace,
)
from practice_loop.kernel.trust import _CURRENT_TRUST
from practice_loop.product.reader import read_question

KERNEL = Path(kernel.__file__).parent
MODULES = sorted(info.name for info in pkgutil.iter_modules(kernel.__path__))
# The one context the kernel keeps: the current call's trust (a context variable's value
# lives in the running context, never in the module), defined in ``trust``.
CONTEXT_VARIABLES = (_CURRENT_TRUST,)

_IMMUTABLE_SCALARS = (str, bytes, int, float, bool, type(None), re.Pattern, enum.Enum)
_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    operator.attrgetter,
)
_TYPING = (
    types.UnionType,
    types.GenericAlias,
    typing._SpecialForm,  # type: ignore[attr-defined]
    typing._GenericAlias,  # type: ignore[attr-defined]
    type(typing.Callable[[object], object]),
    type(typing.Annotated[int, 0]),
    typing.TypeVar,
    typing.ParamSpec,
)
# Descriptors and members a class gets from ``dataclasses``, ``__slots__`` and ``enum``.
_CLASS_MACHINERY = (
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    types.WrapperDescriptorType,
    type(typing.NamedTuple("Pair", [("first", int)]).first),  # a NamedTuple's field
    staticmethod,
    classmethod,
    property,
    enum.property,
)


def _kernel_modules() -> list[types.ModuleType]:
    return [importlib.import_module(f"practice_loop.kernel.{name}") for name in MODULES]


def _mutable_part(value: object, where: str) -> str | None:
    """Where ``value`` holds something that can change, or ``None`` when nothing can."""
    if isinstance(value, _IMMUTABLE_SCALARS + _CALLABLES + _TYPING + (type,)):
        return None
    if value is dataclasses.MISSING:  # a field without a default
        return None
    if isinstance(value, (tuple, frozenset)):
        for index, item in enumerate(value):
            found = _mutable_part(item, f"{where}[{index}]")
            if found:
                return found
        return None
    if isinstance(value, types.MappingProxyType):
        for key, item in value.items():
            found = _mutable_part(key, f"{where} key") or _mutable_part(item, f"{where}[{key!r}]")
            if found:
                return found
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not type(value).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return f"{where}: an unfrozen {type(value).__name__}"
        for field in dataclasses.fields(value):
            found = _mutable_part(getattr(value, field.name), f"{where}.{field.name}")
            if found:
                return found
        return None
    if type(value) is object:  # a sentinel: no attributes, nothing to change
        return None
    return f"{where}: a {type(value).__name__}"


def _defined_here(module: types.ModuleType) -> list[tuple[str, object]]:
    return [
        (name, value)
        for name, value in vars(module).items()
        if not (name.startswith("__") and name.endswith("__"))
        and not isinstance(value, types.ModuleType)
        and name != "annotations"  # ``from __future__ import annotations``
    ]


@pytest.mark.obligation("LOCAL-0013/no_module_state")
@pytest.mark.parametrize("module", _kernel_modules(), ids=lambda module: module.__name__)
def test_every_module_level_value_is_immutable(module):
    """A module-level dict, list, set, counter or cache would be process state; tables are
    ``MappingProxyType`` or tuples, records are frozen."""
    for name, value in _defined_here(module):
        if isinstance(value, contextvars.ContextVar):
            where = f"{module.__name__}.{name}"
            known = any(value is allowed for allowed in CONTEXT_VARIABLES)
            assert known, f"{where}: a context variable"
            continue
        if isinstance(value, type):
            continue  # checked class by class below
        found = _mutable_part(value, f"{module.__name__}.{name}")
        assert found is None, f"module-level state: {found}"


def _kernel_classes() -> list[type]:
    found = {}
    for module in _kernel_modules():
        for _, value in _defined_here(module):
            if isinstance(value, type) and value.__module__.startswith("practice_loop.kernel"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


@pytest.mark.obligation("LOCAL-0013/no_module_state")
@pytest.mark.parametrize("kind", _kernel_classes(), ids=lambda kind: kind.__qualname__)
def test_every_class_attribute_is_immutable(kind):
    """Class attributes are module state too: a per-kind cache filled at run time would be."""
    for name, value in vars(kind).items():
        if name.endswith("_") and name.startswith("_"):
            continue  # dunder and sunder names: Python's own, enum's and NamedTuple's machinery
        if isinstance(value, _CLASS_MACHINERY) or isinstance(value, kind):  # an enum member
            continue
        if issubclass(kind, tuple) and name == "_field_defaults":  # NamedTuple's own, empty
            assert value == {}, f"{kind.__qualname__} has NamedTuple defaults"
            continue
        found = _mutable_part(value, f"{kind.__qualname__}.{name}")
        assert found is None, f"class-level state: {found}"


@pytest.mark.parametrize(
    "kind",
    [kind for kind in _kernel_classes() if dataclasses.is_dataclass(kind)],
    ids=lambda kind: kind.__qualname__,
)
def test_every_kernel_dataclass_is_slotted(kind):
    """The kernel is built of slotted dataclasses (ARCHITECTURE.md; records: docs/adr/0003):
    an instance with a ``__dict__`` takes any attribute anyone sets, which a call's trust or
    a record would then carry unseen. Records refuse to be built unslotted; this covers the
    kernel's other dataclasses too (one call's trust)."""
    assert "__slots__" in vars(kind), f"{kind.__qualname__} is not slotted"
    instance_dict = kind.__dictoffset__ != 0
    assert not instance_dict, f"{kind.__qualname__} instances have a __dict__"


def test_no_kernel_function_declares_a_global():
    """``global`` (or ``nonlocal`` over a module cell) is how module state gets rebound."""
    for module in MODULES:
        tree = ast.parse((KERNEL / f"{module}.py").read_text("utf-8"))
        for node in ast.walk(tree):
            assert not isinstance(node, ast.Global), f"{module}:{node.lineno}: global"


def _fingerprint() -> dict[str, object]:
    """Every module-level value and class attribute of the kernel, as values and identities:
    equal before and after means nothing was rebound, filled or emptied."""
    found: dict[str, object] = {}
    for module in _kernel_modules():
        for name, value in _defined_here(module):
            found[f"{module.__name__}.{name}"] = (id(value), repr(value)[:2000])
            if isinstance(value, type):
                for attribute, item in vars(value).items():
                    found[f"{module.__name__}.{name}.{attribute}"] = (id(item), repr(item)[:500])
    return found


def _questions() -> list[str]:
    sample = resources.files("practice_loop") / "data" / "sample.jsonl"
    return [json.loads(line)["question"] for line in sample.read_text("utf-8").splitlines()]


@pytest.mark.obligation("LOCAL-0013/no_module_state")
def test_running_cases_changes_no_kernel_state():
    """Practise, seal, verify, replay and reload every sample case: the kernel's module and
    class state is exactly what it was, and no call's trust outlives the call."""
    before = _fingerprint()
    for question in _questions():
        outcome = practice_case(read_question(question))
        if type(outcome) is SealedPracticeTrace:
            assert verify_sealed_trace(outcome).valid
            assert replay_divergence(outcome) is None
            assert load_sealed_trace(sealed_trace_bytes(outcome)) == outcome
        assert _CURRENT_TRUST.get() is None
    after = _fingerprint()
    keys = before.keys() | after.keys()
    changed = sorted(key for key in keys if before.get(key) != after.get(key))
    assert not changed, f"kernel state changed while cases ran: {changed[:10]}"
