"""Build records that construction would refuse, the way an attacker or a bug would.

Kernel records validate on construction, so a malformed record can only arrive through
``object.__setattr__``, a foreign type or a decoder. These helpers make such values so that
tests can prove every stage refuses them with the exact typed reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

R = TypeVar("R")


def tampered(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes`` applied and no validation at all."""
    copy = object.__new__(type(record))
    for field in dataclasses.fields(record):  # type: ignore[arg-type]
        value = changes.pop(field.name, getattr(record, field.name))
        object.__setattr__(copy, field.name, value)
    if changes:
        raise TypeError(f"{type(record).__name__} has no fields {sorted(changes)}")
    return copy


def resealed(record: R, **changes: Any) -> R:
    """Like ``tampered``, then the record's own identity is recomputed over the change, so
    that only a semantic check (not the identity check) can catch it."""
    copy = tampered(record, **changes)
    id_field = type(record).ID_FIELD  # type: ignore[attr-defined]
    object.__setattr__(copy, id_field, copy.compute_id())  # type: ignore[attr-defined]
    return copy


def fields_for_sealing(record: Any, **changes: Any) -> dict[str, Any]:
    """Every field of ``record`` but its identity, with ``changes`` applied: the keyword
    arguments for ``type(record).sealed(...)``, which recomputes the identity."""
    fields = {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
    del fields[type(record).ID_FIELD]
    return {**fields, **changes}


def other_digest(value: str) -> str:
    """A different well-formed digest: the first hex character changed."""
    return ("1" if value[0] == "0" else "0") + value[1:]
