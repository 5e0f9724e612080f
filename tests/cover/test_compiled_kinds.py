"""Compiled record kinds (docs/adr/0003, "Compiled record kinds"; docs/adr/0011).

Every record kind runs methods and encoders generated from its fields and ``SCHEMA``, written
into ``kernel/compiled_kinds.py`` by ``practice-loop compile-kinds``. These tests hold that
module to what the kinds generate now, require every kind to run compiled, and compare each
compiled function with the generic code it stands in for, on valid records of every kind and
on records tampered field by field: the same defect, the same bytes, the same identity.
"""

from __future__ import annotations

import dataclasses
import enum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from practice_loop import kind_compiler
from practice_loop.kernel import ProblemFrame, identity
from practice_loop.kernel.identity import (
    Defect,
    Record,
    RecordError,
    SourceSpan,
    digest,
    non_negative_int,
    text,
)
from practice_strategies.registration import RECORD_TYPES

KINDS = kind_compiler._kinds()
KINDS_WITH_STRATEGIES = [kind for kind in KINDS if kind in RECORD_TYPES]


def _generic_bytes(record: Record) -> tuple[bytes, bytes]:
    return identity._joined(identity._record_pieces(record))


@pytest.mark.obligation("LOCAL-0003/compiled_kinds_current")
def test_the_compiled_module_is_what_the_kinds_generate():
    """The checked-in module is byte for byte what ``practice-loop compile-kinds`` writes."""
    written = kind_compiler.COMPILED_MODULE.read_text("utf-8")
    assert written == kind_compiler.module_text(), (
        "src/practice_loop/kernel/compiled_kinds.py is out of date: run "
        f"`{kind_compiler.COMMAND}` and commit the result"
    )


@pytest.mark.obligation("LOCAL-0003/compiled_kinds_current")
@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
def test_every_kind_runs_compiled(kind):
    """No kind of the package is left to the generic code: each has compiled encoders, a
    compiled ``find_defect`` (spans keep their own), ``__init__`` and, with an id, ``sealed``."""
    assert identity._kind_encoders(kind) is not identity._GENERIC_ENCODERS
    if kind is not SourceSpan:
        assert kind.find_defect in identity._GENERATED_FIND_DEFECTS
    assert kind.__init__.__code__.co_filename.endswith("compiled_kinds.py")
    if kind.ID_FIELD is not None:
        assert kind.sealed.__func__.__code__.co_filename.endswith("compiled_kinds.py")


@pytest.mark.obligation("LOCAL-0003/compiled_kinds_current")
def test_a_changed_source_is_not_installed():
    """A build is installed only for the very source it was written from: anything else
    leaves the kind to the generic code, never to a stale function."""
    identity._kind_encoders(ProblemFrame)
    key = identity.kind_key(ProblemFrame, "encoders")
    source, names = identity.GENERATED_SOURCES[key]
    namespace = dict.fromkeys(names)
    assert identity._compiled(ProblemFrame, "encoders", source + "# changed\n", namespace) is None
    assert identity._compiled(ProblemFrame, "encoders", source, namespace) is not None
    assert identity.GENERATED_SOURCES[key] == (source, names)


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass(frozen=True, slots=True)
class Uncompiled(Record):
    """A kind outside the package: nothing compiled exists for it."""

    item_id: str
    count: int
    colour: Colour
    spans: tuple[SourceSpan, ...]
    explanation: str

    ID_FIELD = "item_id"
    SCHEMA = (
        ("item_id", digest),
        ("count", non_negative_int),
        ("colour", identity.member_of(Colour)),
        ("spans", identity.spans_check),
        ("explanation", text),
    )


@pytest.mark.obligation("LOCAL-0003/compiled_equals_generic")
def test_a_kind_without_a_build_is_still_exact():
    """Generated but not compiled: the generic methods answer, with the same results the
    encoder gives (prose left out of the identity, the id a self-seal)."""
    assert Uncompiled.find_defect is identity._GENERIC_FIND_DEFECT
    assert identity._kind_encoders(Uncompiled) is identity._GENERIC_ENCODERS
    spans = (SourceSpan("ab", 0, 2, 0),)
    record = Uncompiled.sealed(count=3, colour=Colour.RED, spans=spans, explanation="x")
    assert record.canonical_bytes() == identity.canonical_json(record.to_json())
    assert record.item_id == identity.sha256_digest(record.identity_payload())
    with pytest.raises(RecordError) as caught:
        Uncompiled("0" * 64, True, Colour.RED, spans, "x")
    assert caught.value.found.defect is Defect.BOOL_NOT_INT


