"""One call's trust (docs/adr/0013, "Trust scoped to one call"): what the kernel validated
during the current call, kept in a context variable so that it belongs to the thread (or
asyncio task) that opened it and ends with the call."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import typing
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


@dataclasses.dataclass(slots=True)
class _Trust:
    """What one call has validated, by object identity. Each entry holds its object, so no id
    is reused while the scope lasts. A trusted record cannot change while it is trusted: it
    is frozen, and within the scope only kernel code runs, which never writes over a built
    record's field. ``encoded`` and ``derived`` hold entries only for trusted records, and
    ``tuples`` only tuples of checked values (exact str, int, bool, None, enum members,
    trusted records and such tuples), which cannot change either."""

    records: dict[int, object] = dataclasses.field(default_factory=dict)
    encoded: dict[int, tuple[bytes, bytes]] = dataclasses.field(default_factory=dict)
    derived: dict[tuple[int, str], object] = dataclasses.field(default_factory=dict)
    tuples: dict[int, tuple[tuple[object, ...], tuple[bytes, bytes]]] = dataclasses.field(
        default_factory=dict
    )


# The current call's trust, one per thread and per asyncio task (a context variable, not
# process state): calls on other threads never see it.
_CURRENT_TRUST: contextvars.ContextVar[_Trust | None] = contextvars.ContextVar(
    "practice_loop_trust", default=None
)


class trust_scope:  # lower case: used as ``with trust_scope():`` and ``@trust_scope()``
    """One call: records validated inside are trusted until it ends. A scope opened inside
    another joins it. As a decorator (``@trust_scope()``), each call is a scope of its own.

    Inside a scope, never alter a record (``object.__setattr__``): it would stay trusted.
    Outside every scope, each inspection validates in full."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token: contextvars.Token[_Trust | None] | None = None

    def __enter__(self) -> None:
        if _CURRENT_TRUST.get() is None:
            self._token = _CURRENT_TRUST.set(_Trust())

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _CURRENT_TRUST.reset(self._token)
            self._token = None

    def __call__(self, function: Callable[_Params, _Result]) -> Callable[_Params, _Result]:
        @functools.wraps(function)
        def within_one_call(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
            if _CURRENT_TRUST.get() is not None:
                return function(*args, **kwargs)
            token = _CURRENT_TRUST.set(_Trust())
            try:
                return function(*args, **kwargs)
            finally:
                _CURRENT_TRUST.reset(token)

        return within_one_call


def remembered(record: object, key: str, compute: typing.Callable[[], Any]) -> Any:
    """``compute()``, a pure function of ``record``, computed once per call while the record
    is trusted; the same as computing it again."""
    trust = _CURRENT_TRUST.get()
    if trust is None or trust.records.get(id(record)) is not record:
        return compute()
    found = trust.derived.get((id(record), key), _NOT_FOUND)
    if found is _NOT_FOUND:
        found = trust.derived[(id(record), key)] = compute()
    return found


_NOT_FOUND = object()