@pytest.mark.obligation("LOCAL-0003/compiled_equals_generic")
@settings(max_examples=150)
@given(st.sampled_from(KINDS_WITH_STRATEGIES).flatmap(st.from_type))
def test_compiled_encoders_equal_the_generic_walk(record):
    """On a valid record of any kind: the compiled bytes, with prose and without, are the
    generic walk's, byte for byte."""
    encoders = identity._kind_encoders(type(record))
    assert encoders.encode(record) == _generic_bytes(record)


@pytest.mark.obligation("LOCAL-0003/compiled_equals_generic")
@settings(max_examples=150)
@given(st.sampled_from([k for k in KINDS_WITH_STRATEGIES if k.ID_FIELD]).flatmap(st.from_type))
def test_compiled_sealing_equals_generic_sealing(record):
    """``sealed`` from a valid record's fields seals the id the generic profile walk computes
    (``canonical_json`` of the identity payload) and remembers the bytes it encodes; the
    generic ``sealed`` and ``__init__`` (positional or by name) build an equal record."""
    kind = type(record)
    fields = {field.name: getattr(record, field.name) for field in dataclasses.fields(kind)}
    # The memo empties itself when full, and then remembers nothing for that record: start
    # from an empty one, so what other tests left in this process cannot fill it here.
    identity._forget_everything()
    compiled = kind.sealed(**fields)
    payload = compiled.identity_payload()
    assert getattr(compiled, kind.ID_FIELD) == identity.sha256_digest(payload)
    assert identity._BYTES[id(compiled)] == (
        identity.canonical_json(compiled.to_json()),
        identity.canonical_json(compiled.to_json(drop_explanations=True)),
    )
    assert compiled == identity._GENERIC_SEALED(kind, **fields) == record
    assert kind(**fields) == record
    assert identity._is_trusted(kind(*fields.values()))


# Values that break some field check of some kind: each one must be refused, if at all, with
# the same defect by the compiled and the generic ``find_defect``.
HOSTILE = [
    None,
    True,
    -1,
    2**53,
    1.5,
    "",
    "0" * 64,
    "x" * 65,
    "A" * 64,
    "\ud800",
    "not a version",
    "policy.v1",
    (),
    ("x",),
    [],
    {},
    SourceSpan("ab", 0, 2, 0),
    (SourceSpan("ab", 0, 2, 0),),
    Colour.RED,
    type("Text", (str,), {})("a"),
]


@pytest.mark.obligation("LOCAL-0003/compiled_equals_generic")
@settings(max_examples=60)
@given(st.sampled_from(KINDS_WITH_STRATEGIES).flatmap(st.from_type))
def test_compiled_find_defect_equals_the_generic_checks(record):
    """A record with one field overwritten (the way ``object.__setattr__`` tampers), every
    field in turn with every hostile value, is judged the same by the compiled
    ``find_defect`` and the generic loop over ``SCHEMA``: the same field and defect, or both
    clean; and both find the untampered record clean."""
    kind = type(record)
    if kind.find_defect not in identity._GENERATED_FIND_DEFECTS:
        return  # spans keep a hand-written find_defect of their own (test_identity.py)
    names = [field.name for field in dataclasses.fields(kind)]
    for name in names:
        for value in HOSTILE:
            # A fresh copy is tampered: drawn records may be shared (static tables, recipes).
            copy = object.__new__(kind)
            for field_name in names:
                object.__setattr__(copy, field_name, getattr(record, field_name))
            assert kind.find_defect(copy) == identity._GENERIC_FIND_DEFECT(copy) is None
            object.__setattr__(copy, name, value)
            for check_identity in (True, False):
                assert kind.find_defect(copy, check_identity=check_identity) == (
                    identity._GENERIC_FIND_DEFECT(copy, check_identity=check_identity)
                ), (name, value)
